//! The query document of `HcnEnumerate*` and `HcnQuery*Properties`.

use serde::{Deserialize, Serialize};

use super::SchemaVersion;
use super::flags::QueryFlags;
use crate::guid::Guid;

/// `{"SchemaVersion":{...},"Flags":0,"Filter":"<JSON string>"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HostComputeQuery {
    /// Schema 2.0.
    #[serde(default)]
    pub schema_version: SchemaVersion,
    /// How much detail to return (always written, as hcsshim does).
    #[serde(default)]
    pub flags: QueryFlags,
    /// A JSON object encoded as a string, e.g. `{"Name":"cbr0"}`; empty = everything.
    #[serde(default)]
    pub filter: String,
}

impl HostComputeQuery {
    /// Matches every object.
    pub fn all() -> HostComputeQuery {
        HostComputeQuery::default()
    }

    /// Filter `{"ID":"<guid>"}`.
    pub fn by_id(id: Guid) -> HostComputeQuery {
        HostComputeQuery::filtered(serde_json::json!({ "ID": id.to_string() }))
    }

    /// Filter `{"Name":"<name>"}`: one enumeration finds an object by name, no per-object queries.
    pub fn by_name(name: &str) -> HostComputeQuery {
        HostComputeQuery::filtered(serde_json::json!({ "Name": name }))
    }

    /// Endpoints of a network: filter `{"VirtualNetwork":"<guid>"}` (the key hcsshim uses).
    pub fn by_network(network: Guid) -> HostComputeQuery {
        HostComputeQuery::filtered(serde_json::json!({ "VirtualNetwork": network.to_string() }))
    }

    /// Asks for detailed properties.
    pub fn detailed(mut self) -> HostComputeQuery {
        self.flags |= QueryFlags::DETAILED;
        self
    }

    /// The document as sent to HCN.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    fn filtered(filter: serde_json::Value) -> HostComputeQuery {
        HostComputeQuery {
            filter: filter.to_string(),
            ..HostComputeQuery::default()
        }
    }
}
