//! The deadline layer over the emulator: HNS that does not answer (the
//! emulator's latency control) fails a call in time, and what the abandoned
//! call still uses stays valid until it returns.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{TempDir, endpoint_settings};
use hns::schema::{HostComputeEndpoint, HostComputeNamespace, HostComputeQuery};
use hns::{Client, Deadlined, Guid, HResult, RawHcn};
use hns_emulator::Emulator;

const QUERY: &str = "{}";

/// The emulator (for its controls and handle count) and the deadline layer over it.
fn layered(dir: &TempDir, deadline: Duration) -> (Arc<Emulator>, Deadlined) {
    let emulator = Arc::new(Emulator::open(&dir.0).unwrap());
    let backend: Arc<dyn RawHcn> = emulator.clone();
    (emulator, Deadlined::new(backend, deadline))
}

fn namespace(emulator: &Arc<Emulator>) -> Guid {
    let client = Client::from_box(Box::new(Emulator::open(emulator.engine().root()).unwrap()));
    client
        .create_namespace(Guid::ZERO, &HostComputeNamespace::default())
        .unwrap()
        .id
}

fn calls(emulator: &Emulator, function: &str) -> u64 {
    let stats = emulator.engine().stats().unwrap();
    stats.get(function).copied().unwrap_or(0)
}

/// Polls `done` every 20 ms for up to 10 s (the abandoned calls here return within 1 s).
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < until, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// cbr0 and a pod's endpoint on it, made through `client`: the endpoint as HNS reports it.
fn pod_on_cbr0(client: &Client<Deadlined>) -> HostComputeEndpoint {
    let network = client
        .create_network(
            Guid::ZERO,
            &crate::common::network_settings(
                "cbr0",
                hns::schema::NetworkType::L2Bridge,
                "10.244.1.0/24",
                "10.244.1.1",
            ),
        )
        .unwrap();
    network
        .create_endpoint(Guid::ZERO, &endpoint_settings("pod_cbr0", "10.244.1.5"))
        .unwrap()
        .into_properties()
}

#[test]
fn calls_that_answer_in_time_pass_through_unchanged() {
    let dir = TempDir::new("deadline-pass");
    let (emulator, layer) = layered(&dir, Duration::from_secs(30));
    let client = Client::new(layer);
    let endpoint = pod_on_cbr0(&client);
    assert!(endpoint.mac_address.is_some());
    assert_eq!(client.list_networks().unwrap().len(), 1);
    assert_eq!(emulator.open_handles(), 0);
    assert_eq!(client.raw().abandoned_calls(), 0);
}

/// kube-proxy's calls through the layer: each load balancer call reaches HNS once, as the
/// function it is, and every handle is closed.
#[test]
fn load_balancer_calls_pass_through_unchanged() {
    let dir = TempDir::new("deadline-lb");
    let (emulator, layer) = layered(&dir, Duration::from_secs(30));
    emulator
        .engine()
        .set_version(hns::HnsVersion::new(15, 4))
        .unwrap();
    let client = Client::new(layer);
    let backend = pod_on_cbr0(&client).id;
    let settings: hns::schema::HostComputeLoadBalancer = serde_json::from_str(
        &crate::common::document("kube-proxy-1.20-cluster-ip.json")
            .replace("BACKENDS", &format!("[\"{backend}\"]")),
    )
    .unwrap();
    let created = client.create_load_balancer(Guid::ZERO, &settings).unwrap();
    let modified = client.modify_load_balancer(created.id, &created).unwrap();
    assert_eq!(modified, created);
    client.delete_load_balancer(created.id).unwrap();
    assert!(client.list_load_balancers().unwrap().is_empty());
    for function in [
        "HcnCreateLoadBalancer",
        "HcnModifyLoadBalancer",
        "HcnDeleteLoadBalancer",
    ] {
        assert_eq!(calls(&emulator, function), 1, "{function}");
    }
    assert_eq!(emulator.open_handles(), 0);
    assert_eq!(client.raw().abandoned_calls(), 0);
}

#[test]
fn hns_that_does_not_answer_fails_the_call_at_the_deadline() {
    let dir = TempDir::new("deadline-hang");
    let (emulator, layer) = layered(&dir, Duration::from_millis(200));
    emulator.engine().set_latency(3_000_000).unwrap();
    let client = Client::new(layer);

    let started = Instant::now();
    let error = client.list_networks().unwrap_err();
    let waited = started.elapsed();

    assert!(waited < Duration::from_secs(2), "waited {waited:?} for HNS");
    let raw = error.raw().expect("a raw call failed");
    assert_eq!(raw.function, hns::Function::EnumerateNetworks);
    assert_eq!(raw.hresult, HResult::ERROR_TIMEOUT);
    let text = error.to_string();
    assert!(text.contains("HNS did not answer in "), "{text}");
    assert!(text.contains("(deadline 200ms)"), "{text}");
    assert_eq!(client.raw().abandoned_calls(), 1);
    eventually("the abandoned call returns", || {
        client.raw().abandoned_calls() == 0
    });
}

#[test]
fn a_handle_with_an_abandoned_call_refuses_new_calls_and_closes_once_after_it() {
    let dir = TempDir::new("deadline-handle");
    let (emulator, layer) = layered(&dir, Duration::from_millis(100));
    let id = namespace(&emulator);
    let handle = layer.open_namespace(&id).unwrap();
    emulator.engine().reset_stats().unwrap();
    emulator.engine().set_latency(800_000).unwrap();

    let error = layer
        .query_namespace_properties(&handle, QUERY)
        .unwrap_err();
    assert_eq!(error.hresult, HResult::ERROR_TIMEOUT);

    let refused = layer.modify_namespace(&handle, "{}").unwrap_err();
    assert_eq!(refused.function, hns::Function::ModifyNamespace);
    assert_eq!(refused.hresult, HResult::ERROR_TIMEOUT);
    assert!(refused.record.starts_with("not sent"), "{refused}");

    layer.close_namespace(handle).unwrap();
    assert_eq!(emulator.open_handles(), 1, "closed under a running call");

    eventually("the deferred close", || emulator.open_handles() == 0);
    assert_eq!(calls(&emulator, "HcnQueryNamespaceProperties"), 1);
    assert_eq!(
        calls(&emulator, "HcnModifyNamespace"),
        0,
        "refused call was sent"
    );
    assert_eq!(calls(&emulator, "HcnCloseNamespace"), 1);
}

#[test]
fn a_handle_a_late_open_returns_is_closed_not_leaked() {
    let dir = TempDir::new("deadline-late-open");
    let (emulator, layer) = layered(&dir, Duration::from_millis(50));
    let id = namespace(&emulator);
    emulator.engine().reset_stats().unwrap();
    emulator.engine().set_latency(500_000).unwrap();

    let error = layer.open_namespace(&id).unwrap_err();
    assert_eq!(error.function, hns::Function::OpenNamespace);

    eventually("the late handle is closed", || {
        calls(&emulator, "HcnCloseNamespace") == 1
    });
    assert_eq!(calls(&emulator, "HcnOpenNamespace"), 1);
    assert_eq!(emulator.open_handles(), 0);
}

#[test]
fn while_a_call_is_abandoned_others_get_a_quarter_of_the_deadline() {
    let dir = TempDir::new("deadline-hung");
    let (emulator, layer) = layered(&dir, Duration::from_millis(400));
    emulator.engine().set_latency(1_000_000).unwrap();

    let first = layer.enumerate_namespaces(QUERY).unwrap_err();
    assert!(first.record.contains("(deadline 400ms)"), "{first}");
    let second = layer.enumerate_networks(QUERY).unwrap_err();
    assert!(second.record.contains("(deadline 100ms)"), "{second}");

    emulator.engine().set_latency(0).unwrap();
    eventually("the abandoned calls return", || {
        layer.abandoned_calls() == 0
    });
    let query = HostComputeQuery::all().to_json();
    assert_eq!(layer.enumerate_networks(&query).unwrap(), "[]");
}
