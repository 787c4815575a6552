//! win-overlay's integration tests, one binary: the real `win-overlay` on emulated nodes whose
//! `flannel.4096` is Flannel vxlan's network as flanneld leaves it (Overlay 10.244.1.0/24, HNS
//! gateway .1, VSID 4096, VXLAN port 4789, the host's provider address). The cases every
//! cni-win plugin runs are cni-win-conformance's ([`cni_win_conformance::plugin`], in `suite`);
//! the modules hold what win-overlay decides.
#![cfg(not(windows))] // the HCN emulator these tests run on is Linux-only

mod flannel_native;
mod kube_proxy;
mod overlay_configs;
mod overlay_endpoint;
mod vxlan_network;
mod wmco;

use std::net::Ipv4Addr;

use cni_win_conformance::flannel::{self, PROVIDER_ADDRESS, VNI};
use cni_win_conformance::hns::OVERLAY_NETWORK;
use cni_win_conformance::node::{Budget, Node, policy};
use cni_win_conformance::plugin::{Plugin, v2_config};
use hns::schema::HostComputeNetwork;
use serde_json::{Value, json};

/// flanneld's network name for VNI 4096.
pub const NETWORK: &str = "flannel.4096";

/// win-overlay on Flannel vxlan's `flannel.4096`.
pub const PLUGIN: Plugin = Plugin {
    binary: env!("CARGO_BIN_EXE_win-overlay"),
    name: "win-overlay",
    crate_dir: env!("CARGO_MANIFEST_DIR"),
    network: NETWORK,
    network_document: overlay_network,
    hnsctl_network: OVERLAY_NETWORK,
    config,
    every_key_config,
    gateway_host: 1,
    mac: Some(mac),
    // The overlay reads the network's policies, which change under an unchanged ID: a warm
    // ADD and CHECK query the network after opening it by its cached ID (one call more than
    // win-bridge), and skip the lookup by name.
    budget: Budget {
        cold_add: (7, 10),
        add: (6, 9),
        repeated_add: (5, 7),
        check: (4, 6),
        del: (3, 4),
    },
    flannel_examples: ("flannel-vxlan-native.conflist", "flannel-vxlan.conflist"),
    reference_config,
    reference_policies,
    reference_mac: Some(reference_mac),
};

cni_win_conformance::plugin_suite!(crate::PLUGIN);

/// Flannel vxlan's network named `name` with VNI 4096 on every subnet.
fn overlay_network(name: &str, subnets: &[(&str, &str)]) -> HostComputeNetwork {
    flannel::vxlan(name, subnets, VNI)
}

/// The MAC win-overlay gives the pod at `ip`: the prefix `0E-2A`, then the address.
pub fn mac(ip: Ipv4Addr) -> String {
    let [a, b, c, d] = ip.octets();
    format!("0E-2A-{a:02X}-{b:02X}-{c:02X}-{d:02X}")
}

/// A node with `flannel.4096`.
pub fn node(label: &str) -> Node {
    PLUGIN.node(label)
}

/// The plain win-overlay V2 config for `flannel.4096` in `version`: IP masquerade on, as
/// Flannel renders it.
pub fn config(node: &Node, version: &str) -> Value {
    v2_config(
        node,
        version,
        "win-overlay",
        NETWORK,
        json!({"ipMasq": true}),
    )
}

/// A win-overlay config with its own keys and the ones both plugins read, for the `pod`th pod
/// (host ports differ).
pub fn every_key_config(node: &Node, pod: usize) -> Value {
    json!({
        "cniVersion": "1.0.0", "name": NETWORK, "type": "win-overlay", "apiVersion": 2,
        "capabilities": {"portMappings": true, "dns": true},
        "ipMasq": true, "endpointMacPrefix": "0E-2A", "vni": 4096, "vxlanPort": 4789,
        "hnsTimeoutSeconds": 20,
        "ipam": {
            "type": "host-local",
            "subnet": "10.244.1.0/24", "rangeStart": "10.244.1.10", "rangeEnd": "10.244.1.200",
            "dataDir": node.ipam_dir()
        },
        "dns": {"nameservers": ["10.96.0.10"]},
        "policies": [
            {"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT",
                "Settings": {"Exceptions": ["10.244.0.0/16", "10.96.0.0/12"]}}}
        ],
        "runtimeConfig": {
            "portMappings": [{"hostPort": 8080 + pod, "containerPort": 80, "protocol": "tcp"}]
        }
    })
}

/// The config a node ran the reference win-overlay with: the plain one.
pub fn reference_config(node: &Node) -> Value {
    config(node, "1.0.0")
}

/// The reference win-overlay's policies: the config's two as given, then ProviderAddress and
/// a separate OutBoundNAT for `ipMasq`.
pub fn reference_policies(_: &Value) -> Vec<Value> {
    vec![
        policy::nat(&["10.244.0.0/16", "10.96.0.0/12"]),
        policy::route("10.96.0.0/12"),
        policy::provider_address(PROVIDER_ADDRESS),
        policy::nat(&["10.244.1.0/24"]),
    ]
}

/// The reference win-overlay's MAC for `ip`: `0E-2A-`, then the address in lower-case hex.
pub fn reference_mac(ip: Ipv4Addr) -> String {
    let [a, b, c, d] = ip.octets();
    format!("0E-2A-{a:02x}-{b:02x}-{c:02x}-{d:02x}")
}
