//! The emulator behaves like HNS: each validation, each error code, the
//! error-record shape, filtered enumerations and the test controls.

use crate::common::{TempDir, bridge, client, endpoint_settings, network_settings};
use hns::raw::{Handle, NetworkHandle};
use hns::schema::policy::{ProviderAddressPolicy, RemoteSubnetRoutePolicy};
use hns::schema::{
    EndpointPolicy, HostComputeNamespace, HostComputeNetwork, HostComputeQuery, ModifyRequest,
    NetworkPolicy, NetworkType, RequestType,
};
use hns::{
    Client, ErrorKind, ErrorRecord, Feature, Function, Guid, HResult, HnsError, HnsVersion, RawHcn,
    WindowsBuild,
};
use hns_emulator::Emulator;

fn guid(text: &str) -> Guid {
    text.parse().unwrap()
}

fn code(error: &HnsError) -> HResult {
    error
        .hresult()
        .unwrap_or_else(|| panic!("no HRESULT in {error}"))
}

fn create(
    client: &Client<Emulator>,
    network: Guid,
    name: &str,
    ip: &str,
) -> Result<Guid, HnsError> {
    let network = client.open_network(network)?;
    network
        .create_endpoint(Guid::ZERO, &endpoint_settings(name, ip))
        .map(|endpoint| endpoint.id())
        .map_err(HnsError::from)
}

#[test]
fn caller_chosen_guids_are_honoured_and_zero_gets_a_random_one() {
    let dir = TempDir::new("guids");
    let client = client(&dir);
    let network = bridge(&client);
    let chosen = guid("11111111-2222-3333-4444-555555555555");
    let endpoint = client
        .open_network(network)
        .unwrap()
        .create_endpoint(chosen, &endpoint_settings("a", "10.244.1.5"))
        .unwrap()
        .id();
    assert_eq!(endpoint, chosen);
    let random = create(&client, network, "b", "10.244.1.6").unwrap();
    assert!(!random.is_zero() && random != chosen);
    let again = client
        .open_network(network)
        .unwrap()
        .create_endpoint(chosen, &endpoint_settings("c", "10.244.1.7"))
        .unwrap_err();
    assert!(!again.created());
    assert_eq!(
        (again.error().kind(), code(again.error())),
        (
            ErrorKind::AlreadyExists,
            HResult::ERROR_OBJECT_ALREADY_EXISTS
        )
    );
}

#[test]
fn not_found_comes_in_both_families() {
    let dir = TempDir::new("notfound");
    let client = client(&dir);
    let missing = guid("deadbeef-0000-0000-0000-000000000001");
    let network = client.open_network(missing).unwrap_err();
    assert_eq!(code(&network), HResult::HCN_E_NETWORK_NOT_FOUND);
    let endpoint = client.delete_endpoint(missing).unwrap_err();
    assert_eq!(code(&endpoint), HResult::HCN_E_ENDPOINT_NOT_FOUND);
    let namespace = client.open_namespace(Guid::ZERO).unwrap_err();
    assert_eq!(code(&namespace), HResult::ERROR_NOT_FOUND);
    for error in [network, endpoint, namespace] {
        assert!(error.is_not_found(), "{error}");
    }
    let by_name = client.find_network_by_name("nope").unwrap_err();
    assert!(by_name.is_not_found() && by_name.hresult().is_none());
    assert!(client.find_endpoint_by_name("nope").unwrap().is_none());
}

#[test]
fn error_records_have_the_hns_shape() {
    let dir = TempDir::new("record");
    let emulator = Emulator::open(&dir.0).unwrap();
    let error = emulator
        .open_endpoint(&guid("deadbeef-0000-0000-0000-000000000001"))
        .unwrap_err();
    let record: ErrorRecord = serde_json::from_str(&error.record).unwrap();
    assert!(!record.success);
    assert_eq!(record.error_code, 0x803B_0002);
    assert!(
        record.error.starts_with("The endpoint was not found."),
        "{}",
        record.error
    );
    assert!(
        error.record.contains(r#""ErrorCode":2151350274"#),
        "{}",
        error.record
    );
}

#[test]
fn addresses_are_validated_against_the_network() {
    let dir = TempDir::new("ips");
    let client = client(&dir);
    let network = bridge(&client);
    let other = client
        .create_network(
            Guid::ZERO,
            &network_settings(
                "other",
                NetworkType::L2Bridge,
                "10.244.1.0/24",
                "10.244.1.1",
            ),
        )
        .unwrap()
        .id();
    create(&client, network, "a", "10.244.1.5").unwrap();
    let cases = [
        ("10.244.2.5", HResult::HCN_E_ADDR_INVALID_OR_RESERVED), // outside the subnet
        ("10.244.1.5", HResult::HCN_E_ADDR_INVALID_OR_RESERVED), // duplicate on the network
        ("10.244.1.1", HResult::HCN_E_ADDR_INVALID_OR_RESERVED), // the gateway
        ("10.244.1.0", HResult::HCN_E_ADDR_INVALID_OR_RESERVED), // network address
        ("10.244.1.255", HResult::HCN_E_ADDR_INVALID_OR_RESERVED), // broadcast
    ];
    for (ip, expected) in cases {
        let error = create(&client, network, "x", ip).unwrap_err();
        assert_eq!(code(&error), expected, "{ip}: {error}");
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
    }
    // The same IP on another network is fine; so is reusing a deleted endpoint's IP.
    create(&client, other, "a", "10.244.1.5").unwrap();
    let freed = create(&client, network, "b", "10.244.1.6").unwrap();
    client.delete_endpoint(freed).unwrap();
    create(&client, network, "c", "10.244.1.6").unwrap();
}

#[test]
fn hns_fills_in_mac_and_prefix_length() {
    let dir = TempDir::new("mac");
    let client = client(&dir);
    let network = client.open_network(bridge(&client)).unwrap();
    let pool = &network.properties().mac_pool.ranges[0];
    assert!(
        pool.start_mac_address.to_string().starts_with("00-15-5D-"),
        "{pool:?}"
    );
    let first = network
        .create_endpoint(Guid::ZERO, &endpoint_settings("a", "10.244.1.5"))
        .unwrap();
    let second = network
        .create_endpoint(Guid::ZERO, &endpoint_settings("b", "10.244.1.6"))
        .unwrap();
    assert_eq!(first.properties().mac_address, Some(pool.start_mac_address));
    assert_ne!(
        first.properties().mac_address,
        second.properties().mac_address
    );
    assert_eq!(
        first.properties().ip_configurations[0].prefix_length,
        Some(24)
    );
    let mut given = endpoint_settings("c", "10.244.1.7");
    given.mac_address = Some("0e-2a-0a-f4-01-07".parse().unwrap());
    assert_eq!(
        network
            .create_endpoint(Guid::ZERO, &given)
            .unwrap()
            .properties()
            .mac_address
            .map(|mac| mac.to_string())
            .as_deref(),
        Some("0E-2A-0A-F4-01-07")
    );
}

/// kube-proxy's remote endpoints stand for addresses behind another host (a Service's
/// ClusterIP, a pod of another node), all with the MAC of the host it gives them: HNS takes an
/// address outside the network's subnets and a shared MAC for a remote endpoint (kube-proxy's
/// Services work on it), never for a local one.
#[test]
fn a_remote_endpoint_may_hold_any_address_and_share_its_hosts_mac() {
    let dir = TempDir::new("remote");
    let client = client(&dir);
    let network = client.open_network(bridge(&client)).unwrap();
    let remote = |ip: &str| {
        let mut settings = endpoint_settings("", ip);
        settings.flags = hns::schema::EndpointFlags::REMOTE_ENDPOINT;
        settings.mac_address = Some("00-15-5D-52-C0-01".parse().unwrap());
        settings
    };
    for ip in ["10.96.0.50", "10.244.2.7"] {
        let endpoint = network.create_endpoint(Guid::ZERO, &remote(ip)).unwrap();
        assert_eq!(
            endpoint.properties().ip_configurations[0].prefix_length,
            Some(32),
            "{ip}"
        );
    }
    // Local endpoints still must lie in a subnet and hold their own MAC.
    let mut local = remote("10.244.2.8");
    local.flags = hns::schema::EndpointFlags::NONE;
    let error = HnsError::from(network.create_endpoint(Guid::ZERO, &local).unwrap_err());
    assert_eq!(code(&error), HResult::HCN_E_ADDR_INVALID_OR_RESERVED);
    local.ip_configurations[0].ip_address = "10.244.1.8".parse().unwrap();
    network.create_endpoint(Guid::ZERO, &local).unwrap();
    let mut second = local.clone();
    second.ip_configurations[0].ip_address = "10.244.1.9".parse().unwrap();
    let error = HnsError::from(network.create_endpoint(Guid::ZERO, &second).unwrap_err());
    assert_eq!(code(&error), HResult::HCN_E_ADDR_INVALID_OR_RESERVED);
    // A remote endpoint's address is still one endpoint's on the network.
    let error = HnsError::from(
        network
            .create_endpoint(Guid::ZERO, &remote("10.96.0.50"))
            .unwrap_err(),
    );
    assert_eq!(code(&error), HResult::HCN_E_ADDR_INVALID_OR_RESERVED);
}

#[test]
fn a_mac_is_held_by_one_endpoint_per_network() {
    let dir = TempDir::new("mac-unique");
    let client = client(&dir);
    let network = client.open_network(bridge(&client)).unwrap();
    let first = network
        .create_endpoint(Guid::ZERO, &endpoint_settings("a", "10.244.1.5"))
        .unwrap();
    let mut copy = endpoint_settings("b", "10.244.1.6");
    copy.mac_address = first.properties().mac_address;
    let error = HnsError::from(network.create_endpoint(Guid::ZERO, &copy).unwrap_err());
    assert_eq!(
        (code(&error), error.kind()),
        (
            HResult::HCN_E_ADDR_INVALID_OR_RESERVED,
            ErrorKind::InvalidInput
        ),
        "{error}"
    );
    // The same MAC on another network is fine.
    let other = client
        .create_network(
            Guid::ZERO,
            &network_settings(
                "other",
                NetworkType::L2Bridge,
                "10.244.1.0/24",
                "10.244.1.1",
            ),
        )
        .unwrap();
    other.create_endpoint(Guid::ZERO, &copy).unwrap();
}

#[test]
fn attach_detach_and_namespace_resources() {
    let dir = TempDir::new("attach");
    let client = client(&dir);
    let network = bridge(&client);
    let endpoint = create(&client, network, "a", "10.244.1.5").unwrap();
    let namespace = client
        .create_namespace(Guid::ZERO, &HostComputeNamespace::default())
        .unwrap();
    let other = client
        .create_namespace(Guid::ZERO, &HostComputeNamespace::default())
        .unwrap();
    assert_ne!(namespace.namespace_id, other.namespace_id);
    client.attach_endpoint(namespace.id, endpoint).unwrap();
    assert_eq!(
        client
            .open_endpoint(endpoint)
            .unwrap()
            .properties()
            .host_compute_namespace,
        namespace.id
    );
    let resources = client
        .open_namespace(namespace.id)
        .unwrap()
        .into_properties()
        .resources;
    assert_eq!(resources.len(), 1);
    assert_eq!(resources[0].data["ID"], endpoint.to_upper_string());
    for target in [namespace.id, other.id] {
        let error = client.attach_endpoint(target, endpoint).unwrap_err();
        assert_eq!(
            (error.kind(), code(&error)),
            (
                ErrorKind::AlreadyAttached,
                HResult::HCN_E_ENDPOINT_ALREADY_ATTACHED
            )
        );
    }
    assert_eq!(
        code(&client.detach_endpoint(other.id, endpoint).unwrap_err()),
        HResult::ERROR_NOT_FOUND
    );
    client.detach_endpoint(namespace.id, endpoint).unwrap();
    assert!(
        client
            .open_endpoint(endpoint)
            .unwrap()
            .properties()
            .host_compute_namespace
            .is_zero()
    );
    assert!(
        client
            .open_namespace(namespace.id)
            .unwrap()
            .properties()
            .resources
            .is_empty()
    );
    let missing = client
        .attach_endpoint(namespace.id, guid("deadbeef-0000-0000-0000-000000000001"))
        .unwrap_err();
    assert_eq!(code(&missing), HResult::HCN_E_ENDPOINT_NOT_FOUND);
}

#[test]
fn deletes_cascade_like_hns() {
    let dir = TempDir::new("cascade");
    let client = client(&dir);
    let network = bridge(&client);
    let a = create(&client, network, "a", "10.244.1.5").unwrap();
    let b = create(&client, network, "b", "10.244.1.6").unwrap();
    let namespace = client
        .create_namespace(Guid::ZERO, &HostComputeNamespace::default())
        .unwrap()
        .id;
    client.attach_endpoint(namespace, a).unwrap();
    // Deleting an attached endpoint succeeds and empties the namespace.
    client.delete_endpoint(a).unwrap();
    assert!(
        client
            .open_namespace(namespace)
            .unwrap()
            .properties()
            .resources
            .is_empty()
    );
    // Deleting a namespace detaches its endpoints.
    client.attach_endpoint(namespace, b).unwrap();
    client.delete_namespace(namespace).unwrap();
    assert!(
        client
            .open_endpoint(b)
            .unwrap()
            .properties()
            .host_compute_namespace
            .is_zero()
    );
    // Deleting a network deletes its endpoints.
    client.delete_network(network).unwrap();
    assert!(client.open_endpoint(b).unwrap_err().is_not_found());
    assert!(client.list_endpoint_ids(None).unwrap().is_empty());
}

#[test]
fn enumerations_honour_filters() {
    let dir = TempDir::new("filters");
    let client = client(&dir);
    let first = bridge(&client);
    let second = client
        .create_network(
            Guid::ZERO,
            &network_settings("second", NetworkType::L2Bridge, "10.0.0.0/24", "10.0.0.1"),
        )
        .unwrap()
        .id();
    let a = create(&client, first, "a", "10.244.1.5").unwrap();
    let b = create(&client, first, "b", "10.244.1.6").unwrap();
    let c = create(&client, second, "a", "10.0.0.5").unwrap();
    let mut of_first = client.list_endpoint_ids(Some(first)).unwrap();
    of_first.sort();
    let mut expected = vec![a, b];
    expected.sort();
    assert_eq!(of_first, expected);
    assert_eq!(client.list_endpoint_ids(None).unwrap().len(), 3);
    let raw = client.raw();
    let ids = |query: serde_json::Value| -> Vec<Guid> {
        let query = HostComputeQuery {
            filter: query.to_string(),
            ..HostComputeQuery::default()
        };
        serde_json::from_str(&raw.enumerate_endpoints(&query.to_json()).unwrap()).unwrap()
    };
    assert_eq!(ids(serde_json::json!({"ID": b.to_upper_string()})), [b]);
    assert_eq!(ids(serde_json::json!({"Name": "b"})), [b]);
    assert_eq!(
        ids(serde_json::json!({"HostComputeNetwork": second.to_string()})),
        [c]
    );
    assert_eq!(
        ids(serde_json::json!({"Name": "a", "VirtualNetwork": second.to_string()})),
        [c]
    );
    assert_eq!(ids(serde_json::json!({"Name": "zzz"})), []);
    let networks: Vec<Guid> = serde_json::from_str(
        &raw.enumerate_networks(&HostComputeQuery::by_name("second").to_json())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(networks, [second]);
}

#[test]
fn detailed_queries_add_health() {
    let dir = TempDir::new("detailed");
    let client = client(&dir);
    let mut network = client.open_network(bridge(&client)).unwrap();
    assert!(network.properties().health.is_none());
    assert!(
        network
            .refresh(&HostComputeQuery::all().detailed())
            .unwrap()
            .health
            .is_some()
    );
}

#[test]
fn malformed_documents_get_the_right_hresult() {
    let dir = TempDir::new("json");
    let emulator = Emulator::open(&dir.0).unwrap();
    fn invalid_json<T: std::fmt::Debug>(result: Result<T, hns::RawError>) -> HResult {
        result.unwrap_err().hresult
    }
    assert_eq!(
        invalid_json(emulator.create_network(&Guid::ZERO, "{not json")),
        HResult::HCN_E_INVALID_JSON
    );
    assert_eq!(
        invalid_json(emulator.enumerate_networks("{\"Filter\":\"{bad\"}")),
        HResult::HCN_E_INVALID_JSON
    );
    assert_eq!(
        invalid_json(emulator.create_network(&Guid::ZERO, r#"{"Name":"x","Type":"Bogus"}"#)),
        HResult::HCN_E_INVALID_NETWORK_TYPE
    );
    assert_eq!(
        invalid_json(emulator.create_network(&Guid::ZERO, r#"{"Name":"x","Type":"L2Bridge","Ipams":[{"Subnets":[{"IpAddressPrefix":"10.0.0/24"}]}]}"#)),
        HResult::HCN_E_INVALID_NETWORK
    );
    let network = emulator
        .create_network(&Guid::ZERO, r#"{"Name":"n","Type":"L2Bridge"}"#)
        .unwrap();
    assert_eq!(
        invalid_json(emulator.create_network(&Guid::ZERO, r#"{"Name":"n","Type":"L2Bridge"}"#)),
        HResult::HCN_E_NETWORK_ALREADY_EXISTS
    );
    let endpoint =
        |settings: &str| invalid_json(emulator.create_endpoint(&network, &Guid::ZERO, settings));
    assert_eq!(
        endpoint(r#"{"IpConfigurations":"10.0.0.5"}"#),
        HResult::HCN_E_INVALID_JSON
    );
    assert_eq!(endpoint("{"), HResult::HCN_E_INVALID_JSON);
    assert_eq!(
        endpoint(r#"{"Policies":[{"Type":"OutBoundNAT","ExceptionList":["10.0.0.0/8"]}]}"#),
        HResult::HCN_E_INVALID_POLICY
    );
    // A known settings key whose value does not fit, whatever unknown keys come with it.
    assert_eq!(
        endpoint(
            r#"{"Policies":[{"Type":"OutBoundNAT","Settings":{"ExceptionList":[],"Exceptions":"10.0.0.0/8"}}]}"#
        ),
        HResult::HCN_E_INVALID_POLICY
    );
    assert_eq!(
        endpoint(r#"{"Policies":[{"Type":"NoSuchPolicy","Settings":{}}]}"#),
        HResult::HCN_E_INVALID_POLICY_TYPE
    );
    assert_eq!(
        endpoint(r#"{"HostComputeNamespace":"3fbeee42-4716-4d15-bcb6-19a846a7d111"}"#),
        HResult::E_INVALIDARG
    );
    // A malformed value gets the HRESULT HNS gives its field, and the record names it.
    let refused = |result: Result<_, hns::RawError>| {
        let error = result.unwrap_err();
        (error.hresult, error.record)
    };
    let cases = [
        (
            emulator.create_endpoint(
                &network,
                &Guid::ZERO,
                r#"{"IpConfigurations":[{"IpAddress":"10.244.1.300"}]}"#,
            ),
            HResult::HCN_E_INVALID_IP,
            r#"IpConfigurations[0].IpAddress \"10.244.1.300\""#,
        ),
        (
            emulator.create_endpoint(&network, &Guid::ZERO, r#"{"MacAddress":"not-a-mac"}"#),
            HResult::E_INVALIDARG,
            r#"MacAddress \"not-a-mac\""#,
        ),
        (
            emulator.create_endpoint(
                &network,
                &Guid::ZERO,
                r#"{"Routes":[{"NextHop":"10.0.0.1","DestinationPrefix":"0.0.0.0"}]}"#,
            ),
            HResult::E_INVALIDARG,
            r#"Routes[0].DestinationPrefix \"0.0.0.0\""#,
        ),
    ];
    for (result, expected, named) in cases {
        let (code, record) = refused(result.map(drop));
        assert_eq!(code, expected, "{record}");
        assert!(record.contains(named), "{record} does not name {named}");
    }
    for (settings, named) in [
        (
            r#"{"Name":"r","Type":"L2Bridge","Ipams":[{"Subnets":[{"IpAddressPrefix":"10.0.0.0/24","Routes":[{"NextHop":"10.0.0.x","DestinationPrefix":"0.0.0.0/0"}]}]}]}"#,
            "NextHop",
        ),
        (
            r#"{"Name":"m","Type":"L2Bridge","MacPool":{"Ranges":[{"StartMacAddress":"00-15-5D","EndMacAddress":"00-15-5D-00-00-FF"}]}}"#,
            "StartMacAddress",
        ),
        (
            r#"{"Name":"d","Type":"L2Bridge","Dns":{"ServerList":["dns.example"]}}"#,
            "ServerList",
        ),
    ] {
        let (code, record) = refused(emulator.create_network(&Guid::ZERO, settings).map(drop));
        assert_eq!(code, HResult::HCN_E_INVALID_NETWORK, "{record}");
        assert!(record.contains(named), "{record} does not name {named}");
    }
    // A C caller of the emulated DLL can close a handle twice; HNS answers E_HANDLE.
    // SAFETY: deliberately a second owner of a handle about to be closed: the emulator's
    // handle table must refuse it, which is what this checks (no native code is involved).
    let stale = unsafe { NetworkHandle::from_raw(network.as_raw()) };
    emulator.close_network(network).unwrap();
    assert_eq!(
        emulator.close_network(stale).unwrap_err().hresult,
        HResult::E_HANDLE
    );
}

#[test]
fn client_rejects_read_only_namespace_before_calling() {
    let dir = TempDir::new("readonly");
    let client = client(&dir);
    let network = client.open_network(bridge(&client)).unwrap();
    let mut settings = endpoint_settings("a", "10.244.1.5");
    settings.host_compute_namespace = guid("3fbeee42-4716-4d15-bcb6-19a846a7d111");
    let before = client.raw().engine().stats().unwrap();
    let error = HnsError::from(network.create_endpoint(Guid::ZERO, &settings).unwrap_err());
    assert_eq!(error.kind(), ErrorKind::InvalidInput);
    assert_eq!(client.raw().engine().stats().unwrap(), before);
}

#[test]
fn network_policies_can_be_added_and_removed() {
    let dir = TempDir::new("netpolicy");
    let client = client(&dir);
    let mut network = client.open_network(bridge(&client)).unwrap();
    let route = NetworkPolicy::RemoteSubnetRoute(RemoteSubnetRoutePolicy {
        destination_prefix: "10.244.2.0/24".parse().unwrap(),
        isolation_id: 4096,
        provider_address: "192.168.1.11".parse().unwrap(),
        distributed_router_mac_address: "0E-2A-C0-A8-01-0B".parse().unwrap(),
    });
    network
        .modify(&ModifyRequest::policies(
            RequestType::Add,
            vec![route.clone(), NetworkPolicy::HostRoute],
        ))
        .unwrap();
    assert!(
        network
            .refresh(&HostComputeQuery::all())
            .unwrap()
            .policies
            .contains(&route)
    );
    let again = network
        .modify(&ModifyRequest::policies(
            RequestType::Add,
            vec![route.clone()],
        ))
        .unwrap_err();
    assert_eq!(code(&again), HResult::HCN_E_POLICY_ALREADY_EXISTS);
    network
        .modify(&ModifyRequest::policies(
            RequestType::Remove,
            vec![route.clone()],
        ))
        .unwrap();
    let gone = network
        .modify(&ModifyRequest::policies(RequestType::Remove, vec![route]))
        .unwrap_err();
    assert_eq!(code(&gone), HResult::HCN_E_POLICY_NOT_FOUND);
    assert_eq!(
        network.refresh(&HostComputeQuery::all()).unwrap().policies,
        [NetworkPolicy::HostRoute]
    );
}

/// The Overlay network flanneld's vxlan backend creates, with the provider address HNS adds.
fn flannel_overlay_settings() -> HostComputeNetwork {
    let mut settings = network_settings(
        "flannel.4096",
        NetworkType::Overlay,
        "10.244.1.0/24",
        "10.244.1.1",
    );
    settings
        .policies
        .push(NetworkPolicy::ProviderAddress(ProviderAddressPolicy {
            provider_address: "192.168.1.10".parse().unwrap(),
        }));
    settings
}

#[test]
fn overlay_networks_get_a_dr_mac_and_keep_given_policies() {
    let dir = TempDir::new("overlay");
    let client = client(&dir);
    let settings = flannel_overlay_settings();
    let network = client.create_network(Guid::ZERO, &settings).unwrap();
    let policies = &network.properties().policies;
    assert!(
        policies
            .iter()
            .any(|p| matches!(p, NetworkPolicy::DrMacAddress(_))),
        "{policies:?}"
    );
    assert!(policies.contains(&settings.policies[0]));
}

#[test]
fn a_dr_mac_address_that_is_not_a_mac_is_an_invalid_policy() {
    let dir = TempDir::new("dr-mac");
    let emulator = Emulator::open(&dir.0).unwrap();
    let mut settings = serde_json::to_value(flannel_overlay_settings()).unwrap();
    settings["Policies"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"Type": "DrMacAddress", "Settings": {"Address": "zz"}}));
    let error = emulator
        .create_network(&Guid::ZERO, &settings.to_string())
        .unwrap_err();
    let record = error.record;
    assert_eq!(error.hresult, HResult::HCN_E_INVALID_POLICY, "{record}");
    assert!(
        record.contains(r#"Address: \"zz\" is not a MAC address"#),
        "{record}"
    );
}

#[test]
fn injected_faults_fire_once_on_the_nth_call() {
    let dir = TempDir::new("fault");
    let client = client(&dir);
    let network = bridge(&client);
    let engine = client.raw().engine();
    engine
        .inject_fault(Function::CreateEndpoint, 2, HResult::HCN_E_INVALID_NETWORK)
        .unwrap();
    create(&client, network, "a", "10.244.1.5").unwrap();
    let error = create(&client, network, "b", "10.244.1.6").unwrap_err();
    assert_eq!(code(&error), HResult::HCN_E_INVALID_NETWORK);
    create(&client, network, "b", "10.244.1.6").unwrap();
    assert_eq!(engine.stats().unwrap()["HcnCreateEndpoint"], 3);
    assert_eq!(
        client.raw().open_handles(),
        0,
        "handles leaked on the failure path"
    );
}

#[test]
fn each_host_has_its_own_version_and_features() {
    let dir = TempDir::new("version");
    let client = client(&dir);
    assert_eq!(client.version().unwrap(), HnsVersion::default_emulated());
    assert!(client.supported_features().unwrap().supports(Feature::Dsr));
    client
        .raw()
        .engine()
        .set_version(HnsVersion::new(10, 1))
        .unwrap();
    let features = client.supported_features().unwrap();
    assert_eq!(features.version(), HnsVersion::new(10, 1));
    assert!(!features.supports(Feature::Dsr) && features.supports(Feature::ApiV2));
}

#[test]
fn each_host_has_its_own_windows_build() {
    let dir = TempDir::new("build");
    let client = client(&dir);
    assert_eq!(client.windows_build().unwrap(), WindowsBuild::SERVER_2022);
    client
        .raw()
        .engine()
        .set_windows_build(WindowsBuild::SERVER_2025)
        .unwrap();
    let other = TempDir::new("build-other");
    assert_eq!(client.windows_build().unwrap(), WindowsBuild::SERVER_2025);
    assert_eq!(
        self::client(&other).windows_build().unwrap(),
        WindowsBuild::SERVER_2022
    );
}

/// V1 readers (win-overlay's `Subnets[0]`/`ManagementIP`) see the V2 networks through `HNSCall`.
#[test]
fn v1_network_listing_is_derived_from_the_v2_networks() {
    let dir = TempDir::new("v1");
    let client = client(&dir);
    // The switch these networks make never settles here, so the bridge has no management IP
    // yet (tests/flanneld.rs reads it once the switch has settled).
    client
        .raw()
        .engine()
        .set_switch_settle(std::time::Duration::from_secs(3600))
        .unwrap();
    let call = |path: &str| -> serde_json::Value {
        serde_json::from_str(&client.raw().hns_call("GET", path, "").unwrap()).unwrap()
    };
    assert_eq!(
        call("/networks/"),
        serde_json::json!({"Success": true, "Output": []})
    );
    let settings = flannel_overlay_settings();
    let overlay = client.create_network(Guid::ZERO, &settings).unwrap().id();
    let bridge = bridge(&client);

    let listing = call("/networks/");
    assert_eq!(listing["Success"], true);
    let networks = listing["Output"].as_array().unwrap();
    assert_eq!(networks.len(), 2);
    let overlay_v1 = networks
        .iter()
        .find(|n| n["ID"] == overlay.to_string())
        .unwrap();
    assert_eq!(overlay_v1["Name"], "flannel.4096");
    assert_eq!(overlay_v1["Type"], "Overlay");
    // Each subnet with its ID and its (here empty) policies, as HNS reports it.
    let subnet = &overlay_v1["Subnets"][0];
    assert!(
        subnet["ID"].as_str().unwrap().parse::<Guid>().is_ok(),
        "{subnet}"
    );
    assert_eq!(
        overlay_v1["Subnets"],
        serde_json::json!([{"ID": subnet["ID"], "AddressPrefix": "10.244.1.0/24",
            "GatewayAddress": "10.244.1.1", "Policies": []}])
    );
    assert_eq!(overlay_v1["ManagementIP"], "192.168.1.10");
    // The DR MAC HNS gave the Overlay network, as V2 reports it.
    let dr_mac = client
        .open_network(overlay)
        .unwrap()
        .into_properties()
        .find_policy(|policy| match policy {
            hns::schema::NetworkPolicy::DrMacAddress(mac) => Some(mac.address.to_string()),
            _ => None,
        })
        .unwrap();
    assert_eq!(overlay_v1["DrMacAddress"], dr_mac);
    assert!(overlay_v1["MacPools"][0]["StartMacAddress"].is_string());

    let bridge_v1 = call(&format!("/networks/{}", bridge.to_upper_string()));
    assert_eq!(bridge_v1["Output"]["Type"], "L2Bridge");
    assert!(bridge_v1["Output"].get("ManagementIP").is_none());

    let missing = call("/networks/11111111-2222-3333-4444-555555555555");
    assert_eq!(
        missing,
        serde_json::json!({"Success": false, "Error": "Element not found."})
    );
    client.delete_network(bridge).unwrap();
    assert_eq!(call("/networks")["Output"].as_array().unwrap().len(), 1);
}

#[test]
fn endpoint_policies_are_stored_as_given() {
    let dir = TempDir::new("eppolicy");
    let client = client(&dir);
    let network = client.open_network(bridge(&client)).unwrap();
    let mut settings = endpoint_settings("a", "10.244.1.5");
    let passthrough: EndpointPolicy =
        serde_json::from_str(r#"{"Type":"L4WFPPROXY","Settings":{"InboundProxyPort":"15001"}}"#)
            .unwrap();
    settings.policies = vec![passthrough.clone()];
    let endpoint = network.create_endpoint(Guid::ZERO, &settings).unwrap();
    assert_eq!(endpoint.properties().policies, [passthrough]);
}

/// HNS reads the settings keys a policy type has and ignores the others, so a policy with a
/// V1 key inside V2 `Settings` or another type's camelCase keys (OpenShift WMCO's configs,
/// which the reference plugins forward as written) is taken and kept as received; a key the
/// type has, with a value that does not fit, is still refused.
#[test]
fn settings_keys_hns_does_not_know_are_ignored() {
    let dir = TempDir::new("ignored-keys");
    let client = client(&dir);
    let network = client.open_network(bridge(&client)).unwrap();
    let mut settings = endpoint_settings("a", "10.244.1.5");
    settings.policies = [
        r#"{"Type":"OutBoundNAT","Settings":{"exceptionList":["172.30.0.0/16"],"destinationPrefix":"","needEncap":false}}"#,
        r#"{"Type":"SDNROUTE","Settings":{"ExceptionList":[],"DestinationPrefix":"10.96.0.0/12","NeedEncap":true}}"#,
        r#"{"Type":"ProviderAddress","Settings":{"providerAddress":"10.127.130.38","PA":"10.127.130.38"}}"#,
    ]
    .iter()
    .map(|json| serde_json::from_str(json).unwrap())
    .collect();
    let endpoint = network.create_endpoint(Guid::ZERO, &settings).unwrap();
    assert_eq!(endpoint.properties().policies, settings.policies);
    assert!(
        endpoint
            .properties()
            .policies
            .iter()
            .all(|policy| !policy.ignored_keys().is_empty()),
        "{:?}",
        endpoint.properties().policies
    );
    drop(endpoint);
    let mut refused = endpoint_settings("b", "10.244.1.6");
    refused.policies = vec![
        serde_json::from_str(
            r#"{"Type":"SDNRoute","Settings":{"exceptionList":[],"destinationPrefix":"10.96.0.0"}}"#,
        )
        .unwrap(),
    ];
    let error = network.create_endpoint(Guid::ZERO, &refused).unwrap_err();
    assert_eq!(
        code(error.error()),
        HResult::HCN_E_INVALID_POLICY,
        "{error}"
    );
}

/// A crash between writing index entries and the object leaves stale entries;
/// they must not block the address or MAC.
#[test]
fn stale_index_entries_are_ignored() {
    let dir = TempDir::new("stale");
    let client = client(&dir);
    let network = bridge(&client);
    let key = network.to_upper_string();
    let ghost = "DEADBEEF-0000-0000-0000-000000000001";
    for (kind, entry) in [("ips", "10.244.1.5"), ("macs", "00-15-5D-00-00-00")] {
        let path = dir.0.join("index").join(kind).join(&key);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(path.join(entry), ghost).unwrap();
    }
    std::fs::create_dir_all(dir.0.join("index/network-endpoints").join(&key)).unwrap();
    std::fs::write(
        dir.0.join("index/network-endpoints").join(&key).join(ghost),
        "",
    )
    .unwrap();
    create(&client, network, "a", "10.244.1.5").unwrap();
    assert_eq!(client.list_endpoint_ids(Some(network)).unwrap().len(), 1);
}

/// What HNS takes is taken: a NAT exception for one host, a documented policy type this crate
/// does not model with keys of its own, the reference's `"VIP":""`. Only the modelled types'
/// settings are judged.
#[test]
fn documents_hns_takes_are_taken() {
    let dir = TempDir::new("taken");
    let emulator = Emulator::open(&dir.0).unwrap();
    let network = emulator
        .create_network(
            &Guid::ZERO,
            r#"{"Name":"n","Type":"L2Bridge","Ipams":[{"Subnets":[{"IpAddressPrefix":"10.0.0.0/24","Routes":[{"NextHop":"10.0.0.1","DestinationPrefix":"0.0.0.0/0"}]}]}]}"#,
        )
        .unwrap();
    let policies = [
        r#"{"Type":"OutBoundNAT","Settings":{"Exceptions":["10.96.0.10","10.244.0.0/16"]}}"#,
        r#"{"Type":"L4WFPPROXY","Settings":{"InboundProxyPort":"15001"},"Id":"x"}"#,
        r#"{"Type":"PortMapping","Settings":{"Protocol":6,"InternalPort":80,"ExternalPort":8080,"VIP":""}}"#,
        // The allow-all pair cni-win writes beside any ACL of its own (Windows Server 2025
        // turns an endpoint with ACLs default-deny), and a rule for one port.
        r#"{"Type":"ACL","Settings":{"Protocols":"256","Action":"Allow","Direction":"In","RuleType":"Switch","Priority":65500}}"#,
        r#"{"Type":"ACL","Settings":{"Protocols":"256","Action":"Allow","Direction":"Out","RuleType":"Switch","Priority":65500}}"#,
        r#"{"Type":"ACL","Settings":{"Protocols":"6","Action":"Allow","Direction":"In","LocalPorts":"80","RuleType":"Switch"}}"#,
    ];
    for (n, policy) in policies.iter().enumerate() {
        let settings = format!(
            r#"{{"Name":"e{n}","IpConfigurations":[{{"IpAddress":"10.0.0.{}"}}],"Policies":[{policy}]}}"#,
            n + 5
        );
        let endpoint = emulator
            .create_endpoint(&network, &Guid::ZERO, &settings)
            .unwrap_or_else(|e| panic!("{policy}: {}", e.record));
        emulator.close_endpoint(endpoint).unwrap();
    }
    emulator.close_network(network).unwrap();
}
