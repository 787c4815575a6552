//! Decoding JSON the way Go's `encoding/json` does: object keys match struct fields regardless of
//! case, an exact match winning over a case-insensitive one.
//!
//! Configs in the field are written for the Go plugins and rely on that leniency: Flannel's
//! rendered delegate carries `"dns":{"Nameservers":…}` and `"policies":[{"Name":…,"Value":…}]`,
//! old configs say `"ApiVersion"`, and containerd sends `runtimeConfig` keys capitalised
//! (`PortMappings`, `HostPort`, `Servers`). A drop-in replacement must read them all; decoding
//! through [`CaseInsensitive`] gives every typed config struct that behaviour without aliases.

use serde::de::DeserializeOwned;
use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{Deserializer, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::{Map, Value};

use crate::error::{Error, ErrorCode};

/// Decodes `value` (found at `place`, e.g. `ipam` or `runtimeConfig.dns`; empty for the whole
/// config) as `T`, matching keys as Go does. A failure gets `code` and a message that starts with
/// the full path of the field at fault, such as `ipam.ranges[0][1].rangeStart: ...`.
pub fn decode<T: DeserializeOwned>(
    value: &Value,
    place: &str,
    code: ErrorCode,
) -> Result<T, Error> {
    serde_path_to_error::deserialize(CaseInsensitive(value.clone())).map_err(|e| {
        let path = e.path().to_string();
        let field = match (place.is_empty(), path == ".") {
            (true, true) => "network config".to_owned(),
            (true, false) => path,
            (false, true) => place.to_owned(),
            (false, false) => format!("{place}.{path}"),
        };
        Error::new(code, format!("{field}: {}", e.inner()))
    })
}

/// A JSON value whose objects match struct fields case-insensitively when deserialised.
#[derive(Debug, Clone)]
pub struct CaseInsensitive(pub Value);

/// Renames keys that match one of `fields` only by case to that field's exact spelling. A key
/// that already matches exactly is kept, and wins over case-variants of itself, as in Go.
fn align_keys(map: Map<String, Value>, fields: &[&str]) -> Vec<(String, Value)> {
    let exact: Vec<bool> = fields.iter().map(|f| map.contains_key(*f)).collect();
    map.into_iter()
        .filter_map(|(key, value)| {
            if fields.contains(&key.as_str()) {
                return Some((key, value));
            }
            match fields.iter().position(|f| f.eq_ignore_ascii_case(&key)) {
                // An exact key for this field is present: this variant is ignored, as Go does.
                Some(i) if exact[i] => None,
                Some(i) => Some((fields[i].to_owned(), value)),
                None => Some((key, value)),
            }
        })
        .collect()
}

impl<'de> IntoDeserializer<'de, serde_json::Error> for CaseInsensitive {
    type Deserializer = CaseInsensitive;

    fn into_deserializer(self) -> CaseInsensitive {
        self
    }
}

fn visit_map<'de, V: Visitor<'de>>(
    entries: Vec<(String, Value)>,
    visitor: V,
) -> Result<V::Value, serde_json::Error> {
    let mut access =
        MapDeserializer::new(entries.into_iter().map(|(k, v)| (k, CaseInsensitive(v))));
    let value = visitor.visit_map(&mut access)?;
    access.end()?;
    Ok(value)
}

impl<'de> Deserializer<'de> for CaseInsensitive {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Array(items) => {
                let mut access = SeqDeserializer::new(items.into_iter().map(CaseInsensitive));
                let value = visitor.visit_seq(&mut access)?;
                access.end()?;
                Ok(value)
            }
            Value::Object(map) => visit_map(map.into_iter().collect(), visitor),
            scalar => scalar.deserialize_any(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            value => visitor.visit_some(CaseInsensitive(value)),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Object(map) => visit_map(align_keys(map, fields), visitor),
            other => other.deserialize_struct(name, fields, visitor),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_enum(name, variants, visitor)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

/// The value of `key` in `map`, matched as Go matches a struct field: exactly first, then
/// ignoring case.
pub fn get<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    map.get(key).or_else(|| {
        map.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Policy {
        name: String,
        value: Value,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Conf {
        #[serde(rename = "apiVersion", default)]
        api_version: u8,
        #[serde(default)]
        policies: Vec<Policy>,
        inner: Option<Inner>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Inner {
        #[serde(rename = "hostPort")]
        host_port: u16,
    }

    fn decode(value: Value) -> Result<Conf, serde_json::Error> {
        Conf::deserialize(CaseInsensitive(value))
    }

    #[test]
    fn matches_keys_in_any_case_at_any_depth() {
        let conf = decode(json!({
            "ApiVersion": 2,
            "Policies": [{"Name": "EndpointPolicy", "VALUE": {"Type": "OutBoundNAT"}}],
            "inner": {"HostPort": 8080}
        }))
        .unwrap();
        assert_eq!(conf.api_version, 2);
        assert_eq!(conf.policies[0].name, "EndpointPolicy");
        // Raw values are kept byte-for-byte: only struct fields are matched.
        assert_eq!(conf.policies[0].value, json!({"Type": "OutBoundNAT"}));
        assert_eq!(conf.inner, Some(Inner { host_port: 8080 }));
    }

    #[test]
    fn an_exact_key_wins_over_a_case_variant() {
        for doc in [
            json!({"apiVersion": 2, "ApiVersion": 1}),
            json!({"ApiVersion": 1, "apiVersion": 2}),
        ] {
            assert_eq!(decode(doc).unwrap().api_version, 2);
        }
    }

    #[test]
    fn type_errors_still_surface() {
        assert!(decode(json!({"apiVersion": "two"})).is_err());
        assert!(decode(json!({"inner": {"hostPort": 70000}})).is_err());
        assert!(decode(json!([1])).is_err());
    }

    #[test]
    fn get_prefers_the_exact_key() {
        let map = json!({"PortMappings": 1, "portMappings": 2, "Dns": 3});
        let map = map.as_object().unwrap();
        assert_eq!(get(map, "portMappings"), Some(&json!(2)));
        assert_eq!(get(map, "dns"), Some(&json!(3)));
        assert_eq!(get(map, "absent"), None);
    }
}
