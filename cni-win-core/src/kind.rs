//! The one seam between the shared core and a plugin: what kind of HNS network it attaches to.
//!
//! win-bridge implements it for L2Bridge/L2Tunnel networks; win-overlay for Overlay networks.
//! Everything else (config model, policy composition, IPAM, the endpoint life cycle, results,
//! errors) is the core's, so a plugin is its implementation of this trait and a `main`.

use std::fmt;
use std::net::IpAddr;

use cni::Error;
use hns::Feature;
use hns::schema::{EndpointPolicy, HostComputeNetwork, NetworkType};
use ipnetwork::IpNetwork;
use serde::de::DeserializeOwned;

/// A feature of the host's HNS that an ADD needs, and which config key (or input) asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub feature: Feature,
    /// What needs it, for the error message: `"loopbackDSR"`, `"an IPv6 address from ipam"`.
    pub needed_for: String,
}

/// An OutBoundNAT exception a plugin contributes, with where it came from (for error messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatException {
    /// The config key or HNS object it came from, e.g. `"ipMasqNetwork"`.
    pub source: String,
    /// A CIDR, validated by the core.
    pub cidr: String,
}

/// Plugin-specific behaviour. Implementations hold no state of their own; per-config state
/// lives in [`NetworkKind::Config`].
pub trait NetworkKind: fmt::Debug {
    /// The plugin's name (its binary and config `type`), used in messages.
    const PLUGIN: &'static str;

    /// The plugin's own config keys, decoded from the whole network config as Go decodes it
    /// (keys matched regardless of case, unknown keys ignored). Decode errors are code 7
    /// naming the key.
    type Config: DeserializeOwned + fmt::Debug;

    /// The HNS network types this plugin attaches to (anything else is code 7).
    fn network_types(&self) -> &'static [&'static str];

    /// Checks the plugin's config beyond what decoding checks (code 7 naming the key).
    fn validate(&self, config: &Self::Config) -> Result<(), Error> {
        let _ = config;
        Ok(())
    }

    /// Checks the network found by name beyond its type (e.g. the overlay's VNI).
    fn check_network(
        &self,
        config: &Self::Config,
        network: &HostComputeNetwork,
    ) -> Result<(), Error> {
        let _ = (config, network);
        Ok(())
    }

    /// The pod's gateway in `subnet` (an IPAM range's subnet): the next hop of the endpoint's
    /// default route and the `gateway` of the result. `ipam_gateway` is the gateway the IPAM
    /// config sets explicitly for that range, if any.
    fn gateway(
        &self,
        config: &Self::Config,
        network: &HostComputeNetwork,
        subnet: IpNetwork,
        ipam_gateway: Option<IpAddr>,
    ) -> Result<IpAddr, Error>;

    /// The endpoint's MAC (dash-separated), or `None` to let HNS assign one from the network's pool.
    fn mac_address(
        &self,
        config: &Self::Config,
        ips: &[IpNetwork],
    ) -> Result<Option<String>, Error> {
        let _ = (config, ips);
        Ok(None)
    }

    /// Exceptions merged into the endpoint's single OutBoundNAT policy besides the user's own.
    fn nat_exceptions(
        &self,
        config: &Self::Config,
        network: &HostComputeNetwork,
    ) -> Result<Vec<NatException>, Error> {
        let _ = (config, network);
        Ok(Vec::new())
    }

    /// Policies the plugin adds after the shared ones (e.g. the overlay's ProviderAddress).
    fn extra_policies(
        &self,
        config: &Self::Config,
        network: &HostComputeNetwork,
        ips: &[IpNetwork],
    ) -> Result<Vec<EndpointPolicy>, Error> {
        let _ = (config, network, ips);
        Ok(Vec::new())
    }

    /// HNS features this attachment needs beyond the shared ones (loopbackDSR is the core's).
    fn required_features(&self, config: &Self::Config, ips: &[IpNetwork]) -> Vec<Requirement> {
        let _ = (config, ips);
        Vec::new()
    }

    /// Whether `network_type` is one of [`NetworkKind::network_types`] (exact HCN spelling).
    fn accepts(&self, network_type: &NetworkType) -> bool {
        self.network_types()
            .iter()
            .any(|name| *name == network_type.as_str())
    }
}
