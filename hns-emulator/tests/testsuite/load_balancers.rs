//! Load balancers as HNS has them, driven with kube-proxy's own documents: create, query,
//! list, modify, delete, every refusal with its HRESULT and record, an endpoint deleted under a
//! load balancer, an HNS restart, and the V1 policy-list view kube-proxy probes and cleans up.

use crate::common::{TempDir, bridge, client, code, document, endpoint_settings, hns_call};
use hns::schema::policy::{PortMappingPolicy, protocol};
use hns::schema::{
    EndpointPolicy, HostComputeLoadBalancer, LoadBalancerFlags, LoadBalancerPortMappingFlags,
    NatFlags,
};
use hns::{Client, Function, Guid, HResult, HnsVersion, RawHcn};
use hns_emulator::{Emulator, Outage};
use serde_json::{Value, json};

/// A node with `cbr0` and two pods' endpoints on it.
struct Node {
    client: Client<Emulator>,
    pods: [Guid; 2],
    _dir: TempDir,
}

fn node(tag: &str) -> Node {
    let dir = TempDir::new(tag);
    let client = client(&dir);
    let network = client.open_network(bridge(&client)).unwrap();
    let pods = ["10.244.1.5", "10.244.1.6"].map(|ip| {
        network
            .create_endpoint(Guid::ZERO, &endpoint_settings(ip, ip))
            .unwrap()
            .id()
    });
    drop(network);
    Node {
        client,
        pods,
        _dir: dir,
    }
}

impl Node {
    fn raw(&self) -> &Emulator {
        self.client.raw()
    }

    /// Creates a load balancer from `settings` as kube-proxy does (zero ID), returning the
    /// properties HNS reports.
    fn create(&self, settings: &str) -> Result<Value, hns::RawError> {
        let handle = self.raw().create_load_balancer(&Guid::ZERO, settings)?;
        let properties = self.raw().query_load_balancer_properties(&handle, "");
        self.raw().close_load_balancer(handle).unwrap();
        Ok(serde_json::from_str(&properties.unwrap()).unwrap())
    }

    /// Creates kube-proxy's load balancer `name` (from `tests/data`) over `backends`: its ID
    /// and the properties HNS reports.
    fn service(&self, name: &str, backends: &[Guid]) -> (Guid, Value) {
        let created = self.create(&kube_proxy(name, backends)).unwrap();
        let id = created["ID"].as_str().unwrap().parse().unwrap();
        (id, created)
    }

    fn listed(&self) -> Vec<HostComputeLoadBalancer> {
        self.client.list_load_balancers().unwrap()
    }
}

/// A kube-proxy document from `tests/data` with these backends.
fn kube_proxy(name: &str, backends: &[Guid]) -> String {
    let ids: Vec<String> = backends.iter().map(Guid::to_string).collect();
    document(name).replace("BACKENDS", &json!(ids).to_string())
}

/// `document` with `change` applied to its JSON.
fn changed(document: &str, change: impl FnOnce(&mut Value)) -> String {
    let mut value: Value = serde_json::from_str(document).unwrap();
    change(&mut value);
    value.to_string()
}

/// The error record's `Error` text of a failed call.
fn message(error: &hns::RawError) -> String {
    error.message()
}

#[test]
fn kube_proxys_cluster_ip_document_makes_a_load_balancer_listed_as_sent() {
    let node = node("lb-create");
    let settings = kube_proxy("kube-proxy-1.20-cluster-ip.json", &node.pods);
    let (id, created) = node.service("kube-proxy-1.20-cluster-ip.json", &node.pods);
    assert!(!id.is_zero());
    let mut expected: Value = serde_json::from_str(&settings).unwrap();
    expected["ID"] = json!(id.to_string());
    assert_eq!(created, expected, "HNS reports the document it was given");

    let listed = node.listed();
    assert_eq!(listed.len(), 1);
    let balancer = &listed[0];
    assert_eq!(balancer.id, id);
    assert_eq!(balancer.host_compute_endpoints, node.pods);
    assert_eq!(
        balancer.frontend_vips,
        ["10.96.0.10".parse::<std::net::IpAddr>().unwrap()]
    );
    assert_eq!(balancer.port_mappings[0].external_port, 80);
    let stats = node.raw().engine().stats().unwrap();
    assert_eq!(stats["HcnCreateLoadBalancer"], 1);
}

#[test]
fn a_node_port_load_balancer_has_no_frontend_vip() {
    let node = node("lb-node-port");
    let created = node
        .service("kube-proxy-1.20-node-port.json", &node.pods[..1])
        .1;
    assert!(created.get("FrontendVIPs").is_none(), "{created}");
    assert_eq!(created["PortMappings"][0]["ExternalPort"], 30080);
}

#[test]
fn the_flags_kube_proxy_sets_read_back_with_bits_hns_does_not_name() {
    let node = node("lb-flags");
    let created = node
        .service("kube-proxy-current-ingress-ip.json", &node.pods)
        .1;
    let balancer: HostComputeLoadBalancer = serde_json::from_value(created).unwrap();
    assert!(balancer.flags.contains(LoadBalancerFlags::DSR));
    let mapping = &balancer.port_mappings[0];
    assert!(mapping.flags.contains(
        LoadBalancerPortMappingFlags::USE_MUX | LoadBalancerPortMappingFlags::PRESERVE_DIP
    ));
    assert_eq!(
        mapping.flags.bits(),
        28,
        "kube-proxy's VipExternalIP (16) kept"
    );
    assert_eq!(mapping.distribution_type, 2);
}

#[test]
fn an_ipv6_load_balancer_has_ipv6_vips_and_an_ipv4_one_ipv4_vips() {
    let node = node("lb-ipv6");
    let v4 = kube_proxy("kube-proxy-1.20-cluster-ip.json", &node.pods);
    let flagged = changed(&v4, |lb| lb["Flags"] = json!(2));
    let refused = node.create(&flagged).unwrap_err();
    assert_eq!(refused.hresult, HResult::E_INVALIDARG);
    assert!(
        message(&refused).contains("FrontendVIPs[0] 10.96.0.10 is not IPv6"),
        "{refused}"
    );
    let v6 = changed(&flagged, |lb| {
        lb["FrontendVIPs"] = json!(["fd00:10:96::a"]);
        lb["SourceVIP"] = json!("fd00:10:244:1::2");
    });
    node.create(&v6).unwrap();
    let unflagged = changed(&v6, |lb| lb["Flags"] = json!(0));
    let refused = node.create(&unflagged).unwrap_err();
    assert!(message(&refused).contains("is not IPv4"), "{refused}");
    assert_eq!(node.listed().len(), 1);
}

#[test]
fn a_malformed_value_gets_its_fields_hresult_and_is_named() {
    let node = node("lb-malformed");
    let settings = kube_proxy("kube-proxy-1.20-cluster-ip.json", &node.pods);
    let cases = [
        (
            changed(&settings, |lb| lb["FrontendVIPs"] = json!(["10.96.0"])),
            HResult::HCN_E_INVALID_IP,
            "FrontendVIPs[0] \"10.96.0\"",
        ),
        (
            changed(&settings, |lb| lb["SourceVIP"] = json!("vip")),
            HResult::HCN_E_INVALID_IP,
            "SourceVIP \"vip\"",
        ),
        (
            changed(&settings, |lb| {
                lb["HostComputeEndpoints"][1] = json!("not-a-guid")
            }),
            HResult::HCN_E_GUID_CONVERSION_FAILURE,
            "HostComputeEndpoints[1] \"not-a-guid\"",
        ),
        (
            changed(&settings, |lb| lb["PortMappings"] = json!("80")),
            HResult::HCN_E_INVALID_JSON,
            "PortMappings",
        ),
        (
            "{".to_owned(),
            HResult::HCN_E_INVALID_JSON,
            "load balancer settings",
        ),
    ];
    for (settings, hresult, named) in cases {
        let refused = node.create(&settings).unwrap_err();
        assert_eq!(refused.hresult, hresult, "{settings}: {refused}");
        assert!(message(&refused).contains(named), "{named} in {refused}");
        let record: Value = serde_json::from_str(&refused.record).unwrap();
        assert_eq!(record["ErrorCode"], hresult.0);
        assert_eq!(record["Success"], false);
    }
    assert!(node.listed().is_empty());
}

#[test]
fn port_mappings_are_required_and_must_be_tcp_or_udp_with_both_ports() {
    let node = node("lb-ports");
    let settings = kube_proxy("kube-proxy-1.20-cluster-ip.json", &node.pods);
    let cases = [
        (
            changed(&settings, |lb| lb["PortMappings"] = json!([])),
            "PortMappings is empty",
        ),
        (
            changed(&settings, |lb| {
                lb.as_object_mut().unwrap().remove("PortMappings");
            }),
            "PortMappings is empty",
        ),
        (
            changed(&settings, |lb| lb["PortMappings"][0]["Protocol"] = json!(1)),
            "Protocol 1 is neither TCP (6) nor UDP (17)",
        ),
        (
            changed(&settings, |lb| {
                lb["PortMappings"][0]["InternalPort"] = json!(0)
            }),
            "needs an InternalPort and an ExternalPort",
        ),
        (
            changed(&settings, |lb| {
                lb["PortMappings"][0]["DistributionType"] = json!(3)
            }),
            "DistributionType 3",
        ),
    ];
    for (settings, named) in cases {
        let refused = node.create(&settings).unwrap_err();
        assert_eq!(refused.hresult, HResult::E_INVALIDARG, "{settings}");
        assert!(message(&refused).contains(named), "{named} in {refused}");
    }
    assert!(node.listed().is_empty(), "a refused create stores nothing");
    let udp = changed(&settings, |lb| {
        lb["PortMappings"][0]["Protocol"] = json!(17)
    });
    node.create(&udp).unwrap();
}

#[test]
fn every_backend_must_exist() {
    let node = node("lb-backends");
    let missing: Guid = "5eed0009-0000-4000-8000-000000000009".parse().unwrap();
    let refused = node
        .create(&kube_proxy(
            "kube-proxy-1.20-cluster-ip.json",
            &[node.pods[0], missing],
        ))
        .unwrap_err();
    assert_eq!(refused.hresult, HResult::HCN_E_ENDPOINT_NOT_FOUND);
    assert!(
        message(&refused).contains(&format!("HostComputeEndpoints[1] {missing}")),
        "{refused}"
    );
    assert!(node.listed().is_empty());
}

#[test]
fn an_id_in_use_is_error_already_exists() {
    let node = node("lb-id");
    let id: Guid = "1b000000-0000-4000-8000-000000000001".parse().unwrap();
    let settings = kube_proxy("kube-proxy-1.20-cluster-ip.json", &node.pods[..1]);
    let handle = node.raw().create_load_balancer(&id, &settings).unwrap();
    node.raw().close_load_balancer(handle).unwrap();
    let other = kube_proxy("kube-proxy-1.20-node-port.json", &node.pods);
    let refused = node.raw().create_load_balancer(&id, &other).unwrap_err();
    assert_eq!(refused.hresult, HResult::ERROR_ALREADY_EXISTS);
    assert_eq!(refused.hresult.0, 0x8007_00B7);
    assert_eq!(node.listed().len(), 1);
}

#[test]
fn the_same_settings_again_are_error_already_exists_but_other_backends_are_taken() {
    let node = node("lb-duplicate");
    let (first, _) = node.service("kube-proxy-1.20-cluster-ip.json", &node.pods);
    let reversed = [node.pods[1], node.pods[0]];
    let refused = node
        .create(&kube_proxy("kube-proxy-1.20-cluster-ip.json", &reversed))
        .unwrap_err();
    assert_eq!(refused.hresult, HResult::ERROR_ALREADY_EXISTS);
    assert!(message(&refused).contains(&first.to_string()), "{refused}");
    // The same frontend with other backends is another load balancer beside the first (the
    // stale rules k8s#112836 left behind).
    node.service("kube-proxy-1.20-cluster-ip.json", &node.pods[..1]);
    assert_eq!(node.listed().len(), 2);
}

fn host_port(port: u16) -> EndpointPolicy {
    EndpointPolicy::PortMapping(PortMappingPolicy {
        protocol: protocol::TCP,
        internal_port: 80,
        external_port: port,
        vip: None,
        flags: NatFlags::NONE,
    })
}

#[test]
fn a_frontend_on_the_node_and_an_endpoints_host_port_refuse_each_other() {
    let node = node("lb-host-port");
    let network = node.client.find_network_by_name("cbr0").unwrap();
    let holder = network
        .create_endpoint(
            Guid::ZERO,
            &hns::schema::HostComputeEndpoint {
                policies: vec![host_port(30080)],
                ..endpoint_settings("holder", "10.244.1.7")
            },
        )
        .unwrap()
        .id();
    let node_port = kube_proxy("kube-proxy-1.20-node-port.json", &node.pods);
    let refused = node.create(&node_port).unwrap_err();
    assert_eq!(refused.hresult, HResult::HCN_E_PORT_ALREADY_EXISTS);
    assert_eq!(
        refused.holder(),
        Some(hns::Holder {
            resource: "PortMapping TCP 192.168.1.10:30080".to_owned(),
            endpoint: holder,
        })
    );
    // The port on the host's own address as a VIP is the same port; on a ClusterIP it is not.
    let on_host = changed(&node_port, |lb| {
        lb["FrontendVIPs"] = json!(["192.168.1.10"])
    });
    assert_eq!(
        node.create(&on_host).unwrap_err().hresult,
        HResult::HCN_E_PORT_ALREADY_EXISTS
    );
    let cluster_ip = changed(&node_port, |lb| lb["FrontendVIPs"] = json!(["10.96.0.20"]));
    node.create(&cluster_ip).unwrap();
    let udp = changed(&node_port, |lb| {
        lb["PortMappings"][0]["Protocol"] = json!(17)
    });
    node.create(&udp).unwrap();

    // A NodePort held by a load balancer refuses a pod's hostPort.
    let held = changed(&node_port, |lb| {
        lb["PortMappings"][0]["ExternalPort"] = json!(30081)
    });
    let balancer = node.create(&held).unwrap()["ID"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = network
        .create_endpoint(
            Guid::ZERO,
            &hns::schema::HostComputeEndpoint {
                policies: vec![host_port(30081)],
                ..endpoint_settings("late", "10.244.1.8")
            },
        )
        .unwrap_err();
    let refused = refused.error();
    assert_eq!(code(refused), HResult::HCN_E_PORT_ALREADY_EXISTS);
    assert_eq!(
        refused.raw().unwrap().holder(),
        None,
        "no endpoint holds it"
    );
    assert!(
        refused
            .record()
            .contains(&format!("load balancer {balancer}")),
        "{refused}"
    );
}

#[test]
fn modify_replaces_the_settings_from_hns_15_4_and_is_not_implemented_before() {
    let node = node("lb-modify");
    let (id, _) = node.service("kube-proxy-1.20-cluster-ip.json", &node.pods[..1]);
    let both = kube_proxy("kube-proxy-1.20-cluster-ip.json", &node.pods);
    let settings: HostComputeLoadBalancer = serde_json::from_str(&both).unwrap();

    let refused = node.client.modify_load_balancer(id, &settings).unwrap_err();
    assert_eq!(code(&refused), HResult::E_NOTIMPL, "{refused}");
    assert_eq!(refused.kind(), hns::ErrorKind::Unsupported);
    assert!(refused.record().contains("15.4"), "{refused}");
    assert_eq!(node.listed()[0].host_compute_endpoints, node.pods[..1]);

    node.raw()
        .engine()
        .set_version(HnsVersion::new(15, 4))
        .unwrap();
    let modified = node.client.modify_load_balancer(id, &settings).unwrap();
    assert_eq!(modified.id, id);
    assert_eq!(modified.host_compute_endpoints, node.pods);
    assert_eq!(node.listed(), std::slice::from_ref(&modified));

    let missing: Guid = "5eed0009-0000-4000-8000-000000000009".parse().unwrap();
    let gone_backend = HostComputeLoadBalancer {
        host_compute_endpoints: vec![missing],
        ..settings.clone()
    };
    let refused = node
        .client
        .modify_load_balancer(id, &gone_backend)
        .unwrap_err();
    assert_eq!(code(&refused), HResult::HCN_E_ENDPOINT_NOT_FOUND);
    let other_id = HostComputeLoadBalancer {
        id: missing,
        ..settings.clone()
    };
    let refused = node.client.modify_load_balancer(id, &other_id).unwrap_err();
    assert_eq!(code(&refused), HResult::E_INVALIDARG);
    assert_eq!(
        node.listed(),
        [modified],
        "a refused modify changes nothing"
    );
    let stats = node.raw().engine().stats().unwrap();
    assert_eq!(stats["HcnModifyLoadBalancer"], 4);
    assert_eq!(node.raw().open_handles(), 0);
}

#[test]
fn delete_removes_it_and_a_missing_one_is_error_not_found() {
    let node = node("lb-delete");
    let (id, _) = node.service("kube-proxy-1.20-cluster-ip.json", &node.pods);
    node.client.delete_load_balancer(id).unwrap();
    assert!(node.listed().is_empty());
    for refused in [
        node.client.delete_load_balancer(id).unwrap_err(),
        node.client.open_load_balancer(id).unwrap_err(),
    ] {
        assert_eq!(code(&refused), HResult::ERROR_NOT_FOUND, "{refused}");
        assert!(refused.is_not_found());
    }
    let stats = node.raw().engine().stats().unwrap();
    assert_eq!(stats["HcnDeleteLoadBalancer"], 2);
}

#[test]
fn an_endpoint_deleted_under_a_load_balancer_stays_named_by_it() {
    let node = node("lb-stale-backend");
    node.service("kube-proxy-1.20-cluster-ip.json", &node.pods);
    node.client.delete_endpoint(node.pods[1]).unwrap();
    assert_eq!(node.listed()[0].host_compute_endpoints, node.pods);
    let lists = hns_call(&node.client, "GET", "/policylists/", "").unwrap();
    assert_eq!(
        lists["Output"][0]["References"][1],
        format!("/endpoints/{}", node.pods[1])
    );
    // A new load balancer cannot name it.
    let refused = node
        .create(&kube_proxy("kube-proxy-1.20-node-port.json", &node.pods))
        .unwrap_err();
    assert_eq!(refused.hresult, HResult::HCN_E_ENDPOINT_NOT_FOUND);
}

#[test]
fn a_restart_keeps_load_balancers_and_kube_proxys_re_create_is_0xb7() {
    let node = node("lb-restart");
    let settings = kube_proxy("kube-proxy-1.20-cluster-ip.json", &node.pods);
    let (id, _) = node.service("kube-proxy-1.20-cluster-ip.json", &node.pods);
    node.raw()
        .engine()
        .suffer(Outage::RestartLosingEndpoints)
        .unwrap();
    let listed = node.listed();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        listed[0].host_compute_endpoints, node.pods,
        "naming gone endpoints"
    );
    let refused = node.create(&settings).unwrap_err();
    assert_eq!(refused.hresult, HResult::ERROR_ALREADY_EXISTS);
    let refused = node.raw().create_load_balancer(&id, &settings).unwrap_err();
    assert_eq!(refused.hresult, HResult::ERROR_ALREADY_EXISTS);
    node.raw().engine().suffer(Outage::Reboot).unwrap();
    assert_eq!(node.listed().len(), 1, "a reboot keeps them too");
}

#[test]
fn policy_lists_are_the_v1_view_of_the_load_balancers() {
    let node = node("lb-policy-lists");
    // kube-proxy's kernel-compatibility probe on a host with no load balancer yet.
    assert_eq!(
        hns_call(&node.client, "GET", "/policylists/", "").unwrap(),
        json!({"Success": true, "Output": []})
    );
    let (cluster_ip, _) = node.service("kube-proxy-1.20-cluster-ip.json", &node.pods);
    let (ingress, _) = node.service("kube-proxy-current-ingress-ip.json", &node.pods[..1]);
    let references: Vec<String> = node
        .pods
        .iter()
        .map(|pod| format!("/endpoints/{pod}"))
        .collect();
    let expected = json!({
        "ID": cluster_ip.to_string(),
        "References": references,
        "Policies": [{
            "Type": "ELB", "Protocol": 6, "InternalPort": 8080, "ExternalPort": 80,
            "SourceVIP": "10.244.1.2", "VIPs": ["10.96.0.10"]
        }]
    });
    let path = format!("/policylists/{cluster_ip}");
    assert_eq!(
        hns_call(&node.client, "GET", &path, "").unwrap(),
        json!({"Success": true, "Output": expected})
    );
    let ingress_list =
        hns_call(&node.client, "GET", &format!("/policylists/{ingress}"), "").unwrap();
    assert_eq!(ingress_list["Output"]["Policies"][0]["IsDSR"], true);
    assert!(ingress_list["Output"]["Policies"][0].get("ILB").is_none());

    // What kube-proxy does when it starts: list the policy lists and delete each.
    let lists = hns_call(&node.client, "GET", "/policylists", "").unwrap();
    let lists = lists["Output"].as_array().unwrap();
    assert_eq!(lists.len(), 2);
    assert!(lists.contains(&expected));
    for list in lists {
        let path = format!("/policylists/{}", list["ID"].as_str().unwrap());
        let deleted = hns_call(&node.client, "DELETE", &path, "").unwrap();
        assert_eq!(deleted["Success"], true, "{deleted}");
    }
    assert!(
        node.listed().is_empty(),
        "deleting a policy list deletes the load balancer"
    );
    assert_eq!(
        hns_call(&node.client, "GET", &path, "").unwrap(),
        json!({"Success": false, "Error": "Element not found."})
    );
    assert_eq!(
        hns_call(&node.client, "DELETE", &path, "").unwrap(),
        json!({"Success": false, "Error": "Element not found."})
    );
    let created = hns_call(&node.client, "POST", "/policylists/", "{}").unwrap();
    assert_eq!(
        created,
        json!({"Success": false, "Error": "POST /policylists/ is not modelled by the HCN emulator"})
    );
    let stats = node.raw().engine().stats().unwrap();
    assert_eq!(stats[Function::HnsCall.name()], 9);
}
