//! win-bridge's integration tests, one binary: the real `win-bridge` on emulated nodes whose
//! `cbr0` is Flannel host-gw's L2Bridge network (10.244.1.0/24, HNS gateway .1, the pods'
//! gateway .2). The cases every cni-win plugin runs are cni-win-conformance's
//! ([`cni_win_conformance::plugin`], in `suite`); the modules hold what win-bridge decides.
#![cfg(not(windows))] // the HCN emulator these tests run on is Linux-only

mod errors;
mod hostile_del;
mod hung_hns;
mod l2bridge_configs;
mod lifecycle;
mod network_cache;
mod policies;
mod real_clients;
mod robustness;
mod same_attachment;
mod stale_holder;
mod upgrade;

use cni_win_conformance::flannel;
use cni_win_conformance::hns::L2BRIDGE_NETWORK;
use cni_win_conformance::node::{Budget, Node, policy};
use cni_win_conformance::plugin::{Plugin, v2_config};
use serde_json::{Value, json};

pub const NETWORK: &str = "cbr0";

/// win-bridge on Flannel host-gw's `cbr0`.
pub const PLUGIN: Plugin = Plugin {
    binary: env!("CARGO_BIN_EXE_win-bridge"),
    name: "win-bridge",
    crate_dir: env!("CARGO_MANIFEST_DIR"),
    network: NETWORK,
    network_document: flannel::host_gw,
    hnsctl_network: L2BRIDGE_NETWORK,
    config,
    every_key_config,
    gateway_host: 2,
    mac: None,
    // Warm: open network, create + query endpoint, open + modify namespace. Cold adds the
    // lookup by name (enumerate, query network). CHECK: open network, open + query endpoint.
    budget: Budget {
        cold_add: (7, 10),
        add: (5, 8),
        repeated_add: (4, 6),
        check: (3, 5),
        del: (3, 4),
    },
    flannel_examples: (
        "flannel-host-gw-native.conflist",
        "flannel-host-gw.conflist",
    ),
    reference_config,
    reference_policies,
    reference_mac: None,
};

cni_win_conformance::plugin_suite!(crate::PLUGIN);

/// A node whose `cbr0` is L2Bridge 10.244.1.0/24 with gateway .1 (Flannel host-gw's).
pub fn node(label: &str) -> Node {
    PLUGIN.node(label)
}

/// The plain win-bridge V2 config for `cbr0` in `version`.
pub fn config(node: &Node, version: &str) -> Value {
    v2_config(node, version, "win-bridge", NETWORK, json!({}))
}

/// A win-bridge config with every key the plugin and host-local read, for the `pod`th pod
/// (host ports differ).
pub fn every_key_config(node: &Node, pod: usize) -> Value {
    std::fs::write(node.dir().join("resolv.conf"), "nameserver 10.96.0.10\n").unwrap();
    json!({
        "cniVersion": "1.0.0", "name": NETWORK, "type": "win-bridge", "apiVersion": 2,
        "capabilities": {"portMappings": true, "dns": true},
        "ipMasq": true, "ipMasqNetwork": "10.244.0.0/16",
        "hnsTimeoutSeconds": 20, "attachmentLockTimeoutSeconds": 20,
        "logLevel": "warn", "logFile": node.dir().join("win-bridge.log"),
        "loopbackDSR": false,
        "optionalFlags": {"localRoutedPortMapping": true, "allowAclPortMapping": false,
            "forceBridgeGateway": false},
        "ipam": {
            "type": "host-local",
            "ranges": [[{"subnet": "10.244.1.0/24", "rangeStart": "10.244.1.10",
                "rangeEnd": "10.244.1.200", "gateway": "10.244.1.2"}]],
            "routes": [{"dst": "0.0.0.0/0"}],
            "dataDir": node.ipam_dir(),
            "resolvConf": node.dir().join("resolv.conf"),
            "lockTimeoutSeconds": 20
        },
        "dns": {"nameservers": ["10.96.0.10"], "search": ["svc.cluster.local"]},
        "policies": [
            {"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT",
                "Settings": {"Exceptions": ["10.244.0.0/16", "10.96.0.0/12"]}}}
        ],
        "runtimeConfig": {
            "portMappings": [{"hostPort": 8080 + pod, "containerPort": 80, "protocol": "tcp"}],
            "dns": {"servers": ["10.96.0.10"], "searches": ["default.svc.cluster.local"]}
        },
        // Requested addresses would collide between the pods run at once: the key is here to
        // be mutated.
        "args": {"cni": {"ips": []}}
    })
}

/// The config the node ran with the reference and keeps with cni-win: the plain one plus
/// `ipMasqNetwork` (which the reference writes as a second OutBoundNAT) and a port mapping.
pub fn reference_config(node: &Node) -> Value {
    let mut config = config(node, "1.0.0");
    config["ipMasqNetwork"] = json!("10.0.0.0/8");
    config["runtimeConfig"] =
        json!({"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]});
    config
}

/// The reference win-bridge's policies for `config`: the config's two as given, then its
/// own, each separate (an OutBoundNAT for `ipMasqNetwork`, the port mapping with `"VIP": ""` and
/// no flags).
pub fn reference_policies(config: &Value) -> Vec<Value> {
    vec![
        policy::nat(&["10.244.0.0/16", "10.96.0.0/12"]),
        policy::route("10.96.0.0/12"),
        policy::nat(&["10.0.0.0/8"]),
        json!({"Type": "PortMapping", "Settings": {"InternalPort": 80, "ExternalPort": config["runtimeConfig"]["portMappings"][0]["hostPort"], "Protocol": 6, "VIP": ""}}),
    ]
}

/// A file of `examples/win-bridge`, as JSON.
pub fn example(name: &str) -> Value {
    PLUGIN.example(name)
}

/// A node whose `cbr0` is dual-stack: 10.244.1.0/24 and fd00:10:244:1::/64, gateways at ::1/.1.
pub fn dual_stack_node(label: &str) -> Node {
    PLUGIN.dual_stack_node(label)
}
