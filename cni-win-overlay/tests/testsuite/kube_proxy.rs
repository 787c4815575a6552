//! kube-proxy's objects on a Flannel vxlan node, created exactly as kube-proxy's winkernel
//! proxier creates them, survive every plugin command: its source VIP (reserved in the pods'
//! store as its start script does), its nameless local endpoint on the VIP with the host's
//! MAC, and a load balancer whose source is the VIP and whose backends are pods' endpoints.

use std::path::PathBuf;

use cni::NetConf;
use cni_win_conformance::kube_proxy;
use cni_win_conformance::node::{Call, Node};
use hns::Guid;
use hns::schema::HostComputeEndpoint;
use ipam_host_local::HostLocal;
use serde_json::{Value, json};

use crate::NETWORK;

const VIP: &str = "10.244.1.2";

/// Reserves the VIP as RKE2's start code does (host-local run directly, `kube-proxy`/
/// `source-vip`, the pods' store), then creates kube-proxy's endpoint with `newSourceVIP`'s
/// document; returns the endpoint.
fn kube_proxy_source_vip(node: &Node) -> HostComputeEndpoint {
    let conf = NetConf::parse(
        &serde_json::to_vec(&json!({
            "cniVersion": "1.0.0", "name": NETWORK,
            "ipam": {"type": "host-local", "subnet": "10.244.1.0/24", "dataDir": node.ipam_dir()}
        }))
        .unwrap(),
    )
    .unwrap();
    let allocation = HostLocal::from_conf(&conf, &cni::CniArgs::default())
        .unwrap()
        .allocate("kube-proxy", "source-vip")
        .unwrap();
    assert_eq!(allocation.result().ips[0].address.ip().to_string(), VIP);
    kube_proxy_endpoint(node, VIP)
}

/// kube-proxy's local endpoint on `ip` ([`kube_proxy::local_endpoint`]), as HNS reports it.
fn kube_proxy_endpoint(node: &Node, ip: &str) -> HostComputeEndpoint {
    create_raw(node, &kube_proxy::local_endpoint(ip), ip)
}

/// Creates an endpoint on the network from the raw HCN `document`, as kube-proxy's hcsshim
/// calls do; returns the endpoint holding `ip` as HNS reports it.
fn create_raw(node: &Node, document: &Value, ip: &str) -> HostComputeEndpoint {
    node.create_raw_endpoint(NETWORK, document);
    held_by(node, ip).expect("the endpoint kube-proxy created")
}

/// kube-proxy's remote endpoint on `ip` ([`kube_proxy::remote_endpoint`]), as HNS reports it.
fn kube_proxy_remote_endpoint(node: &Node, ip: &str) -> HostComputeEndpoint {
    create_raw(node, &kube_proxy::remote_endpoint(ip), ip)
}

fn held_by(node: &Node, ip: &str) -> Option<HostComputeEndpoint> {
    node.endpoints(NETWORK).into_iter().find(|endpoint| {
        endpoint
            .ip_configurations
            .iter()
            .any(|c| c.ip_address.to_string() == ip)
    })
}

/// kube-proxy's load balancer for a service: source VIP, frontend ClusterIP, pods' backends.
fn load_balancer(node: &Node, backends: &[Guid]) -> PathBuf {
    let dir = node.state().join("loadbalancers");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}.json", kube_proxy::LOAD_BALANCER));
    let backends: Vec<String> = backends.iter().map(Guid::to_string).collect();
    let balancer = kube_proxy::load_balancer(VIP, &backends, json!({}));
    std::fs::write(&path, balancer.to_string()).unwrap();
    path
}

fn address(result: &Value) -> String {
    result["ips"][0]["address"]
        .as_str()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned()
}

#[test]
fn add_check_del_and_gc_leave_kube_proxys_objects_alone() {
    let node = crate::node("kube-proxy");
    let config = crate::config(&node, "1.1.0");
    let source_vip = kube_proxy_source_vip(&node);
    let (ns_a, ns_b) = (node.namespace(), node.namespace());
    let a = node.add("a", &ns_a, &config).result();
    let b = node.add("b", &ns_b, &config).result();
    for pod in [&a, &b] {
        assert_ne!(address(pod), VIP, "ADD handed out the source VIP");
    }
    let backends: Vec<Guid> = [&a, &b]
        .iter()
        .map(|pod| held_by(&node, &address(pod)).unwrap().id)
        .collect();
    let balancer = load_balancer(&node, &backends);
    let before = std::fs::read(&balancer).unwrap();
    // kube-proxy's remote endpoints: the Service's ClusterIP and a pod of another node.
    let remote: Vec<HostComputeEndpoint> = ["10.96.0.50", "10.244.2.7"]
        .iter()
        .map(|ip| kube_proxy_remote_endpoint(&node, ip))
        .collect();

    let mut check = config.clone();
    check["prevResult"] = a.clone();
    let checked = node.check("a", &ns_a, &check);
    assert!(checked.ok(), "{checked:?}");
    assert!(node.del("b", Some(&ns_b), &config).ok());
    let mut gc = config.clone();
    gc["cni.dev/valid-attachments"] = json!([{"containerID": "a", "ifname": "eth0"}]);
    node.run(&Call::network("GC", &gc)).silent();
    let c = node.add("c", &node.namespace(), &config).result();
    assert_ne!(address(&c), VIP);

    assert_eq!(held_by(&node, VIP), Some(source_vip));
    for endpoint in &remote {
        let ip = endpoint.ip_configurations[0].ip_address.to_string();
        assert_eq!(held_by(&node, &ip).as_ref(), Some(endpoint), "{ip}");
    }
    assert!(node.reservations(NETWORK).contains(&VIP.to_owned()));
    // HNS keeps the load balancer; its backend b went with b's DEL (doctor reports that).
    assert_eq!(std::fs::read(&balancer).unwrap(), before);
    assert!(!node.endpoints(NETWORK).iter().any(|e| e.id == backends[1]));
}

/// A pod whose address kube-proxy's endpoint holds (the VIP was reserved in another store, as
/// k3s's start code does): ADD refuses with code 110 naming the holder and never removes
/// kube-proxy's endpoint, nor keeps the address it reserved.
#[test]
fn add_never_takes_the_address_from_kube_proxys_endpoint() {
    let node = crate::node("kube-proxy-holder");
    let held = kube_proxy_endpoint(&node, "10.244.1.10");
    let mut config = crate::config(&node, "1.1.0");
    config["args"] = json!({"cni": {"ips": ["10.244.1.10"]}});
    let msg = node.add("pod", &node.namespace(), &config).error(110);
    assert!(msg.contains(&held.id.to_string()), "{msg}");
    assert_eq!(held_by(&node, "10.244.1.10"), Some(held));
    assert!(node.reservations(NETWORK).is_empty());
}
