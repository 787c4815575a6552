//! win-overlay on an emulated node: Flannel vxlan's HNS network as flanneld leaves it (Overlay
//! 10.244.1.0/24, HNS gateway .1, VSID 4096, VXLAN port 4789, the host's provider address) and
//! the plain V2 config, on cni-win-conformance's [`Node`].
#![allow(dead_code)] // each test binary uses its own subset

#[allow(unused_imports)] // each test binary uses its own subset
pub use cni_win_conformance::node::{Call, Node, network_settings};
use hns::schema::policy::{IsolationIdPolicy, ProviderAddressPolicy, VxlanPortPolicy};
use hns::schema::{HostComputeNetwork, NetworkPolicy, SubnetPolicy};
use serde_json::{Value, json};

pub const PLUGIN: &str = env!("CARGO_BIN_EXE_win-overlay");
/// flanneld's network name for VNI 4096.
pub const NETWORK: &str = "flannel.4096";
/// The node's management IP: the network's provider address.
pub const PROVIDER_ADDRESS: &str = "10.127.130.38";

/// Flannel vxlan's network named `name` with `vni` on every subnet, the VXLAN port and the
/// provider address HNS shows once the network is ready.
pub fn overlay_network(name: &str, subnets: &[(&str, &str)], vni: u32) -> HostComputeNetwork {
    let mut network = network_settings(name, "Overlay", subnets);
    for subnet in network.ipams.iter_mut().flat_map(|ipam| &mut ipam.subnets) {
        subnet.policies = vec![SubnetPolicy::Vsid(IsolationIdPolicy { isolation_id: vni })];
    }
    network.policies = vec![
        NetworkPolicy::VxlanPort(VxlanPortPolicy { port: 4789 }),
        NetworkPolicy::ProviderAddress(ProviderAddressPolicy {
            provider_address: PROVIDER_ADDRESS.parse().unwrap(),
        }),
    ];
    network
}

/// A node whose network `name` is Flannel vxlan's 10.244.1.0/24 with gateway .1 and VNI 4096.
pub fn node_with(name: &str, label: &str) -> Node {
    let node = Node::new(PLUGIN, label);
    node.create_network(&overlay_network(
        name,
        &[("10.244.1.0/24", "10.244.1.1")],
        4096,
    ));
    node
}

/// A node with `flannel.4096`.
pub fn node(label: &str) -> Node {
    node_with(NETWORK, label)
}

/// The plain win-overlay V2 config for `flannel.4096` in `version`.
pub fn config(node: &Node, version: &str) -> Value {
    json!({
        "cniVersion": version, "name": NETWORK, "type": "win-overlay", "apiVersion": 2,
        "capabilities": {"portMappings": true, "dns": true},
        "ipMasq": true,
        "ipam": {"type": "host-local", "subnet": "10.244.1.0/24", "dataDir": node.ipam_dir()},
        "dns": {"nameservers": ["10.96.0.10"], "search": ["svc.cluster.local"]},
        "policies": [
            {"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16", "10.96.0.0/12"]}}},
            {"name": "EndpointPolicy", "value": {"Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": true}}}
        ]
    })
}
