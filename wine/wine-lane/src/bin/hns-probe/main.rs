//! `hns-probe`: drives the typed `hns::Client` over the platform's default
//! backend and prints what it observed as one JSON document.
//!
//! Built for Windows it runs `hns::native::ComputeNetwork`, the code that talks
//! to the real HNS, here against the emulator's `computenetwork.dll` under
//! Wine; built for Linux it runs the in-process emulator. The Wine lane runs
//! both and judges the output (and cross-checks it with Linux `hnsctl`); the
//! probe itself judges nothing, so a bug in the backend shows up as a wrong
//! observation rather than being explained away here.
//!
//! Commands (fixed GUIDs, so both lanes see the same objects and records):
//!   attach    create a network, an endpoint and a namespace; attach the endpoint
//!   detach    detach it again and delete all three
//!   errors    provoke not-found, already-exists, invalid-JSON and already-attached failures
//!   v1        the V1 network listing (`HNSCall GET /networks/`) and the HNS version
//!   v1-endpoints   the V1 endpoint resource: create, duplicate name, list, V2 view, delete
//!   load-balancers   every load balancer's properties
//!   load-balancer-lifecycle   create a load balancer over an endpoint, modify it to two
//!             (as the host's HNS answers), delete it twice, remove the rest
//!   abi       (Windows only) computenetwork.dll called directly with edge arguments
//!
//! Test-only, never shipped.

#[cfg(windows)]
mod abi;

use std::net::IpAddr;
use std::process::ExitCode;

use hns::schema::policy::protocol;
use hns::schema::{
    HostComputeEndpoint, HostComputeLoadBalancer, HostComputeNamespace, HostComputeNetwork,
    IpConfig, IpPrefix, Ipam, LoadBalancerPortMapping, NetworkType, Subnet,
};
use hns::{Client, Guid, HnsError, RawError};
use serde_json::{Value, json};

const NETWORK: Guid = Guid::from_u128(0x5eed0001_0000_4000_8000_000000000001);
const ENDPOINT: Guid = Guid::from_u128(0x5eed0002_0000_4000_8000_000000000002);
const NAMESPACE: Guid = Guid::from_u128(0x5eed0003_0000_4000_8000_000000000003);
/// Never created: the not-found probes look for it.
const MISSING: Guid = Guid::from_u128(0x5eed0004_0000_4000_8000_000000000004);
const LOAD_BALANCER: Guid = Guid::from_u128(0x5eed0005_0000_4000_8000_000000000005);
const SECOND_ENDPOINT: Guid = Guid::from_u128(0x5eed0006_0000_4000_8000_000000000006);

fn main() -> ExitCode {
    let command = std::env::args().nth(1).unwrap_or_default();
    #[cfg(windows)]
    if command == "abi" {
        println!("{}", abi::probe());
        return ExitCode::SUCCESS;
    }
    #[cfg(windows)]
    let client = Ok::<_, hns::HnsError>(Client::native());
    #[cfg(not(windows))]
    let client = hns_emulator::Emulator::client_from_env();
    let outcome = client
        .map_err(|error| format!("no HCN backend: {error}"))
        .and_then(|client| match command.as_str() {
            "attach" => attach(&client),
            "detach" => detach(&client),
            "errors" => Ok(errors(&client)),
            "v1" => v1(&client),
            "v1-endpoints" => v1_endpoints(&client),
            "load-balancers" => client
                .list_load_balancers()
                .map_err(|error| error.to_string())
                .and_then(|balancers| to_json(&balancers)),
            "load-balancer-lifecycle" => load_balancer_lifecycle(&client),
            other => Err(format!(
                "unknown command {other:?}; expected attach, detach, errors, v1, v1-endpoints, load-balancers or load-balancer-lifecycle"
            )),
        });
    match outcome {
        Ok(observed) => {
            println!("{observed}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("hns-probe: {message}");
            ExitCode::FAILURE
        }
    }
}

fn network_settings(name: &str) -> HostComputeNetwork {
    HostComputeNetwork {
        name: name.to_owned(),
        network_type: NetworkType::L2Bridge,
        ipams: vec![Ipam {
            ipam_type: "Static".to_owned(),
            subnets: vec![Subnet::with_gateway(
                IpPrefix::new(IpAddr::from([10, 99, 0, 0]), 24).expect("24 bits fit IPv4"),
                IpAddr::from([10, 99, 0, 1]),
            )],
        }],
        ..HostComputeNetwork::default()
    }
}

fn endpoint_settings() -> HostComputeEndpoint {
    endpoint_at("probe-ep", [10, 99, 0, 5])
}

fn endpoint_at(name: &str, ip: [u8; 4]) -> HostComputeEndpoint {
    HostComputeEndpoint {
        name: name.to_owned(),
        ip_configurations: vec![IpConfig {
            ip_address: IpAddr::from(ip),
            prefix_length: None,
        }],
        ..HostComputeEndpoint::default()
    }
}

/// kube-proxy's load balancer for a ClusterIP Service over `backends`.
fn load_balancer_settings(backends: &[Guid]) -> HostComputeLoadBalancer {
    HostComputeLoadBalancer {
        host_compute_endpoints: backends.to_vec(),
        source_vip: Some(IpAddr::from([10, 99, 0, 2])),
        frontend_vips: vec![IpAddr::from([10, 96, 0, 10])],
        port_mappings: vec![LoadBalancerPortMapping {
            protocol: protocol::TCP,
            internal_port: 8080,
            external_port: 80,
            ..LoadBalancerPortMapping::default()
        }],
        ..HostComputeLoadBalancer::default()
    }
}

fn to_json(value: &impl serde::Serialize) -> Result<Value, String> {
    serde_json::to_value(value).map_err(|e| format!("cannot encode an observation: {e}"))
}

/// Creates network, endpoint and namespace and attaches the endpoint: 4 typed operations.
fn attach(client: &Client) -> Result<Value, String> {
    let fail = |error: HnsError| error.to_string();
    let network = client
        .create_network(NETWORK, &network_settings("probe-net"))
        .map_err(fail)?;
    let endpoint = network
        .create_endpoint(ENDPOINT, &endpoint_settings())
        .map_err(|error| fail(error.into()))?;
    client
        .create_namespace(NAMESPACE, &HostComputeNamespace::default())
        .map_err(fail)?;
    client.attach_endpoint(NAMESPACE, ENDPOINT).map_err(fail)?;
    let namespace = client.open_namespace(NAMESPACE).map_err(fail)?;
    Ok(json!({
        "network": to_json(network.properties())?,
        "endpoint": to_json(endpoint.properties())?,
        "namespace": to_json(namespace.properties())?,
    }))
}

/// Undoes [`attach`]; reports the namespace as it was after the detach.
fn detach(client: &Client) -> Result<Value, String> {
    let fail = |error: HnsError| error.to_string();
    client.detach_endpoint(NAMESPACE, ENDPOINT).map_err(fail)?;
    let namespace = client
        .open_namespace(NAMESPACE)
        .map_err(fail)?
        .into_properties();
    client.delete_endpoint(ENDPOINT).map_err(fail)?;
    client.delete_namespace(NAMESPACE).map_err(fail)?;
    client.delete_network(NETWORK).map_err(fail)?;
    Ok(json!({ "namespace": to_json(&namespace)? }))
}

/// A load balancer's life as kube-proxy drives it: created over one endpoint, modified to two
/// (HNS 15.4 and later; older ones refuse), listed, deleted, deleted again.
fn load_balancer_lifecycle(client: &Client) -> Result<Value, String> {
    let fail = |error: HnsError| error.to_string();
    let network = client
        .create_network(NETWORK, &network_settings("probe-lb"))
        .map_err(fail)?;
    for (id, name, ip) in [
        (ENDPOINT, "probe-ep", [10, 99, 0, 5]),
        (SECOND_ENDPOINT, "probe-ep-2", [10, 99, 0, 6]),
    ] {
        network
            .create_endpoint(id, &endpoint_at(name, ip))
            .map_err(|error| fail(error.into()))?;
    }
    drop(network);
    let created = client
        .create_load_balancer(LOAD_BALANCER, &load_balancer_settings(&[ENDPOINT]))
        .map_err(fail)?;
    let modified = match client.modify_load_balancer(
        LOAD_BALANCER,
        &load_balancer_settings(&[ENDPOINT, SECOND_ENDPOINT]),
    ) {
        Ok(modified) => to_json(&modified)?,
        Err(error) => failure(Err(error)),
    };
    let listed = client.list_load_balancers().map_err(fail)?;
    let deleted = failure(client.delete_load_balancer(LOAD_BALANCER));
    let deleted_again = failure(client.delete_load_balancer(LOAD_BALANCER));
    client.delete_network(NETWORK).map_err(fail)?;
    Ok(json!({
        "created": to_json(&created)?,
        "modified": modified,
        "listed": to_json(&listed)?,
        "deleted": deleted,
        "deleted-again": deleted_again,
    }))
}

/// One failure as the caller sees it: kind, HRESULT and error record.
fn failure(outcome: Result<(), HnsError>) -> Value {
    match outcome {
        Ok(()) => json!({ "kind": "succeeded" }),
        Err(error) => json!({
            "kind": format!("{:?}", error.kind()),
            "hresult": error.hresult().map(|code| code.0),
            "record": error.record(),
        }),
    }
}

/// Provokes one failure of each family; every object it makes is removed again.
fn errors(client: &Client) -> Value {
    let open_missing = failure(client.open_endpoint(MISSING).map(drop));
    let duplicate = failure(
        client
            .create_network(NETWORK, &network_settings("probe-dup"))
            .map(drop)
            .and_then(|()| {
                client
                    .create_network(NETWORK, &network_settings("probe-dup-2"))
                    .map(drop)
            }),
    );
    let invalid_json = failure(
        match client.raw().create_network(&Guid::ZERO, "{\"Name\": ") {
            Ok(handle) => client
                .raw()
                .close_network(handle)
                .map_err(|e| HnsError::from_raw(e, "close network")),
            Err(error) => Err(HnsError::from_raw(
                error,
                "create network from invalid JSON",
            )),
        },
    );
    let attach_twice = failure(
        client
            .open_network(NETWORK)
            .and_then(|network| {
                network
                    .create_endpoint(ENDPOINT, &endpoint_settings())
                    .map(drop)
                    .map_err(HnsError::from)
            })
            .and_then(|()| client.create_namespace(NAMESPACE, &HostComputeNamespace::default()))
            .and_then(|_| client.attach_endpoint(NAMESPACE, ENDPOINT))
            .and_then(|()| client.attach_endpoint(NAMESPACE, ENDPOINT)),
    );
    let cleanup = failure(
        client
            .delete_namespace(NAMESPACE)
            .and_then(|()| client.delete_network(NETWORK)),
    );
    json!({
        "open-missing-endpoint": open_missing,
        "create-network-twice": duplicate,
        "create-network-invalid-json": invalid_json,
        "attach-twice": attach_twice,
        "cleanup": cleanup,
    })
}

/// What V1 readers see: the raw `GET /networks/` envelope and the version.
fn v1(client: &Client) -> Result<Value, String> {
    let listing = client
        .raw()
        .hns_call("GET", "/networks/", "")
        .map_err(|error: RawError| error.to_string())?;
    let listing: Value = serde_json::from_str(&listing)
        .map_err(|e| format!("HNSCall GET /networks/ returned non-JSON {listing:?}: {e}"))?;
    let version = client.version().map_err(|error| error.to_string())?;
    Ok(json!({ "networks": listing, "version": to_json(&version)? }))
}

/// One `HNSCall`: the reply envelope, or the failed call's HRESULT and message.
fn hns_call(client: &Client, method: &str, path: &str, body: &Value) -> Result<Value, String> {
    let body = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    match client.raw().hns_call(method, path, &body) {
        Ok(reply) => serde_json::from_str(&reply)
            .map_err(|e| format!("HNSCall {method} {path} returned non-JSON {reply:?}: {e}")),
        Err(error) => Ok(json!({ "HResult": error.hresult.0, "Message": error.to_string() })),
    }
}

/// What the reference plugins' V1 path does with endpoints, on a V2-created network.
fn v1_endpoints(client: &Client) -> Result<Value, String> {
    client
        .create_network(NETWORK, &network_settings("probe-net"))
        .map_err(|error| error.to_string())?;
    let body = json!({
        "ID": ENDPOINT.to_string(),
        "Name": "probe_ep",
        "VirtualNetwork": NETWORK.to_string(),
        "IPAddress": "10.99.0.5",
        "GatewayAddress": "10.99.0.1",
        "Policies": [{"Type": "NAT", "Protocol": "TCP", "InternalPort": 80, "ExternalPort": 8080}]
    });
    let created = hns_call(client, "POST", "/endpoints/", &body)?;
    let mut again = body.clone();
    again["ID"] = json!(MISSING.to_string());
    let duplicate = hns_call(client, "POST", "/endpoints/", &again)?;
    let listed = hns_call(client, "GET", "/endpoints/", &Value::Null)?;
    let v2 = client
        .open_endpoint(ENDPOINT)
        .map_err(|error| error.to_string())
        .and_then(|endpoint| to_json(endpoint.properties()))?;
    let path = format!("/endpoints/{ENDPOINT}");
    let deleted = hns_call(client, "DELETE", &path, &Value::Null)?;
    let after = hns_call(client, "GET", &path, &Value::Null)?;
    client
        .delete_network(NETWORK)
        .map_err(|error| error.to_string())?;
    Ok(json!({
        "created": created, "duplicate": duplicate, "listed": listed, "v2": v2,
        "deleted": deleted, "after": after,
    }))
}
