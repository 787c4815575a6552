//! `HostComputeEndpoint`.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::SchemaVersion;
use super::address::{MacAddress, empty_as_none};
use super::flags::EndpointFlags;
use super::network::{Dns, Route};
use super::policy::EndpointPolicy;
use crate::guid::Guid;

/// An HCN endpoint: one container network interface on a network.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HostComputeEndpoint {
    /// Endpoint GUID.
    #[serde(rename = "ID", default, skip_serializing_if = "Guid::is_zero")]
    pub id: Guid,
    /// Endpoint name (the reference plugins use `<sandbox>_<network>`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The network the endpoint belongs to.
    #[serde(default, skip_serializing_if = "Guid::is_zero")]
    pub host_compute_network: Guid,
    /// The namespace the endpoint is attached to. Read-only: reported by HNS after
    /// attach, and must not be set on create.
    #[serde(default, skip_serializing_if = "Guid::is_zero")]
    pub host_compute_namespace: Guid,
    /// Endpoint policies (OutBoundNAT, port mappings, ACLs, ...): the pod's dataplane rules.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<EndpointPolicy>,
    /// The pod's addresses; HNS refuses one held by another endpoint, naming it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ip_configurations: Vec<IpConfig>,
    /// DNS the pod's resolver is given.
    #[serde(default, skip_serializing_if = "Dns::is_empty")]
    pub dns: Dns,
    /// Routes (the default route's next hop is the pod's gateway).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Route>,
    /// The MAC; HNS assigns one from the network's MacPool when absent.
    #[serde(
        default,
        with = "empty_as_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub mac_address: Option<MacAddress>,
    /// Endpoint flags ([`EndpointFlags::REMOTE_ENDPOINT`] for another host's container).
    #[serde(default, skip_serializing_if = "EndpointFlags::is_empty")]
    pub flags: EndpointFlags,
    /// Health data HNS reports on detailed queries (opaque).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<serde_json::Value>,
    /// Always `{"Major":2,"Minor":0}`.
    #[serde(default)]
    pub schema_version: SchemaVersion,
}

/// One address of an endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct IpConfig {
    /// The address itself; must lie in one of the network's subnets.
    pub ip_address: IpAddr,
    /// Prefix length; HNS fills it in from the subnet when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_length: Option<u8>,
}
