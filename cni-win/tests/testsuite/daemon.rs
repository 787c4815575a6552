//! The node daemon: what one round costs on a node with three pods (HCN calls, config
//! decodes, plugin processes), and how it stops (SIGTERM between rounds, and in the middle of
//! a round's removals).

use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use cni_win::daemon::{self, Daemon};
use cni_win::paths::NodePaths;
use cni_win::shutdown::Shutdown;
use cni_win_core::decodes::Decodes;

use crate::support::ScratchNode;
use crate::support::daemon::Daemon as DaemonProcess;

/// A win-bridge binary that answers `--version` as cni-win's does and counts its runs in
/// `runs` beside it.
fn counting_plugin(bin: &Path, commit: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = bin.join("win-bridge");
    let script = format!(
        "#!/bin/sh\necho run >> '{}'\necho 'CNI win-bridge plugin 0.1.0 (commit {commit})'\n",
        bin.join("runs").display()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn runs(bin: &Path) -> usize {
    std::fs::read_to_string(bin.join("runs"))
        .map(|runs| runs.lines().count())
        .unwrap_or(0)
}

/// Pods with a reservation and cni-win's endpoint attached to a live namespace.
fn start_pods(node: &ScratchNode, pods: &[&str]) {
    for pod in pods {
        let namespace = node.namespace();
        let ip = node.reserve(pod);
        let endpoint = node.ours(pod, &ip);
        node.client.attach_endpoint(namespace, endpoint).unwrap();
    }
}

/// One round reads HNS once and decodes each network's config once: 12 raw HCN calls on this
/// node, 13 in the first round, which asks HNS's version too; a plugin is asked its version
/// again only when its file changes. A sweep pass and then a doctor run, each reading the
/// config directory, connecting and reading HNS, and running every plugin binary with
/// `--version`, would cost 26 raw HCN calls (34 with closes) and 3 decodes of the config and 5
/// of its `ipam` per network.
#[test]
fn a_round_on_a_three_pod_node_reads_hns_once_and_decodes_each_config_once() {
    let node = ScratchNode::new();
    start_pods(&node, &["a", "b", "c"]);
    let bin = tempfile::tempdir().unwrap();
    counting_plugin(bin.path(), "aaaaaaaaaaaa");
    let settings = daemon::Settings {
        paths: NodePaths::with_bin_dir(node.conf_dir(), bin.path().to_owned()),
        apply: true,
        every: Duration::from_secs(60),
        metrics_address: None,
    };
    let mut daemon = Daemon::new(settings, Ok(node.new_client()), |_| {}).unwrap();
    let stop = Shutdown::new();

    node.calls();
    daemon.round(&stop);
    let (first, first_with_closes) = node.calls();
    let before = Decodes::on_this_thread();
    daemon.round(&stop);
    let (calls, with_closes) = node.calls();
    let decodes = Decodes::on_this_thread() - before;
    println!(
        "a daemon round on a three-pod node: {calls} raw HCN calls ({with_closes} with closes); \
         the first round {first} ({first_with_closes}); per network {} config decode(s), {} ipam \
         decode(s)",
        decodes.config, decodes.ipam
    );
    assert!(calls <= 12, "{calls} raw HCN calls");
    assert_eq!((first, first_with_closes), (13, 17));
    assert_eq!((calls, with_closes), (12, 16));
    assert_eq!(decodes, Decodes { config: 1, ipam: 1 });
    let text = daemon.metrics().render();
    assert!(
        text.contains(r#"cniwin_sweep_passes_total{result="ok"} 2"#),
        "{text}"
    );
    assert!(text.contains("cniwin_hns_up 1\n"), "{text}");
    assert!(text.contains("cniwin_doctor_check_failing{"), "{text}");

    daemon.round(&stop);
    assert_eq!(
        runs(bin.path()),
        1,
        "asked once while the binary is the same"
    );
    // An upgrade replaces the binary: the next round asks the new one.
    counting_plugin(bin.path(), "bbbbbbbbbbbbbbbbbbbbbbbb");
    daemon.round(&stop);
    assert_eq!(runs(bin.path()), 2);
}

/// SIGTERM while the daemon waits for its next round: it stops at once, its metrics port
/// released.
#[test]
fn sigterm_between_rounds_stops_the_daemon_within_a_second() {
    let node = ScratchNode::new();
    start_pods(&node, &["a"]);
    let mut daemon = DaemonProcess::start_on(&node, true, "127.0.0.1:0", "1h");
    daemon.line_starting("cni-win sweep: 0 stale", Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(300));
    let (took, status) = daemon.terminate();
    println!("stopped {took:?} after SIGTERM between rounds");
    assert!(status.success(), "{status}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    daemon.line_starting("cni-win daemon: stopped", Duration::from_secs(5));
    assert!(
        TcpStream::connect(&daemon.address).is_err(),
        "the metrics endpoint stopped with the daemon"
    );
}

/// SIGTERM while a round removes what killed pods left: the removal in hand finishes, the
/// rest is left for later, and every attachment is either wholly removed (endpoint and
/// address) or wholly as it was; the next pass removes the rest.
#[test]
fn sigterm_mid_round_finishes_or_abandons_each_removal_whole() {
    let node = ScratchNode::new();
    let pods = ["k1", "k2", "k3", "k4", "k5", "k6"];
    start_pods(&node, &pods);
    for namespace in node.client.list_namespace_ids().unwrap() {
        node.client.delete_namespace(namespace).unwrap();
    }
    // Slow HNS, so the signal comes while the round is removing.
    node.engine.set_latency(30_000).unwrap();
    node.engine.reset_stats().unwrap();
    let mut daemon = DaemonProcess::start_on(&node, true, "127.0.0.1:0", "1h");
    let deleting = std::time::Instant::now();
    while node
        .engine
        .stats()
        .unwrap()
        .get("HcnDeleteEndpoint")
        .copied()
        < Some(1)
    {
        assert!(deleting.elapsed() < Duration::from_secs(60), "no removal");
        std::thread::sleep(Duration::from_millis(10));
    }
    let (took, status) = daemon.terminate();
    println!("stopped {took:?} after SIGTERM during removals");
    assert!(status.success(), "{status}");
    node.engine.set_latency(0).unwrap();

    let endpoints = node.endpoints();
    let reserved = node.reserved().len();
    let left: Vec<&&str> = pods
        .iter()
        .filter(|pod| endpoints.contains(&format!("{pod}_cbr0")))
        .collect();
    assert_eq!(
        reserved,
        left.len(),
        "an attachment is removed whole or left whole: endpoints {endpoints:?}"
    );
    assert!(left.len() < pods.len(), "the removal in hand finished");
    assert!(!left.is_empty(), "the rest was left for later");

    let pass = node.sweep(&cni_win::sweep::AttachmentLocks, true);
    assert!(!pass.failed(), "{pass:?}");
    assert!(node.endpoints().is_empty() && node.reserved().is_empty());
}
