//! The node daemon's metrics, scraped over HTTP from a running `cni-win daemon --every 1s
//! --metrics-address 127.0.0.1:0` on an emulated node while pods come and go, get killed and
//! HNS restarts under them.

use std::net::TcpStream;
use std::time::Duration;

use cni_win::doctor::{self, Severity};
use cni_win::paths::NodePaths;
use cni_win_core::snapshot::NodeSnapshot;
use hns::Guid;
use hns_emulator::Outage;
use ipam_host_local::HostLocal;

use crate::support::ScratchNode;
use crate::support::daemon::{Daemon, Scrape};

const POOL: &str = r#"{network="cbr0",subnets="10.244.1.0/24"}"#;

/// Holds the attachment's lock as ADD and DEL do, so the daemon never takes a pod half set
/// up or half torn down for a leftover.
fn command_in_flight(container_id: &str) -> cni_win_core::attachment_lock::Guard {
    cni_win_core::attachment_lock::try_lock("cbr0", container_id, "eth0")
        .unwrap()
        .expect("no other command for the attachment")
}

/// host-local over the pods' pool exactly as win-bridge's ADD allocates (its pod gateway
/// .2 kept out).
fn pod_pool(node: &ScratchNode) -> HostLocal {
    let snapshot = NodeSnapshot::read(&node.client).unwrap();
    let networks = node.networks();
    let view = snapshot.view(&networks[0].config).unwrap();
    view.pod_pool().unwrap()
}

/// What ADD's IPAM step leaves: a reservation.
fn reserve(node: &ScratchNode, container_id: &str) -> String {
    let allocation = pod_pool(node).allocate(container_id, "eth0").unwrap();
    allocation.result().ips[0].address.ip().to_string()
}

/// A running pod: a reservation and cni-win's endpoint attached to a live namespace.
fn start_pod(node: &ScratchNode, container_id: &str) -> Guid {
    let _add = command_in_flight(container_id);
    let ip = reserve(node, container_id);
    let endpoint = node.ours(container_id, &ip);
    let namespace = node.namespace();
    node.client.attach_endpoint(namespace, endpoint).unwrap();
    namespace
}

/// A pod's clean DEL: endpoint and reservation gone.
fn stop_pod(node: &ScratchNode, container_id: &str, namespace: Guid) {
    let _del = command_in_flight(container_id);
    let identity = cni_win_core::identity::Identity::of("cbr0", container_id, "eth0");
    node.client
        .detach_endpoint(namespace, identity.guid)
        .unwrap();
    node.client.delete_endpoint(identity.guid).unwrap();
    node.client.delete_namespace(namespace).unwrap();
    node.host_local.release(container_id, "eth0").unwrap();
}

#[test]
fn the_scrape_follows_the_pool_and_the_sweep_through_pod_churn() {
    let node = ScratchNode::new();
    let daemon = Daemon::start(&node, true);

    let empty = daemon.after_next_pass();
    let usable = empty.value(&format!("cniwin_ipam_addresses{POOL}"));
    // 10.244.1.0/24 less the gateway .1 and win-bridge's pod gateway .2, less .255.
    assert_eq!(usable, 252.0);
    assert_eq!(
        empty.value(&format!("cniwin_ipam_reserved_addresses{POOL}")),
        0.0
    );
    assert_eq!(
        empty.value(&format!("cniwin_ipam_free_addresses{POOL}")),
        usable
    );
    assert_eq!(empty.value("cniwin_hns_up"), 1.0);
    assert!(empty.value("cniwin_sweep_last_success_timestamp_seconds") > 1.7e9);
    assert_eq!(
        empty.sum("cniwin_sweep_passes_total", r#"result="failed""#),
        0.0
    );
    assert!(empty.value("cniwin_sweep_pass_duration_seconds_count") >= 2.0);

    // The pool fills.
    let mut pods: Vec<(String, Guid)> = (0..30)
        .map(|i| {
            let id = format!("pod-{i}");
            let namespace = start_pod(&node, &id);
            (id, namespace)
        })
        .collect();
    let full = daemon.after_next_pass();
    assert_eq!(
        full.value(&format!("cniwin_ipam_reserved_addresses{POOL}")),
        30.0
    );
    assert_eq!(
        full.value(&format!("cniwin_ipam_free_addresses{POOL}")),
        usable - 30.0
    );
    assert_eq!(full.sum("cniwin_stale_objects_removed_total", ""), 0.0);

    // Three pods are killed (their sandboxes' namespaces vanish without DEL) and an ADD dies
    // after reserving its address: the sweep removes what they left.
    for (_, namespace) in pods.drain(..3) {
        node.client.delete_namespace(namespace).unwrap();
    }
    reserve(&node, "crashed-add");
    let swept = daemon.after_next_pass();
    assert_eq!(
        swept.sum("cniwin_stale_objects_removed_total", r#"kind="endpoint""#),
        3.0
    );
    assert_eq!(
        swept.sum(
            "cniwin_stale_objects_removed_total",
            r#"network="cbr0",kind="reservation",reason="no-endpoint""#
        ),
        1.0
    );
    assert_eq!(
        swept.value(&format!("cniwin_ipam_reserved_addresses{POOL}")),
        27.0
    );
    assert_eq!(
        swept.sum("cniwin_stale_objects", ""),
        0.0,
        "nothing is left to find"
    );
    assert_eq!(node.endpoints().len(), 27);

    // HNS restarts losing every endpoint: the pods' namespaces stay, so no address is
    // released while its pod may still run.
    node.engine.suffer(Outage::RestartLosingEndpoints).unwrap();
    let restarted = daemon.after_next_pass();
    let no_endpoint = |scrape: &Scrape| {
        scrape.sum(
            "cniwin_stale_objects_removed_total",
            r#"reason="no-endpoint""#,
        )
    };
    assert_eq!(no_endpoint(&restarted), 1.0, "the crashed ADD's only");
    assert_eq!(
        restarted.value(&format!("cniwin_ipam_reserved_addresses{POOL}")),
        27.0
    );

    // The runtime removes the pods' sandboxes: every address comes back.
    for (_, namespace) in pods.drain(..) {
        node.client.delete_namespace(namespace).unwrap();
    }
    let gone = daemon.after_next_pass();
    assert_eq!(no_endpoint(&gone), 28.0);
    assert_eq!(
        gone.value(&format!("cniwin_ipam_reserved_addresses{POOL}")),
        0.0
    );

    // The pool fills and drains again through clean ADDs and DELs.
    let again: Vec<(String, Guid)> = (0..10)
        .map(|i| {
            let id = format!("again-{i}");
            let namespace = start_pod(&node, &id);
            (id, namespace)
        })
        .collect();
    assert_eq!(
        daemon
            .after_next_pass()
            .value(&format!("cniwin_ipam_reserved_addresses{POOL}")),
        10.0
    );
    for (id, namespace) in &again {
        stop_pod(&node, id, *namespace);
    }
    let drained = daemon.after_next_pass();
    assert_eq!(
        drained.value(&format!("cniwin_ipam_free_addresses{POOL}")),
        usable
    );
    assert_eq!(
        drained.sum("cniwin_sweep_passes_total", r#"result="failed""#),
        0.0
    );
    assert_eq!(
        drained.sum("cniwin_stale_objects_remove_failures_total", ""),
        0.0
    );
}

#[test]
fn a_dry_run_counts_what_it_finds_and_removes_nothing() {
    let node = ScratchNode::new();
    let daemon = Daemon::start(&node, false);
    let namespace = start_pod(&node, "killed");
    node.client.delete_namespace(namespace).unwrap();
    reserve(&node, "crashed-add");
    let scrape = daemon.after_next_pass();
    assert_eq!(
        scrape.sum("cniwin_stale_objects", r#"kind="endpoint""#),
        1.0
    );
    assert_eq!(
        scrape.sum(
            "cniwin_stale_objects",
            r#"network="cbr0",kind="reservation",reason="no-endpoint""#
        ),
        1.0
    );
    assert_eq!(scrape.sum("cniwin_stale_objects_removed_total", ""), 0.0);
    assert_eq!(
        scrape.value(&format!("cniwin_ipam_reserved_addresses{POOL}")),
        2.0
    );
}

#[test]
fn doctors_failing_checks_are_served_by_name() {
    let node = ScratchNode::new();
    let daemon = Daemon::start(&node, false);
    let scrape = daemon.after_next_pass();
    // What doctor says of the same node with the same settings, run here.
    let report = doctor::diagnose(
        Ok(&node.client),
        &NodePaths::with_bin_dir(node.conf_dir(), node.dir().join("bin")),
    );
    let failing: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Fail)
        .map(|f| f.check.as_str())
        .collect();
    assert!(
        !failing.is_empty(),
        "the bin dir is empty: the binaries check fails"
    );
    for finding in &report.findings {
        let series = format!(
            "cniwin_doctor_check_failing{{check=\"{}\"}}",
            finding.check.replace('"', "\\\"")
        );
        let expected = f64::from(u8::from(failing.contains(&finding.check.as_str())));
        assert_eq!(scrape.value(&series), expected, "{series}");
    }
    assert_eq!(
        scrape.sum("cniwin_doctor_check_failing", ""),
        failing.len() as f64
    );
}

/// Idle connections (a scanner, a slow or hostile client on the node's network) hold at most
/// the server's few threads, each until its timeout, and never starve the daemon.
#[test]
fn idle_connections_take_a_bounded_number_of_threads() {
    let node = ScratchNode::new();
    let daemon = Daemon::start(&node, false);
    daemon.after_next_pass();
    let threads = || -> usize {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", daemon.child.id())).unwrap();
        status
            .lines()
            .find_map(|line| line.strip_prefix("Threads:"))
            .unwrap()
            .trim()
            .parse::<usize>()
            .unwrap()
    };
    // A daemon round's HNS calls run on short-lived deadline threads; a connection's thread
    // lives as long as the connection: the fewest threads over a few samples counts only
    // what stays.
    let lasting = || -> usize {
        (0..5)
            .map(|_| {
                std::thread::sleep(Duration::from_millis(50));
                threads()
            })
            .min()
            .unwrap()
    };
    let before = lasting();
    let idle: Vec<TcpStream> = (0..64)
        .map(|_| TcpStream::connect(&daemon.address).unwrap())
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let during = lasting();
    assert!(
        during <= before + cni_win::metrics::http::MAX_CONNECTIONS,
        "{before} threads before 64 idle connections, {during} with them"
    );
    drop(idle);
    // Once they are gone, scrapes are answered again and passes went on meanwhile.
    assert!(daemon.after_next_pass().value("cniwin_hns_up") == 1.0);
}

#[test]
fn only_metrics_is_served() {
    let node = ScratchNode::new();
    let daemon = Daemon::start(&node, false);
    let (head, body) = daemon.get("/");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    assert!(body.contains("/metrics"), "{body}");
    let scrape = daemon.scrape();
    let build = scrape
        .0
        .keys()
        .find(|series| series.starts_with("cniwin_build_info{"))
        .expect("build info");
    assert!(
        build.contains(&format!("version=\"{}\"", env!("CARGO_PKG_VERSION"))),
        "{build}"
    );
}
