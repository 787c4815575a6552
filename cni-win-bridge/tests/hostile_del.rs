//! Teardown never blocks on a config that changed after ADD: after an ADD with a valid config,
//! DEL with every hostile variant of it (each key at every depth removed, of the wrong kind,
//! or of the right kind and wrong) returns 0 and leaves nothing (endpoint, reservation,
//! Flannel's record), unless the variant changes what identifies the attachment's state:
//! `cniVersion`, the network's `name`, which IPAM holds its addresses (`ipam`, `ipam.type`)
//! and host-local's store (`ipam.dataDir`), and in Flannel-native mode Flannel's record
//! (`dataDir`, `subnetFile`). Those may fail, with a CNI error, never a crash.
#![cfg(not(windows))] // the HCN emulator these tests run on is Linux-only

mod common;

use cni_win_conformance::node::Variant;
use common::{NETWORK, Node};
use serde_json::{Value, json};

const IDENTIFYING: &[&str] = &["cniVersion", "name", "ipam", "ipam.type", "ipam.dataDir"];

/// A win-bridge config with every key the plugin and host-local read, for the `pod`th pod
/// (host ports differ).
fn config(node: &Node, pod: usize) -> Value {
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

fn assert_never_blocked(plugin: &str, report: &cni_win_conformance::node::HostileDel) {
    eprintln!(
        "{plugin}: {} hostile DEL inputs, {} of them changing an identifying key; {} failed \
         or left something although DEL needs nothing they change",
        report.inputs,
        report.identifying,
        report.blocked.len()
    );
    assert!(report.blocked.is_empty(), "{}", report.blocked.join("\n"));
}

#[test]
fn del_tears_down_whatever_else_the_config_gets_wrong() {
    let node = common::node("hostile-del");
    // An unset ipam.dataDir is the node's default store, which a test leaves alone.
    let every = |variant: &Variant| !variant.unsets("ipam.dataDir");
    let report = node.del_with_every_variant(
        &|pod| config(&node, pod),
        NETWORK,
        &every,
        IDENTIFYING,
        &|_| None,
    );
    assert_never_blocked("win-bridge", &report);
}

/// Flannel-native mode: the ranges come from subnet.env, which DEL never reads, and DEL
/// removes Flannel's record. Its own keys are mutated (the rest are the plain config's).
#[test]
fn native_del_tears_down_whatever_else_the_config_gets_wrong() {
    let node = common::node("hostile-del-native");
    let subnet_env = node.dir().join("subnet.env");
    std::fs::write(
        &subnet_env,
        "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\nFLANNEL_MTU=1450\n\
         FLANNEL_IPMASQ=true\n",
    )
    .unwrap();
    let records = node.dir().join("flannel");
    let native = |pod| {
        let mut native = config(&node, pod);
        let keys = native.as_object_mut().unwrap();
        keys.insert("subnetFile".to_owned(), json!(subnet_env));
        keys.insert("dataDir".to_owned(), json!(records));
        keys.insert(
            "ipam".to_owned(),
            json!({"type": "host-local", "dataDir": node.ipam_dir(), "lockTimeoutSeconds": 20,
                "routes": [{"dst": "0.0.0.0/0"}], "resolvConf": node.dir().join("resolv.conf")}),
        );
        keys.remove("args");
        native
    };
    let identifying = [IDENTIFYING, &["dataDir", "subnetFile"]].concat();
    let leftover = |pod: &str| {
        records
            .join(pod)
            .exists()
            .then(|| "Flannel's record".to_owned())
    };
    // The keys the plain config shares are the test above's; here what Flannel-native adds,
    // but the unset directories that would point DEL at the node's default ones.
    let native_keys = |variant: &Variant| {
        let defaults = variant.unsets("ipam")
            || variant.changes_any(&["ipam"]) && variant.change == "{}"
            || variant.unsets("ipam.dataDir")
            || variant.unsets("dataDir");
        let native = ["ipam", "dataDir", "subnetFile"]
            .iter()
            .any(|key| variant.path.starts_with(key));
        native && !defaults
    };
    let report =
        node.del_with_every_variant(&native, NETWORK, &native_keys, &identifying, &leftover);
    assert_never_blocked("win-bridge (Flannel-native)", &report);
}

/// What DEL ignores is said in the log, naming the key: the plugin's own keys (here a policy)
/// and host-local's (a range end outside the subnet), each once.
#[test]
fn del_says_what_it_ignored() {
    let node = common::node("hostile-del-log");
    let good = config(&node, 0);
    node.add("pod", &node.namespace(), &good).result();
    let mut edited = good.clone();
    edited["policies"][0]["value"] = json!("OutBoundNAT");
    edited["ipam"]["ranges"][0][0]["rangeEnd"] = json!("10.9.9.9");
    let reply = node.del("pod", None, &edited);
    reply.silent();
    for needle in ["policies[0]", "ipam.ranges[0][0].rangeEnd"] {
        let lines: Vec<&str> = reply
            .stderr
            .lines()
            .filter(|line| line.contains("DEL ignores") && line.contains(needle))
            .collect();
        assert_eq!(lines.len(), 1, "{needle}: {}", reply.stderr);
    }
    assert!(node.endpoints(NETWORK).is_empty() && node.reservations(NETWORK).is_empty());
}
