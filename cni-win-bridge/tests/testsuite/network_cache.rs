//! The network cache is never wrong: whatever happened to the network (re-created with a new
//! ID and subnet, deleted, dropped by a reboot, replaced by one of another type, raced by
//! concurrent ADDs) or to the cache file (another network's, damaged, a link), ADD puts the
//! endpoint on the network that has the name now, or fails as it would without a cache.

use cni_win_conformance::node::{Node, network_settings};
use hns::schema::{HostComputeNetwork, NetworkFlags};
use hns::{Function, Guid, HResult};
use serde_json::Value;

use crate::{NETWORK, config};

/// `cbr0` as flanneld creates it again with another node subnet.
fn recreated() -> HostComputeNetwork {
    network_settings(NETWORK, "L2Bridge", &[("10.244.7.0/24", "10.244.7.1")])
}

/// The config for the re-created network's subnet.
fn recreated_config(node: &Node) -> Value {
    let mut config = config(node, "1.1.0");
    config["ipam"]["subnet"] = "10.244.7.0/24".into();
    config
}

/// The network ID the cache file names, `None` when there is no readable cache.
fn cached_id(node: &Node) -> Option<Guid> {
    let text = std::fs::read_to_string(node.network_cache(NETWORK)).ok()?;
    let entry: Value = serde_json::from_str(&text).ok()?;
    entry["Network"]["ID"].as_str()?.parse().ok()
}

/// A node whose cache is warm: one pod added.
fn warm_node(label: &str) -> Node {
    let node = crate::node(label);
    node.add("warm", &node.namespace(), &config(&node, "1.1.0"))
        .result();
    assert_eq!(cached_id(&node), Some(node.network_id(NETWORK)));
    node
}

fn delete_network(node: &Node) {
    node.client()
        .delete_network(node.network_id(NETWORK))
        .unwrap();
}

#[test]
fn a_recreated_network_is_found_by_name_and_cached_again() {
    let node = warm_node("cache-recreated");
    let old = node.network_id(NETWORK);
    delete_network(&node);
    let new = node.create_network(&recreated());
    assert_ne!(old, new);
    let netns = node.namespace();
    node.calls();
    let result = node.add("pod", &netns, &recreated_config(&node)).result();
    // The cached ID fails to open (1 call), then the lookup by name: one call over a cold ADD.
    assert_eq!(node.calls(), (8, 11));
    assert_eq!(result["ips"][0]["gateway"], "10.244.7.2", "{result}");
    assert_eq!(node.endpoint("pod_cbr0").host_compute_network, new);
    assert_eq!(cached_id(&node), Some(new));
    // The next pod's ADD is warm again.
    let netns = node.namespace();
    node.calls();
    node.add("next", &netns, &recreated_config(&node)).result();
    assert_eq!(node.calls(), (5, 8));
}

#[test]
fn a_recreated_network_with_another_subnet_refuses_the_old_config() {
    let node = warm_node("cache-recreated-old-config");
    delete_network(&node);
    node.create_network(&recreated());
    let msg = node
        .add("pod", &node.namespace(), &config(&node, "1.1.0"))
        .error(7);
    assert!(msg.contains("10.244.7.0/24"), "{msg}");
    assert!(node.endpoints(NETWORK).is_empty());
}

#[test]
fn a_network_created_again_under_the_same_id_with_another_subnet_is_not_trusted() {
    let node = warm_node("cache-same-id");
    let id = node.network_id(NETWORK);
    let reservations = node.reservations(NETWORK);
    delete_network(&node);
    let mut settings = recreated();
    settings.id = id;
    node.client().create_network(id, &settings).unwrap();
    // The old config: HNS refuses its address on the new subnet, so ADD looks the network up
    // by name and reports what the lookup finds, as it would have with no cache.
    let msg = node
        .add("pod", &node.namespace(), &config(&node, "1.1.0"))
        .error(7);
    assert!(msg.contains("10.244.7.0/24"), "{msg}");
    assert!(node.endpoints(NETWORK).is_empty());
    assert_eq!(
        node.reservations(NETWORK),
        reservations,
        "the failed ADD gave its address back"
    );
    // The new config fits the network as HNS has it now.
    let result = node
        .add("pod", &node.namespace(), &recreated_config(&node))
        .result();
    assert_eq!(result["ips"][0]["gateway"], "10.244.7.2", "{result}");
    assert_eq!(node.endpoint("pod_cbr0").host_compute_network, id);
}

#[test]
fn a_deleted_network_is_missing_not_cached() {
    let node = warm_node("cache-deleted");
    let config = config(&node, "1.1.0");
    delete_network(&node);
    node.add("pod", &node.namespace(), &config).error(11);
    // Flanneld creates it again: the next ADD uses it.
    let new = node.create_network(&network_settings(
        NETWORK,
        "L2Bridge",
        &[("10.244.1.0/24", "10.244.1.1")],
    ));
    node.add("pod", &node.namespace(), &config).result();
    assert_eq!(node.endpoint("pod_cbr0").host_compute_network, new);
    assert_eq!(cached_id(&node), Some(new));
}

#[test]
fn a_non_persistent_network_dropped_by_a_reboot_is_not_used() {
    let node = crate::PLUGIN.node_without_network("cache-reboot");
    let mut settings = network_settings(NETWORK, "L2Bridge", &[("10.244.1.0/24", "10.244.1.1")]);
    settings.flags = NetworkFlags::ENABLE_NON_PERSISTENT;
    let old = node.create_network(&settings);
    let config = config(&node, "1.1.0");
    node.add("before", &node.namespace(), &config).result();
    assert_eq!(cached_id(&node), Some(old));
    node.reboot();
    node.add("pod", &node.namespace(), &config).error(11);
    let new = node.create_network(&settings);
    node.add("pod", &node.namespace(), &config).result();
    assert_eq!(node.endpoint("pod_cbr0").host_compute_network, new);
}

#[test]
fn a_network_of_another_type_under_the_name_is_refused() {
    let node = warm_node("cache-other-type");
    delete_network(&node);
    node.create_network(&network_settings(
        NETWORK,
        "Overlay",
        &[("10.244.1.0/24", "10.244.1.1")],
    ));
    let msg = node
        .add("pod", &node.namespace(), &config(&node, "1.1.0"))
        .error(7);
    assert!(msg.contains("Overlay"), "{msg}");
    assert!(node.endpoints(NETWORK).is_empty());
}

#[test]
fn another_networks_cache_file_is_not_used() {
    // Two networks, each with its warm cache; the files swapped behind the plugin's back.
    let node = warm_node("cache-swapped");
    let other = "cbr1";
    node.create_network(&network_settings(
        other,
        "L2Bridge",
        &[("10.244.2.0/24", "10.244.2.1")],
    ));
    let mut other_config = config(&node, "1.1.0");
    other_config["name"] = other.into();
    other_config["ipam"]["subnet"] = "10.244.2.0/24".into();
    node.add("other", &node.namespace(), &other_config).result();
    let ours = node.network_cache(NETWORK);
    let theirs = node.network_cache(other);
    let (a, b) = (
        std::fs::read(&ours).unwrap(),
        std::fs::read(&theirs).unwrap(),
    );
    std::fs::write(&ours, b).unwrap();
    std::fs::write(&theirs, a).unwrap();

    node.add("pod", &node.namespace(), &config(&node, "1.1.0"))
        .result();
    node.add("pod", &node.namespace(), &other_config).result();
    assert_eq!(
        node.endpoint("pod_cbr0").host_compute_network,
        node.network_id(NETWORK)
    );
    assert_eq!(
        node.endpoint("pod_cbr1").host_compute_network,
        node.network_id(other)
    );
    assert_eq!(cached_id(&node), Some(node.network_id(NETWORK)));
}

#[test]
fn a_damaged_cache_is_a_miss_and_is_healed() {
    let node = warm_node("cache-damaged");
    let config = config(&node, "1.1.0");
    let cache = node.network_cache(NETWORK);
    for damage in [&b"{\"Version\":1,\"Network\":"[..], b"\0\xff garbage", b""] {
        std::fs::write(&cache, damage).unwrap();
        let (pod, netns) = (format!("pod-{}", damage.len()), node.namespace());
        node.calls();
        node.add(&pod, &netns, &config).result();
        assert_eq!(node.calls(), (7, 10), "a miss costs the lookup by name");
        assert_eq!(cached_id(&node), Some(node.network_id(NETWORK)));
    }
    // A directory where the file should be is removed and replaced by the file.
    std::fs::remove_file(&cache).unwrap();
    std::fs::create_dir(&cache).unwrap();
    node.add("pod-dir", &node.namespace(), &config).result();
    assert!(std::fs::symlink_metadata(&cache).unwrap().is_file());
}

#[test]
fn a_linked_cache_is_not_followed() {
    use std::os::unix::fs::PermissionsExt;

    let node = warm_node("cache-link");
    let config = config(&node, "1.1.0");
    let cache = node.network_cache(NETWORK);
    // The link points at a valid cache of this very network: it must still not be read.
    let target = node.ipam_dir().join("elsewhere");
    std::fs::copy(&cache, &target).unwrap();
    std::fs::remove_file(&cache).unwrap();
    std::os::unix::fs::symlink(&target, &cache).unwrap();
    let netns = node.namespace();
    node.calls();
    node.add("pod", &netns, &config).result();
    assert_eq!(node.calls(), (7, 10), "a link is a miss");
    let metadata = std::fs::symlink_metadata(&cache).unwrap();
    assert!(metadata.is_file(), "the link is replaced by a file");
    assert_eq!(metadata.permissions().mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::read(&target).unwrap(),
        std::fs::read(&cache).unwrap(),
        "the link's target is left as it was"
    );
}

#[test]
fn a_network_gone_at_the_create_is_looked_up_again_once() {
    let node = warm_node("cache-gone-at-create");
    let config = config(&node, "1.1.0");
    node.engine()
        .inject_fault(
            Function::CreateEndpoint,
            1,
            HResult::HCN_E_NETWORK_NOT_FOUND,
        )
        .unwrap();
    node.add("pod", &node.namespace(), &config).result();
    assert_eq!(node.endpoints(NETWORK).len(), 2);
    assert_eq!(
        node.reservations(NETWORK).len(),
        2,
        "the first pass gave its address back"
    );
    // A create that keeps failing so fails the second pass, and there is no third.
    for nth in [1, 2] {
        node.engine()
            .inject_fault(
                Function::CreateEndpoint,
                nth,
                HResult::HCN_E_NETWORK_NOT_FOUND,
            )
            .unwrap();
    }
    let netns = node.namespace();
    node.calls();
    let msg = node.add("gone", &netns, &config).error(110);
    assert!(msg.contains("not found"), "{msg}");
    assert_eq!(node.engine().stats().unwrap()["HcnCreateEndpoint"], 2);
    assert_eq!(node.reservations(NETWORK).len(), 2);
}

#[test]
fn an_endpoint_gone_before_the_attach_does_not_blame_cni_netns() {
    // Its network was deleted between the create and the attach, which removed it.
    let node = warm_node("endpoint-gone-at-attach");
    node.engine()
        .inject_fault(
            Function::ModifyNamespace,
            1,
            HResult::HCN_E_ENDPOINT_NOT_FOUND,
        )
        .unwrap();
    let msg = node
        .add("pod", &node.namespace(), &config(&node, "1.1.0"))
        .error(110);
    assert!(!msg.contains("CNI_NETNS"), "{msg}");
    assert_eq!(
        node.reservations(NETWORK).len(),
        1,
        "the rollback gave the address back"
    );
}

#[test]
fn concurrent_adds_racing_a_recreation_never_use_the_stale_network() {
    let node = warm_node("cache-race");
    let config = config(&node, "1.1.0");
    let pods: Vec<(String, String)> = (0..8)
        .map(|i| (format!("race-{i}"), node.namespace()))
        .collect();
    let settings = network_settings(NETWORK, "L2Bridge", &[("10.244.1.0/24", "10.244.1.1")]);
    let new = std::thread::scope(|scope| {
        let adds: Vec<_> = pods
            .iter()
            .map(|(pod, netns)| scope.spawn(|| node.add(pod, netns, &config)))
            .collect();
        delete_network(&node);
        let new = node.create_network(&settings);
        for add in adds {
            let reply = add.join().unwrap();
            // Success, or the network missing for an instant (11), or HNS refusing a create
            // on the network it just deleted: never anything else.
            assert!(
                reply.ok() || matches!(reply.json()["code"].as_u64(), Some(11 | 110)),
                "{reply:?}"
            );
        }
        new
    });
    // The runtime retries every pod: each lands on the network that has the name now.
    for (pod, netns) in &pods {
        node.add(pod, netns, &config).result();
        assert_eq!(
            node.endpoint(&format!("{pod}_cbr0")).host_compute_network,
            new
        );
    }
    assert_eq!(cached_id(&node), Some(new));
}
