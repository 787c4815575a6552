//! The one seam between the shared core and a plugin: what kind of HNS network it attaches to.
//!
//! win-bridge implements it for L2Bridge/L2Tunnel networks; win-overlay for Overlay networks.
//! Everything else (config model, policy composition, IPAM, the endpoint life cycle, results,
//! errors, the host features an address family needs) is the core's, so a plugin is its
//! implementation of this trait and a `main`.

use std::fmt;
use std::net::IpAddr;

use cni::Error;
use hns::schema::{EndpointPolicy, HostComputeNetwork, IpPrefix, MacAddress, Subnet};
use ipnetwork::IpNetwork;
use serde::de::DeserializeOwned;

/// An OutBoundNAT exception a plugin contributes, with where it came from, so a message about
/// the merged policy can name the key or HNS object to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatException {
    /// The config key or HNS object it came from, e.g. `"ipMasqNetwork"`.
    pub source: String,
    /// The destinations that are not SNATed.
    pub network: IpNetwork,
}

impl NatException {
    /// Parses `text` as the exception's CIDR. A bare address is refused: in these keys it is
    /// almost always a forgotten `/prefix`, and HNS would except a single host silently.
    pub fn parse(source: impl Into<String>, text: &str) -> Result<NatException, Error> {
        let source = source.into();
        match text.trim().parse::<IpPrefix>() {
            Ok(prefix) => Ok(NatException {
                source,
                network: prefix.network(),
            }),
            Err(_) => Err(Error::invalid_config(format!(
                "{source}: {text:?} is not a CIDR (expected e.g. 10.244.0.0/16)"
            ))),
        }
    }
}

/// A plugin's kind of network, built from the plugin's own config keys. It is the plugin's
/// config: once built it is valid, so no hook has to check it again.
pub trait NetworkKind: fmt::Debug + Sized {
    /// The plugin's name (its binary and config `type`), used in messages.
    const PLUGIN: &'static str;

    /// The HNS network types this plugin attaches to, in HCN's spelling (anything else is
    /// refused: attaching a bridge endpoint to an overlay network breaks the node's routing).
    const NETWORK_TYPES: &'static [&'static str];

    /// Whether the kind reads the network's policies ([`NetworkKind::check_network`],
    /// [`NetworkKind::nat_exceptions`], [`NetworkKind::extra_policies`]). `HcnModifyNetwork`
    /// changes them under an unchanged network ID, so such a kind re-reads the network on
    /// every command rather than trusting the network cache's copy (one more HCN call).
    const READS_NETWORK_POLICIES: bool = false;

    /// The plugin's own config keys as they appear on the wire, decoded from the whole
    /// network config as Go decodes it (keys matched regardless of case, unknown keys
    /// ignored). Decode errors are code 7 naming the key.
    type Keys: DeserializeOwned;

    /// Checks the keys and builds the kind (code 7 naming the key), once per command: every
    /// command, STATUS and GC included, sees the same validated kind.
    fn from_keys(keys: Self::Keys) -> Result<Self, Error>;

    /// Checks the network found by name beyond its type (e.g. the overlay's VNI), for every
    /// command that uses the network.
    fn check_network(&self, network: &HostComputeNetwork) -> Result<(), Error> {
        let _ = network;
        Ok(())
    }

    /// The pod's gateway in `subnet` (an IPAM range's subnet): the next hop of the endpoint's
    /// default route and the `gateway` of the result. `holding` is the HNS subnet that
    /// contains `subnet`: the core finds it for every kind, and refuses a range outside the
    /// network's subnets, since HNS refuses every address there. `ipam_gateway` is the
    /// gateway the IPAM config sets explicitly for that range, if any. The core keeps the
    /// result out of host-local's pool, so no pod is ever given its own gateway.
    fn gateway(
        &self,
        holding: &Subnet,
        subnet: IpNetwork,
        ipam_gateway: Option<IpAddr>,
    ) -> Result<IpAddr, Error>;

    /// The endpoint's MAC, or `None` to let HNS assign one from the network's pool.
    fn mac_address(&self, ips: &[IpNetwork]) -> Result<Option<MacAddress>, Error> {
        let _ = ips;
        Ok(None)
    }

    /// Exceptions merged into the endpoint's single OutBoundNAT policy besides the user's own.
    fn nat_exceptions(&self, network: &HostComputeNetwork) -> Result<Vec<NatException>, Error> {
        let _ = network;
        Ok(Vec::new())
    }

    /// Policies the plugin adds after the shared ones (e.g. the overlay's ProviderAddress).
    fn extra_policies(
        &self,
        network: &HostComputeNetwork,
        ips: &[IpNetwork],
    ) -> Result<Vec<EndpointPolicy>, Error> {
        let _ = (network, ips);
        Ok(Vec::new())
    }

    /// What else an IPv6 address needs on this kind of network besides HNS dual-stack
    /// support, appended to the message when the host lacks it (e.g. a Windows build).
    fn ipv6_caveat(&self) -> Option<&'static str> {
        None
    }
}
