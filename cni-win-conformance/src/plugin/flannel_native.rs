//! The plugin listed directly in a conflist with Flannel's `subnetFile` (Flannel-native mode):
//! the native example attaches pods as Flannel's delegate would, a node switches between
//! `type: flannel` and the direct conflist with pods running, DEL and GC never need
//! subnet.env, CHECK notices a node subnet that changed, and subnet.env is read as flanneld
//! leaves it (torn writes, missing keys, links, an IPv6 subnet).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use super::{Plugin, first_plugin};
use crate::node::{Call, Node};

/// What flanneld writes for the node: its subnet, the cluster network, IP masquerade on.
pub const SUBNET_ENV: &str = "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\n\
                              FLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n";

/// Where `node`'s flanneld writes subnet.env.
pub fn subnet_env(node: &Node) -> PathBuf {
    node.dir().join("subnet.env")
}

/// Where the plugin keeps Flannel's records on `node` (the native config's `dataDir`).
pub fn flannel_dir(node: &Node) -> PathBuf {
    node.dir().join("flannel")
}

/// The plugin's native example with its Flannel files and host-local's store under the
/// node's dir.
pub fn native(plugin: &Plugin, node: &Node) -> Value {
    let mut config = first_plugin(&plugin.example(plugin.flannel_examples.0));
    config["subnetFile"] = json!(subnet_env(node));
    config["dataDir"] = json!(flannel_dir(node));
    config["ipam"] = json!({"type": "host-local", "dataDir": node.ipam_dir()});
    config
}

/// What Flannel hands the plugin for the `type: flannel` example.
fn delegated(plugin: &Plugin, node: &Node) -> Value {
    node.rendered_by_flannel(
        &first_plugin(&plugin.example(plugin.flannel_examples.1)),
        plugin.name,
    )
}

fn node_with_subnet_env(plugin: &Plugin, label: &str) -> Node {
    let node = plugin.node(label);
    std::fs::write(subnet_env(&node), SUBNET_ENV).unwrap();
    node
}

/// Flannel's record of `container_id`, if there is one.
fn record(node: &Node, container_id: &str) -> Option<Value> {
    let bytes = std::fs::read(flannel_dir(node).join(container_id)).ok()?;
    Some(serde_json::from_slice(&bytes).unwrap())
}

fn assert_nothing_left(plugin: &Plugin, node: &Node) {
    assert!(node.endpoints(plugin.network).is_empty());
    assert!(node.reservations(plugin.network).is_empty());
}

/// The native example's pod: the first address, the same endpoint policies as the delegate
/// Flannel renders from the `type: flannel` example, and Flannel's record (the delegate config
/// it would have saved, owner-only); CHECK and STATUS accept it.
pub fn the_native_example_attaches_pods_as_flannels_delegate_would(plugin: &Plugin) {
    let node = node_with_subnet_env(plugin, "native-example");
    let config = native(plugin, &node);
    let netns = node.namespace();
    let result = node.add("native", &netns, &config).result();
    assert_eq!(
        result["ips"],
        json!([{"address": format!("{}/24", plugin.first_address()), "gateway": plugin.gateway(), "interface": 0}])
    );
    // The same endpoint as the delegate Flannel renders from the type: flannel example.
    node.add("delegated", &node.namespace(), &delegated(plugin, &node))
        .result();
    let policies = |name: &str| {
        serde_json::to_value(node.endpoint(&plugin.endpoint_name(name))).unwrap()["Policies"]
            .clone()
    };
    assert_eq!(policies("native"), policies("delegated"));

    // Flannel's record: the delegate config Flannel would have saved.
    let saved = record(&node, "native").expect("the record Flannel's DEL reads");
    assert_eq!(saved["type"], plugin.name);
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

/// Added through Flannel (which saved its record), deleted through the native conflist; added
/// through the native conflist, deleted through Flannel, whose DEL hands the record to the
/// delegate.
pub fn a_node_switches_between_flannel_and_the_native_conflist_with_pods_running(plugin: &Plugin) {
    let node = node_with_subnet_env(plugin, "switch");
    let config = native(plugin, &node);

    let delegated = delegated(plugin, &node);
    let old = node.namespace();
    node.add("old", &old, &delegated).result();
    std::fs::create_dir_all(flannel_dir(&node)).unwrap();
    std::fs::write(flannel_dir(&node).join("old"), delegated.to_string()).unwrap();
    node.del("old", Some(&old), &config).silent();
    assert_nothing_left(plugin, &node);
    assert!(record(&node, "old").is_none());

    let new = node.namespace();
    node.add("new", &new, &config).result();
    let saved = record(&node, "new").unwrap();
    node.del("new", Some(&new), &saved).silent();
    assert_nothing_left(plugin, &node);
}

/// With subnet.env gone, ADD is try-again-later and STATUS not ready, naming it; DEL removes
/// the pod and Flannel's record.
pub fn del_never_needs_subnet_env(plugin: &Plugin) {
    let node = node_with_subnet_env(plugin, "teardown");
    let config = native(plugin, &node);
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
    assert_nothing_left(plugin, &node);
    assert!(record(&node, "pod").is_none());
}

/// GC, like DEL, only gives back: it collects a pod the runtime no longer lists, endpoint and
/// address, with subnet.env gone, and keeps the one it lists. (The pods of each GC case have
/// their own names: attachment locks are the machine's, and GC leaves a pod whose lock a
/// command holds.)
pub fn gc_never_needs_subnet_env(plugin: &Plugin) {
    let node = node_with_subnet_env(plugin, "gc");
    let mut config = native(plugin, &node);
    config["cniVersion"] = json!("1.1.0");
    node.add("gc-kept", &node.namespace(), &config).result();
    node.add("gc-gone", &node.namespace(), &config).result();
    std::fs::remove_file(subnet_env(&node)).unwrap();

    config["cni.dev/valid-attachments"] = json!([{"containerID": "gc-kept", "ifname": "eth0"}]);
    node.run(&Call::network("GC", &config)).silent();
    let left: Vec<String> = node
        .endpoints(plugin.network)
        .into_iter()
        .map(|endpoint| endpoint.name)
        .collect();
    assert_eq!(left, [plugin.endpoint_name("gc-kept")]);
    assert_eq!(node.reservations(plugin.network).len(), 1);
}

/// GC removes a pod it collects exactly as that pod's DEL would (the one removal every
/// collector shares, `cni_win_core::removal`): endpoint, address and Flannel's record.
pub fn gc_removes_what_del_would_flannels_record_included(plugin: &Plugin) {
    let node = node_with_subnet_env(plugin, "gc-as-del");
    let mut config = native(plugin, &node);
    config["cniVersion"] = json!("1.1.0");
    node.add("gc-as-del-kept", &node.namespace(), &config)
        .result();
    node.add("gc-as-del-gone", &node.namespace(), &config)
        .result();
    assert!(record(&node, "gc-as-del-gone").is_some());

    config["cni.dev/valid-attachments"] =
        json!([{"containerID": "gc-as-del-kept", "ifname": "eth0"}]);
    node.run(&Call::network("GC", &config)).silent();
    assert!(
        record(&node, "gc-as-del-gone").is_none(),
        "Flannel's record of a collected pod goes"
    );
    assert!(record(&node, "gc-as-del-kept").is_some());
    assert_eq!(node.endpoints(plugin.network).len(), 1);
    assert_eq!(node.reservations(plugin.network).len(), 1);
}

/// flanneld truncates, then writes: a read may stop inside the last line, where
/// `FLANNEL_IPMASQ=tr` would read as false. A torn file is read again; one cut short for good
/// is try-again-later once the retries are spent.
pub fn a_torn_subnet_env_is_read_again(plugin: &Plugin) {
    let node = plugin.node("torn");
    let config = native(plugin, &node);
    let path = subnet_env(&node);
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

    std::fs::write(&path, SUBNET_ENV.trim_end()).unwrap();
    let msg = node.add("late", &node.namespace(), &config).error(11);
    assert!(msg.contains("no newline"), "{msg}");
}

/// A subnet.env without `FLANNEL_MTU` is named by the missing key, by STATUS and by ADD, which
/// reserves nothing.
pub fn an_incomplete_subnet_env_is_named_by_its_missing_key(plugin: &Plugin) {
    let node = plugin.node("incomplete");
    let config = native(plugin, &node);
    std::fs::write(
        subnet_env(&node),
        SUBNET_ENV.replace("FLANNEL_MTU=1450\n", ""),
    )
    .unwrap();
    let msg = node.run(&Call::network("STATUS", &config)).error(50);
    assert!(msg.contains("FLANNEL_MTU is missing"), "{msg}");
    let msg = node.add("pod", &node.namespace(), &config).error(11);
    assert!(msg.contains("FLANNEL_MTU is missing"), "{msg}");
    assert!(node.reservations(plugin.network).is_empty());
}

/// subnet.env is a file flanneld writes, never a link to one.
#[cfg(unix)]
pub fn subnet_env_is_never_read_through_a_link(plugin: &Plugin) {
    let node = plugin.node("link");
    let config = native(plugin, &node);
    let target = node.dir().join("elsewhere.env");
    std::fs::write(&target, SUBNET_ENV).unwrap();
    std::os::unix::fs::symlink(&target, subnet_env(&node)).unwrap();
    let msg = node.add("pod", &node.namespace(), &config).error(7);
    assert!(msg.contains("a link"), "{msg}");
}

/// flanneld got a new lease for the node: CHECK of a pod added on the old subnet says so,
/// naming the pod's address and the new subnet.
pub fn check_reports_a_node_subnet_that_changed_since_the_pod_was_added(plugin: &Plugin) {
    let node = node_with_subnet_env(plugin, "moved");
    let mut config = native(plugin, &node);
    let netns = node.namespace();
    config["prevResult"] = node.add("pod", &netns, &config).result();
    node.check("pod", &netns, &config).silent();

    std::fs::write(
        subnet_env(&node),
        SUBNET_ENV.replace("10.244.1.1/24", "10.244.7.1/24"),
    )
    .unwrap();
    let msg = node.check("pod", &netns, &config).error(113);
    assert!(
        msg.contains("subnet changed")
            && msg.contains(&plugin.first_address())
            && msg.contains("10.244.7.0/24"),
        "{msg}"
    );
}

/// `FLANNEL_IPV6_SUBNET` is a second range set where HNS has dual-stack, and left out (not
/// refused) where it has not.
pub fn the_ipv6_subnet_is_a_second_range_set_when_hns_has_dual_stack(plugin: &Plugin) {
    let node = plugin.dual_stack_node("native-dual");
    std::fs::write(
        subnet_env(&node),
        format!(
            "FLANNEL_IPV6_NETWORK=fd00:10:244::/56\nFLANNEL_IPV6_SUBNET=fd00:10:244:1::1/64\n{SUBNET_ENV}"
        ),
    )
    .unwrap();
    let config = native(plugin, &node);
    let netns = node.namespace();
    let result = node.add("pod", &netns, &config).result();
    assert_eq!(result["ips"], plugin.first_dual_stack_ips());
    node.del("pod", Some(&netns), &config).silent();
    node.engine()
        .set_version(hns::HnsVersion::new(10, 2))
        .unwrap();
    let ips = node.add("pod", &netns, &config).result()["ips"].clone();
    assert_eq!(ips.as_array().unwrap().len(), 1, "{ips}");
    assert!(ips[0]["address"].as_str().unwrap().starts_with("10.244.1."));
}

/// `subnetFile` and Flannel's `dataDir` are paths from a root: relative ones (the plugin runs
/// in the node's directory, where subnet.env is, so the old reading found it there) are code 7
/// naming the key from ADD, CHECK and STATUS, and nothing is reserved or recorded. DEL never
/// reads `subnetFile` (a warning), but needs `dataDir` to find Flannel's record.
pub fn relative_flannel_paths_are_refused_naming_the_key(plugin: &Plugin) {
    let node = node_with_subnet_env(plugin, "relative");
    let good = native(plugin, &node);
    let netns = node.namespace();
    let mut relative = vec![("subnetFile", "subnet.env"), ("dataDir", "flannel")];
    if !cfg!(windows) {
        relative.push(("subnetFile", r"C:\run\flannel\subnet.env"));
        relative.push(("dataDir", r"C:\var\lib\cni\flannel"));
    }
    for (key, value) in relative {
        let mut config = good.clone();
        config[key] = json!(value);
        let refused = |msg: String| {
            assert!(
                msg.starts_with(&format!("{key}: ")),
                "{key} = {value}: {msg}"
            );
            assert!(msg.contains("not an absolute path"), "{msg}");
        };
        refused(node.add("pod", &netns, &config).error(7));
        let mut check = config.clone();
        check["prevResult"] = json!({"cniVersion": config["cniVersion"], "ips": []});
        refused(node.check("pod", &netns, &check).error(7));
        refused(node.run(&Call::network("STATUS", &config)).error(7));
        assert!(node.reservations(plugin.network).is_empty());
        // Where a relative `dataDir` would put the record: the node's directory, the
        // plugin's working directory.
        assert!(!flannel_dir(&node).exists());
        if key == "dataDir" {
            assert!(!node.dir().join(value).exists(), "{value}");
        }
    }

    node.add("pod", &netns, &good).result();
    let mut del = good.clone();
    del["dataDir"] = json!("flannel");
    let msg = node.del("pod", Some(&netns), &del).error(7);
    assert!(msg.starts_with("dataDir: "), "{msg}");
    del = good.clone();
    del["subnetFile"] = json!("subnet.env");
    node.del("pod", Some(&netns), &del).silent();
    assert_nothing_left(plugin, &node);
    assert!(record(&node, "pod").is_none());
}
