//! Failure handling the HNS catalogue does not cover: a failed repeated ADD or endpoint delete
//! keeps what exists, GC's boundaries (foreign endpoints, other networks; with and without
//! `cni.dev/valid-attachments`). The raw-call budgets are the suite's.

use cni_win_conformance::node::{Call, Node, network_settings};
use hns::schema::EndpointFlags;
use hns::{Function, HResult};
use serde_json::json;

use crate::{NETWORK, config};

#[test]
fn a_failed_repeated_add_keeps_the_existing_attachment() {
    let node = crate::node("repeat-fault");
    let config = config(&node, "1.0.0");
    let netns = node.namespace();
    let first = node.add("pod", &netns, &config).result();
    let reservations = node.reservations(NETWORK);
    // The endpoint left its namespace, so the repeated ADD attaches it again (and that may fail).
    let endpoint = node.endpoint("pod_cbr0");
    node.client()
        .detach_endpoint(netns.parse().unwrap(), endpoint.id)
        .unwrap();
    // OpenNetwork first, while the network cache is warm from the first ADD.
    for function in [
        Function::OpenNetwork,
        Function::EnumerateNetworks,
        Function::QueryNetworkProperties,
        Function::CreateEndpoint,
        Function::OpenEndpoint,
        Function::QueryEndpointProperties,
        Function::OpenNamespace,
        Function::ModifyNamespace,
    ] {
        // The lookup by name runs only when the network cache is cold.
        if matches!(
            function,
            Function::EnumerateNetworks | Function::QueryNetworkProperties
        ) {
            node.forget_network_cache(NETWORK);
        }
        node.engine()
            .inject_fault(function, 1, HResult::E_FAIL)
            .unwrap();
        let reply = node.add("pod", &netns, &config);
        if matches!(function, Function::CreateEndpoint | Function::OpenNetwork) {
            // A refused create is followed by a lookup by ID: the attachment's endpoint
            // exists, so it is adopted (attached again) rather than failing. A cached network
            // that does not open is looked up by name, which opens it again.
            assert_eq!(reply.result(), first);
            node.client()
                .detach_endpoint(netns.parse().unwrap(), endpoint.id)
                .unwrap();
        } else {
            assert_eq!(reply.status, Some(1), "{function:?}: {reply:?}");
        }
        assert_eq!(node.endpoint("pod_cbr0").id, endpoint.id, "{function:?}");
        assert_eq!(node.reservations(NETWORK), reservations, "{function:?}");
    }
    assert_eq!(node.add("pod", &netns, &config).result(), first);
}

#[test]
fn a_failed_endpoint_delete_keeps_the_address() {
    let node = crate::node("del-fault");
    let config = config(&node, "1.0.0");
    let netns = node.namespace();
    node.add("pod", &netns, &config).result();
    let reservations = node.reservations(NETWORK);
    node.engine()
        .inject_fault(Function::DeleteEndpoint, 1, HResult::E_FAIL)
        .unwrap();
    node.del("pod", Some(&netns), &config).error(110);
    assert_eq!(node.reservations(NETWORK), reservations);
    node.del("pod", Some(&netns), &config).silent();
    assert!(node.reservations(NETWORK).is_empty() && node.endpoints(NETWORK).is_empty());
}

/// The names of the endpoints on `cbr0`, sorted.
fn endpoint_names(node: &Node) -> Vec<String> {
    let mut names: Vec<String> = node
        .endpoints(NETWORK)
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort();
    names
}

#[test]
fn gc_removes_only_our_stale_endpoints_on_this_network() {
    let node = crate::node("gc");
    node.create_network(&network_settings(
        "other",
        "L2Bridge",
        &[("10.245.1.0/24", "10.245.1.1")],
    ));
    let config = config(&node, "1.1.0");
    for pod in ["keep", "stale-a", "stale-b"] {
        node.add(pod, &node.namespace(), &config).result();
    }
    node.foreign_endpoint(NETWORK, "cbr0_ep", "10.244.1.2", EndpointFlags::NONE);
    node.foreign_endpoint(
        NETWORK,
        "remote_cbr0",
        "10.244.1.200",
        EndpointFlags::REMOTE_ENDPOINT,
    );
    node.foreign_endpoint(
        NETWORK,
        "kube-proxy-sourcevip",
        "10.244.1.201",
        EndpointFlags::NONE,
    );
    node.foreign_endpoint("other", "stale-c_cbr0", "10.245.1.9", EndpointFlags::NONE);
    let mut gc = config.clone();
    gc["cni.dev/valid-attachments"] = json!([{"containerID": "keep", "ifname": "eth0"}]);
    node.run(&Call::network("GC", &gc)).silent();
    let left = endpoint_names(&node);
    assert_eq!(
        left,
        [
            "cbr0_ep",
            "keep_cbr0",
            "kube-proxy-sourcevip",
            "remote_cbr0"
        ]
    );
    let other = node
        .client()
        .list_endpoints(Some(node.network_id("other")))
        .unwrap();
    assert_eq!(other.len(), 1);
    assert_eq!(node.reservations(NETWORK).len(), 1);

    // Without a list (libcni's `cnitool gc`) no attachment is valid, and the same boundaries hold.
    node.run(&Call::network("GC", &config)).silent();
    let left = endpoint_names(&node);
    assert_eq!(left, ["cbr0_ep", "kube-proxy-sourcevip", "remote_cbr0"]);
    assert!(node.reservations(NETWORK).is_empty());
    assert_eq!(
        node.client()
            .list_endpoints(Some(node.network_id("other")))
            .unwrap()
            .len(),
        1
    );
}

/// GC never releases a reservation that is not a pod's: kube-proxy's source VIP as the field's
/// scripts reserve it (host-local run directly: `dummy`/`dummy`, RKE2's
/// `kube-proxy`/`source-vip`), nor an address an endpoint on the network holds (kube-proxy's
/// own nameless endpoint, a remote endpoint), whoever the reservation names.
#[test]
fn gc_keeps_reservations_that_are_not_a_pods() {
    let node = crate::node("gc-not-pods");
    let config = config(&node, "1.1.0");
    node.add("pod", &node.namespace(), &config).result();
    let store = node.ipam_dir().join(NETWORK);
    for (ip, owner) in [
        ("10.244.1.50", "dummy\r\ndummy"),
        ("10.244.1.51", "kube-proxy\r\nsource-vip"),
        ("10.244.1.52", "my-script\r\nvip"),
        ("10.244.1.53", "moved\r\neth0"),
        ("10.244.1.54", "gone\r\neth0"),
    ] {
        std::fs::write(store.join(ip), owner).unwrap();
    }
    node.foreign_endpoint(NETWORK, "", "10.244.1.52", EndpointFlags::NONE);
    node.foreign_endpoint(NETWORK, "", "10.244.1.53", EndpointFlags::REMOTE_ENDPOINT);
    node.run(&Call::network("GC", &config)).silent();
    assert_eq!(
        node.reservations(NETWORK),
        ["10.244.1.50", "10.244.1.51", "10.244.1.52", "10.244.1.53"]
    );
}

#[test]
fn a_rollback_that_cannot_delete_the_endpoint_keeps_its_address() {
    let node = crate::node("rollback-delete-fault");
    let config = config(&node, "1.0.0");
    let netns = node.namespace();
    // Attaching fails, then so does the rollback's delete: the endpoint stays, so must its IP.
    node.engine()
        .inject_fault(Function::ModifyNamespace, 1, HResult::E_FAIL)
        .unwrap();
    node.engine()
        .inject_fault(Function::DeleteEndpoint, 1, HResult::E_FAIL)
        .unwrap();
    node.add("pod", &netns, &config).error(110);
    let endpoint = node.endpoint("pod_cbr0");
    let address = endpoint.ip_configurations[0].ip_address.to_string();
    assert_eq!(node.reservations(NETWORK), [address]);
    // The runtime's DEL after the failed ADD removes both.
    node.del("pod", Some(&netns), &config).silent();
    assert!(node.endpoints(NETWORK).is_empty() && node.reservations(NETWORK).is_empty());
}

#[test]
fn gc_keeps_the_address_of_an_endpoint_it_could_not_delete() {
    let node = crate::node("gc-delete-fault");
    let config = config(&node, "1.1.0");
    for pod in ["fault-keep", "fault-stale"] {
        node.add(pod, &node.namespace(), &config).result();
    }
    let stale = node.endpoint("fault-stale_cbr0");
    node.engine()
        .inject_fault(Function::DeleteEndpoint, 1, HResult::E_FAIL)
        .unwrap();
    let mut gc = config.clone();
    gc["cni.dev/valid-attachments"] = json!([{"containerID": "fault-keep", "ifname": "eth0"}]);
    node.run(&Call::network("GC", &gc)).error(114);
    assert_eq!(node.endpoint("fault-stale_cbr0").id, stale.id);
    assert_eq!(node.reservations(NETWORK).len(), 2);
    node.run(&Call::network("GC", &gc)).silent();
    assert_eq!(node.endpoints(NETWORK).len(), 1);
    assert_eq!(node.reservations(NETWORK).len(), 1);
}

#[test]
fn del_cleans_up_whatever_changed_since_add() {
    // DEL needs only the attachment's identity and IPAM: a config whose plugin keys ADD would
    // now refuse, and a network that is gone, must not keep an address reserved.
    let node = crate::node("del-best-effort");
    let config = config(&node, "1.1.0");
    node.add("edited", &node.namespace(), &config).result();
    let mut edited = config.clone();
    edited["ipMasqNetwork"] = json!("10.244.0.0");
    node.add("other", &node.namespace(), &edited).error(7);
    node.del("edited", None, &edited).silent();
    assert!(node.endpoints(NETWORK).is_empty() && node.reservations(NETWORK).is_empty());

    node.add("orphan", &node.namespace(), &config).result();
    let client = node.client();
    for endpoint in node.endpoints(NETWORK) {
        client.delete_endpoint(endpoint.id).unwrap();
    }
    client.delete_network(node.network_id(NETWORK)).unwrap();
    assert_eq!(node.reservations(NETWORK).len(), 1);
    node.del("orphan", None, &config).silent();
    assert!(node.reservations(NETWORK).is_empty());
}

#[test]
fn gc_and_status_validate_the_config_as_add_does() {
    let node = crate::node("gc-validates");
    let mut config = config(&node, "1.1.0");
    node.add("not-collected", &node.namespace(), &config)
        .result();
    config["ipMasqNetwork"] = json!("10.244.0.0");
    config["cni.dev/valid-attachments"] = json!([]);
    for command in ["ADD", "GC", "STATUS"] {
        let call = if command == "ADD" {
            Call {
                command,
                container_id: "new",
                ifname: "eth0",
                netns: Some(&node.namespace()),
                config: &config,
            }
        } else {
            Call::network(command, &config)
        };
        let msg = node.run(&call).error(7);
        assert!(msg.contains("ipMasqNetwork"), "{command}: {msg}");
    }
    // GC refused before touching anything.
    assert_eq!(node.endpoints(NETWORK).len(), 1);
    assert_eq!(node.reservations(NETWORK).len(), 1);
}

/// A network `name` too long to be a directory name: ADD fails (nothing is created), and its
/// DEL, which the runtime retries until it succeeds, finds nothing to remove and succeeds, on
/// a node whose store directory exists (other networks' pods).
#[test]
fn del_of_a_name_too_long_for_a_directory_succeeds() {
    let node = crate::node("long-name");
    let config = config(&node, "1.1.0");
    node.add("other", &node.namespace(), &config).result();
    let mut long = config.clone();
    long["name"] = json!("n".repeat(300));
    let netns = node.namespace();
    assert!(!node.add("pod", &netns, &long).ok());
    node.del("pod", Some(&netns), &long).silent();
    node.del("pod", None, &long).silent();
    assert_eq!(node.endpoints(NETWORK).len(), 1);
}
