//! Label selectors (`metav1.LabelSelector`), validated once and matched many times.
//!
//! A selector is kept as a sorted list of requirements, `matchLabels` entries included as
//! one-value `In` requirements, so two selectors that select the same way compare equal and
//! print the same: the printed form names IP sets and keys rule identities.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::invalid::Invalid;

/// An object's labels.
pub type Labels = BTreeMap<String, String>;

/// A validated label selector; the empty selector selects everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Requirement {
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Selector {
    /// The selector that selects every object.
    pub fn everything() -> Selector {
        Selector::default()
    }

    /// Validates an API selector as the API server does (`In`/`NotIn` need values,
    /// `Exists`/`DoesNotExist` take none, no other operator); `field` is where the selector
    /// sits in its object, for the message.
    pub fn from_api(selector: &LabelSelector, field: &str) -> Result<Selector, Invalid> {
        let mut requirements = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            requirements.push(Requirement::In(
                key.clone(),
                BTreeSet::from([value.clone()]),
            ));
        }
        for (index, expression) in selector.match_expressions.iter().flatten().enumerate() {
            let at = format!("{field}.matchExpressions[{index}]");
            let values: BTreeSet<String> = expression.values.iter().flatten().cloned().collect();
            let key = expression.key.clone();
            let requirement = match expression.operator.as_str() {
                "In" | "NotIn" if values.is_empty() => {
                    return Err(Invalid::new(
                        format!("{at}.values"),
                        format!("operator {} needs at least one value", expression.operator),
                    ));
                }
                "Exists" | "DoesNotExist" if !values.is_empty() => {
                    return Err(Invalid::new(
                        format!("{at}.values"),
                        format!("operator {} takes no values", expression.operator),
                    ));
                }
                "In" => Requirement::In(key, values),
                "NotIn" => Requirement::NotIn(key, values),
                "Exists" => Requirement::Exists(key),
                "DoesNotExist" => Requirement::DoesNotExist(key),
                other => {
                    return Err(Invalid::new(
                        format!("{at}.operator"),
                        format!(
                            "{other:?} is not a label selector operator (In, NotIn, Exists, DoesNotExist)"
                        ),
                    ));
                }
            };
            requirements.push(requirement);
        }
        requirements.sort();
        requirements.dedup();
        Ok(Selector { requirements })
    }

    /// Whether the selector selects every object.
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether an object with these labels is selected: every requirement holds.
    pub fn matches(&self, labels: &Labels) -> bool {
        self.requirements
            .iter()
            .all(|requirement| match requirement {
                Requirement::In(key, values) => labels.get(key).is_some_and(|v| values.contains(v)),
                Requirement::NotIn(key, values) => {
                    labels.get(key).is_none_or(|v| !values.contains(v))
                }
                Requirement::Exists(key) => labels.contains_key(key),
                Requirement::DoesNotExist(key) => !labels.contains_key(key),
            })
    }
}

/// kubectl's selector syntax (`pod=a,ns notin (x),!gone`); the empty selector prints `{}`.
impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.requirements.is_empty() {
            return f.write_str("{}");
        }
        let list = |values: &BTreeSet<String>| values.iter().cloned().collect::<Vec<_>>().join(",");
        for (index, requirement) in self.requirements.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            match requirement {
                Requirement::In(key, values) if values.len() == 1 => {
                    write!(f, "{key}={}", list(values))?;
                }
                Requirement::In(key, values) => write!(f, "{key} in ({})", list(values))?,
                Requirement::NotIn(key, values) => write!(f, "{key} notin ({})", list(values))?,
                Requirement::Exists(key) => write!(f, "{key}")?,
                Requirement::DoesNotExist(key) => write!(f, "!{key}")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expression(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
        }
    }

    fn selector(expressions: Vec<LabelSelectorRequirement>) -> Result<Selector, Invalid> {
        let api = LabelSelector {
            match_expressions: Some(expressions),
            match_labels: None,
        };
        Selector::from_api(&api, "spec.podSelector")
    }

    #[test]
    fn empty_selector_selects_everything() {
        let everything = Selector::from_api(&LabelSelector::default(), "spec.podSelector").unwrap();
        assert!(everything.is_everything());
        assert!(everything.matches(&Labels::new()));
        assert!(everything.matches(&labels(&[("pod", "a")])));
        assert_eq!(everything.to_string(), "{}");
    }

    #[test]
    fn match_labels_need_every_pair() {
        let api = LabelSelector {
            match_labels: Some(labels(&[("pod", "b"), ("pod2", "updated")])),
            match_expressions: None,
        };
        let selector = Selector::from_api(&api, "spec.podSelector").unwrap();
        assert!(!selector.matches(&labels(&[("pod", "b")])));
        assert!(selector.matches(&labels(&[("pod", "b"), ("pod2", "updated"), ("x", "y")])));
    }

    #[test]
    fn operators_match_as_the_api_defines_them() {
        let in_bc = selector(vec![expression("pod", "In", &["b", "c"])]).unwrap();
        assert!(in_bc.matches(&labels(&[("pod", "c")])));
        assert!(!in_bc.matches(&labels(&[("pod", "a")])));
        assert!(!in_bc.matches(&Labels::new()));

        let not_in_x = selector(vec![expression("ns", "NotIn", &["x"])]).unwrap();
        assert!(not_in_x.matches(&labels(&[("ns", "y")])));
        assert!(!not_in_x.matches(&labels(&[("ns", "x")])));
        assert!(
            not_in_x.matches(&Labels::new()),
            "NotIn holds where the key is absent"
        );

        let exists = selector(vec![expression("pod", "Exists", &[])]).unwrap();
        assert!(exists.matches(&labels(&[("pod", "")])));
        assert!(!exists.matches(&Labels::new()));

        let absent = selector(vec![expression("pod", "DoesNotExist", &[])]).unwrap();
        assert!(absent.matches(&Labels::new()));
        assert!(!absent.matches(&labels(&[("pod", "a")])));
    }

    #[test]
    fn same_selection_spelt_two_ways_is_one_selector() {
        let by_labels = LabelSelector {
            match_labels: Some(labels(&[("pod", "b")])),
            match_expressions: None,
        };
        let by_labels = Selector::from_api(&by_labels, "f").unwrap();
        let by_expression = selector(vec![expression("pod", "In", &["b"])]).unwrap();
        assert_eq!(by_labels, by_expression);
        assert_eq!(by_labels.to_string(), "pod=b");
    }

    #[test]
    fn prints_kubectl_syntax() {
        let selector = selector(vec![
            expression("ns", "NotIn", &["x", "z"]),
            expression("gone", "DoesNotExist", &[]),
            expression("pod", "In", &["b", "c"]),
            expression("tier", "Exists", &[]),
        ])
        .unwrap();
        assert_eq!(
            selector.to_string(),
            "pod in (b,c),ns notin (x,z),tier,!gone"
        );
    }

    #[test]
    fn refuses_what_the_api_server_refuses_naming_the_field() {
        let unknown = selector(vec![expression("pod", "Equals", &["a"])]).unwrap_err();
        assert_eq!(
            unknown.field,
            "spec.podSelector.matchExpressions[0].operator"
        );
        assert!(unknown.problem.contains("\"Equals\""), "{unknown}");

        let no_values = selector(vec![
            expression("pod", "Exists", &[]),
            expression("pod", "In", &[]),
        ])
        .unwrap_err();
        assert_eq!(
            no_values.field,
            "spec.podSelector.matchExpressions[1].values"
        );

        let stray_values = selector(vec![expression("pod", "Exists", &["a"])]).unwrap_err();
        assert_eq!(
            stray_values.field,
            "spec.podSelector.matchExpressions[0].values"
        );
    }
}
