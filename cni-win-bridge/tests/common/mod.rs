//! win-bridge on an emulated node: the Flannel host-gw network `cbr0` (L2Bridge 10.244.1.0/24,
//! HNS gateway .1) and the plain V2 config, on cni-win-conformance's [`Node`].
#![allow(dead_code)] // each test binary uses its own subset

#[allow(unused_imports)] // each test binary uses its own subset
pub use cni_win_conformance::node::{Call, Node, network_settings};
use serde_json::{Value, json};

pub const PLUGIN: &str = env!("CARGO_BIN_EXE_win-bridge");
pub const NETWORK: &str = "cbr0";

/// A node whose `cbr0` is L2Bridge 10.244.1.0/24 with gateway .1 (Flannel host-gw's).
pub fn node(label: &str) -> Node {
    let node = Node::new(PLUGIN, label);
    node.create_network(&network_settings(
        NETWORK,
        "L2Bridge",
        &[("10.244.1.0/24", "10.244.1.1")],
    ));
    node
}

/// The plain win-bridge V2 config for `cbr0` in `version`.
pub fn config(node: &Node, version: &str) -> Value {
    json!({
        "cniVersion": version, "name": NETWORK, "type": "win-bridge", "apiVersion": 2,
        "capabilities": {"portMappings": true, "dns": true},
        "ipam": {"type": "host-local", "subnet": "10.244.1.0/24", "dataDir": node.ipam_dir()},
        "dns": {"nameservers": ["10.96.0.10"], "search": ["svc.cluster.local"]},
        "policies": [
            {"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16", "10.96.0.0/12"]}}},
            {"name": "EndpointPolicy", "value": {"Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": true}}}
        ]
    })
}

/// A file of `examples/win-bridge`, as JSON.
pub fn example(name: &str) -> Value {
    cni_win_conformance::node::load_json(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/win-bridge")
            .join(name),
    )
}

/// A node whose `cbr0` is dual-stack: 10.244.1.0/24 and fd00:10:244:1::/64, gateways at ::1/.1.
pub fn dual_stack_node(label: &str) -> Node {
    let node = Node::new(PLUGIN, label);
    node.create_network(&network_settings(
        NETWORK,
        "L2Bridge",
        &[
            ("10.244.1.0/24", "10.244.1.1"),
            ("fd00:10:244:1::/64", "fd00:10:244:1::1"),
        ],
    ));
    node
}

/// The first pod's `ips` on [`dual_stack_node`]: one address per family, gateways at x.2.
pub fn first_dual_stack_ips() -> Value {
    json!([
        {"address": "10.244.1.3/24", "gateway": "10.244.1.2", "interface": 0},
        {"address": "fd00:10:244:1::3/64", "gateway": "fd00:10:244:1::2", "interface": 0}
    ])
}
