//! Teardown in Flannel-native mode never blocks on a config that changed after ADD, and DEL
//! says what it ignored. The plain config's hostile DEL is the suite's
//! ([`cni_win_conformance::plugin::hostile_del`]); here, after an ADD in Flannel-native mode,
//! DEL with every hostile variant of the keys that mode adds returns 0 and leaves nothing
//! (endpoint, reservation, Flannel's record), unless the variant changes what identifies the
//! attachment's state: the suite's keys and Flannel's record (`dataDir`, `subnetFile`). Those
//! may fail, with a CNI error, never a crash.

use cni_win_conformance::node::Variant;
use cni_win_conformance::plugin::hostile_del::{IDENTIFYING, assert_never_blocked};
use serde_json::json;

use crate::{NETWORK, every_key_config};

/// Flannel-native mode: the ranges come from subnet.env, which DEL never reads, and DEL
/// removes Flannel's record. Its own keys are mutated (the rest are the plain config's).
#[test]
fn native_del_tears_down_whatever_else_the_config_gets_wrong() {
    let node = crate::node("hostile-del-native");
    let subnet_env = node.dir().join("subnet.env");
    std::fs::write(
        &subnet_env,
        "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\nFLANNEL_MTU=1450\n\
         FLANNEL_IPMASQ=true\n",
    )
    .unwrap();
    let records = node.dir().join("flannel");
    let native = |pod| {
        let mut native = every_key_config(&node, pod);
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
    let node = crate::node("hostile-del-log");
    let good = every_key_config(&node, 0);
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
