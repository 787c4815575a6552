//! Parsing of query documents and matching of their filters.

use serde_json::{Map, Value};

use super::failure::HcnFailure;
use hns::guid::Guid;
use hns::hresult::HResult;
use hns::schema::{HostComputeQuery, QueryFlags};

/// A parsed query: detail flag and filter object.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// `Flags` had the detailed bit.
    pub detailed: bool,
    filter: Map<String, Value>,
}

impl Query {
    /// Parses a query document; an empty string is the default query.
    pub fn parse(text: &str) -> Result<Query, HcnFailure> {
        if text.trim().is_empty() {
            return Ok(Query::default());
        }
        let document: HostComputeQuery =
            serde_json::from_str(text).map_err(|e| HcnFailure::invalid_json("query", e))?;
        if !QueryFlags::DETAILED.contains(document.flags) {
            return Err(HcnFailure::new(
                HResult::E_INVALIDARG,
                format!("(unknown query Flags {})", document.flags.bits()),
            ));
        }
        let filter = if document.filter.trim().is_empty() {
            Map::new()
        } else {
            match serde_json::from_str(&document.filter) {
                Ok(Value::Object(map)) => map,
                Ok(other) => {
                    return Err(HcnFailure::invalid_json(
                        "query Filter",
                        format!("not an object: {other}"),
                    ));
                }
                Err(e) => return Err(HcnFailure::invalid_json("query Filter", e)),
            }
        };
        Ok(Query {
            detailed: document.flags.contains(QueryFlags::DETAILED),
            filter,
        })
    }

    /// The GUID under the first of `keys` present in the filter.
    pub fn guid(&self, keys: &[&str]) -> Result<Option<Guid>, HcnFailure> {
        let Some((key, value)) = keys
            .iter()
            .find_map(|key| self.filter.get(*key).map(|value| (*key, value)))
        else {
            return Ok(None);
        };
        value
            .as_str()
            .and_then(|text| text.parse().ok())
            .map(Some)
            .ok_or_else(|| {
                HcnFailure::new(
                    HResult::E_INVALIDARG,
                    format!("(filter {key} {value} is not a GUID)"),
                )
            })
    }

    /// The string under `key` in the filter.
    pub fn string(&self, key: &str) -> Option<&str> {
        self.filter.get(key).and_then(Value::as_str)
    }

    /// True when the filter is empty.
    pub fn is_unfiltered(&self) -> bool {
        self.filter.is_empty()
    }

    /// Whether `object` matches every filter key. `aliases` maps filter keys to
    /// object keys (endpoints are filtered by `VirtualNetwork`, stored as
    /// `HostComputeNetwork`). Strings compare case-insensitively, so GUIDs match
    /// however they are written.
    pub fn matches(&self, object: &Value, aliases: &[(&str, &str)]) -> bool {
        self.filter.iter().all(|(key, wanted)| {
            let field = aliases
                .iter()
                .find(|(alias, _)| alias == key)
                .map_or(key.as_str(), |(_, real)| real);
            match (object.get(field), wanted) {
                (Some(Value::String(have)), Value::String(want)) => same_text(have, want),
                (Some(have), want) => have == want,
                (None, _) => false,
            }
        })
    }
}

fn same_text(have: &str, want: &str) -> bool {
    match (have.parse::<Guid>(), want.parse::<Guid>()) {
        (Ok(a), Ok(b)) => a == b,
        _ => have == want,
    }
}

/// Formats enumeration results: a JSON array of GUID strings.
pub fn id_list(ids: &[Guid]) -> String {
    let strings: Vec<String> = ids.iter().map(|id| id.to_upper_string()).collect();
    serde_json::to_string(&strings).unwrap_or_else(|_| "[]".to_owned())
}

/// Health data added to detailed replies. HNS's real content is not documented;
/// the emulator reports an empty, well-formed object so detailed queries differ
/// observably from plain ones.
pub fn detailed_health() -> Value {
    serde_json::json!({ "Data": {}, "Extra": { "Resources": {}, "SharedContainers": [] } })
}
