//! The typed client's raw-call budgets, measured with the emulator's counters,
//! and RAII handle hygiene.

use std::collections::BTreeMap;

use crate::common::{TempDir, bridge, client, endpoint_settings};
use hns::schema::HostComputeNamespace;
use hns::{Function, Guid, HResult, HnsVersion};

fn calls(counters: &BTreeMap<String, u64>) -> (u64, u64) {
    counters
        .iter()
        .fold((0, 0), |(work, closes), (name, count)| {
            let is_close = Function::from_name(name).is_some_and(Function::is_close);
            if is_close {
                (work, closes + count)
            } else {
                (work + count, closes)
            }
        })
}

/// `cbr0` with one endpoint: their IDs.
fn bridge_with_endpoint(client: &hns::Client<hns_emulator::Emulator>) -> (Guid, Guid) {
    let network = bridge(client);
    let endpoint = client
        .open_network(network)
        .unwrap()
        .create_endpoint(Guid::ZERO, &endpoint_settings("e", "10.244.1.5"))
        .unwrap()
        .id();
    (network, endpoint)
}

/// The raw calls `operation` makes: (without, with) closes.
fn measure(client: &hns::Client<hns_emulator::Emulator>, operation: &dyn Fn()) -> (u64, u64) {
    let engine = client.raw().engine();
    engine.reset_stats().unwrap();
    operation();
    calls(&engine.stats().unwrap())
}

/// A pod ADD: find network by name, create endpoint with our GUID, learn its
/// MAC, attach to the pod namespace. Budget: 7 calls + 3 closes, no endpoint
/// enumeration.
#[test]
fn pod_add_fits_the_budget() {
    let dir = TempDir::new("add");
    let client = client(&dir);
    bridge(&client);
    let namespace = client
        .create_namespace(Guid::ZERO, &HostComputeNamespace::default())
        .unwrap()
        .id;
    let engine = client.raw().engine();
    engine.reset_stats().unwrap();

    let endpoint_id: Guid = "11111111-2222-3333-4444-555555555555".parse().unwrap();
    {
        let network = client.find_network_by_name("cbr0").unwrap();
        let endpoint = network
            .create_endpoint(endpoint_id, &endpoint_settings("pod_cbr0", "10.244.1.5"))
            .unwrap();
        assert!(endpoint.properties().mac_address.is_some());
        client.attach_endpoint(namespace, endpoint.id()).unwrap();
    }

    let counters = engine.stats().unwrap();
    assert_eq!(calls(&counters), (7, 3), "{counters:?}");
    for (function, expected) in [
        ("HcnEnumerateNetworks", 1),
        ("HcnOpenNetwork", 1),
        ("HcnQueryNetworkProperties", 1),
        ("HcnCreateEndpoint", 1),
        ("HcnQueryEndpointProperties", 1),
        ("HcnOpenNamespace", 1),
        ("HcnModifyNamespace", 1),
    ] {
        assert_eq!(
            counters.get(function).copied(),
            Some(expected),
            "{function}: {counters:?}"
        );
    }
    assert!(!counters.contains_key("HcnEnumerateEndpoints"));
    assert_eq!(client.raw().open_handles(), 0);
}

/// A pod DEL: detach from the namespace, delete the endpoint. Budget: 4 calls + 2 closes.
#[test]
fn pod_del_fits_the_budget() {
    let dir = TempDir::new("del");
    let client = client(&dir);
    let network = bridge(&client);
    let namespace = client
        .create_namespace(Guid::ZERO, &HostComputeNamespace::default())
        .unwrap()
        .id;
    let endpoint = client
        .open_network(network)
        .unwrap()
        .create_endpoint(Guid::ZERO, &endpoint_settings("p", "10.244.1.5"))
        .unwrap()
        .id();
    client.attach_endpoint(namespace, endpoint).unwrap();
    let engine = client.raw().engine();
    engine.reset_stats().unwrap();

    client.detach_endpoint(namespace, endpoint).unwrap();
    client.delete_endpoint(endpoint).unwrap();

    let counters = engine.stats().unwrap();
    assert_eq!(calls(&counters), (3, 1), "{counters:?}");
    assert_eq!(counters.get("HcnDeleteEndpoint").copied(), Some(1));
    assert!(!counters.contains_key("HcnEnumerateEndpoints"));
}

#[test]
fn documented_counts_of_single_operations() {
    let dir = TempDir::new("counts");
    let client = client(&dir);
    let (network, endpoint) = bridge_with_endpoint(&client);
    let measure = |operation: &dyn Fn()| measure(&client, operation);
    assert_eq!(
        measure(&|| drop(client.open_endpoint(endpoint).unwrap())),
        (2, 1)
    );
    assert_eq!(
        measure(&|| drop(client.open_network(network).unwrap())),
        (2, 1)
    );
    assert_eq!(
        measure(&|| drop(client.find_endpoint_by_name("e").unwrap())),
        (3, 1)
    );
    assert_eq!(
        measure(&|| assert!(client.find_endpoint_by_name("zzz").unwrap().is_none())),
        (1, 0)
    );
    assert_eq!(
        measure(&|| assert_eq!(client.list_endpoint_ids(Some(network)).unwrap(), [endpoint])),
        (1, 0)
    );
    assert_eq!(
        measure(&|| assert_eq!(client.list_endpoints(None).unwrap().len(), 1)),
        (3, 1)
    );
    assert_eq!(
        measure(&|| drop(
            client
                .create_namespace(Guid::ZERO, &HostComputeNamespace::default())
                .unwrap()
        )),
        (2, 1)
    );
    assert_eq!(
        measure(&|| assert_eq!(client.version().unwrap(), HnsVersion::default_emulated())),
        (1, 0)
    );
}

#[test]
fn handles_close_on_failure_paths() {
    let dir = TempDir::new("raii");
    let client = client(&dir);
    let network = bridge(&client);
    let engine = client.raw().engine();
    engine
        .inject_fault(Function::QueryEndpointProperties, 1, HResult::E_FAIL)
        .unwrap();
    let error = client
        .open_network(network)
        .unwrap()
        .create_endpoint(Guid::ZERO, &endpoint_settings("e", "10.244.1.5"))
        .unwrap_err();
    assert_eq!(error.error().hresult(), Some(HResult::E_FAIL));
    engine
        .inject_fault(Function::ModifyNamespace, 1, HResult::E_FAIL)
        .unwrap();
    let namespace = client
        .create_namespace(Guid::ZERO, &HostComputeNamespace::default())
        .unwrap()
        .id;
    let endpoint = client.list_endpoint_ids(None).unwrap()[0];
    assert!(client.attach_endpoint(namespace, endpoint).is_err());
    assert_eq!(client.raw().open_handles(), 0);
    let counters = engine.stats().unwrap();
    assert_eq!(
        counters["HcnOpenNamespace"],
        counters["HcnCloseNamespace"] - 1,
        "{counters:?}"
    ); // create_namespace closes too
}

#[test]
fn a_failed_create_says_whether_the_endpoint_exists() {
    let dir = TempDir::new("created");
    let client = client(&dir);
    let network = client.open_network(bridge(&client)).unwrap();
    let engine = client.raw().engine();
    engine
        .inject_fault(Function::CreateEndpoint, 1, HResult::E_FAIL)
        .unwrap();
    let refused = network
        .create_endpoint(Guid::ZERO, &endpoint_settings("refused", "10.244.1.5"))
        .unwrap_err();
    assert!(!refused.created(), "{refused}");
    assert!(client.find_endpoint_by_name("refused").unwrap().is_none());
    engine
        .inject_fault(Function::QueryEndpointProperties, 1, HResult::E_FAIL)
        .unwrap();
    let unread = network
        .create_endpoint(Guid::ZERO, &endpoint_settings("unread", "10.244.1.6"))
        .unwrap_err();
    assert!(unread.created(), "{unread}");
    assert_eq!(
        unread.error().raw().map(|raw| raw.function),
        Some(Function::QueryEndpointProperties)
    );
    assert!(client.find_endpoint_by_name("unread").unwrap().is_some());
    assert_eq!(
        client.raw().open_handles(),
        1,
        "only the network stays open"
    );
}

/// A policy agent's writes: an endpoint's ACLs and a network's IP sets changed without
/// reading the object first, 2 raw calls and a close each; a missing object is "not found"
/// and leaves no handle open.
#[test]
fn policy_writes_open_and_modify_without_a_query() {
    use hns::schema::policy::{AclAction, AclDirection, AclPolicy};
    use hns::schema::{EndpointPolicy, ModifyRequest, NetworkPolicy, RawPolicy, RequestType};

    let dir = TempDir::new("policy-writes");
    let client = client(&dir);
    let (network, endpoint) = bridge_with_endpoint(&client);
    let engine = client.raw().engine();
    let block = EndpointPolicy::Acl(AclPolicy {
        id: Some("agent-block".to_owned()),
        ..AclPolicy::all_traffic(AclAction::Block, AclDirection::In, 65000)
    });
    let set = NetworkPolicy::Other(
        RawPolicy::from_json(
            r#"{"Type":"SetPolicy","Settings":{"Id":"agent-set","Name":"x","PolicyType":"IPSET","Values":"10.244.1.7"}}"#,
        )
        .unwrap(),
    );
    let measure = |operation: &dyn Fn()| measure(&client, operation);
    let acls = |request_type| ModifyRequest::policies(request_type, vec![block.clone()]);
    let sets = |request_type| ModifyRequest::policies(request_type, vec![set.clone()]);

    assert_eq!(
        measure(&|| client
            .modify_endpoint_policies(endpoint, &acls(RequestType::Add))
            .unwrap()),
        (2, 1)
    );
    let held = client.open_endpoint(endpoint).unwrap().into_properties();
    assert_eq!(held.policies, std::slice::from_ref(&block));
    assert_eq!(
        measure(&|| client
            .modify_network_policies(network, &sets(RequestType::Add))
            .unwrap()),
        (2, 1)
    );
    let writes = engine.policy_writes().unwrap();
    assert_eq!(
        (
            writes.endpoint_requests,
            writes.network_requests,
            writes.sets_written
        ),
        (1, 1, 1)
    );
    client
        .modify_endpoint_policies(endpoint, &acls(RequestType::Remove))
        .unwrap();
    client
        .modify_network_policies(network, &sets(RequestType::Remove))
        .unwrap();
    assert!(
        client
            .open_endpoint(endpoint)
            .unwrap()
            .properties()
            .policies
            .is_empty()
    );

    let gone = Guid::from_u128(0xdead);
    let error = client
        .modify_endpoint_policies(gone, &acls(RequestType::Add))
        .unwrap_err();
    assert!(error.is_not_found(), "{error}");
    assert!(error.to_string().contains("endpoint"), "{error}");
    let error = client
        .modify_network_policies(gone, &sets(RequestType::Add))
        .unwrap_err();
    assert!(error.is_not_found(), "{error}");
    engine
        .inject_fault(Function::ModifyEndpoint, 1, HResult::E_FAIL)
        .unwrap();
    assert!(
        client
            .modify_endpoint_policies(endpoint, &acls(RequestType::Add))
            .is_err()
    );
    assert_eq!(client.raw().open_handles(), 0);
}
