//! A node upgraded from the reference win-bridge while pods run: the pods the reference
//! attached (its endpoint shape, its host-local reservation: [`PLUGIN`]'s `reference_add`) go
//! through CHECK (and what it costs), an ADD in another namespace or for another pod, DEL and
//! GC of cni-win's win-bridge. The repeated ADD that adopts such a pod is the suite's
//! ([`cni_win_conformance::plugin::upgrade`]).

use cni_win_conformance::node::{Call, Node};
use cni_win_conformance::plugin::upgrade::POD_IP;
use hns::schema::{EndpointFlags, HostComputeEndpoint};
use serde_json::{Value, json};

use crate::{NETWORK, PLUGIN, reference_config};

/// `config` for another pod of the node: a host port is the host's, so each pod maps its own.
fn with_host_port(config: &Value, port: u16) -> Value {
    let mut config = config.clone();
    config["runtimeConfig"]["portMappings"][0]["hostPort"] = json!(port);
    config
}

fn reference_endpoint(node: &Node, container: &str) -> HostComputeEndpoint {
    node.endpoint(&format!("{container}_{NETWORK}"))
}

fn with_prev_result(config: &Value, result: &Value) -> Value {
    let mut config = config.clone();
    config["prevResult"] = result.clone();
    config
}

fn gc_config(config: &Value, valid: &[&str]) -> Value {
    let mut gc = config.clone();
    gc["cniVersion"] = json!("1.1.0");
    gc["cni.dev/valid-attachments"] = valid
        .iter()
        .map(|id| json!({"containerID": id, "ifname": "eth0"}))
        .collect();
    gc
}

#[test]
fn the_reference_endpoint_has_the_documented_shape() {
    let node = crate::node("shape");
    let config = reference_config(&node);
    let netns = node.namespace();
    PLUGIN.reference_add(&node, "old", POD_IP, &netns, &config);
    let endpoint = reference_endpoint(&node, "old");
    assert!(!endpoint.id.is_zero(), "HNS chose the ID");
    assert_eq!(endpoint.host_compute_namespace.to_string(), netns);
    // As decoded: the reference's `"VIP":""` ("any host address") reads as no VIP.
    let document = serde_json::to_value(&endpoint).unwrap();
    assert_eq!(
        document["Policies"],
        json!([
            {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16", "10.96.0.0/12"]}},
            {"Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": true}},
            {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.0.0.0/8"]}},
            {"Type": "PortMapping", "Settings": {"Protocol": 6, "InternalPort": 80, "ExternalPort": 8080}}
        ])
    );
}

#[test]
fn check_finds_and_checks_the_reference_endpoint() {
    let node = crate::node("check");
    let config = reference_config(&node);
    let netns = node.namespace();
    let result = PLUGIN.reference_add(&node, "old", POD_IP, &netns, &config);
    let checked = with_prev_result(&config, &result);
    node.calls();
    node.check("old", &netns, &checked).silent();
    let fallback = node.calls();

    // The same checks as for cni-win's own endpoints: a missing policy, another address,
    // another namespace are each named.
    let mut other_nat = checked.clone();
    other_nat["ipMasqNetwork"] = json!("172.16.0.0/12");
    let message = node.check("old", &netns, &other_nat).error(113);
    assert!(
        message.contains("172.16.0.0/12") && message.contains("is missing"),
        "{message}"
    );
    assert!(message.contains("old_cbr0"), "{message}");
    let mut moved = result.clone();
    moved["ips"][0]["address"] = json!("10.244.1.11/24");
    let message = node
        .check("old", &netns, &with_prev_result(&config, &moved))
        .error(113);
    assert!(message.contains("10.244.1.11"), "{message}");
    let message = node.check("old", &node.namespace(), &checked).error(113);
    assert!(message.contains("attached to namespace"), "{message}");

    // The normal path is unchanged: cni-win's own pod costs what it did.
    let own_netns = node.namespace();
    let config = with_host_port(&config, 8081);
    let own = node.add("new", &own_netns, &config).result();
    node.calls();
    node.check("new", &own_netns, &with_prev_result(&config, &own))
        .silent();
    let normal = node.calls();
    node.del("new", Some(&own_netns), &config).silent();
    node.calls();
    let message = node
        .check("new", &own_netns, &with_prev_result(&config, &own))
        .error(113);
    assert!(message.contains("does not exist"), "{message}");
    let missing = node.calls();
    eprintln!(
        "CHECK raw HCN calls (without, with closes): own endpoint {normal:?}, \
         reference endpoint {fallback:?}, no endpoint {missing:?}"
    );
    // The network by its cached ID (1 call, +1 close), the endpoint by its ID (2, +1 close).
    assert_eq!(normal, (3, 5), "the by-ID CHECK's calls changed");
    // Before any cni-win ADD, so the network is found by name (3, +1 close); the by-ID open
    // misses (1 call), the by-name lookup finds the endpoint (3, +1 close).
    assert_eq!(fallback, (7, 9), "CHECK of a reference pod");
    assert_eq!(missing, (3, 4), "CHECK without an endpoint");
}

#[test]
fn a_reference_endpoint_that_is_not_this_attachments_is_named() {
    let node = crate::node("holder");
    let config = reference_config(&node);
    let netns = node.namespace();
    PLUGIN.reference_add(&node, "old", POD_IP, &netns, &config);
    let before = reference_endpoint(&node, "old");
    // Another namespace: the holder stays where it is, and so does the address.
    let message = node.add("old", &node.namespace(), &config).error(111);
    assert!(
        message.contains("old_cbr0") && message.contains(&before.id.to_string()),
        "{message}"
    );
    assert!(message.contains("attached to namespace"), "{message}");
    assert_eq!(node.endpoints(NETWORK), vec![before]);
    assert_eq!(node.reservations(NETWORK), [POD_IP]);

    // Another pod's endpoint holding the address is not adopted: the ADD fails and keeps
    // nothing of its own.
    std::fs::remove_file(node.ipam_dir().join(NETWORK).join(POD_IP)).unwrap();
    std::fs::write(
        node.ipam_dir().join(NETWORK).join("last_reserved_ip.0"),
        "10.244.1.9",
    )
    .unwrap();
    let other = node.add("other", &node.namespace(), &with_host_port(&config, 8082));
    assert_eq!(other.status, Some(1), "{other:?}");
    assert_eq!(node.endpoints(NETWORK).len(), 1);
    assert!(
        node.reservations(NETWORK).is_empty(),
        "{:?}",
        node.reservations(NETWORK)
    );
}

#[test]
fn del_removes_the_reference_endpoint_and_its_reservation() {
    let node = crate::node("del");
    let config = reference_config(&node);
    let netns = node.namespace();
    PLUGIN.reference_add(&node, "old", POD_IP, &netns, &config);
    node.calls();
    node.del("old", Some(&netns), &config).silent();
    let del = node.calls();
    eprintln!("DEL of a reference pod, raw HCN calls (without, with closes): {del:?}");
    assert!(node.endpoints(NETWORK).is_empty());
    assert!(node.reservations(NETWORK).is_empty());
    node.del("old", Some(&netns), &config).silent();
}

#[test]
fn gc_keeps_valid_reference_pods_and_collects_stale_ones() {
    let node = crate::node("gc");
    let config = reference_config(&node);
    let live_netns = node.namespace();
    PLUGIN.reference_add(&node, "live", POD_IP, &live_netns, &config);
    let live = reference_endpoint(&node, "live");
    // A second reference pod, gone from the runtime: its endpoint and address are stale.
    let stale_netns = node.namespace();
    PLUGIN.reference_add(
        &node,
        "gone-reference",
        "10.244.1.20",
        &stale_netns,
        &with_host_port(&config, 8081),
    );
    // What GC must never take: an `@ifname` name under an ID cni-win did not derive, a remote
    // endpoint named like a pod, Flannel's endpoint.
    node.foreign_endpoint(NETWORK, "x_cbr0@eth1", "10.244.1.200", EndpointFlags::NONE);
    node.foreign_endpoint(
        NETWORK,
        "remote_cbr0",
        "10.244.1.201",
        EndpointFlags::REMOTE_ENDPOINT,
    );
    node.foreign_endpoint(NETWORK, "cbr0_ep", "10.244.1.202", EndpointFlags::NONE);

    node.run(&Call::network("GC", &gc_config(&config, &["live"])))
        .silent();
    let mut left: Vec<String> = node
        .endpoints(NETWORK)
        .into_iter()
        .map(|e| e.name)
        .collect();
    left.sort();
    assert_eq!(left, ["cbr0_ep", "live_cbr0", "remote_cbr0", "x_cbr0@eth1"]);
    assert_eq!(reference_endpoint(&node, "live"), live);
    assert_eq!(node.reservations(NETWORK), [POD_IP]);
}
