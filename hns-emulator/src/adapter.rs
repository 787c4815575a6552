//! The host's network adapter and the virtual switch HNS builds on it.
//!
//! A network of a type that reaches the physical network (L2Bridge, L2Tunnel, Overlay,
//! Transparent) is bound to the host adapter: the first such network makes HNS create an
//! external virtual switch on it, and the host's address moves to the switch's management
//! vNIC. HNS reports that address as the network's management IP: V1 `ManagementIP`, and on
//! an Overlay network the `ProviderAddress` network policy it adds (flanneld's vxlan backend
//! creates `flannel.4096` without one and polls until it appears; its host-gw backend polls
//! `GET /networks/<id>` until `ManagementIP` is set). The address appears only once the new
//! switch has settled: on the first network on an adapter callers wait 5 to 45 s in the field
//! (microsoft/SDN#498, AKS#2873), which is why flanneld polls and why setup scripts create
//! a throw-away network first. Networks made while the switch is already up get it at once.
//!
//! The adapter (`Ethernet`, `192.168.1.10/24`, `00-15-5D-0A-01-0A` unless set with
//! `hnsctl host adapter`) and the settle time (3 s unless set with `hnsctl host switch`,
//! which can also settle the current switch at once) are facts of the emulated host, kept in
//! `host.json`.

use std::net::IpAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use hns::schema::{IpPrefix, MacAddress, NetworkType};

/// The host's physical adapter, as `Get-NetAdapter` and `Get-NetIPAddress` show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HostAdapter {
    /// The adapter's name (what a `NetAdapterName` policy names).
    pub name: String,
    /// The host's address on it, with the prefix of its subnet: the node IP.
    pub address: IpPrefix,
    /// The adapter's MAC (kube-proxy gives it to its remote endpoints).
    pub mac_address: MacAddress,
}

impl Default for HostAdapter {
    fn default() -> HostAdapter {
        HostAdapter {
            name: "Ethernet".to_owned(),
            address: IpPrefix::new(IpAddr::from([192, 168, 1, 10]), 24)
                .expect("24 bits fit an IPv4 prefix"),
            mac_address: MacAddress::new([0x00, 0x15, 0x5D, 0x0A, 0x01, 0x0A]),
        }
    }
}

/// The external virtual switch HNS builds on the host adapter with the first network bound to
/// it: networks report the host's address as their management IP once it has settled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct VirtualSwitch {
    /// How long after a switch is created its management vNIC has the host's address.
    #[serde(default = "default_settle_millis")]
    pub settle_millis: u64,
    /// When the current switch's management vNIC has the host's address (milliseconds since
    /// the Unix epoch); `None` while no network is bound to the adapter, or for a switch older
    /// than the record (settled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settles_at_millis: Option<u64>,
}

fn default_settle_millis() -> u64 {
    3_000
}

impl Default for VirtualSwitch {
    fn default() -> VirtualSwitch {
        VirtualSwitch {
            settle_millis: default_settle_millis(),
            settles_at_millis: None,
        }
    }
}

impl VirtualSwitch {
    /// Whether the management vNIC has the host's address by now.
    pub fn settled(&self) -> bool {
        self.settles_at_millis
            .is_none_or(|settles_at| now_millis() >= settles_at)
    }

    /// The switch is created now (the first network bound to the adapter): it settles
    /// `settle_millis` from now.
    pub fn create(&mut self) {
        self.settles_at_millis = Some(now_millis().saturating_add(self.settle_millis));
    }

    /// The management vNIC has its address from now on (a test control: no waiting).
    pub fn settle_now(&mut self) {
        if self.settles_at_millis.is_some() {
            self.settles_at_millis = Some(now_millis());
        }
    }

    /// The switch is gone with the last network bound to the adapter.
    pub fn remove(&mut self) {
        self.settles_at_millis = None;
    }
}

/// Whether networks of `network_type` use an external switch on the host adapter (the
/// others, NAT, ICS and Private, use an internal switch that has no host adapter).
pub fn binds_adapter(network_type: &NetworkType) -> bool {
    matches!(
        network_type,
        NetworkType::L2Bridge
            | NetworkType::L2Tunnel
            | NetworkType::Overlay
            | NetworkType::Transparent
    )
}

fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_settles_after_its_settle_time_or_when_told() {
        let mut switch = VirtualSwitch {
            settle_millis: 3_600_000,
            settles_at_millis: None,
        };
        assert!(
            switch.settled(),
            "a switch older than the record is settled"
        );
        switch.create();
        assert!(!switch.settled());
        switch.settle_now();
        assert!(switch.settled());
        switch.settle_millis = 0;
        switch.create();
        assert!(
            switch.settled(),
            "a switch with no settle time settles at once"
        );
        switch.remove();
        switch.settle_now();
        assert_eq!(
            switch.settles_at_millis, None,
            "no switch, nothing to settle"
        );
    }

    #[test]
    fn only_networks_on_an_external_switch_bind_the_adapter() {
        assert!(binds_adapter(&NetworkType::L2Bridge));
        assert!(binds_adapter(&NetworkType::Overlay));
        assert!(!binds_adapter(&NetworkType::Nat));
        assert!(!binds_adapter(&NetworkType::Private));
    }
}
