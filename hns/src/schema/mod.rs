//! The V2 JSON documents HCN exchanges, with HCN's exact key spelling.
//!
//! Replies may carry keys this crate does not model (HNS adds fields over
//! time); they are ignored when decoding. Empty optional members are omitted
//! when encoding, and empty objects such as `"Dns":{}` (which hcsshim always
//! sends) are accepted.

mod address;
mod endpoint;
mod flags;
mod keys;
mod load_balancer;
mod modify;
mod namespace;
mod network;
pub mod policy;
mod query;
pub mod v1;

use serde::{Deserialize, Serialize};

pub use address::{AddressOrPrefix, AddressParseError, IpPrefix, MacAddress};
pub use endpoint::{HostComputeEndpoint, IpConfig};
pub use flags::{
    EndpointFlags, LoadBalancerFlags, LoadBalancerPortMappingFlags, NatFlags, NetworkFlags,
    QueryFlags, SubnetFlags,
};
pub use load_balancer::{HostComputeLoadBalancer, LoadBalancerPortMapping};
pub use modify::{ModifyRequest, NamespaceEndpointSettings, PolicyList, RequestType, ResourceType};
pub use namespace::{HostComputeNamespace, NamespaceResource, NamespaceType};
pub use network::{Dns, HostComputeNetwork, Ipam, MacPool, MacRange, NetworkType, Route, Subnet};
pub use policy::{EndpointPolicy, NetworkPolicy, RawPolicy, SubnetPolicy};
pub use query::HostComputeQuery;

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

/// A document that did not decode, with the path of the field that did not fit.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct DecodeError {
    path: String,
    #[source]
    source: serde_json::Error,
}

impl DecodeError {
    /// Where in the document decoding stopped, e.g. `Ipams[0].Subnets[1].IpAddressPrefix`
    /// (`.` when the document itself is not JSON of the right shape).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether the text is not JSON at all, as opposed to JSON with a value that does not fit.
    pub fn is_syntax(&self) -> bool {
        self.source.is_syntax() || self.source.is_eof()
    }
}

/// Decodes a document, naming the field that does not fit when it fails: every value is
/// parsed here, once, so a consumer past this point holds typed addresses only.
pub fn decode<T: serde::de::DeserializeOwned>(json: &str) -> Result<T, DecodeError> {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| DecodeError {
        path: e.path().to_string(),
        source: e.into_inner(),
    })?;
    deserializer.end().map_err(|source| DecodeError {
        path: ".".to_owned(),
        source,
    })?;
    Ok(value)
}

pub(crate) fn is_zero(value: &u32) -> bool {
    *value == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_names_the_field_that_does_not_fit() {
        let endpoint = r#"{"Policies":[{"Type":"OutBoundNAT","Settings":{"Exceptions":["10.0.0.0/8"]}}],
            "IpConfigurations":[{"IpAddress":"10.244.1.5"},{"IpAddress":"10.244.1"}]}"#;
        let error = decode::<HostComputeEndpoint>(endpoint).unwrap_err();
        assert_eq!(error.path(), "IpConfigurations[1].IpAddress");
        assert!(!error.is_syntax());
        let network = r#"{"Name":"cbr0","Ipams":[{"Subnets":[{"IpAddressPrefix":"10.244.1.0"}]}]}"#;
        let error = decode::<HostComputeNetwork>(network).unwrap_err();
        assert_eq!(error.path(), "Ipams[0].Subnets[0].IpAddressPrefix");
        assert!(
            error.to_string().contains("is not a CIDR prefix"),
            "{error}"
        );
        assert!(decode::<HostComputeNetwork>("{").unwrap_err().is_syntax());
        assert!(
            decode::<HostComputeNetwork>("{} x")
                .unwrap_err()
                .is_syntax()
        );
    }

    #[test]
    fn decode_keeps_policies_it_cannot_type() {
        let endpoint = r#"{"Policies":[{"Type":"OutBoundNAT","Settings":{"Exceptions":["10.0.0.0/8"]}},
            {"Type":"ProviderAddress","Settings":{"ProviderAddress":"bogus"}}]}"#;
        let decoded: HostComputeEndpoint = decode(endpoint).unwrap();
        assert!(matches!(
            decoded.policies[0],
            EndpointPolicy::OutboundNat(_)
        ));
        assert!(matches!(decoded.policies[1], EndpointPolicy::Other(_)));
        assert!(
            decoded.policies[1]
                .misfit()
                .unwrap()
                .contains("ProviderAddress")
        );
        // A documented type without a typed variant is HNS's to judge, whatever its keys.
        let unmodelled: EndpointPolicy =
            decode(r#"{"Type":"L4WFPPROXY","Settings":{"InboundProxyPort":"15001"},"Id":"x"}"#)
                .unwrap();
        assert_eq!(unmodelled.misfit(), None);
        let extra_key: EndpointPolicy = decode(
            r#"{"Type":"ProviderAddress","Settings":{"ProviderAddress":"10.0.0.1"},"Id":"x"}"#,
        )
        .unwrap();
        assert!(extra_key.misfit().unwrap().contains("top level"));
    }
}
