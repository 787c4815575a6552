//! An HNS service that is stopped (or restarting and not back yet): every call fails, with the
//! error a stopped service gives, and nothing is lost until it starts again.
#![cfg(not(windows))]

use crate::common::{TempDir, bridge, client, endpoint_settings};
use hns::{ErrorKind, Guid, HResult};
use hns_emulator::Outage;

#[test]
fn a_stopped_hns_fails_every_call_and_loses_nothing_until_it_restarts() {
    let dir = TempDir::new("stopped");
    let client = client(&dir);
    let network = bridge(&client);
    let endpoint = client
        .open_network(network)
        .unwrap()
        .create_endpoint(Guid::ZERO, &endpoint_settings("pod_cbr0", "10.244.1.5"))
        .unwrap()
        .id();
    let engine = client.raw().engine();

    let dropped = engine.suffer(Outage::Stop).unwrap();
    assert_eq!(
        (dropped.endpoints, dropped.networks, dropped.namespaces),
        (0, 0, 0)
    );
    for error in [
        client.list_networks().unwrap_err(),
        client.list_endpoint_ids(None).unwrap_err(),
        client.open_endpoint(endpoint).unwrap_err(),
        client.delete_endpoint(endpoint).unwrap_err(),
    ] {
        // Never "not found": a caller must not take a stopped HNS for an empty one.
        assert_eq!(error.kind(), ErrorKind::Other, "{error}");
        assert_eq!(
            error.hresult(),
            Some(HResult::ERROR_SERVICE_NOT_ACTIVE),
            "{error}"
        );
    }

    // The service starts again and restores what it held, under the same IDs
    // (kubernetes#139519's "rehydration").
    let dropped = engine.suffer(Outage::Restart).unwrap();
    assert_eq!(
        (dropped.endpoints, dropped.networks, dropped.namespaces),
        (0, 0, 0)
    );
    assert_eq!(client.list_networks().unwrap().len(), 1);
    assert_eq!(client.open_endpoint(endpoint).unwrap().id(), endpoint);

    // An older build's restart: the endpoints it held are gone, the networks stay.
    engine.suffer(Outage::Stop).unwrap();
    let dropped = engine.suffer(Outage::RestartLosingEndpoints).unwrap();
    assert_eq!(dropped.endpoints, 1);
    assert_eq!(client.list_networks().unwrap().len(), 1);
    assert!(client.open_endpoint(endpoint).unwrap_err().is_not_found());
}
