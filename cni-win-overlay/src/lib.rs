//! win-overlay: pods on HNS `Overlay` (VXLAN) networks, such as the one Flannel's vxlan backend
//! creates. Everything but what this file decides lives in `cni_win_core`.
//!
//! What is overlay-specific:
//! - networks of type `Overlay`, whose VXLAN identity is checked rather than assumed: every
//!   subnet's `VSID` policy must equal `vni` (default 4096; Windows needs at least 4096), and a
//!   `VxlanPort` network policy, where HNS shows one, must equal `vxlanPort` (default 4789);
//! - the pod gateway is the default-route next hop of the HNS subnet holding the pod's address
//!   (Flannel's x.1), as in the reference; an `ipam` gateway is ignored;
//! - the MAC is `endpointMacPrefix` (default `0E-2A`) followed by the four bytes of the pod's
//!   IPv4 address, upper-case as HNS writes MACs (`0E-2A-0A-F4-01-05` for 10.244.1.5). A
//!   dual-stack pod takes it from its IPv4 address; an IPv6-only pod is refused (code 7), since
//!   HNS has no IPv6-only overlay;
//! - a `ProviderAddress` endpoint policy with the network's provider address (the host's
//!   management IP, which HNS adds to the network shortly after flanneld creates it: until then
//!   ADD is code 11);
//! - `ipMasq: true` adds the network's own subnets to the merged OutBoundNAT's exceptions
//!   (`ipMasqNetwork`, which Flannel also renders, is ignored, as by the reference);
//! - an IPv6 address needs, besides the HNS dual-stack support the core checks for every kind
//!   (11.10 and later), Windows build 22410 or later, which the message says.
//!
//! Port mappings, loopback DSR, DNS and user policies are the core's, so they work here too
//! (the reference win-overlay ignores port mappings).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::net::IpAddr;

use cni::Error;
use cni_win_core::{NatException, NetworkKind};
use hns::schema::policy::ProviderAddressPolicy;
use hns::schema::{
    EndpointPolicy, HostComputeNetwork, MacAddress, NetworkPolicy, Subnet, SubnetPolicy,
};
use ipnetwork::IpNetwork;
use serde::Deserialize;

/// The smallest VNI Windows accepts for VXLAN (flanneld refuses less on Windows).
pub const MIN_VNI: u32 = 4096;
/// Flannel's Windows VNI and the default of `vni`.
pub const DEFAULT_VNI: u32 = 4096;
/// The VXLAN port Flannel uses on Windows (the only one Windows Server 2019 supports).
pub const DEFAULT_VXLAN_PORT: u16 = 4789;
/// The reference's default `endpointMacPrefix`.
pub const DEFAULT_MAC_PREFIX: &str = "0E-2A";

/// win-overlay's kind, built from its own config keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlay {
    /// `ipMasq`: do not SNAT traffic to the network's own subnets.
    ip_masq: bool,
    /// `endpointMacPrefix`: the first two bytes of every endpoint MAC.
    mac_prefix: [u8; 2],
    /// `vni`: the VXLAN network identifier the HNS network must carry (its subnets' VSID).
    vni: u32,
    /// `vxlanPort`: the VXLAN UDP port the HNS network must use, where it says.
    vxlan_port: u16,
}

/// win-overlay's own config keys as written.
#[derive(Debug, Deserialize)]
#[serde(default)]
pub struct OverlayKeys {
    /// Flannel sets it from `FLANNEL_IPMASQ`.
    #[serde(rename = "ipMasq")]
    ip_masq: bool,
    #[serde(rename = "endpointMacPrefix")]
    endpoint_mac_prefix: String,
    vni: u32,
    #[serde(rename = "vxlanPort")]
    vxlan_port: u16,
}

impl Default for OverlayKeys {
    fn default() -> OverlayKeys {
        OverlayKeys {
            ip_masq: false,
            endpoint_mac_prefix: DEFAULT_MAC_PREFIX.to_owned(),
            vni: DEFAULT_VNI,
            vxlan_port: DEFAULT_VXLAN_PORT,
        }
    }
}

/// The prefix's two bytes; `None` unless it is `xx-xx` in hex with a unicast first byte
/// (empty means the default).
fn parse_mac_prefix(text: &str) -> Option<[u8; 2]> {
    let text = text.trim();
    let text = if text.is_empty() {
        DEFAULT_MAC_PREFIX
    } else {
        text
    };
    let (high, low) = text.split_once('-')?;
    let byte = |part: &str| {
        (part.len() == 2)
            .then(|| u8::from_str_radix(part, 16).ok())
            .flatten()
    };
    let bytes = [byte(high)?, byte(low)?];
    (bytes[0] & 1 == 0).then_some(bytes)
}

impl NetworkKind for Overlay {
    const PLUGIN: &'static str = "win-overlay";
    const NETWORK_TYPES: &'static [&'static str] = &["Overlay"];
    // The ProviderAddress and VxlanPort policies are read from the network.
    const READS_NETWORK_POLICIES: bool = true;
    type Keys = OverlayKeys;

    fn from_keys(keys: OverlayKeys) -> Result<Overlay, Error> {
        let Some(mac_prefix) = parse_mac_prefix(&keys.endpoint_mac_prefix) else {
            return Err(Error::invalid_config(format!(
                "endpointMacPrefix: {} is invalid; it must be two hex bytes as xx-xx with an even \
                 (unicast) first byte, e.g. {DEFAULT_MAC_PREFIX}",
                cni::quoted(&keys.endpoint_mac_prefix)
            )));
        };
        if keys.vni < MIN_VNI {
            return Err(Error::invalid_config(format!(
                "vni: {} is below {MIN_VNI}, the smallest VXLAN VNI Windows accepts (Flannel's \
                 Windows default is {DEFAULT_VNI})",
                keys.vni
            )));
        }
        Ok(Overlay {
            ip_masq: keys.ip_masq,
            mac_prefix,
            vni: keys.vni,
            vxlan_port: keys.vxlan_port,
        })
    }

    fn check_network(&self, network: &HostComputeNetwork) -> Result<(), Error> {
        let name = &network.name;
        let vsids: Vec<u32> = network
            .subnets()
            .flat_map(|subnet| &subnet.policies)
            .filter_map(|policy| match policy {
                SubnetPolicy::Vsid(vsid) => Some(vsid.isolation_id),
                _ => None,
            })
            .collect();
        if vsids.is_empty() {
            return Err(Error::invalid_config(format!(
                "HNS network {name:?} has no VSID subnet policy, so its VXLAN VNI is unknown; \
                 win-overlay needs the network flanneld's vxlan backend creates"
            )));
        }
        if let Some(vsid) = vsids.iter().find(|vsid| **vsid != self.vni) {
            return Err(Error::invalid_config(format!(
                "HNS network {name:?} has VSID {vsid} but the config's vni is {}; set \"vni\": \
                 {vsid} (Flannel's backend VNI) or point \"name\" at the right network",
                self.vni
            )));
        }
        let port = network.find_policy(|policy| match policy {
            NetworkPolicy::VxlanPort(port) => Some(port.port),
            _ => None,
        });
        match port {
            Some(port) if port != self.vxlan_port => Err(Error::invalid_config(format!(
                "HNS network {name:?} uses VXLAN port {port} but the config's vxlanPort is {}; \
                 set \"vxlanPort\": {port} or fix the network (Flannel on Windows uses {DEFAULT_VXLAN_PORT})",
                self.vxlan_port
            ))),
            _ => Ok(()),
        }
    }

    fn gateway(
        &self,
        holding: &Subnet,
        _subnet: IpNetwork,
        _ipam_gateway: Option<IpAddr>,
    ) -> Result<IpAddr, Error> {
        holding.gateway().ok_or_else(|| {
            Error::invalid_config(format!(
                "HNS subnet {} has no default route, so there is no gateway for pods",
                holding.ip_address_prefix
            ))
        })
    }

    fn mac_address(&self, ips: &[IpNetwork]) -> Result<Option<MacAddress>, Error> {
        let [high, low] = self.mac_prefix;
        let Some(IpAddr::V4(ipv4)) = ips.iter().map(IpNetwork::ip).find(IpAddr::is_ipv4) else {
            return Err(Error::invalid_config(
                "ipam gave no IPv4 address: win-overlay derives the endpoint MAC from it and HNS \
                 has no IPv6-only overlay; add an IPv4 range to ipam",
            ));
        };
        let [a, b, c, d] = ipv4.octets();
        Ok(Some(MacAddress::new([high, low, a, b, c, d])))
    }

    fn nat_exceptions(&self, network: &HostComputeNetwork) -> Result<Vec<NatException>, Error> {
        if !self.ip_masq {
            return Ok(Vec::new());
        }
        network
            .subnets()
            .map(|subnet| {
                Ok(NatException {
                    source: format!("ipMasq (HNS network {:?} subnet)", network.name),
                    network: subnet.ip_address_prefix.network(),
                })
            })
            .collect()
    }

    fn extra_policies(
        &self,
        network: &HostComputeNetwork,
        _ips: &[IpNetwork],
    ) -> Result<Vec<EndpointPolicy>, Error> {
        let provider_address = network
            .find_policy(|policy| match policy {
                NetworkPolicy::ProviderAddress(pa) => Some(pa.provider_address),
                _ => None,
            })
            .ok_or_else(|| {
                Error::try_again_later(format!(
                    "HNS network {:?} has no ProviderAddress policy (the host's management IP) yet: \
                     HNS adds it shortly after flanneld creates the network",
                    network.name
                ))
            })?;
        Ok(vec![EndpointPolicy::ProviderAddress(
            ProviderAddressPolicy { provider_address },
        )])
    }

    fn ipv6_caveat(&self) -> Option<&'static str> {
        Some("overlay dual-stack; it also needs Windows build 22410 or later")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hns::schema::policy::{IsolationIdPolicy, VxlanPortPolicy};
    use hns::schema::{Ipam, Subnet};

    fn overlay(json: &str) -> Result<Overlay, Error> {
        Overlay::from_keys(serde_json::from_str(json).unwrap())
    }

    fn config(json: &str) -> Overlay {
        overlay(json).unwrap()
    }

    fn network(vsid: Option<u32>, port: Option<u16>) -> HostComputeNetwork {
        HostComputeNetwork {
            name: "flannel.4096".into(),
            ipams: vec![Ipam {
                ipam_type: "Static".into(),
                subnets: vec![Subnet {
                    policies: vsid
                        .map(|isolation_id| SubnetPolicy::Vsid(IsolationIdPolicy { isolation_id }))
                        .into_iter()
                        .collect(),
                    ..Subnet::with_gateway(
                        "10.244.1.0/24".parse().unwrap(),
                        "10.244.1.1".parse().unwrap(),
                    )
                }],
            }],
            policies: port
                .map(|port| NetworkPolicy::VxlanPort(VxlanPortPolicy { port }))
                .into_iter()
                .collect(),
            ..HostComputeNetwork::default()
        }
    }

    #[test]
    fn defaults_are_flannels() {
        let config = config("{}");
        assert_eq!(
            (config.vni, config.vxlan_port, config.mac_prefix),
            (4096, 4789, [0x0E, 0x2A])
        );
    }

    #[test]
    fn the_mac_prefix_must_be_two_unicast_hex_bytes() {
        for good in ["0E-2A", "0e-2a", "02-00", ""] {
            assert!(
                overlay(&format!(r#"{{"endpointMacPrefix": "{good}"}}"#)).is_ok(),
                "{good}"
            );
        }
        for bad in ["0E2A", "0E-2", "0G-2A", "0E:2A", "01-00", "0E-2A-00"] {
            let msg = overlay(&format!(r#"{{"endpointMacPrefix": "{bad}"}}"#))
                .unwrap_err()
                .msg()
                .to_owned();
            assert!(msg.contains("endpointMacPrefix"), "{bad}: {msg}");
        }
    }

    #[test]
    fn the_mac_is_the_prefix_and_the_ipv4_bytes() {
        let c = config(r#"{"endpointMacPrefix": "0e-2b"}"#);
        let ips = [
            "fd00::5/64".parse().unwrap(),
            "10.244.1.5/24".parse().unwrap(),
        ];
        assert_eq!(
            c.mac_address(&ips)
                .unwrap()
                .map(|mac| mac.to_string())
                .as_deref(),
            Some("0E-2B-0A-F4-01-05")
        );
        let v6_only = c.mac_address(&ips[..1]).unwrap_err();
        assert!(v6_only.msg().contains("IPv4"), "{}", v6_only.msg());
    }

    #[test]
    fn a_vni_below_4096_is_refused() {
        let msg = overlay(r#"{"vni": 1}"#).unwrap_err().msg().to_owned();
        assert!(msg.contains("vni") && msg.contains("4096"), "{msg}");
    }

    #[test]
    fn the_network_must_carry_the_configured_vni_and_port() {
        let c = config("{}");
        assert!(c.check_network(&network(Some(4096), Some(4789))).is_ok());
        assert!(c.check_network(&network(Some(4096), None)).is_ok());
        let vni = c.check_network(&network(Some(4097), None)).unwrap_err();
        assert!(
            vni.msg().contains("4097") && vni.msg().contains("4096"),
            "{}",
            vni.msg()
        );
        let port = c
            .check_network(&network(Some(4096), Some(8472)))
            .unwrap_err();
        assert!(
            port.msg().contains("8472") && port.msg().contains("4789"),
            "{}",
            port.msg()
        );
        let none = c.check_network(&network(None, None)).unwrap_err();
        assert!(none.msg().contains("VSID"), "{}", none.msg());
    }

    #[test]
    fn the_gateway_is_the_hns_subnets() {
        let c = config("{}");
        let net = network(Some(4096), None);
        let holding = net.subnets().next().unwrap();
        let gateway = c.gateway(holding, "10.244.1.128/25".parse().unwrap(), None);
        assert_eq!(gateway.unwrap().to_string(), "10.244.1.1");
        let no_route = Subnet::new(holding.ip_address_prefix);
        let error = c.gateway(&no_route, "10.244.1.0/24".parse().unwrap(), None);
        assert!(error.unwrap_err().msg().contains("no default route"));
    }

    #[test]
    fn ip_masq_excepts_the_networks_subnets() {
        let net = network(Some(4096), None);
        assert!(config("{}").nat_exceptions(&net).unwrap().is_empty());
        let on = config(r#"{"ipMasq": true}"#).nat_exceptions(&net).unwrap();
        assert_eq!(on[0].network, "10.244.1.0/24".parse().unwrap());
    }
}
