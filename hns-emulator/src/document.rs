//! Reading a client's document the way HNS does.
//!
//! The shared schema parses every address once, so a document with a
//! malformed value does not decode at all. HNS does not answer that with one
//! generic error: a bad endpoint IP is `HCN_E_INVALID_IP`, a bad subnet makes
//! the network invalid, a bad MAC is `E_INVALIDARG`. So a decode failure is
//! looked up here by *where* it happened: the field path the schema reports,
//! and the raw value found there in the document. A field with a rule whose
//! value is a string, or which is missing, gets the rule's HRESULT and a record
//! naming the field and the value; anything else (not JSON, wrong shape, a
//! number where a string belongs, a string where a list belongs) is
//! `HCN_E_INVALID_JSON`.
//!
//! Values a schema of plain strings would let through and HNS is not known to
//! take are refused: a DNS server that is not an address, an empty
//! `ProviderAddress`, a prefix with spaces. Addresses and MACs read back in HNS's own spelling
//! (upper-case dashes, compressed IPv6), whatever spelling the client used.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::failure::HcnFailure;
use hns::hresult::HResult;
use hns::schema::{self, DecodeError};

/// What HNS answers for a malformed value at one field.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ValueRule {
    /// The field's keys from the document root, each array index as `[]`
    /// (`["Ipams", "[]", "Subnets", "[]", "IpAddressPrefix"]`).
    pub(crate) field: &'static [&'static str],
    /// The HRESULT HNS returns.
    pub(crate) code: HResult,
    /// What the value should have been, for the error record.
    pub(crate) expected: &'static str,
}

/// `HcnCreateEndpoint` settings.
pub(crate) const ENDPOINT_RULES: &[ValueRule] = &[
    ValueRule {
        field: &["IpConfigurations", "[]", "IpAddress"],
        code: HResult::HCN_E_INVALID_IP,
        expected: "an IP address",
    },
    ValueRule {
        field: &["MacAddress"],
        code: HResult::E_INVALIDARG,
        expected: "a MAC address",
    },
    ValueRule {
        field: &["Routes", "[]", "NextHop"],
        code: HResult::E_INVALIDARG,
        expected: "an IP address",
    },
    ValueRule {
        field: &["Routes", "[]", "DestinationPrefix"],
        code: HResult::E_INVALIDARG,
        expected: "a CIDR prefix",
    },
    ValueRule {
        field: &["Dns", "ServerList", "[]"],
        code: HResult::E_INVALIDARG,
        expected: "an IP address",
    },
];

/// `HcnCreateNetwork` settings: any malformed address makes the network invalid.
pub(crate) const NETWORK_RULES: &[ValueRule] = &[
    ValueRule {
        field: &["Ipams", "[]", "Subnets", "[]", "IpAddressPrefix"],
        code: HResult::HCN_E_INVALID_NETWORK,
        expected: "a CIDR prefix",
    },
    ValueRule {
        field: &["Ipams", "[]", "Subnets", "[]", "Routes", "[]", "NextHop"],
        code: HResult::HCN_E_INVALID_NETWORK,
        expected: "an IP address",
    },
    ValueRule {
        field: &[
            "Ipams",
            "[]",
            "Subnets",
            "[]",
            "Routes",
            "[]",
            "DestinationPrefix",
        ],
        code: HResult::HCN_E_INVALID_NETWORK,
        expected: "a CIDR prefix",
    },
    ValueRule {
        field: &["MacPool", "Ranges", "[]", "StartMacAddress"],
        code: HResult::HCN_E_INVALID_NETWORK,
        expected: "a MAC address",
    },
    ValueRule {
        field: &["MacPool", "Ranges", "[]", "EndMacAddress"],
        code: HResult::HCN_E_INVALID_NETWORK,
        expected: "a MAC address",
    },
    ValueRule {
        field: &["Dns", "ServerList", "[]"],
        code: HResult::HCN_E_INVALID_NETWORK,
        expected: "an IP address",
    },
];

/// Decodes `json` as `T`; a failure becomes what HNS would answer (see the module docs).
/// `what` names the document in records of the generic kind.
pub(crate) fn read<T: DeserializeOwned>(
    what: &str,
    json: &str,
    rules: &[ValueRule],
) -> Result<T, HcnFailure> {
    schema::decode(json).map_err(|error| failure(what, json, rules, &error))
}

fn failure(what: &str, json: &str, rules: &[ValueRule], error: &DecodeError) -> HcnFailure {
    let value_rule = (!error.is_syntax())
        .then(|| serde_json::from_str::<Value>(json).ok())
        .flatten()
        .and_then(|document| {
            let (keys, value) = locate(&document, error.path())?;
            let path = error.path();
            match value {
                Value::String(_) => {
                    let rule = rules.iter().find(|rule| rule.field == keys.as_slice())?;
                    Some((*rule, path.to_owned(), value.to_string()))
                }
                // The object itself did not decode: a required field is left out, as Go
                // clients with `omitempty` do with an empty value. HNS answers as for a bad
                // value of that field.
                Value::Object(object) => rules.iter().find_map(|rule| {
                    let (field, parents) = rule.field.split_last()?;
                    (parents == keys.as_slice() && !object.contains_key(*field))
                        .then(|| (*rule, format!("{path}.{field}"), "(missing)".to_owned()))
                }),
                _ => None,
            }
        });
    match value_rule {
        Some((rule, path, raw)) => HcnFailure::new(
            rule.code,
            format!("({path} {raw} is not {})", rule.expected),
        ),
        None => HcnFailure::invalid_json(what, error),
    }
}

/// Follows a decode error's path (`Ipams[0].Subnets[1].IpAddressPrefix`) through the
/// document: the keys on the way with each index as `[]`, and the value at its end.
fn locate<'a>(document: &'a Value, path: &str) -> Option<(Vec<&'a str>, &'a Value)> {
    let mut keys = Vec::new();
    let mut here = document;
    if path == "." {
        return Some((keys, here));
    }
    for segment in path.split('.') {
        let (key, indices) = segment.split_once('[').unwrap_or((segment, ""));
        if !key.is_empty() {
            let (name, value) = here.as_object()?.get_key_value(key)?;
            keys.push(name.as_str());
            here = value;
        }
        for index in indices.split('[').filter(|index| !index.is_empty()) {
            let index: usize = index.strip_suffix(']')?.parse().ok()?;
            here = here.as_array()?.get(index)?;
            keys.push("[]");
        }
    }
    Some((keys, here))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hns::schema::{HostComputeEndpoint, HostComputeNetwork};

    fn endpoint(json: &str) -> HcnFailure {
        read::<HostComputeEndpoint>("endpoint settings", json, ENDPOINT_RULES).unwrap_err()
    }

    #[test]
    fn a_malformed_value_gets_its_fields_hresult_and_is_named() {
        let failure = endpoint(
            r#"{"IpConfigurations":[{"IpAddress":"10.0.0.5"},{"IpAddress":"10.0.0.300"}]}"#,
        );
        assert_eq!(failure.code, HResult::HCN_E_INVALID_IP);
        assert_eq!(
            failure.detail,
            r#"(IpConfigurations[1].IpAddress "10.0.0.300" is not an IP address)"#
        );
        assert_eq!(
            endpoint(r#"{"MacAddress":"00-15-5D"}"#).code,
            HResult::E_INVALIDARG
        );
        let network = read::<HostComputeNetwork>(
            "network settings",
            r#"{"Name":"n","Ipams":[{"Subnets":[{"IpAddressPrefix":"10.0.0.0/24","Routes":[{"NextHop":"10.0.0.1","DestinationPrefix":"0.0.0.0"}]}]}]}"#,
            NETWORK_RULES,
        )
        .unwrap_err();
        assert_eq!(network.code, HResult::HCN_E_INVALID_NETWORK);
        assert!(
            network
                .detail
                .contains("Ipams[0].Subnets[0].Routes[0].DestinationPrefix \"0.0.0.0\""),
            "{}",
            network.detail
        );
    }

    #[test]
    fn a_missing_value_is_answered_as_a_bad_one() {
        let failure = endpoint(r#"{"IpConfigurations":[{"PrefixLength":24}]}"#);
        assert_eq!(failure.code, HResult::HCN_E_INVALID_IP);
        assert_eq!(
            failure.detail,
            "(IpConfigurations[0].IpAddress (missing) is not an IP address)"
        );
        let network = read::<HostComputeNetwork>(
            "network settings",
            r#"{"Name":"n","Ipams":[{"Subnets":[{"Routes":[]}]}]}"#,
            NETWORK_RULES,
        )
        .unwrap_err();
        assert_eq!(network.code, HResult::HCN_E_INVALID_NETWORK);
        assert_eq!(
            endpoint(r#"{"Routes":[{"NextHop":"10.0.0.1"}]}"#).code,
            HResult::E_INVALIDARG
        );
    }

    #[test]
    fn shape_errors_stay_invalid_json() {
        for json in [
            "{",
            r#"{"IpConfigurations":"10.0.0.5"}"#,
            r#"{"IpConfigurations":[{"IpAddress":5}]}"#,
            r#"{"Dns":{"ServerList":"10.0.0.10"}}"#,
            r#"{"Name":"a"} trailing"#,
        ] {
            assert_eq!(endpoint(json).code, HResult::HCN_E_INVALID_JSON, "{json}");
        }
    }

    #[test]
    fn paths_are_followed_through_objects_and_arrays() {
        let document: Value = serde_json::from_str(r#"{"A":[{"B":[1,{"C":"x"}]}]}"#).unwrap();
        let (keys, value) = locate(&document, "A[0].B[1].C").unwrap();
        assert_eq!(
            (keys, value),
            (vec!["A", "[]", "B", "[]", "C"], &Value::from("x"))
        );
        assert!(locate(&document, "A[3].B").is_none());
        assert!(locate(&document, "Z").is_none());
    }
}
