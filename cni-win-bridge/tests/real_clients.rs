//! What real clients send that the reference plugins accept: libcni's `cnitool gc` (no
//! `cni.dev/valid-attachments`).

mod common;

use common::{Call, NETWORK, config};
use hns::schema::endpoint_flags;
use serde_json::json;

#[test]
fn gc_without_a_list_removes_every_attachment_as_libcni_means_it() {
    let node = common::node("gc-unlisted");
    let config = config(&node, "1.1.0");
    for pod in ["a", "b"] {
        node.add(pod, &node.namespace(), &config).result();
    }
    node.foreign_endpoint(NETWORK, "cbr0_ep", "10.244.1.2", 0);
    node.foreign_endpoint(
        NETWORK,
        "remote_cbr0",
        "10.244.1.200",
        endpoint_flags::REMOTE_ENDPOINT,
    );
    assert!(config.get("cni.dev/valid-attachments").is_none());
    node.run(&Call::network("GC", &config)).silent();
    let mut left: Vec<String> = node
        .endpoints(NETWORK)
        .into_iter()
        .map(|e| e.name)
        .collect();
    left.sort();
    assert_eq!(left, ["cbr0_ep", "remote_cbr0"]);
    assert!(node.reservations(NETWORK).is_empty());
}

#[test]
fn gc_with_a_malformed_list_is_still_refused_and_removes_nothing() {
    let node = common::node("gc-malformed");
    let config = config(&node, "1.1.0");
    node.add("a", &node.namespace(), &config).result();
    for bad in [json!("a/eth0"), json!([{"containerID": 5}]), json!({})] {
        let mut gc = config.clone();
        gc["cni.dev/valid-attachments"] = bad;
        let msg = node.run(&Call::network("GC", &gc)).error(7);
        assert!(msg.contains("cni.dev/valid-attachments"), "{msg}");
        assert_eq!(node.endpoints(NETWORK).len(), 1);
        assert_eq!(node.reservations(NETWORK).len(), 1);
    }
}
