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
//!   the reference).
//!
//! An IPv6 address needs an HNS with dual-stack support (11.10 and later), as on every kind of
//! network: the core checks that.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::net::IpAddr;

use cni::Error;
use cni_win_core::{NatException, NetworkKind};
use hns::schema::{HostComputeNetwork, Subnet};
use ipnetwork::IpNetwork;
use serde::Deserialize;

/// win-bridge's kind, built from its own config keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bridge {
    /// `ipMasqNetwork`: a network not to SNAT (the cluster's pod network in Flannel's rendered
    /// delegate).
    ip_masq_network: Option<NatException>,
    /// `optionalFlags.forceBridgeGateway`: x.2 even where the `ipam` range sets a gateway.
    force_bridge_gateway: bool,
}

/// win-bridge's own config keys as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct BridgeKeys {
    #[serde(rename = "ipMasqNetwork")]
    ip_masq_network: String,
    #[serde(rename = "optionalFlags")]
    flags: BridgeFlags,
}

/// The bridge's entry of sdnbridge's `optionalFlags`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct BridgeFlags {
    #[serde(rename = "forceBridgeGateway")]
    force_bridge_gateway: bool,
}

impl NetworkKind for Bridge {
    const PLUGIN: &'static str = "win-bridge";
    const NETWORK_TYPES: &'static [&'static str] = &["L2Bridge", "L2Tunnel"];
    type Keys = BridgeKeys;

    fn from_keys(keys: BridgeKeys) -> Result<Bridge, Error> {
        let text = keys.ip_masq_network.trim();
        Ok(Bridge {
            ip_masq_network: (!text.is_empty())
                .then(|| NatException::parse("ipMasqNetwork", text))
                .transpose()?,
            force_bridge_gateway: keys.flags.force_bridge_gateway,
        })
    }

    fn gateway(
        &self,
        _holding: &Subnet,
        subnet: IpNetwork,
        ipam_gateway: Option<IpAddr>,
    ) -> Result<IpAddr, Error> {
        match ipam_gateway {
            Some(gateway) if !self.force_bridge_gateway => Ok(gateway),
            _ => network_plus_two(subnet),
        }
    }

    fn nat_exceptions(&self, _network: &HostComputeNetwork) -> Result<Vec<NatException>, Error> {
        Ok(self.ip_masq_network.iter().cloned().collect())
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

    fn bridge(keys: serde_json::Value) -> Result<Bridge, Error> {
        Bridge::from_keys(serde_json::from_value(keys).unwrap())
    }

    fn gateway(bridge: &Bridge, subnet: &str, ipam: Option<&str>) -> Result<IpAddr, Error> {
        let subnet: IpNetwork = subnet.parse().unwrap();
        bridge.gateway(
            &Subnet::new(subnet.into()),
            subnet,
            ipam.map(|g| g.parse().unwrap()),
        )
    }

    #[test]
    fn the_gateway_is_x2_unless_ipam_sets_one() {
        let plain = Bridge::default();
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
        let forced =
            bridge(serde_json::json!({"optionalFlags": {"forceBridgeGateway": true}})).unwrap();
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
        for bad in ["10.244.0.0/33", "10.244.0.0", "x"] {
            let msg = bridge(serde_json::json!({"ipMasqNetwork": bad}))
                .unwrap_err()
                .msg()
                .to_owned();
            assert!(msg.contains("ipMasqNetwork") && msg.contains(bad), "{msg}");
        }
        let good = bridge(serde_json::json!({"ipMasqNetwork": " 10.244.0.0/16 "})).unwrap();
        let exceptions = good.nat_exceptions(&HostComputeNetwork::default()).unwrap();
        assert_eq!(exceptions.len(), 1);
        assert_eq!(exceptions[0].source, "ipMasqNetwork");
        assert_eq!(exceptions[0].network, "10.244.0.0/16".parse().unwrap());
        assert!(
            bridge(serde_json::json!({}))
                .unwrap()
                .nat_exceptions(&HostComputeNetwork::default())
                .unwrap()
                .is_empty()
        );
    }
}
