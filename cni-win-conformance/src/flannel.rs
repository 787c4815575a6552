//! Flannel's HNS networks as flanneld leaves them, for the nodes tests run plugins and node
//! tools on: host-gw's L2Bridge network and vxlan's Overlay network (one subnet per node, HNS's
//! gateway at its first address).

use hns::schema::policy::{IsolationIdPolicy, ProviderAddressPolicy, VxlanPortPolicy};
use hns::schema::{HostComputeNetwork, NetworkPolicy, SubnetPolicy};

use crate::node::network_settings;

/// The node's management IP: an overlay network's provider address, which HNS adds once the
/// network's switch has settled.
pub const PROVIDER_ADDRESS: &str = "10.127.130.38";

/// Flannel's VXLAN network identifier on Windows (its `VNI`) and the UDP port it uses.
pub const VNI: u32 = 4096;

/// The UDP port of Flannel's VXLAN on Windows.
pub const VXLAN_PORT: u16 = 4789;

/// host-gw's network `name`: L2Bridge with one subnet per (prefix, HNS gateway).
pub fn host_gw(name: &str, subnets: &[(&str, &str)]) -> HostComputeNetwork {
    network_settings(name, "L2Bridge", subnets)
}

/// vxlan's network `name`: Overlay with `vni` on every subnet (its VSID), the VXLAN port and
/// the provider address HNS shows once the network is ready.
pub fn vxlan(name: &str, subnets: &[(&str, &str)], vni: u32) -> HostComputeNetwork {
    let mut network = network_settings(name, "Overlay", subnets);
    for subnet in network.ipams.iter_mut().flat_map(|ipam| &mut ipam.subnets) {
        subnet.policies = vec![SubnetPolicy::Vsid(IsolationIdPolicy { isolation_id: vni })];
    }
    network.policies = vec![
        NetworkPolicy::VxlanPort(VxlanPortPolicy { port: VXLAN_PORT }),
        NetworkPolicy::ProviderAddress(ProviderAddressPolicy {
            provider_address: PROVIDER_ADDRESS
                .parse()
                .expect("the provider address is an IP"),
        }),
    ];
    network
}
