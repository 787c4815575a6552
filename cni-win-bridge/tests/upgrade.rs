//! A node upgraded from the reference win-bridge while pods run: the pods the reference
//! attached (its endpoint shape, its host-local reservation) go through CHECK, repeated ADD,
//! DEL and GC of cni-win's win-bridge.
//!
//! The reference's endpoint is created here through the raw HCN API with the document its V2
//! ADD sends (shared/reference: `<containerID>_<network>`, an ID HNS chooses, the user's
//! policies followed by a separate OutBoundNAT for `ipMasqNetwork`, `PortMapping` with
//! `"VIP": ""` and no flags, no prefix length, the x.2 default route), attached with
//! `HcnModifyNamespace`; its reservation is the file the reference's host-local writes.
#![cfg(not(windows))] // the HCN emulator these tests run on is Linux-only

mod common;

use cni_win_conformance::node::policy;
use common::{Node, config};
use hns::schema::{EndpointFlags, HostComputeEndpoint};
use serde_json::{Value, json};

const NETWORK: &str = common::NETWORK;
/// The address the reference's host-local gave the pod.
const POD_IP: &str = "10.244.1.10";

/// The config the node ran with the reference and keeps with cni-win: the plain one plus
/// `ipMasqNetwork` (which the reference writes as a second OutBoundNAT) and a port mapping.
fn upgraded_config(node: &Node) -> Value {
    let mut config = config(node, "1.0.0");
    config["ipMasqNetwork"] = json!("10.0.0.0/8");
    config["runtimeConfig"] =
        json!({"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]});
    config
}

/// What the reference's V2 ADD leaves for `container` in `netns` when its host-local gave it
/// `ip`: the reservation file, the endpoint (created and attached as it does). Returns the
/// result it printed.
fn reference_add(node: &Node, container: &str, ip: &str, netns: &str, config: &Value) -> Value {
    let store = node.ipam_dir().join(NETWORK);
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(store.join(ip), format!("{container}\r\neth0")).unwrap();
    std::fs::write(store.join("last_reserved_ip.0"), ip).unwrap();

    // The config's two policies as given, then the reference's own, each separate.
    let policies = [
        policy::nat(&["10.244.0.0/16", "10.96.0.0/12"]),
        policy::route("10.96.0.0/12"),
        policy::nat(&["10.0.0.0/8"]),
        json!({"Type": "PortMapping", "Settings": {"InternalPort": 80, "ExternalPort": config["runtimeConfig"]["portMappings"][0]["hostPort"], "Protocol": 6, "VIP": ""}}),
    ];
    let network = node.network_id(NETWORK);
    let document = json!({
        "SchemaVersion": {"Major": 2, "Minor": 0},
        "Name": format!("{container}_{NETWORK}"),
        "HostComputeNetwork": network.to_string(),
        "Policies": policies,
        "IpConfigurations": [{"IpAddress": ip}],
        "Dns": {"Search": config["dns"]["search"], "ServerList": config["dns"]["nameservers"]},
        "Routes": [{"NextHop": "10.244.1.2", "DestinationPrefix": "0.0.0.0/0"}]
    });
    let endpoint = node.raw_endpoint(NETWORK, &document, netns);
    json!({
        "cniVersion": "1.0.0",
        "interfaces": [{"name": endpoint.name, "mac": endpoint.mac_address}],
        "ips": [{"address": format!("{ip}/24"), "gateway": "10.244.1.2"}],
        "dns": {"nameservers": config["dns"]["nameservers"], "search": config["dns"]["search"]}
    })
}

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
    let node = common::node("shape");
    let config = upgraded_config(&node);
    let netns = node.namespace();
    reference_add(&node, "old", POD_IP, &netns, &config);
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
    let node = common::node("check");
    let config = upgraded_config(&node);
    let netns = node.namespace();
    let result = reference_add(&node, "old", POD_IP, &netns, &config);
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
fn a_repeated_add_adopts_the_reference_endpoint() {
    let node = common::node("adopt");
    let config = upgraded_config(&node);
    let netns = node.namespace();
    reference_add(&node, "old", POD_IP, &netns, &config);
    let before = reference_endpoint(&node, "old");
    node.calls();
    let result = node.add("old", &netns, &config).result();
    let adopt = node.calls();
    assert_eq!(result["ips"][0]["address"], format!("{POD_IP}/24"));
    assert_eq!(result["ips"][0]["gateway"], "10.244.1.2");
    assert_eq!(
        result["interfaces"][0]["mac"],
        before.mac_address.unwrap().to_string()
    );
    assert_eq!(result["interfaces"][0]["sandbox"], netns.as_str());
    assert_eq!(node.endpoints(NETWORK), vec![before.clone()]);
    assert_eq!(node.reservations(NETWORK), [POD_IP]);
    // Again: the same result; and CHECK accepts what ADD returned.
    assert_eq!(node.add("old", &netns, &config).result(), result);
    node.check("old", &netns, &with_prev_result(&config, &result))
        .silent();
    eprintln!("repeated ADD of a reference pod, raw HCN calls (without, with closes): {adopt:?}");

    node.del("old", Some(&netns), &config).silent();
    assert!(node.endpoints(NETWORK).is_empty());
    assert!(node.reservations(NETWORK).is_empty());
}

#[test]
fn a_reference_endpoint_that_is_not_this_attachments_is_named() {
    let node = common::node("holder");
    let config = upgraded_config(&node);
    let netns = node.namespace();
    reference_add(&node, "old", POD_IP, &netns, &config);
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
    let node = common::node("del");
    let config = upgraded_config(&node);
    let netns = node.namespace();
    reference_add(&node, "old", POD_IP, &netns, &config);
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
    let node = common::node("gc");
    let config = upgraded_config(&node);
    let live_netns = node.namespace();
    reference_add(&node, "live", POD_IP, &live_netns, &config);
    let live = reference_endpoint(&node, "live");
    // A second reference pod, gone from the runtime: its endpoint and address are stale.
    let stale_netns = node.namespace();
    reference_add(
        &node,
        "gone",
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

    node.run(&common::Call::network("GC", &gc_config(&config, &["live"])))
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
