//! win-bridge listed directly in a conflist with Flannel's `subnetFile` (Flannel-native mode):
//! the host-gw example attaches pods as Flannel's delegate would, a node switches between
//! `type: flannel` and the direct conflist with pods running, DEL never needs subnet.env, and
//! subnet.env is read as flanneld leaves it (torn writes, missing keys, links).
#![cfg(not(windows))] // the HCN emulator these tests run on is Linux-only

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{Call, NETWORK, Node, example};
use serde_json::{Value, json};

const SUBNET_ENV: &str = "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\n\
                          FLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n";

/// The conflist's first plugin as libcni hands it to the plugin (`name`, `cniVersion`).
fn first_plugin(list: &Value) -> Value {
    let mut plugin = list["plugins"][0].clone();
    plugin["name"] = list["name"].clone();
    plugin["cniVersion"] = list["cniVersion"].clone();
    plugin
}

fn subnet_env(node: &Node) -> PathBuf {
    node.dir().join("subnet.env")
}

fn flannel_dir(node: &Node) -> PathBuf {
    node.dir().join("flannel")
}

/// The native example with its Flannel files and host-local's store under the node's dir.
fn native(node: &Node) -> Value {
    let mut config = first_plugin(&example("flannel-host-gw-native.conflist"));
    config["subnetFile"] = json!(subnet_env(node));
    config["dataDir"] = json!(flannel_dir(node));
    config["ipam"] = json!({"type": "host-local", "dataDir": node.ipam_dir()});
    config
}

fn node_with_subnet_env(label: &str) -> Node {
    let node = common::node(label);
    std::fs::write(subnet_env(&node), SUBNET_ENV).unwrap();
    node
}

fn record(node: &Node, container_id: &str) -> Option<Value> {
    let bytes = std::fs::read(flannel_dir(node).join(container_id)).ok()?;
    Some(serde_json::from_slice(&bytes).unwrap())
}

fn assert_nothing_left(node: &Node) {
    assert!(node.endpoints(NETWORK).is_empty());
    assert!(node.reservations(NETWORK).is_empty());
}

#[test]
fn the_native_example_attaches_pods_as_flannels_delegate_would() {
    let node = node_with_subnet_env("native-example");
    let config = native(&node);
    let netns = node.namespace();
    let result = node.add("native", &netns, &config).result();
    assert_eq!(
        result["ips"],
        json!([{"address": "10.244.1.3/24", "gateway": "10.244.1.2", "interface": 0}])
    );
    // The same endpoint as the delegate Flannel renders from the type: flannel example.
    let delegated = node.rendered_by_flannel(
        &first_plugin(&example("flannel-host-gw.conflist")),
        "win-bridge",
    );
    node.add("delegated", &node.namespace(), &delegated)
        .result();
    let policies =
        |name: &str| serde_json::to_value(node.endpoint(name)).unwrap()["Policies"].clone();
    assert_eq!(policies("native_cbr0"), policies("delegated_cbr0"));

    // Flannel's record: the delegate config Flannel would have saved.
    let saved = record(&node, "native").expect("the record Flannel's DEL reads");
    assert_eq!(saved["type"], "win-bridge");
    assert_eq!(saved["ipMasq"], true);
    assert_eq!(saved["ipMasqNetwork"], "10.244.0.0/16");
    assert_eq!(saved["ipam"]["subnet"], "10.244.1.0/24");
    assert!(saved.get("subnetFile").is_none() && saved.get("dataDir").is_none());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: PathBuf| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(flannel_dir(&node)), 0o700);
        assert_eq!(mode(flannel_dir(&node).join("native")), 0o600);
    }

    let mut check = config.clone();
    check["prevResult"] = result;
    node.check("native", &netns, &check).silent();
    node.run(&Call::network("STATUS", &config)).silent();
}

#[test]
fn a_node_switches_between_flannel_and_the_native_conflist_with_pods_running() {
    let node = node_with_subnet_env("switch");
    let config = native(&node);

    // Added through Flannel (which saved its record), deleted through the native conflist.
    let delegated = node.rendered_by_flannel(
        &first_plugin(&example("flannel-host-gw.conflist")),
        "win-bridge",
    );
    let old = node.namespace();
    node.add("old", &old, &delegated).result();
    std::fs::create_dir_all(flannel_dir(&node)).unwrap();
    std::fs::write(flannel_dir(&node).join("old"), delegated.to_string()).unwrap();
    node.del("old", Some(&old), &config).silent();
    assert_nothing_left(&node);
    assert!(record(&node, "old").is_none());

    // Added through the native conflist, deleted through Flannel: its DEL hands the record
    // to the delegate.
    let new = node.namespace();
    node.add("new", &new, &config).result();
    let saved = record(&node, "new").unwrap();
    node.del("new", Some(&new), &saved).silent();
    assert_nothing_left(&node);
}

#[test]
fn del_never_needs_subnet_env() {
    let node = node_with_subnet_env("teardown");
    let config = native(&node);
    let netns = node.namespace();
    node.add("pod", &netns, &config).result();
    std::fs::remove_file(subnet_env(&node)).unwrap();

    let msg = node.add("other", &node.namespace(), &config).error(11);
    assert!(msg.contains("does not exist"), "{msg}");
    let msg = node.run(&Call::network("STATUS", &config)).error(50);
    assert!(
        msg.contains("subnet.env") && msg.contains("does not exist"),
        "{msg}"
    );

    node.del("pod", Some(&netns), &config).silent();
    assert_nothing_left(&node);
    assert!(record(&node, "pod").is_none());
}

/// GC, like DEL, only gives back: it collects a pod the runtime no longer lists, endpoint and
/// address, with subnet.env gone, and keeps the one it lists.
#[test]
fn gc_never_needs_subnet_env() {
    let node = node_with_subnet_env("gc");
    let mut config = native(&node);
    config["cniVersion"] = json!("1.1.0");
    node.add("kept", &node.namespace(), &config).result();
    node.add("gone", &node.namespace(), &config).result();
    std::fs::remove_file(subnet_env(&node)).unwrap();

    config["cni.dev/valid-attachments"] = json!([{"containerID": "kept", "ifname": "eth0"}]);
    node.run(&Call::network("GC", &config)).silent();
    assert_eq!(node.endpoints(NETWORK).len(), 1);
    assert_eq!(node.reservations(NETWORK).len(), 1);
}

/// GC removes a pod it collects exactly as that pod's DEL would (the one removal every
/// collector shares, `cni_win_core::removal`): endpoint, address and Flannel's record.
#[test]
fn gc_removes_what_del_would_flannels_record_included() {
    let node = node_with_subnet_env("gc-as-del");
    let mut config = native(&node);
    config["cniVersion"] = json!("1.1.0");
    node.add("kept", &node.namespace(), &config).result();
    node.add("gone", &node.namespace(), &config).result();
    assert!(record(&node, "gone").is_some());

    config["cni.dev/valid-attachments"] = json!([{"containerID": "kept", "ifname": "eth0"}]);
    node.run(&Call::network("GC", &config)).silent();
    assert!(
        record(&node, "gone").is_none(),
        "Flannel's record of a collected pod goes"
    );
    assert!(record(&node, "kept").is_some());
    assert_eq!(node.endpoints(NETWORK).len(), 1);
    assert_eq!(node.reservations(NETWORK).len(), 1);
}

#[test]
fn a_torn_subnet_env_is_read_again() {
    let node = common::node("torn");
    let config = native(&node);
    let path = subnet_env(&node);
    // flanneld truncates, then writes: a read may stop inside the last line, where
    // FLANNEL_IPMASQ=tr would read as false.
    std::fs::write(&path, &SUBNET_ENV[..SUBNET_ENV.len() - 3]).unwrap();
    let writer = {
        let path = path.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(120));
            std::fs::write(path, SUBNET_ENV).unwrap();
        })
    };
    node.add("pod", &node.namespace(), &config).result();
    writer.join().unwrap();

    // Cut short for good: code 11 once the retries are spent.
    std::fs::write(&path, SUBNET_ENV.trim_end()).unwrap();
    let msg = node.add("late", &node.namespace(), &config).error(11);
    assert!(msg.contains("no newline"), "{msg}");
}

#[test]
fn an_incomplete_subnet_env_is_named_by_its_missing_key() {
    let node = common::node("incomplete");
    let config = native(&node);
    std::fs::write(
        subnet_env(&node),
        SUBNET_ENV.replace("FLANNEL_MTU=1450\n", ""),
    )
    .unwrap();
    let msg = node.run(&Call::network("STATUS", &config)).error(50);
    assert!(msg.contains("FLANNEL_MTU is missing"), "{msg}");
    let msg = node.add("pod", &node.namespace(), &config).error(11);
    assert!(msg.contains("FLANNEL_MTU is missing"), "{msg}");
    assert!(node.reservations(NETWORK).is_empty());
}

#[cfg(unix)]
#[test]
fn subnet_env_is_never_read_through_a_link() {
    let node = common::node("link");
    let config = native(&node);
    let target = node.dir().join("elsewhere.env");
    std::fs::write(&target, SUBNET_ENV).unwrap();
    std::os::unix::fs::symlink(&target, subnet_env(&node)).unwrap();
    let msg = node.add("pod", &node.namespace(), &config).error(7);
    assert!(msg.contains("a link"), "{msg}");
}

#[test]
fn the_ipv6_subnet_is_a_second_range_set_when_hns_has_dual_stack() {
    let node = common::dual_stack_node("native-dual");
    std::fs::write(
        subnet_env(&node),
        format!(
            "FLANNEL_IPV6_NETWORK=fd00:10:244::/56\nFLANNEL_IPV6_SUBNET=fd00:10:244:1::1/64\n{SUBNET_ENV}"
        ),
    )
    .unwrap();
    let config = native(&node);
    let netns = node.namespace();
    let result = node.add("pod", &netns, &config).result();
    assert_eq!(result["ips"], common::first_dual_stack_ips());
    node.del("pod", Some(&netns), &config).silent();
    node.engine()
        .set_version(hns::HnsVersion::new(10, 2))
        .unwrap();
    // An older HNS: FLANNEL_IPV6_SUBNET is left out rather than refused.
    let ips = node.add("pod", &netns, &config).result()["ips"].clone();
    assert_eq!(ips.as_array().unwrap().len(), 1, "{ips}");
    assert!(ips[0]["address"].as_str().unwrap().starts_with("10.244.1."));
}
