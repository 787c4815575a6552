//! Many processes against one emulator state: concurrency, a crash right after
//! a call, processes killed at arbitrary points, and the unset-state error.
//!
//! Child processes are this test binary re-run with `--ignored --exact processes::worker`
//! and the role in environment variables.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{TempDir, bridge, client, endpoint_settings};
use hns::schema::HostComputeNamespace;
use hns::{Client, Function, Guid};
use hns_emulator::Emulator;

const ROLE: &str = "HNS_TEST_ROLE";
const INDEX: &str = "HNS_TEST_INDEX";

fn spawn_worker(state: &Path, role: &str, index: usize) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "processes::worker",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("HCN_EMULATOR_STATE", state)
        .env(ROLE, role)
        .env(INDEX, index.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The child side. Roles:
/// - `churn`: create 10 endpoints with unique IPs, delete the odd ones, and try
///   once to take the shared IP 10.244.1.250;
/// - `create-one`: create one endpoint (used with a crash point);
/// - `loop`: create and delete endpoints until killed.
#[test]
#[ignore = "run as a child process by the other tests"]
fn worker() {
    let role = std::env::var(ROLE).expect("worker needs HNS_TEST_ROLE");
    let index: usize = std::env::var(INDEX).unwrap().parse().unwrap();
    let client = Client::new(Emulator::from_env().unwrap());
    let network = client.find_network_by_name("cbr0").unwrap();
    let ip = |n: usize| format!("10.244.{}.{}", 2 + n / 200, 1 + n % 200);
    match role.as_str() {
        "churn" => {
            for step in 0..10 {
                let id = network
                    .create_endpoint(
                        Guid::ZERO,
                        &endpoint_settings(&format!("w{index}-{step}"), &ip(index * 10 + step)),
                    )
                    .unwrap()
                    .id();
                if step % 2 == 1 {
                    client.delete_endpoint(id).unwrap();
                }
            }
            let _ = network.create_endpoint(
                Guid::ZERO,
                &endpoint_settings(&format!("shared-{index}"), "10.244.1.250"),
            );
        }
        "create-one" => {
            network
                .create_endpoint(Guid::ZERO, &endpoint_settings("crash", "10.244.1.9"))
                .unwrap();
        }
        "loop" => {
            for step in 0.. {
                let settings = endpoint_settings(&format!("loop-{step}"), &ip(step % 50));
                if let Ok(endpoint) = network.create_endpoint(Guid::ZERO, &settings) {
                    let id = endpoint.id();
                    drop(endpoint);
                    if step % 3 != 0 {
                        let _ = client.delete_endpoint(id);
                    }
                }
            }
        }
        other => panic!("unknown role {other}"),
    }
}

/// Network 10.244.0.0/16 so workers have room.
fn wide_bridge(client: &Client<Emulator>) -> Guid {
    client
        .create_network(
            Guid::ZERO,
            &crate::common::network_settings(
                "cbr0",
                hns::schema::NetworkType::L2Bridge,
                "10.244.0.0/16",
                "10.244.0.1",
            ),
        )
        .unwrap()
        .id()
}

/// Every listed endpoint opens, IPs are unique, and each IP's index entry names its holder.
fn assert_consistent(
    state: &Path,
    client: &Client<Emulator>,
    network: Guid,
) -> Vec<hns::schema::HostComputeEndpoint> {
    let endpoints = client.list_endpoints(Some(network)).unwrap();
    let mut ips = HashSet::new();
    for endpoint in &endpoints {
        let ip = &endpoint.ip_configurations[0].ip_address;
        assert!(ips.insert(*ip), "duplicate IP {ip}");
        let entry = state
            .join("index/ips")
            .join(network.to_upper_string())
            .join(ip.to_string());
        assert_eq!(
            std::fs::read_to_string(entry).unwrap(),
            endpoint.id.to_upper_string()
        );
    }
    assert_eq!(
        client.list_endpoint_ids(None).unwrap().len(),
        endpoints.len()
    );
    endpoints
}

#[test]
fn thirty_two_processes_leave_a_consistent_state() {
    let dir = TempDir::new("procs");
    let client = client(&dir);
    let network = wide_bridge(&client);
    client.raw().engine().reset_stats().unwrap();
    let children: Vec<_> = (0..32)
        .map(|index| spawn_worker(&dir.0, "churn", index))
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let endpoints = assert_consistent(&dir.0, &client, network);
    let shared = endpoints
        .iter()
        .filter(|e| e.ip_configurations[0].ip_address.to_string() == "10.244.1.250")
        .count();
    assert_eq!(shared, 1, "exactly one process may win the shared IP");
    assert_eq!(endpoints.len(), 32 * 5 + 1);
    let stats = client.raw().engine().stats().unwrap();
    assert_eq!(stats["HcnCreateEndpoint"], 32 * 11);
    assert_eq!(stats["HcnDeleteEndpoint"], 32 * 5);
    let macs: HashSet<_> = endpoints.iter().map(|e| e.mac_address).collect();
    assert_eq!(macs.len(), endpoints.len(), "MACs must be unique");
}

#[test]
fn crash_right_after_a_call_leaves_the_completed_call() {
    let dir = TempDir::new("crash");
    let client = client(&dir);
    bridge(&client);
    client
        .raw()
        .engine()
        .crash_after(Function::CreateEndpoint, 1)
        .unwrap();
    let status = spawn_worker(&dir.0, "create-one", 0).wait().unwrap();
    assert!(!status.success(), "the worker should have aborted");
    let endpoint = client
        .find_endpoint_by_name("crash")
        .unwrap()
        .expect("the completed create survives the crash");
    assert_eq!(
        endpoint.properties().ip_configurations[0]
            .ip_address
            .to_string(),
        "10.244.1.9"
    );
    // The crash point was one-shot: the host works normally afterwards.
    let namespace = client
        .create_namespace(Guid::ZERO, &HostComputeNamespace::default())
        .unwrap()
        .id;
    client.attach_endpoint(namespace, endpoint.id()).unwrap();
}

#[test]
fn processes_killed_mid_call_leave_a_loadable_state() {
    let dir = TempDir::new("kill");
    let client = client(&dir);
    let network = wide_bridge(&client);
    for round in 0..5u64 {
        let mut child = spawn_worker(&dir.0, "loop", round as usize);
        std::thread::sleep(Duration::from_millis(150 + 37 * round));
        child.kill().unwrap();
        child.wait().unwrap();
        assert_consistent(&dir.0, &client, network);
    }
    // Every address not held by a live endpoint can be taken again.
    let held: HashSet<String> = client
        .list_endpoints(Some(network))
        .unwrap()
        .into_iter()
        .map(|e| e.ip_configurations[0].ip_address.to_string())
        .collect();
    let open = client.open_network(network).unwrap();
    for n in 0..50 {
        let ip = format!("10.244.2.{}", 1 + n);
        if !held.contains(&ip) {
            open.create_endpoint(Guid::ZERO, &endpoint_settings(&format!("after-{n}"), &ip))
                .unwrap();
        }
    }
    assert_consistent(&dir.0, &client, network);
}
