//! Modify requests: `{"ResourceType":...,"RequestType":...,"Settings":...}`.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::guid::Guid;

/// What a modify request changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResourceType {
    /// Policies of a network or endpoint.
    Policy,
    /// DNS of a network.
    #[serde(rename = "DNS")]
    Dns,
    /// A switch extension of a network.
    Extension,
    /// A switch port of an endpoint.
    Port,
    /// A container in a namespace.
    Container,
    /// An endpoint in a namespace (attach/detach).
    Endpoint,
}

/// How it changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RequestType {
    /// Attach or add (e.g. an endpoint to a namespace, a policy to an endpoint).
    Add,
    /// Detach or remove (e.g. an endpoint from a namespace on DEL).
    Remove,
    /// Replace settings in place (e.g. an endpoint's policies).
    Update,
    /// Defined by HCN and not sent by cni-win; listed so any request decodes.
    Refresh,
}

/// A modify request; `S` is the settings type (raw JSON when decoding an unknown request).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ModifyRequest<S = Box<RawValue>> {
    /// What to change.
    pub resource_type: ResourceType,
    /// Whether the resource is added, removed, updated or refreshed.
    pub request_type: RequestType,
    /// Request-specific settings.
    pub settings: S,
}

/// Settings of a namespace endpoint request: `{"EndpointId":"<guid>"}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct NamespaceEndpointSettings {
    /// The endpoint to add or remove.
    pub endpoint_id: Guid,
}

/// Settings of a policy request: `{"Policies":[...]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct PolicyList<P> {
    /// Every policy of the request: HNS applies them as one change.
    pub policies: Vec<P>,
}

impl ModifyRequest<NamespaceEndpointSettings> {
    /// Attach (`Add`) or detach (`Remove`) an endpoint.
    pub fn namespace_endpoint(request_type: RequestType, endpoint_id: Guid) -> Self {
        ModifyRequest {
            resource_type: ResourceType::Endpoint,
            request_type,
            settings: NamespaceEndpointSettings { endpoint_id },
        }
    }
}

impl<P> ModifyRequest<PolicyList<P>> {
    /// Add, remove or update policies of a network or endpoint.
    pub fn policies(request_type: RequestType, policies: Vec<P>) -> Self {
        ModifyRequest {
            resource_type: ResourceType::Policy,
            request_type,
            settings: PolicyList { policies },
        }
    }
}

impl<S: Serialize> ModifyRequest<S> {
    /// The document as sent to HCN.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}
