//! A stale endpoint holding the new pod's address (`HCN_E_ADDR_INVALID_OR_RESERVED`): removed
//! and the create retried when it is provably a dead attachment of cni-win's on this network;
//! code 110 naming it otherwise.

use cni_win_conformance::node::{Node, first_address};
use hns::schema::EndpointFlags;

use crate::{NETWORK, config};

/// A node where pod `label` got 10.244.1.3 and host-local then lost its store (a node whose
/// data dir was wiped while HNS kept its endpoints): the next pod is given .3 again. (Each
/// test's old pod has its own name: attachment locks are the machine's.)
fn node_with_old_pod(label: &str) -> (Node, String) {
    let node = crate::node(label);
    let netns = node.namespace();
    let result = node.add(label, &netns, &config(&node, "1.0.0")).result();
    assert_eq!(first_address(&result).0, "10.244.1.3/24");
    std::fs::remove_dir_all(node.ipam_dir().join(NETWORK)).unwrap();
    (node, netns)
}

/// A node whose store is empty and where something else holds .3.
fn node_with_holder(label: &str, name: &str, flags: EndpointFlags) -> Node {
    let node = crate::node(label);
    node.foreign_endpoint(NETWORK, name, "10.244.1.3", flags);
    node
}

fn assert_refused_naming(node: &Node, holder: &str, hint: &str) {
    let netns = node.namespace();
    let message = node.add("new", &netns, &config(node, "1.0.0")).error(110);
    assert!(message.contains(holder), "{message}");
    assert!(message.contains(hint), "{message}");
    // The holder stays, and the failed ADD gave its address back.
    node.endpoint(holder);
    assert!(node.reservations(NETWORK).is_empty());
}

#[test]
fn a_dead_pods_endpoint_is_removed_and_the_create_retried() {
    let (node, old_netns) = node_with_old_pod("stale-dead");
    node.client()
        .delete_namespace(old_netns.parse().unwrap())
        .unwrap();
    let netns = node.namespace();
    let result = node.add("new", &netns, &config(&node, "1.0.0")).result();
    assert_eq!(first_address(&result).0, "10.244.1.3/24");
    let names: Vec<String> = node
        .endpoints(NETWORK)
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, vec![format!("new_{NETWORK}")]);
    assert_eq!(node.reservations(NETWORK), vec!["10.244.1.3".to_owned()]);
}

#[test]
fn a_live_pods_endpoint_stays_and_the_add_fails_with_110() {
    let (node, old_netns) = node_with_old_pod("stale-live");
    assert_refused_naming(&node, &format!("stale-live_{NETWORK}"), &old_netns);
}

#[test]
fn a_foreign_endpoint_stays_and_the_add_fails_with_110() {
    let node = node_with_holder("stale-foreign", "squatter", EndpointFlags::NONE);
    assert_refused_naming(&node, "squatter", "did not make");
}

#[test]
fn a_remote_endpoint_stays_and_the_add_fails_with_110() {
    let node = node_with_holder(
        "stale-remote",
        &format!("old_{NETWORK}"),
        EndpointFlags::REMOTE_ENDPOINT,
    );
    assert_refused_naming(&node, &format!("old_{NETWORK}"), "remote");
}

#[test]
fn our_name_under_an_id_we_did_not_derive_is_not_ours() {
    // The reference plugin's endpoint of another pod (HNS chose its ID), attached to nothing.
    let node = node_with_holder(
        "stale-reference",
        &format!("old_{NETWORK}"),
        EndpointFlags::NONE,
    );
    assert_refused_naming(&node, &format!("old_{NETWORK}"), "did not make");
}

#[test]
fn a_holder_whose_attachment_has_a_command_running_stays() {
    let (node, old_netns) = node_with_old_pod("stale-busy");
    node.client()
        .delete_namespace(old_netns.parse().unwrap())
        .unwrap();
    let _busy = cni_win_core::attachment_lock::try_lock(NETWORK, "stale-busy", "eth0")
        .unwrap()
        .expect("free");
    assert_refused_naming(&node, &format!("stale-busy_{NETWORK}"), "command running");
}
