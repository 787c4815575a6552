//! `flannel-hns`: what flanneld (Windows) asks of HNS when it sets a node up, replayed from its
//! own documents, so the node lane's network is made exactly as Flannel makes it, through the
//! same backend a Windows binary has (`hns::native` under Wine, the emulator natively).
//!
//! ```text
//! flannel-hns vxlan NETWORK.json [MODIFY.json ...]
//!     HcnCreateNetwork with flanneld's vxlan document (the zero GUID: HNS chooses), then waits,
//!     as flanneld does, until HNS has added the network's ProviderAddress policy (its
//!     management IP), then sends each HcnModifyNetwork policy request (RemoteSubnetRoute,
//!     HostRoute) as an `Add`, as flanneld does when it sets a node up.
//! flannel-hns host-gw NETWORK.json ENDPOINT.json
//!     V1 `POST /networks/` with flanneld's host-gw document, waits until the V1 network reports
//!     its ManagementIP, then creates the bridge endpoint (`POST /endpoints/`) and attaches it
//!     to the host compartment (`POST /endpoints/<id>/attach`, hcsshim's `HostAttach(1)`).
//! ```
//!
//! Prints one JSON object: the network's ID and management IP (and the bridge endpoint's ID).
//! Exit status 1 with the reason on stderr when HNS refused a request or never reported the
//! management IP within the deadline flanneld's own wait has.
//!
//! Test-only, never shipped.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use hns::Guid;
use hns::raw::RawHcn;
use hns::schema::{HostComputeNetwork, NetworkPolicy};
use serde_json::{Value, json};

/// flanneld polls for the management IP for this long before it gives up.
const MANAGEMENT_IP_WAIT: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(200);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(output) => {
            println!("{output}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("flannel-hns: {error}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<Value, String> {
    let raw = backend()?;
    match args {
        [mode, network, modifications @ ..] if mode == "vxlan" => {
            vxlan(raw.as_ref(), &read(network)?, &read_all(modifications)?)
        }
        [mode, network, endpoint] if mode == "host-gw" => {
            host_gw(raw.as_ref(), &read(network)?, &read(endpoint)?)
        }
        _ => Err("usage: flannel-hns vxlan NETWORK.json [MODIFY.json ...] | flannel-hns host-gw NETWORK.json ENDPOINT.json".to_owned()),
    }
}

#[cfg(windows)]
fn backend() -> Result<Box<dyn RawHcn>, String> {
    Ok(Box::new(hns::native::ComputeNetwork))
}

#[cfg(not(windows))]
fn backend() -> Result<Box<dyn RawHcn>, String> {
    hns_emulator::Emulator::from_env()
        .map(|emulator| Box::new(emulator) as Box<dyn RawHcn>)
        .map_err(|error| error.to_string())
}

fn read(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|error| format!("cannot read {path}: {error}"))
}

fn read_all(paths: &[String]) -> Result<Vec<String>, String> {
    paths.iter().map(|path| read(path)).collect()
}

fn vxlan(raw: &dyn RawHcn, network: &str, modifications: &[String]) -> Result<Value, String> {
    let handle = raw
        .create_network(&Guid::ZERO, network)
        .map_err(|error| format!("HcnCreateNetwork: {error}"))?;
    let created = wait_for(|| {
        let properties = raw
            .query_network_properties(&handle, QUERY)
            .map_err(|error| format!("HcnQueryNetworkProperties: {error}"))?;
        let network: HostComputeNetwork = serde_json::from_str(&properties)
            .map_err(|error| format!("the network HNS returned does not decode: {error}"))?;
        let provider = network.policies.iter().find_map(|policy| match policy {
            NetworkPolicy::ProviderAddress(address) => Some(address.provider_address),
            _ => None,
        });
        Ok(provider.map(|provider| (network.id, provider)))
    });
    let result = created.and_then(|(id, provider)| {
        for modification in modifications {
            let mut request: Value = serde_json::from_str(modification)
                .map_err(|error| format!("a modify document is not JSON: {error}"))?;
            request["RequestType"] = json!("Add");
            raw.modify_network(&handle, &request.to_string())
                .map_err(|error| format!("HcnModifyNetwork: {error}"))?;
        }
        Ok(json!({ "network": id, "managementIp": provider }))
    });
    raw.close_network(handle)
        .map_err(|error| format!("HcnCloseNetwork: {error}"))?;
    result
}

fn host_gw(raw: &dyn RawHcn, network: &str, endpoint: &str) -> Result<Value, String> {
    let created = v1(raw, "POST", "/networks/", network)?;
    let id = string_field(&created, "ID")?;
    let management_ip = wait_for(|| {
        let network = v1(raw, "GET", &format!("/networks/{id}"), "")?;
        Ok(network
            .get("ManagementIP")
            .and_then(Value::as_str)
            .filter(|ip| !ip.is_empty())
            .map(str::to_owned))
    })?;
    let mut endpoint: Value = serde_json::from_str(endpoint)
        .map_err(|error| format!("the endpoint document is not JSON: {error}"))?;
    endpoint["VirtualNetwork"] = json!(id);
    let bridge = v1(raw, "POST", "/endpoints/", &endpoint.to_string())?;
    let bridge_id = string_field(&bridge, "ID")?;
    v1(
        raw,
        "POST",
        &format!("/endpoints/{bridge_id}/attach"),
        &json!({ "SystemType": "Host", "CompartmentId": 1 }).to_string(),
    )?;
    Ok(json!({ "network": id, "managementIp": management_ip, "bridgeEndpoint": bridge_id }))
}

/// One V1 request; the `Output` of a successful envelope, else the envelope's `Error`.
fn v1(raw: &dyn RawHcn, method: &str, path: &str, body: &str) -> Result<Value, String> {
    let reply = raw
        .hns_call(method, path, body)
        .map_err(|error| format!("HNSCall {method} {path}: {error}"))?;
    let envelope: Value = serde_json::from_str(&reply)
        .map_err(|error| format!("HNSCall {method} {path} answered no JSON: {error}"))?;
    if envelope.get("Success").and_then(Value::as_bool) == Some(true) {
        Ok(envelope.get("Output").cloned().unwrap_or(Value::Null))
    } else {
        Err(format!(
            "HNSCall {method} {path} failed: {}",
            envelope.get("Error").and_then(Value::as_str).unwrap_or("")
        ))
    }
}

fn string_field(value: &Value, key: &str) -> Result<String, String> {
    value
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("HNS answered without {key}: {value}"))
}

/// Polls `probe` until it yields a value, as flanneld waits for HNS to finish a network.
fn wait_for<T>(mut probe: impl FnMut() -> Result<Option<T>, String>) -> Result<T, String> {
    let deadline = Instant::now() + MANAGEMENT_IP_WAIT;
    loop {
        if let Some(value) = probe()? {
            return Ok(value);
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "HNS reported no management IP within {} s",
                MANAGEMENT_IP_WAIT.as_secs()
            ));
        }
        std::thread::sleep(POLL);
    }
}

const QUERY: &str = r#"{"SchemaVersion":{"Major":2,"Minor":0},"Flags":0}"#;
