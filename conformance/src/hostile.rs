//! Hostile variants of a network config, for tests of what a plugin does with a config that
//! changed after ADD: every key at every depth removed, or replaced by a value of each JSON
//! kind, and by values of the right kind that are wrong (an address that is not one, one
//! outside every range, a network that is not the node's, numbers out of range, a list
//! unwrapped one level). A test runs a command with each and judges the answer by the
//! variant's [`path`](Variant::path).

use serde_json::{Value, json};

/// One variant of a config: what changed, where, and the config itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    /// Where the variant differs from the original, as messages name a key:
    /// `ipam.ranges[0][0].rangeEnd`.
    pub path: String,
    /// What the key became: `removed`, or the new value as JSON.
    pub change: String,
    /// The whole config.
    pub config: Value,
}

impl Variant {
    /// Whether the variant changed one of `keys` itself, each spelled as [`Variant::path`]
    /// spells it and compared regardless of case, as Go decodes keys.
    pub fn changes_any(&self, keys: &[&str]) -> bool {
        keys.iter().any(|key| self.path.eq_ignore_ascii_case(key))
    }

    /// Whether the variant unsets `key` (removes it, makes it null or empty), so a plugin
    /// falls back to the key's default: for a directory, one outside a test's scratch space,
    /// which a test leaves alone.
    pub fn unsets(&self, key: &str) -> bool {
        self.changes_any(&[key]) && ["removed", "null", "\"\""].contains(&self.change.as_str())
    }
}

/// Every variant of `config` (an object), each distinct from the original and from every other.
pub fn variants(config: &Value) -> Vec<Variant> {
    let mut variants = Vec::new();
    mutate(config, &mut Vec::new(), config, &mut variants);
    let mut seen = std::collections::HashSet::new();
    variants.retain(|v| v.config != *config && seen.insert(v.config.to_string()));
    variants
}

/// One step into a JSON document.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

fn spell(path: &[Step]) -> String {
    let mut text = String::new();
    for step in path {
        match step {
            Step::Key(key) if text.is_empty() => text.push_str(key),
            Step::Key(key) => {
                text.push('.');
                text.push_str(key);
            }
            Step::Index(index) => text.push_str(&format!("[{index}]")),
        }
    }
    text
}

/// Adds the variants of every key under `value` (found at `path` in `root`).
fn mutate(root: &Value, path: &mut Vec<Step>, value: &Value, into: &mut Vec<Variant>) {
    let children: Vec<(Step, &Value)> = match value {
        Value::Object(map) => map.iter().map(|(k, v)| (Step::Key(k.clone()), v)).collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (Step::Index(i), v))
            .collect(),
        _ => Vec::new(),
    };
    for (step, child) in children {
        path.push(step);
        let here = spell(path);
        into.push(Variant {
            path: here.clone(),
            change: "removed".to_owned(),
            config: edited(root, path, None),
        });
        for replacement in replacements(child) {
            into.push(Variant {
                path: here.clone(),
                change: replacement.to_string(),
                config: edited(root, path, Some(replacement)),
            });
        }
        mutate(root, path, child, into);
        path.pop();
    }
}

/// What a key of value `original` is replaced by: a value of every kind, and wrong values of
/// its own kind.
fn replacements(original: &Value) -> Vec<Value> {
    let mut values = vec![
        Value::Null,
        json!(true),
        json!(7),
        json!("x\u{0}"),
        json!([]),
        json!({}),
    ];
    match original {
        Value::String(_) => values.extend([
            json!(""),
            json!("10.244.9.300"),
            json!("10.250.0.5"),
            json!("10.250.0.0/16"),
        ]),
        Value::Number(_) => values.extend([json!(-1), json!(1e9)]),
        // A list of lists written as a list ("ranges": [{...}] for [[{...}]]).
        Value::Array(items) => values.extend(items.first().cloned()),
        _ => {}
    }
    values.retain(|value| value != original);
    values
}

/// `root` with the value at `path` replaced (or removed, for `None`).
fn edited(root: &Value, path: &[Step], replacement: Option<Value>) -> Value {
    let mut copy = root.clone();
    let (last, parents) = path.split_last().expect("a variant changes a key");
    let mut parent = &mut copy;
    for step in parents {
        parent = match step {
            Step::Key(key) => &mut parent[key.as_str()],
            Step::Index(index) => &mut parent[*index],
        };
    }
    match (last, replacement, parent) {
        (Step::Key(key), Some(value), Value::Object(map)) => {
            map.insert(key.clone(), value);
        }
        (Step::Key(key), None, Value::Object(map)) => {
            map.remove(key);
        }
        (Step::Index(index), Some(value), Value::Array(items)) => items[*index] = value,
        (Step::Index(index), None, Value::Array(items)) => {
            items.remove(*index);
        }
        _ => unreachable!("the path was read from the same document"),
    }
    copy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_at_every_depth_is_removed_and_replaced() {
        let config = json!({"name": "n", "ipam": {"type": "t", "ranges": [
            [{"subnet": "10.0.0.0/24"}, {"subnet": "10.0.1.0/24"}],
            [{"subnet": "fd00::/64"}]
        ]}});
        let variants = variants(&config);
        let at =
            |path: &str| -> Vec<&Variant> { variants.iter().filter(|v| v.path == path).collect() };
        for path in [
            "name",
            "ipam",
            "ipam.ranges",
            "ipam.ranges[0]",
            "ipam.ranges[0][0]",
        ] {
            assert!(at(path).iter().any(|v| v.change == "removed"), "{path}");
            assert!(at(path).iter().any(|v| v.change == "7"), "{path}");
        }
        let subnet = at("ipam.ranges[0][0].subnet");
        assert!(subnet.iter().any(|v| v.change == "\"10.250.0.0/16\""));
        assert!(subnet.iter().any(|v| v.change == "null"));
        // The shape mistake: a list of ranges where a list of range sets belongs.
        let unwrapped = at("ipam.ranges").into_iter().any(|v| {
            v.config["ipam"]["ranges"]
                == json!([{"subnet": "10.0.0.0/24"}, {"subnet": "10.0.1.0/24"}])
        });
        assert!(unwrapped);
        let names: Vec<String> = variants.iter().map(|v| v.config.to_string()).collect();
        let distinct: std::collections::HashSet<&String> = names.iter().collect();
        assert_eq!(distinct.len(), names.len());
        assert!(variants.iter().all(|v| v.config != config));
    }
}
