//! win-bridge: pods on HNS `L2Bridge` (and `L2Tunnel`) networks, such as the one Flannel's
//! host-gw backend creates. Everything but what this file decides lives in `cni_win_core`.
//!
//! What is bridge-specific:
//! - networks of type `L2Bridge` or `L2Tunnel`;
//! - the pod gateway is the range's network address + 2 (x.2: the reference's choice and
//!   where Flannel puts `cbr0_ep`), unless the `ipam` range sets a gateway;
//!   `optionalFlags.forceBridgeGateway` (sdnbridge's key) forces x.2 even then;
//! - HNS assigns the MAC from the network's pool;
//! - `ipMasqNetwork` joins the merged OutBoundNAT's exceptions (whatever `ipMasq` says, as in
//!   the reference);
//! - an IPv6 address needs an HNS with dual-stack support (11.10 and later).

use std::net::IpAddr;

use cni::Error;
use cni_win_core::{NatException, NetworkKind, Requirement};
use hns::Feature;
use hns::schema::HostComputeNetwork;
use ipnetwork::IpNetwork;
use serde::Deserialize;

/// The bridge plugin's kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bridge;

/// win-bridge's own config keys.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct BridgeConfig {
    /// A CIDR not to SNAT (the cluster's pod network in Flannel's rendered delegate).
    #[serde(rename = "ipMasqNetwork")]
    pub ip_masq_network: String,
    #[serde(rename = "optionalFlags")]
    pub flags: BridgeFlags,
}

/// The bridge's entry of sdnbridge's `optionalFlags`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct BridgeFlags {
    #[serde(rename = "forceBridgeGateway")]
    pub force_bridge_gateway: bool,
}

impl NetworkKind for Bridge {
    const PLUGIN: &'static str = "win-bridge";
    type Config = BridgeConfig;

    fn network_types(&self) -> &'static [&'static str] {
        &["L2Bridge", "L2Tunnel"]
    }

    fn validate(&self, config: &BridgeConfig) -> Result<(), Error> {
        let text = config.ip_masq_network.trim();
        if !text.is_empty() && cni_win_core::policy::parse_cidr(text).is_none() {
            return Err(Error::invalid_config(format!(
                "ipMasqNetwork: {} is not a CIDR (expected e.g. 10.244.0.0/16)",
                cni::quoted(text)
            )));
        }
        Ok(())
    }

    fn gateway(
        &self,
        config: &BridgeConfig,
        _network: &HostComputeNetwork,
        subnet: IpNetwork,
        ipam_gateway: Option<IpAddr>,
    ) -> Result<IpAddr, Error> {
        match ipam_gateway {
            Some(gateway) if !config.flags.force_bridge_gateway => Ok(gateway),
            _ => network_plus_two(subnet),
        }
    }

    fn nat_exceptions(
        &self,
        config: &BridgeConfig,
        _network: &HostComputeNetwork,
    ) -> Result<Vec<NatException>, Error> {
        let cidr = config.ip_masq_network.trim();
        Ok((!cidr.is_empty())
            .then(|| NatException {
                source: "ipMasqNetwork".to_owned(),
                cidr: cidr.to_owned(),
            })
            .into_iter()
            .collect())
    }

    fn required_features(&self, _config: &BridgeConfig, ips: &[IpNetwork]) -> Vec<Requirement> {
        ips.iter()
            .find(|ip| ip.is_ipv6())
            .map(|ip| Requirement {
                feature: Feature::Ipv6DualStack,
                needed_for: format!("the IPv6 address {ip} from ipam"),
            })
            .into_iter()
            .collect()
    }
}

/// x.2 of `subnet` (its network address + 2).
fn network_plus_two(subnet: IpNetwork) -> Result<IpAddr, Error> {
    let too_small = || {
        Error::invalid_config(format!(
            "ipam subnet {subnet} is too small for win-bridge's gateway (its network address + 2)"
        ))
    };
    let gateway = match subnet.network() {
        IpAddr::V4(network) => IpAddr::from(
            u32::from(network)
                .checked_add(2)
                .ok_or_else(too_small)?
                .to_be_bytes(),
        ),
        IpAddr::V6(network) => IpAddr::from(
            u128::from(network)
                .checked_add(2)
                .ok_or_else(too_small)?
                .to_be_bytes(),
        ),
    };
    if subnet.contains(gateway) {
        Ok(gateway)
    } else {
        Err(too_small())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gateway(config: &BridgeConfig, subnet: &str, ipam: Option<&str>) -> Result<IpAddr, Error> {
        Bridge.gateway(
            config,
            &HostComputeNetwork::default(),
            subnet.parse().unwrap(),
            ipam.map(|g| g.parse().unwrap()),
        )
    }

    #[test]
    fn the_gateway_is_x2_unless_ipam_sets_one() {
        let plain = BridgeConfig::default();
        assert_eq!(
            gateway(&plain, "10.244.1.0/24", None).unwrap().to_string(),
            "10.244.1.2"
        );
        assert_eq!(
            gateway(&plain, "fd00:1::/64", None).unwrap().to_string(),
            "fd00:1::2"
        );
        assert_eq!(
            gateway(&plain, "10.244.1.0/24", Some("10.244.1.1"))
                .unwrap()
                .to_string(),
            "10.244.1.1"
        );
        let forced = BridgeConfig {
            flags: BridgeFlags {
                force_bridge_gateway: true,
            },
            ..BridgeConfig::default()
        };
        assert_eq!(
            gateway(&forced, "10.244.1.0/24", Some("10.244.1.1"))
                .unwrap()
                .to_string(),
            "10.244.1.2"
        );
        assert!(gateway(&plain, "10.244.1.4/31", None).is_err());
    }

    #[test]
    fn ip_masq_network_is_validated_and_becomes_an_exception() {
        let bad = BridgeConfig {
            ip_masq_network: "10.244.0.0/33".into(),
            ..BridgeConfig::default()
        };
        assert!(
            Bridge
                .validate(&bad)
                .unwrap_err()
                .msg()
                .contains("ipMasqNetwork")
        );
        let good = BridgeConfig {
            ip_masq_network: "10.244.0.0/16".into(),
            ..BridgeConfig::default()
        };
        let exceptions = Bridge
            .nat_exceptions(&good, &HostComputeNetwork::default())
            .unwrap();
        assert_eq!(exceptions[0].cidr, "10.244.0.0/16");
    }
}
