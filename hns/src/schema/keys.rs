//! Object keys matched as Go's `encoding/json` matches them to struct fields: the exact key
//! first, else one that differs only in case; keys that match no field are set aside.
//!
//! Policy settings reach HNS through Go code that never looks inside them (hcsshim keeps
//! `Settings` as raw bytes), so configs in the field spell their keys in every case (OpenShift's
//! Windows Machine Config Operator writes `exceptionList`, `destinationPrefix`). The typed view
//! reads them as Go reads a struct, and leaves the keys it does not know to the caller: HNS
//! ignores them, and the caller decides whether to say so. A key the other shape (V1 or V2)
//! spells differently is named with the key it most likely means ([`v2_key_for`],
//! [`v1_key_for`]).

use std::cell::Cell;
use std::collections::BTreeMap;

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::value::RawValue;

/// The keys of `T` as serde writes them (after renames), read from its `Deserialize` impl so
/// the list cannot drift from the struct. Empty for a type that is not a struct.
pub(crate) fn keys_of<T: DeserializeOwned>() -> &'static [&'static str] {
    let fields = Cell::new(&[][..]);
    // The probe always fails: it only records what the derived impl asks for.
    let _ = T::deserialize(FieldProbe(&fields));
    fields.get()
}

/// A deserializer that records the field list of the struct asked of it and fails.
struct FieldProbe<'a>(&'a Cell<&'static [&'static str]>);

impl<'de> Deserializer<'de> for FieldProbe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.set(fields);
        Err(de::Error::custom("fields recorded"))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// A JSON object with its keys renamed to the fields they match.
#[derive(Debug)]
pub(crate) struct Aligned {
    /// The object with every matching key spelled as its field, the others left out.
    pub json: String,
    /// Keys that match no field, as written, sorted.
    pub unknown: Vec<String>,
}

/// Matches the keys of the JSON object `object` to `fields`; `None` when `object` is not a
/// JSON object. A key that differs from a field only in case is renamed to it, unless the
/// exact key is present too (then the exact one wins, as in Go).
pub(crate) fn align(object: &str, fields: &[&str]) -> Option<Aligned> {
    let members: BTreeMap<String, &RawValue> = serde_json::from_str(object).ok()?;
    let mut aligned: BTreeMap<&str, &RawValue> = BTreeMap::new();
    let mut unknown = Vec::new();
    for (key, &value) in &members {
        let field = fields
            .iter()
            .find(|field| **field == key)
            .or_else(|| fields.iter().find(|field| field.eq_ignore_ascii_case(key)));
        match field {
            Some(field) if field == key || !members.contains_key(*field) => {
                aligned.insert(*field, value);
            }
            // A case variant of a key that is present exactly: the exact one is read.
            Some(_) => {}
            None => unknown.push(key.to_owned()),
        }
    }
    let json = serde_json::to_string(&aligned).ok()?;
    Some(Aligned { json, unknown })
}

/// The member of a JSON object Go would decode into field `name`: the exact key, else one that
/// differs only in case.
pub(crate) fn member<'a>(
    members: &BTreeMap<String, &'a RawValue>,
    name: &str,
) -> Option<&'a RawValue> {
    members.get(name).copied().or_else(|| {
        members
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| *value)
    })
}

/// The same setting's key in V1 and in V2 `Settings`, per V2 type: what a key written in the
/// wrong shape most likely means.
const RENAMED_KEYS: &[(&str, &str, &str)] = &[
    ("OutBoundNAT", "ExceptionList", "Exceptions"),
    ("OutBoundNAT", "VIP", "VirtualIP"),
    ("ProviderAddress", "PA", "ProviderAddress"),
    ("ACL", "Protocol", "Protocols"),
    ("ACL", "LocalPort", "LocalPorts"),
    ("ACL", "RemotePort", "RemotePorts"),
];

/// The V2 key of `v2_type` that V1 spells `v1_key`, e.g. `Exceptions` for `ExceptionList`.
pub(crate) fn v2_key_for(v2_type: &str, v1_key: &str) -> Option<&'static str> {
    RENAMED_KEYS
        .iter()
        .find(|(policy, v1, _)| {
            policy.eq_ignore_ascii_case(v2_type) && v1.eq_ignore_ascii_case(v1_key)
        })
        .map(|(_, _, v2)| *v2)
}

/// The V1 key of the V1 shape of `v2_type` that V2 spells `v2_key`.
pub(crate) fn v1_key_for(v2_type: &str, v2_key: &str) -> Option<&'static str> {
    RENAMED_KEYS
        .iter()
        .find(|(policy, _, v2)| {
            policy.eq_ignore_ascii_case(v2_type) && v2.eq_ignore_ascii_case(v2_key)
        })
        .map(|(_, v1, _)| *v1)
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize)]
    #[serde(rename_all = "PascalCase")]
    #[allow(dead_code)] // only its field list is read
    struct Settings {
        #[serde(rename = "VirtualIP")]
        virtual_ip: String,
        exceptions: Vec<String>,
    }

    #[test]
    fn keys_come_from_the_derived_impl() {
        assert_eq!(keys_of::<Settings>(), ["VirtualIP", "Exceptions"]);
        assert!(keys_of::<u32>().is_empty());
    }

    #[test]
    fn keys_match_in_any_case_and_the_rest_is_set_aside() {
        let fields = keys_of::<Settings>();
        let aligned = align(
            r#"{"exceptions":["10.0.0.0/8"],"virtualip":"","exceptionList":[],"needEncap":false}"#,
            fields,
        )
        .unwrap();
        assert_eq!(
            aligned.json,
            r#"{"Exceptions":["10.0.0.0/8"],"VirtualIP":""}"#
        );
        assert_eq!(aligned.unknown, ["exceptionList", "needEncap"]);
        let exact_wins = align(r#"{"exceptions":[1],"Exceptions":[2]}"#, fields).unwrap();
        assert_eq!(exact_wins.json, r#"{"Exceptions":[2]}"#);
        assert!(exact_wins.unknown.is_empty());
        assert!(align("[1]", fields).is_none());
        assert!(align("{", fields).is_none());
    }

    #[test]
    fn member_prefers_the_exact_key() {
        let members: BTreeMap<String, &RawValue> =
            serde_json::from_str(r#"{"type":"a","Type":"b","SETTINGS":{}}"#).unwrap();
        assert_eq!(member(&members, "Type").unwrap().get(), r#""b""#);
        assert_eq!(member(&members, "Settings").unwrap().get(), "{}");
        assert!(member(&members, "Id").is_none());
    }
}
