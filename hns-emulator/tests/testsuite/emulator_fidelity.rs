//! HNS behaviours the plugins must survive: host port conflicts, records naming what holds
//! an address, HNS restart and reboot, and the V1 endpoint resource over the V2 objects.

use crate::common::{TempDir, bridge, client, endpoint_settings, network_settings};
use hns::schema::policy::{PortMappingPolicy, protocol};
use hns::schema::{
    EndpointPolicy, HostComputeEndpoint, ModifyRequest, NetworkType, PolicyList, RequestType,
    ResourceType,
};
use hns::{Client, Guid, HResult, HnsError, Holder};
use hns_emulator::Emulator;

fn code(error: &HnsError) -> HResult {
    error
        .hresult()
        .unwrap_or_else(|| panic!("no HRESULT in {error}"))
}

fn holder(error: &HnsError) -> Holder {
    error
        .raw()
        .and_then(|raw| raw.holder())
        .unwrap_or_else(|| panic!("the record names no holder: {}", error.record()))
}

fn mapping(port: u16, vip: &str) -> EndpointPolicy {
    EndpointPolicy::PortMapping(PortMappingPolicy {
        protocol: protocol::TCP,
        internal_port: 80,
        external_port: port,
        vip: (!vip.is_empty()).then(|| vip.parse().unwrap()),
        flags: hns::schema::NatFlags::NONE,
    })
}

fn with_policies(name: &str, ip: &str, policies: Vec<EndpointPolicy>) -> HostComputeEndpoint {
    HostComputeEndpoint {
        policies,
        ..endpoint_settings(name, ip)
    }
}

fn create_on(
    client: &Client<Emulator>,
    network: Guid,
    settings: &HostComputeEndpoint,
) -> Result<Guid, HnsError> {
    client
        .open_network(network)?
        .create_endpoint(Guid::ZERO, settings)
        .map(|endpoint| endpoint.id())
        .map_err(HnsError::from)
}

#[test]
fn a_host_port_is_held_by_one_endpoint_across_networks() {
    let dir = TempDir::new("ports");
    let client = client(&dir);
    let cbr0 = bridge(&client);
    let other = client
        .create_network(
            Guid::ZERO,
            &network_settings("nat", NetworkType::Nat, "172.20.0.0/24", "172.20.0.1"),
        )
        .unwrap()
        .id();
    let first = create_on(
        &client,
        cbr0,
        &with_policies("a", "10.244.1.5", vec![mapping(8080, "")]),
    )
    .unwrap();

    let mut second = with_policies("b", "172.20.0.5", vec![mapping(8080, "")]);
    second.routes[0].next_hop = Some("172.20.0.1".parse().unwrap());
    let refused = create_on(&client, other, &second).unwrap_err();
    assert_eq!(code(&refused), HResult::HCN_E_PORT_ALREADY_EXISTS);
    assert_eq!(refused.hresult().map(|h| h.0), Some(0x803B_0013));
    let named = holder(&refused);
    assert_eq!(named.endpoint, first);
    assert_eq!(named.resource, "PortMapping TCP 8080");
    assert!(
        client.list_endpoint_ids(Some(other)).unwrap().is_empty(),
        "a refused endpoint must not exist"
    );

    // A specific host address overlaps "any"; another port, or UDP, does not.
    let specific = with_policies("c", "10.244.1.6", vec![mapping(8080, "10.0.0.4")]);
    assert_eq!(
        code(&create_on(&client, cbr0, &specific).unwrap_err()),
        HResult::HCN_E_PORT_ALREADY_EXISTS
    );
    let mut udp = mapping(8080, "");
    if let EndpointPolicy::PortMapping(settings) = &mut udp {
        settings.protocol = protocol::UDP;
    }
    create_on(
        &client,
        cbr0,
        &with_policies("d", "10.244.1.7", vec![mapping(8081, ""), udp]),
    )
    .unwrap();

    // Deleting the holder frees the port.
    client.delete_endpoint(first).unwrap();
    create_on(&client, other, &second).unwrap();
}

#[test]
fn one_endpoint_cannot_map_a_host_port_twice_nor_add_a_taken_one() {
    let dir = TempDir::new("ports-self");
    let client = client(&dir);
    let cbr0 = bridge(&client);
    let twice = with_policies(
        "a",
        "10.244.1.5",
        vec![mapping(9000, ""), mapping(9000, "10.0.0.4")],
    );
    let refused = create_on(&client, cbr0, &twice).unwrap_err();
    assert_eq!(code(&refused), HResult::HCN_E_PORT_ALREADY_EXISTS);

    let holder_id = create_on(
        &client,
        cbr0,
        &with_policies("b", "10.244.1.6", vec![mapping(9000, "")]),
    )
    .unwrap();
    let plain = create_on(&client, cbr0, &endpoint_settings("c", "10.244.1.7")).unwrap();
    let request = ModifyRequest {
        resource_type: ResourceType::Policy,
        request_type: RequestType::Add,
        settings: PolicyList {
            policies: vec![mapping(9000, "")],
        },
    };
    let refused = client
        .open_endpoint(plain)
        .unwrap()
        .modify(&request)
        .unwrap_err();
    assert_eq!(code(&refused), HResult::HCN_E_PORT_ALREADY_EXISTS);
    assert_eq!(holder(&refused).endpoint, holder_id);
    assert!(
        client
            .open_endpoint(plain)
            .unwrap()
            .properties()
            .policies
            .is_empty()
    );
}

#[test]
fn address_conflicts_name_the_endpoint_holding_the_ip_or_the_mac() {
    let dir = TempDir::new("holders");
    let client = client(&dir);
    let cbr0 = bridge(&client);
    let first = create_on(&client, cbr0, &endpoint_settings("a", "10.244.1.5")).unwrap();
    let refused = create_on(&client, cbr0, &endpoint_settings("b", "10.244.1.5")).unwrap_err();
    assert_eq!(code(&refused), HResult::HCN_E_ADDR_INVALID_OR_RESERVED);
    assert_eq!(
        holder(&refused),
        Holder {
            resource: "IP 10.244.1.5".to_owned(),
            endpoint: first,
        }
    );

    let mac = client
        .open_endpoint(first)
        .unwrap()
        .properties()
        .mac_address
        .unwrap();
    let same_mac = HostComputeEndpoint {
        mac_address: Some(mac),
        ..endpoint_settings("c", "10.244.1.6")
    };
    let refused = create_on(&client, cbr0, &same_mac).unwrap_err();
    assert_eq!(
        holder(&refused),
        Holder {
            resource: format!("MacAddress {mac}"),
            endpoint: first,
        }
    );
}

/// A host with a persistent and a non-persistent network, an endpoint on each (one attached
/// to a namespace, holding a host port) and a load balancer over them.
struct Populated {
    client: Client<Emulator>,
    persistent: Guid,
    flannel: Guid,
    namespace: Guid,
    endpoints: [Guid; 2],
    _dir: TempDir,
}

/// A network as flanneld makes one: gone after a reboot.
fn non_persistent_network() -> hns::schema::HostComputeNetwork {
    hns::schema::HostComputeNetwork {
        flags: hns::schema::NetworkFlags::ENABLE_NON_PERSISTENT,
        ..network_settings(
            "vxlan0",
            NetworkType::L2Bridge,
            "10.245.0.0/24",
            "10.245.0.1",
        )
    }
}

fn populated(tag: &str) -> Populated {
    let dir = TempDir::new(tag);
    let client = client(&dir);
    let persistent = bridge(&client);
    let flannel = client
        .create_network(Guid::ZERO, &non_persistent_network())
        .unwrap()
        .id();
    let held = create_on(
        &client,
        persistent,
        &with_policies("a", "10.244.1.5", vec![mapping(8080, "")]),
    )
    .unwrap();
    let mut other = endpoint_settings("b", "10.245.0.5");
    other.routes[0].next_hop = Some("10.245.0.1".parse().unwrap());
    let other = create_on(&client, flannel, &other).unwrap();
    let namespace = client
        .create_namespace(Guid::ZERO, &Default::default())
        .unwrap()
        .id;
    client.attach_endpoint(namespace, held).unwrap();
    let balancer = serde_json::json!({
        "ID": "1b000000-0000-4000-8000-000000000001",
        "HostComputeEndpoints": [held.to_string(), other.to_string()],
        "FrontendVIPs": ["10.96.0.10"],
        "SchemaVersion": {"Major": 2, "Minor": 0}
    });
    std::fs::write(
        dir.0
            .join("loadbalancers/1B000000-0000-4000-8000-000000000001.json"),
        balancer.to_string(),
    )
    .unwrap();
    Populated {
        client,
        persistent,
        flannel,
        namespace,
        endpoints: [held, other],
        _dir: dir,
    }
}

impl Populated {
    fn engine(&self) -> &hns_emulator::Engine {
        self.client.raw().engine()
    }

    fn network_ids(&self) -> Vec<Guid> {
        let mut ids: Vec<Guid> = self
            .client
            .list_networks()
            .unwrap()
            .iter()
            .map(|n| n.id)
            .collect();
        ids.sort();
        ids
    }
}

#[test]
fn a_restart_restores_every_object_under_its_id() {
    let host = populated("rehydrate");
    let before = host.network_ids();
    let resources_before = host
        .client
        .open_namespace(host.namespace)
        .unwrap()
        .properties()
        .resources
        .clone();
    let dropped = host.engine().suffer(hns_emulator::Outage::Restart).unwrap();
    assert_eq!(
        (dropped.endpoints, dropped.networks, dropped.namespaces),
        (0, 0, 0)
    );
    assert_eq!(host.network_ids(), before);
    for endpoint in host.endpoints {
        assert_eq!(host.client.open_endpoint(endpoint).unwrap().id(), endpoint);
    }
    let namespace = host.client.open_namespace(host.namespace).unwrap();
    assert_eq!(namespace.properties().resources, resources_before);
    assert_eq!(host.client.list_load_balancers().unwrap().len(), 1);
}

#[test]
fn a_restart_losing_endpoints_keeps_networks_namespaces_and_load_balancers() {
    let host = populated("restart");
    let before = host.network_ids();
    let dropped = host
        .engine()
        .suffer(hns_emulator::Outage::RestartLosingEndpoints)
        .unwrap();
    assert_eq!(
        (dropped.endpoints, dropped.networks, dropped.namespaces),
        (2, 0, 0)
    );
    assert!(host.client.list_endpoint_ids(None).unwrap().is_empty());
    for endpoint in host.endpoints {
        assert!(
            host.client
                .open_endpoint(endpoint)
                .unwrap_err()
                .is_not_found()
        );
    }
    assert_eq!(host.network_ids(), before);
    let namespace = host.client.open_namespace(host.namespace).unwrap();
    assert!(
        namespace.properties().resources.is_empty(),
        "{:?}",
        namespace.properties()
    );
    let balancers = host.client.list_load_balancers().unwrap();
    assert_eq!(balancers.len(), 1);
    assert_eq!(balancers[0].host_compute_endpoints, host.endpoints.to_vec());
    // What the endpoints held is free again: the address, and the host port.
    create_on(
        &host.client,
        host.persistent,
        &with_policies("a2", "10.244.1.5", vec![mapping(8080, "")]),
    )
    .unwrap();
    assert_eq!(
        host.engine().stats().unwrap().get("HcnCreateEndpoint"),
        Some(&3)
    );
}

#[test]
fn a_reboot_also_drops_namespaces_and_non_persistent_networks() {
    let host = populated("reboot");
    let dropped = host.engine().suffer(hns_emulator::Outage::Reboot).unwrap();
    assert_eq!(
        (dropped.endpoints, dropped.networks, dropped.namespaces),
        (2, 1, 1)
    );
    assert_eq!(host.network_ids(), vec![host.persistent]);
    assert!(
        host.client
            .open_network(host.flannel)
            .unwrap_err()
            .is_not_found()
    );
    assert!(host.client.list_endpoint_ids(None).unwrap().is_empty());
    assert_eq!(
        code(&host.client.open_namespace(host.namespace).unwrap_err()),
        HResult::ERROR_NOT_FOUND
    );
    assert_eq!(host.client.list_load_balancers().unwrap().len(), 1);
    let fresh = host
        .client
        .create_namespace(Guid::ZERO, &Default::default())
        .unwrap();
    assert_eq!(
        fresh.namespace_id, 2,
        "compartments count from 2 after a boot"
    );
    // flanneld re-creates its network under the same name.
    host.client
        .create_network(Guid::ZERO, &non_persistent_network())
        .unwrap();
}

/// One `HNSCall`: the envelope as JSON, or the HRESULT when the call itself failed.
fn hns_call(
    client: &Client<Emulator>,
    method: &str,
    path: &str,
    body: &str,
) -> Result<serde_json::Value, HResult> {
    use hns::RawHcn;
    client
        .raw()
        .hns_call(method, path, body)
        .map(|text| serde_json::from_str(&text).unwrap())
        .map_err(|raw| raw.hresult)
}

fn v1_create(
    client: &Client<Emulator>,
    body: serde_json::Value,
) -> Result<serde_json::Value, HResult> {
    hns_call(client, "POST", "/endpoints/", &body.to_string())
}

#[test]
fn a_v1_endpoint_is_the_same_object_as_a_v2_one() {
    let dir = TempDir::new("v1-endpoints");
    let client = client(&dir);
    let cbr0 = bridge(&client);
    // What the reference win-bridge V1 path sends.
    let created = v1_create(
        &client,
        serde_json::json!({
            "Name": "abc_cbr0",
            "VirtualNetwork": cbr0.to_string(),
            "DNSServerList": "10.96.0.10,10.96.0.11",
            "DNSSuffix": "svc.cluster.local,cluster.local",
            "GatewayAddress": "10.244.1.2",
            "IPAddress": "10.244.1.5",
            "Policies": [
                {"Type": "OutBoundNAT", "ExceptionList": ["10.244.0.0/16"]},
                {"Type": "NAT", "Protocol": "TCP", "InternalPort": 80, "ExternalPort": 8080}
            ]
        }),
    )
    .unwrap();
    assert_eq!(created["Success"], true, "{created}");
    let v1 = &created["Output"];
    let id: Guid = v1["ID"].as_str().unwrap().parse().unwrap();
    assert_eq!(v1["VirtualNetworkName"], "cbr0");
    assert_eq!(
        v1["PrefixLength"], 24,
        "HNS fills the prefix from the subnet"
    );
    assert_eq!(v1["State"], 1);

    let v2 = client.open_endpoint(id).unwrap().properties().clone();
    assert_eq!(v2.name, "abc_cbr0");
    assert_eq!(v2.ip_configurations[0].ip_address.to_string(), "10.244.1.5");
    assert_eq!(v2.routes[0].next_hop, Some("10.244.1.2".parse().unwrap()));
    assert_eq!(
        v2.dns.server_list,
        [
            "10.96.0.10".parse::<std::net::IpAddr>().unwrap(),
            "10.96.0.11".parse().unwrap()
        ]
    );
    assert_eq!(
        v2.mac_address,
        v1["MacAddress"].as_str().unwrap().parse().ok()
    );
    assert!(matches!(&v2.policies[1], EndpointPolicy::PortMapping(m) if m.external_port == 8080));

    // A V2 endpoint shows in the V1 list, and the V1 list agrees with GET by ID.
    let other = create_on(&client, cbr0, &endpoint_settings("def_cbr0", "10.244.1.6")).unwrap();
    let listed = hns_call(&client, "GET", "/endpoints/", "").unwrap();
    let listed = listed["Output"].as_array().unwrap().clone();
    assert_eq!(listed.len(), 2);
    let by_id = hns_call(&client, "GET", &format!("/endpoints/{other}"), "").unwrap();
    assert!(listed.contains(&by_id["Output"]), "{by_id}");
    assert_eq!(by_id["Output"]["IPAddress"], "10.244.1.6");

    // The host port the V1 NAT policy maps is held, for V2 creates too.
    let refused = create_on(
        &client,
        cbr0,
        &with_policies("x", "10.244.1.7", vec![mapping(8080, "")]),
    )
    .unwrap_err();
    assert_eq!(holder(&refused).endpoint, id);

    let deleted = hns_call(&client, "DELETE", &format!("/endpoints/{id}"), "").unwrap();
    assert_eq!(deleted["Success"], true);
    assert!(client.open_endpoint(id).unwrap_err().is_not_found());
    let again = hns_call(&client, "DELETE", &format!("/endpoints/{id}"), "").unwrap();
    assert_eq!(
        again,
        serde_json::json!({"Success": false, "Error": "Element not found."})
    );
}

#[test]
fn v1_errors_come_as_hns_gives_them() {
    let dir = TempDir::new("v1-errors");
    let client = client(&dir);
    let cbr0 = bridge(&client);
    let body = |name: &str, ip: &str| serde_json::json!({"Name": name, "VirtualNetworkName": "cbr0", "IPAddress": ip, "GatewayAddress": "10.244.1.2"});
    let first = v1_create(&client, body("abc_cbr0", "10.244.1.5")).unwrap();
    let first: Guid = first["Output"]["ID"].as_str().unwrap().parse().unwrap();

    // A duplicate name fails the HNSCall itself with 0x1392 (V2 would accept it).
    assert_eq!(
        v1_create(&client, body("abc_cbr0", "10.244.1.6")),
        Err(HResult::ERROR_OBJECT_ALREADY_EXISTS)
    );
    assert_eq!(HResult::ERROR_OBJECT_ALREADY_EXISTS.0 & 0xFFFF, 0x1392);

    // An address held by another endpoint: the failure envelope, naming the holder.
    let held = v1_create(&client, body("def_cbr0", "10.244.1.5")).unwrap();
    assert_eq!(held["Success"], false);
    let error = held["Error"].as_str().unwrap();
    assert!(
        error.starts_with("An address provided is invalid or reserved."),
        "{error}"
    );
    assert_eq!(Holder::parse(error).map(|h| h.endpoint), Some(first));

    // Unknown IDs, networks and V1 policies V2 cannot take.
    let missing = hns_call(
        &client,
        "GET",
        "/endpoints/5eed0004-0000-4000-8000-000000000004",
        "",
    )
    .unwrap();
    assert_eq!(
        missing,
        serde_json::json!({"Success": false, "Error": "Element not found."})
    );
    let no_network = v1_create(
        &client,
        serde_json::json!({"Name": "n", "VirtualNetworkName": "nope", "IPAddress": "10.244.1.9"}),
    )
    .unwrap();
    assert_eq!(no_network["Error"], "Element not found.");
    let bad_policy = v1_create(
        &client,
        serde_json::json!({"Name": "p", "VirtualNetwork": cbr0.to_string(), "IPAddress": "10.244.1.9",
            "Policies": [{"Type": "NAT", "Protocol": "SCTP", "InternalPort": 1, "ExternalPort": 1}]}),
    )
    .unwrap();
    assert_eq!(bad_policy["Success"], false);
    assert!(
        bad_policy["Error"].as_str().unwrap().contains("SCTP"),
        "{bad_policy}"
    );
    assert_eq!(client.list_endpoint_ids(None).unwrap(), vec![first]);
}

#[test]
fn v1_host_attach_is_refused_twice_and_shows_in_the_state() {
    let dir = TempDir::new("v1-attach");
    let client = client(&dir);
    bridge(&client);
    let created = v1_create(
        &client,
        serde_json::json!({"Name": "cbr0_ep", "VirtualNetworkName": "cbr0", "IPAddress": "10.244.1.2"}),
    )
    .unwrap();
    let id = created["Output"]["ID"].as_str().unwrap().to_owned();
    let attach = serde_json::json!({"SystemType": "Host", "CompartmentId": 1}).to_string();
    let path = format!("/endpoints/{id}/attach");
    let attached = hns_call(&client, "POST", &path, &attach).unwrap();
    assert_eq!(
        (
            attached["Success"].clone(),
            attached["Output"]["State"].clone()
        ),
        (true.into(), 2.into())
    );
    let twice = hns_call(&client, "POST", &path, &attach).unwrap();
    assert_eq!(
        twice,
        serde_json::json!({"Success": false, "Error": "This endpoint is already attached to the switch."})
    );
    let container =
        serde_json::json!({"SystemType": "Container", "ContainerId": "pause-1"}).to_string();
    let shared = hns_call(&client, "POST", &path, &container).unwrap();
    assert_eq!(
        shared["Output"]["SharedContainers"],
        serde_json::json!(["pause-1"])
    );
    let detach = format!("/endpoints/{id}/detach");
    hns_call(&client, "POST", &detach, &attach).unwrap();
    let detached = hns_call(&client, "POST", &detach, &container).unwrap();
    assert_eq!(detached["Output"]["State"], 1);
    assert_eq!(detached["Output"].get("SharedContainers"), None);
}
