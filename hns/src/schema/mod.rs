//! The V2 JSON documents HCN exchanges, with HCN's exact key spelling.
//!
//! Replies may carry keys this crate does not model (HNS adds fields over
//! time); they are ignored when decoding. Empty optional members are omitted
//! when encoding, and empty objects such as `"Dns":{}` (which hcsshim always
//! sends) are accepted.

mod endpoint;
mod flags;
mod load_balancer;
mod modify;
mod namespace;
mod network;
pub mod policy;
mod query;
pub mod v1;

use serde::{Deserialize, Serialize};

pub use endpoint::{HostComputeEndpoint, IpConfig};
pub use flags::{EndpointFlags, NetworkFlags, SubnetFlags};
pub use load_balancer::{HostComputeLoadBalancer, LoadBalancerPortMapping, load_balancer_flags};
pub use modify::{ModifyRequest, NamespaceEndpointSettings, PolicyList, RequestType, ResourceType};
pub use namespace::{HostComputeNamespace, NamespaceResource, NamespaceType};
pub use network::{Dns, HostComputeNetwork, Ipam, MacPool, MacRange, NetworkType, Route, Subnet};
pub use policy::{EndpointPolicy, NetworkPolicy, RawPolicy, SubnetPolicy};
pub use query::{HostComputeQuery, query_flags};

/// `{"Major":2,"Minor":0}`: the schema version every V2 document carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct SchemaVersion {
    /// Major version (2 for HCN V2).
    pub major: u32,
    /// Minor version (0: cni-win writes schema 2.0 documents).
    pub minor: u32,
}

impl SchemaVersion {
    /// Schema 2.0, what hcsshim sends.
    pub const V2: SchemaVersion = SchemaVersion { major: 2, minor: 0 };
}

impl Default for SchemaVersion {
    fn default() -> SchemaVersion {
        SchemaVersion::V2
    }
}

pub(crate) fn is_zero(value: &u32) -> bool {
    *value == 0
}
