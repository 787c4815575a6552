//! Many processes against one emulator state: concurrency, a crash right after
//! a call, processes killed at arbitrary points, and the unset-state error.
//!
//! Child processes are this test binary re-run with `--ignored --exact worker`
//! and the role in environment variables.

mod common;

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{TempDir, bridge, client, endpoint_settings};
use hns::emulator::Emulator;
use hns::schema::HostComputeNamespace;
use hns::{Client, Function, Guid};

const ROLE: &str = "HNS_TEST_ROLE";
const INDEX: &str = "HNS_TEST_INDEX";

fn spawn_worker(state: &Path, role: &str, index: usize) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "worker",
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
            &common::network_settings(
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
        assert!(ips.insert(ip.clone()), "duplicate IP {ip}");
        let entry = state
            .join("index/ips")
            .join(network.to_upper_string())
            .join(ip);
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
        .filter(|e| e.ip_configurations[0].ip_address == "10.244.1.250")
        .count();
    assert_eq!(shared, 1, "exactly one process may win the shared IP");
    assert_eq!(endpoints.len(), 32 * 5 + 1);
    let stats = client.raw().engine().stats().unwrap();
    assert_eq!(stats["HcnCreateEndpoint"], 32 * 11);
    assert_eq!(stats["HcnDeleteEndpoint"], 32 * 5);
    let macs: HashSet<_> = endpoints.iter().map(|e| e.mac_address.clone()).collect();
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
        endpoint.properties().ip_configurations[0].ip_address,
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
        .map(|e| e.ip_configurations[0].ip_address.clone())
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

#[test]
fn hnsctl_drives_the_emulator_and_reports_errors_on_one_line() {
    let dir = TempDir::new("hnsctl");
    let hnsctl = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_hnsctl"))
            .args(args)
            .env("HCN_EMULATOR_STATE", &dir.0)
            .output()
            .unwrap()
    };
    let created = hnsctl(&[
        "network",
        "create",
        "--name",
        "flannel.4096",
        "--type",
        "Overlay",
        "--subnet",
        "10.244.1.0/24",
        "--gateway",
        "10.244.1.1",
        "--vni",
        "4096",
        "--vxlan-port",
        "4789",
        "--provider-address",
        "192.168.1.10",
        "--dr-mac",
        "0E-2A-C0-A8-01-0A",
    ]);
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let shown = hnsctl(&["--json", "network", "show", "flannel.4096"]);
    let network: hns::schema::HostComputeNetwork = serde_json::from_slice(&shown.stdout).unwrap();
    let json = serde_json::to_string(&network).unwrap();
    for needle in [
        r#""ProviderAddress":"192.168.1.10""#,
        r#""Address":"0E-2A-C0-A8-01-0A""#,
        r#""IsolationId":4096"#,
        r#""Port":4789"#,
    ] {
        assert!(json.contains(needle), "{needle} missing in {json}");
    }
    let namespace = hnsctl(&["namespace", "create"]);
    let text = String::from_utf8(namespace.stdout).unwrap();
    assert!(
        text.trim().parse::<Guid>().is_ok() && text.lines().count() == 1,
        "{text:?}"
    );
    let stats = hnsctl(&["--json", "stats"]);
    let counters: std::collections::BTreeMap<String, u64> =
        serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(counters["HcnCreateNetwork"], 1);
    assert_eq!(counters["HcnCreateNamespace"], 1);

    let failed = hnsctl(&["endpoint", "delete", "deadbeef-0000-0000-0000-000000000001"]);
    assert!(!failed.status.success());
    let stderr = String::from_utf8(failed.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("0x803B0002"), "{stderr}");

    let unset = Command::new(env!("CARGO_BIN_EXE_hnsctl"))
        .args(["network", "list"])
        .env_remove("HCN_EMULATOR_STATE")
        .output()
        .unwrap();
    assert!(!unset.status.success());
    assert!(String::from_utf8_lossy(&unset.stderr).contains("HCN_EMULATOR_STATE is not set"));
}

#[test]
fn hnsctl_refuses_an_empty_state_directory() {
    let cwd = TempDir::new("hnsctl-empty-state");
    let output = Command::new(env!("CARGO_BIN_EXE_hnsctl"))
        .args(["--state", "", "network", "list"])
        .current_dir(&cwd.0)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--state"), "{stderr}");
    let written: Vec<_> = std::fs::read_dir(&cwd.0).unwrap().collect();
    assert!(
        written.is_empty(),
        "state written into the working directory: {written:?}"
    );
}
