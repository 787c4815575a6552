//! `HostComputeNamespace`: a network compartment (containerd makes one per pod).

use serde::{Deserialize, Serialize};

use super::{SchemaVersion, is_zero};
use crate::guid::Guid;

/// An HCN namespace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HostComputeNamespace {
    /// Namespace GUID (containerd passes it to CNI as `CNI_NETNS`).
    #[serde(rename = "ID", default, skip_serializing_if = "Guid::is_zero")]
    pub id: Guid,
    /// Compartment number assigned by HNS.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub namespace_id: u32,
    /// Host or guest: whether the pod is process-isolated or runs in a utility VM.
    #[serde(rename = "Type", default)]
    pub namespace_type: NamespaceType,
    /// Endpoints and containers in the namespace.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<NamespaceResource>,
    /// Always `{"Major":2,"Minor":0}`.
    #[serde(default)]
    pub schema_version: SchemaVersion,
}

impl HostComputeNamespace {
    /// IDs of the endpoints listed in `Resources`.
    pub fn endpoint_ids(&self) -> impl Iterator<Item = Guid> + '_ {
        self.resources
            .iter()
            .filter_map(NamespaceResource::endpoint_id)
    }
}

/// Where a namespace lives: process-isolated pods get `Host`, Hyper-V ones a guest's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum NamespaceType {
    /// A host namespace (what containerd creates for a process-isolated pod).
    #[default]
    Host,
    /// The host's own compartment; plugins never attach pod endpoints to it.
    HostDefault,
    /// A guest (Hyper-V isolated) namespace.
    Guest,
    /// A utility VM's own compartment; listed so such namespaces decode.
    GuestDefault,
}

/// One entry of `Resources`: `{"Type":"Endpoint","Data":{"ID":"<GUID>"}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct NamespaceResource {
    /// `Endpoint` or `Container`.
    #[serde(rename = "Type")]
    pub resource_type: String,
    /// Resource data; for endpoints `{"ID": ...}`.
    #[serde(default)]
    pub data: serde_json::Value,
}

impl NamespaceResource {
    /// An endpoint resource, ID upper-cased as HNS reports it.
    pub fn endpoint(id: Guid) -> NamespaceResource {
        NamespaceResource {
            resource_type: "Endpoint".to_owned(),
            data: serde_json::json!({ "ID": id.to_upper_string() }),
        }
    }

    /// The endpoint a resource entry names, so attach checks can see what a namespace holds.
    /// HNS spells the key `ID` in some replies and `Id` in others; it is read in any case.
    pub fn endpoint_id(&self) -> Option<Guid> {
        if !self.resource_type.eq_ignore_ascii_case("Endpoint") {
            return None;
        }
        let data = self.data.as_object()?;
        data.get("ID")
            .or_else(|| {
                data.iter()
                    .find(|(key, _)| key.eq_ignore_ascii_case("ID"))
                    .map(|(_, id)| id)
            })
            .and_then(|id| id.as_str())
            .and_then(|id| id.parse().ok())
    }
}
