//! `HostComputeNetwork` and its parts.

use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::SchemaVersion;
use super::address::{IpPrefix, MacAddress, empty_as_none};
use super::flags::{NetworkFlags, SubnetFlags};
use super::policy::{NetworkPolicy, SubnetPolicy};
use crate::guid::Guid;

/// An HCN network.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HostComputeNetwork {
    /// Network GUID (omitted when zero, e.g. on create).
    #[serde(rename = "ID", default, skip_serializing_if = "Guid::is_zero")]
    pub id: Guid,
    /// Network name (what CNI configs refer to).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Network type; a document without `Type` is a NAT network.
    #[serde(rename = "Type", default)]
    pub network_type: NetworkType,
    /// Network-wide policies (`ProviderAddress`, `VxlanPort`, ...) that the plugins check.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<NetworkPolicy>,
    /// MAC ranges HNS assigns endpoint MACs from.
    #[serde(default, skip_serializing_if = "MacPool::is_empty")]
    pub mac_pool: MacPool,
    /// DNS HNS gives endpoints that set none of their own.
    #[serde(default, skip_serializing_if = "Dns::is_empty")]
    pub dns: Dns,
    /// Address management: the network's subnets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ipams: Vec<Ipam>,
    /// Network flags (e.g. `EnableNonPersistent`: dropped on reboot).
    #[serde(default, skip_serializing_if = "NetworkFlags::is_empty")]
    pub flags: NetworkFlags,
    /// Health data HNS reports on detailed queries (opaque).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<serde_json::Value>,
    /// Always `{"Major":2,"Minor":0}`.
    #[serde(default)]
    pub schema_version: SchemaVersion,
}

impl HostComputeNetwork {
    /// All subnets of all IPAMs, in order.
    pub fn subnets(&self) -> impl Iterator<Item = &Subnet> {
        self.ipams.iter().flat_map(|ipam| ipam.subnets.iter())
    }

    /// The first network policy matching `pick`, e.g. the `ProviderAddress` of an overlay network.
    pub fn find_policy<T>(&self, pick: impl FnMut(&NetworkPolicy) -> Option<T>) -> Option<T> {
        self.policies.iter().find_map(pick)
    }
}

/// HCN network types.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum NetworkType {
    /// `NAT` (also what a document without `Type` means).
    #[default]
    Nat,
    /// `Transparent`: endpoints bridged to the physical network; refused by both plugins.
    Transparent,
    /// `L2Bridge` (win-bridge, flannel host-gw).
    L2Bridge,
    /// `L2Tunnel`: `L2Bridge` with all traffic sent via the virtualization host; win-bridge takes it.
    L2Tunnel,
    /// `ICS`: Internet Connection Sharing (Docker Desktop); refused by both plugins.
    Ics,
    /// `Private`: host-only, no external traffic; refused by both plugins.
    Private,
    /// `Overlay` (win-overlay, flannel vxlan).
    Overlay,
    /// A type this crate does not know, kept as written.
    Other(String),
}

impl NetworkType {
    const KNOWN: [(&'static str, NetworkType); 7] = [
        ("NAT", NetworkType::Nat),
        ("Transparent", NetworkType::Transparent),
        ("L2Bridge", NetworkType::L2Bridge),
        ("L2Tunnel", NetworkType::L2Tunnel),
        ("ICS", NetworkType::Ics),
        ("Private", NetworkType::Private),
        ("Overlay", NetworkType::Overlay),
    ];

    /// The HCN spelling.
    pub fn as_str(&self) -> &str {
        match self {
            NetworkType::Other(name) => name,
            known => NetworkType::KNOWN
                .iter()
                .find(|(_, kind)| kind == known)
                .map_or("", |(name, _)| name),
        }
    }

    /// Parses a type name case-insensitively; unknown names become [`NetworkType::Other`].
    pub fn parse(name: &str) -> NetworkType {
        NetworkType::KNOWN
            .iter()
            .find(|(known, _)| known.eq_ignore_ascii_case(name))
            .map_or_else(
                || NetworkType::Other(name.to_owned()),
                |(_, kind)| kind.clone(),
            )
    }
}

impl From<String> for NetworkType {
    fn from(name: String) -> NetworkType {
        NetworkType::parse(&name)
    }
}

impl From<NetworkType> for String {
    fn from(kind: NetworkType) -> String {
        kind.as_str().to_owned()
    }
}

impl fmt::Display for NetworkType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// `MacPool`: ranges of MACs HNS hands to endpoints created without one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct MacPool {
    /// The ranges HNS draws MACs from for endpoints created without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranges: Vec<MacRange>,
}

impl MacPool {
    /// True when there are no ranges.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

/// One MAC range, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct MacRange {
    /// First MAC of the range.
    pub start_mac_address: MacAddress,
    /// Last MAC of the range, inclusive.
    pub end_mac_address: MacAddress,
}

/// DNS settings of a network or endpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Dns {
    /// Search domain for unqualified names.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub domain: String,
    /// Suffixes tried in order when a short name does not resolve.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub search: Vec<String>,
    /// Name servers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_list: Vec<IpAddr>,
    /// Resolver options (e.g. `ndots:5`), passed through from the CNI config.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

impl Dns {
    /// True when nothing is set.
    pub fn is_empty(&self) -> bool {
        self.domain.is_empty()
            && self.search.is_empty()
            && self.server_list.is_empty()
            && self.options.is_empty()
    }
}

/// One IPAM block of a network.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Ipam {
    /// `Static` or `DHCP`.
    #[serde(rename = "Type", default, skip_serializing_if = "String::is_empty")]
    pub ipam_type: String,
    /// The subnets; endpoint addresses must lie in one of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subnets: Vec<Subnet>,
}

/// A subnet of a network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Subnet {
    /// The subnet, e.g. `10.244.1.0/24`.
    pub ip_address_prefix: IpPrefix,
    /// Subnet policies (`VSID`, `VLAN`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub policies: Vec<SubnetPolicy>,
    /// Routes; the default route's next hop is the subnet gateway.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Route>,
    /// Subnet flags (e.g. whether the gateway address is reserved).
    #[serde(default, skip_serializing_if = "SubnetFlags::is_empty")]
    pub flags: SubnetFlags,
}

impl Subnet {
    /// A subnet with no routes, policies or flags (HNS reserves no gateway in it).
    pub fn new(ip_address_prefix: IpPrefix) -> Subnet {
        Subnet {
            ip_address_prefix,
            policies: Vec::new(),
            routes: Vec::new(),
            flags: SubnetFlags::NONE,
        }
    }

    /// A subnet whose default route goes through `gateway`, as `HcnCreateNetwork` requires.
    pub fn with_gateway(ip_address_prefix: IpPrefix, gateway: IpAddr) -> Subnet {
        Subnet {
            routes: vec![Route::default_via(gateway)],
            ..Subnet::new(ip_address_prefix)
        }
    }

    /// The next hop of the default route (`0.0.0.0/0` or `::/0`), i.e. the gateway.
    pub fn gateway(&self) -> Option<IpAddr> {
        self.routes
            .iter()
            .find(|route| route.destination_prefix.is_default_route())
            .and_then(|route| route.next_hop)
    }
}

/// A route of a subnet or endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Route {
    /// Where packets for the destination go; for the default route, the pod gateway.
    #[serde(
        default,
        with = "empty_as_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_hop: Option<IpAddr>,
    /// The destination this route covers.
    pub destination_prefix: IpPrefix,
    /// Route preference; lower wins, absent lets HNS choose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<u16>,
}

impl Route {
    /// The default route of `gateway`'s family, through it.
    pub fn default_via(gateway: IpAddr) -> Route {
        Route {
            next_hop: Some(gateway),
            destination_prefix: IpPrefix::default_route_for(gateway),
            metric: None,
        }
    }
}
