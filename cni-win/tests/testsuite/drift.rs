//! HNS drifting from the node's records, each case as the field reports it and the HCN
//! emulator models it, through a round of the node daemon: what the round does, and the
//! `cniwin_hns_drift` series that says so.

use std::time::Duration;

use cni::GcAttachment;
use cni_win::daemon::{self, Daemon};
use cni_win::paths::NodePaths;
use cni_win::shutdown::Shutdown;
use cni_win::sweep::{Commands, Outcome};
use cni_win_core::snapshot::NodeSnapshot;
use hns::Guid;
use hns::schema::EndpointFlags;
use hns_emulator::{Engine, Outage};

use crate::support::ScratchNode;
use crate::support::daemon::Scrape;

/// A daemon over `node` that removes what is stale; its metrics read after each round.
struct Rounds {
    daemon: Daemon,
}

impl Rounds {
    fn on(node: &ScratchNode) -> Rounds {
        let settings = daemon::Settings {
            paths: NodePaths::with_bin_dir(node.conf_dir(), node.dir().join("bin")),
            apply: true,
            every: Duration::from_secs(60),
            metrics_address: None,
        };
        Rounds {
            daemon: Daemon::new(settings, Ok(node.new_client()), |_| {}).unwrap(),
        }
    }

    fn round(&mut self) -> Scrape {
        self.daemon.round(&Shutdown::new());
        Scrape::parse(&self.daemon.metrics().render())
    }
}

fn drift(scrape: &Scrape, reason: &str) -> f64 {
    scrape.sum("cniwin_hns_drift", &format!("reason=\"{reason}\""))
}

/// A running pod: a reservation and cni-win's endpoint attached to a live namespace.
fn start_pod(node: &ScratchNode, pod: &str) -> Guid {
    let namespace = node.namespace();
    let ip = node.reserve(pod);
    let endpoint = node.ours(pod, &ip);
    node.client.attach_endpoint(namespace, endpoint).unwrap();
    namespace
}

/// An ADD whose attach failed and whose rollback could not delete the endpoint leaves it
/// detached while the pod's namespace exists (containerd#8340, calico#12795). The rule
/// removes it once no command of its attachment is in flight; it is never attached again
/// (the runtime took the ADD as failed) and the namespace is not touched.
#[test]
fn an_endpoint_left_detached_is_removed_never_attached_again() {
    let node = ScratchNode::new();
    start_pod(&node, "live");
    let sandbox = node.namespace();
    let ip = node.reserve("failed-attach");
    node.ours("failed-attach", &ip);

    let scrape = Rounds::on(&node).round();
    assert_eq!(drift(&scrape, "endpoint-detached"), 1.0);
    assert_eq!(
        scrape.sum(
            "cniwin_stale_objects_removed_total",
            r#"kind="endpoint",reason="unattached""#
        ),
        1.0
    );
    assert_eq!(node.endpoints().len(), 1, "{:?}", node.endpoints());
    assert_eq!(node.reserved().len(), 1);
    node.client.open_namespace(sandbox).unwrap();
}

/// A stopped (or restarting) HNS answers every call with an error: a round reads nothing and
/// removes nothing (kubernetes#139519 is kube-proxy taking such failures for absent
/// objects). HNS then restarts and restores what it held (its rehydration): the next round
/// finds everything as before the stop, removes only the pod gone without DEL, and keeps the
/// live pod whole.
#[test]
fn an_unreadable_hns_is_never_taken_for_absent_objects() {
    let node = ScratchNode::new();
    start_pod(&node, "live");
    let killed = start_pod(&node, "killed");
    node.client.delete_namespace(killed).unwrap();
    let live = node.endpoints();
    let mut rounds = Rounds::on(&node);

    node.engine.suffer(Outage::Stop).unwrap();
    let stopped = rounds.round();
    assert_eq!(drift(&stopped, "hns-unreadable"), 1.0);
    assert_eq!(stopped.value("cniwin_hns_up"), 0.0);
    assert_eq!(
        stopped.sum("cniwin_sweep_passes_total", r#"result="failed""#),
        1.0
    );
    assert_eq!(stopped.sum("cniwin_stale_objects_removed_total", ""), 0.0);
    assert_eq!(node.reserved().len(), 2, "nothing released");

    node.engine.suffer(Outage::Restart).unwrap();
    let restarted = rounds.round();
    assert_eq!(drift(&restarted, "hns-unreadable"), 0.0);
    assert_eq!(
        restarted.sum("cniwin_stale_objects_removed_total", r#"kind="endpoint""#),
        1.0
    );
    assert_eq!(restarted.sum("cniwin_stale_objects_removed_total", ""), 1.0);
    assert_eq!(node.endpoints().len(), 1);
    assert!(live.is_superset(&node.endpoints()));
    assert_eq!(node.reserved().len(), 1, "the live pod's address stays");
}

/// Claims every attachment the sweep asks for, HNS suffering `outage` at each claim: between
/// the pass's read and its removals.
struct SufferingOnClaim(Engine, Outage);

impl Commands for SufferingOnClaim {
    type Claim = ();
    fn try_claim(&self, _: &str, _: &GcAttachment) -> Option<()> {
        self.0.suffer(self.1).unwrap();
        Some(())
    }
}

/// A sweep of `node` with `--apply`, HNS suffering `outage` as it claims.
fn sweep_suffering(node: &ScratchNode, outage: Outage) -> cni_win::sweep::Pass {
    let snapshot = NodeSnapshot::read(&node.client).unwrap();
    cni_win::sweep::sweep(
        &node.client,
        &snapshot,
        &node.networks(),
        &SufferingOnClaim(node.engine.clone(), outage),
        true,
        &Shutdown::new(),
    )
}

/// HNS restarts while a round removes what its read found, and loses every endpoint as older
/// builds do (calico#5164: the pods run on, their endpoints gone). The read the sweep makes
/// under its claims shows every pod's namespace without an endpoint; HNS does not say which
/// pod a namespace is, so no reservation without an endpoint can be proved a dead pod's:
/// none is released, in that round or the next, which reports each as `endpoint-lost`.
/// (Before, both rounds released every pod's address, the live ones' too.)
#[test]
fn an_hns_restart_mid_round_releases_no_live_pods_address() {
    let node = ScratchNode::new();
    start_pod(&node, "a");
    start_pod(&node, "b");
    let killed = start_pod(&node, "killed");
    node.client.delete_namespace(killed).unwrap();
    let pass = sweep_suffering(&node, Outage::RestartLosingEndpoints);
    assert_eq!(pass.count(&Outcome::Removed), 0, "{pass:?}");
    assert_eq!(node.reserved().len(), 3, "nothing released");
    assert!(node.endpoints().is_empty(), "HNS dropped them");

    let scrape = Rounds::on(&node).round();
    assert_eq!(drift(&scrape, "endpoint-lost"), 3.0);
    assert_eq!(drift(&scrape, "reservation-without-endpoint"), 0.0);
    assert_eq!(scrape.sum("cniwin_stale_objects_removed_total", ""), 0.0);
    assert_eq!(node.reserved().len(), 3, "still nothing released");
    assert_eq!(
        scrape
            .value(r#"cniwin_doctor_check_failing{check="network \"cbr0\": drift endpoint-lost"}"#),
        1.0
    );
}

/// HNS stops between the pass's first read and its removals (while the sweep takes its
/// claims): the read it makes under the claims fails, and nothing is removed.
#[test]
fn an_hns_that_stops_before_the_removals_gets_nothing_removed() {
    let node = ScratchNode::new();
    let killed = start_pod(&node, "killed");
    node.client.delete_namespace(killed).unwrap();
    node.reserve("lost");
    let pass = sweep_suffering(&node, Outage::Stop);
    assert_eq!(pass.stale.len(), 2, "{pass:?}");
    assert!(
        pass.stale
            .iter()
            .all(|stale| matches!(&stale.outcome, Some(Outcome::Failed(why)) if why.contains("read HNS again"))),
        "{pass:?}"
    );
    node.engine.suffer(Outage::Restart).unwrap();
    assert_eq!(node.reserved().len(), 2, "nothing released");
}

/// kube-proxy's remote endpoint made from a stale lease of another node holds the address a
/// local pod has (Windows-Containers#631, kubernetes#130963): reported, and left alone with
/// the address it holds, whatever the sweep may remove.
#[test]
fn a_remote_endpoint_on_a_pods_address_is_reported_never_removed() {
    let node = ScratchNode::new();
    let ip = node.reserve("pod");
    node.endpoint(
        Guid::from_u128(5),
        "stale-remote",
        &ip,
        EndpointFlags::REMOTE_ENDPOINT,
    );
    let scrape = Rounds::on(&node).round();
    assert_eq!(drift(&scrape, "remote-endpoint-in-pod-subnet"), 1.0);
    assert_eq!(
        scrape.value(
            r#"cniwin_doctor_check_failing{check="network \"cbr0\": drift remote-endpoint-in-pod-subnet"}"#
        ),
        1.0
    );
    assert!(node.endpoints().contains("stale-remote"));
    assert_eq!(node.reserved().len(), 1);
}

/// A reboot drops the networks flanneld makes non-persistent, with every endpoint and
/// namespace (ACN#283, flannel's `EnableNonPersistent`): the pods' reservations are released
/// by the rule, kube-proxy's source VIP is kept.
#[test]
fn after_a_reboot_the_pods_reservations_go_and_the_source_vip_stays() {
    let node = ScratchNode::non_persistent();
    for pod in ["a", "b", "c"] {
        start_pod(&node, pod);
    }
    let vip = node.reserve_as("kube-proxy", "source-vip");
    let dropped = node.engine.suffer(Outage::Reboot).unwrap();
    assert_eq!((dropped.networks, dropped.endpoints), (1, 3));

    let scrape = Rounds::on(&node).round();
    assert_eq!(drift(&scrape, "network-gone"), 3.0);
    assert_eq!(
        scrape.sum(
            "cniwin_stale_objects_removed_total",
            r#"kind="reservation",reason="no-endpoint""#
        ),
        3.0
    );
    assert_eq!(node.reserved(), [vip].into_iter().collect());
}

/// A reboot drops every endpoint and namespace and flanneld's network; flanneld then makes
/// `cbr0` again under a new ID and the runtime starts the pods again in new sandboxes. The
/// first round after that releases every address the old pods held, keeps kube-proxy's
/// source VIP, and takes nothing of the new pods.
#[test]
fn a_reboot_converges_in_one_round_once_flanneld_made_its_network_again() {
    let node = ScratchNode::non_persistent();
    for pod in ["a", "b", "c"] {
        start_pod(&node, pod);
    }
    let vip = node.reserve_as("kube-proxy", "source-vip");
    let before = node.network_id();
    node.engine.suffer(Outage::Reboot).unwrap();
    assert_ne!(node.flanneld_recreates_cbr0(), before);
    start_pod(&node, "a2");
    start_pod(&node, "b2");
    let new_pods = node.endpoints();
    let kept: std::collections::BTreeSet<String> = node
        .reserved()
        .into_iter()
        .filter(|ip| node.endpoints_holding().contains(ip) || *ip == vip)
        .collect();
    assert_eq!(kept.len(), 3);

    let scrape = Rounds::on(&node).round();
    assert_eq!(
        scrape.sum(
            "cniwin_stale_objects_removed_total",
            r#"kind="reservation",reason="no-endpoint""#
        ),
        3.0
    );
    assert_eq!(scrape.sum("cniwin_stale_objects_removed_total", ""), 3.0);
    assert_eq!(node.reserved(), kept);
    assert_eq!(node.endpoints(), new_pods);
    assert_eq!(drift(&scrape, "endpoint-lost"), 0.0);
}

/// A running pod, its endpoint and its address.
fn pod(node: &ScratchNode, pod: &str) -> (Guid, String) {
    let ip = node.reserve(pod);
    let endpoint = node.ours(pod, &ip);
    node.client
        .attach_endpoint(node.namespace(), endpoint)
        .unwrap();
    (endpoint, ip)
}

/// A daemon round without `--apply`: it reports, and changes nothing.
fn report_only(node: &ScratchNode) -> Scrape {
    let settings = daemon::Settings {
        paths: NodePaths::with_bin_dir(node.conf_dir(), node.dir().join("bin")),
        apply: false,
        every: Duration::from_secs(60),
        metrics_address: None,
    };
    let mut daemon = Daemon::new(settings, Ok(node.new_client()), |_| {}).unwrap();
    daemon.round(&Shutdown::new());
    Scrape::parse(&daemon.metrics().render())
}

/// kube-proxy's remote endpoint from a stale lease holds the address a live pod of ours has,
/// in this node's own pod subnet (Windows-Containers#631, kubernetes#137381): reported without
/// `--apply`; with it, the remote endpoint is removed (no other node can own the address),
/// the pod's endpoint and reservation are untouched, and the next round finds nothing.
#[test]
fn a_remote_endpoint_on_a_live_pods_address_is_removed_with_apply() {
    let node = ScratchNode::new();
    let (endpoint, ip) = pod(&node, "live");
    let remote = node.inject_endpoint(Guid::ZERO, "stale-remote", &ip, true);

    let reported = report_only(&node);
    assert_eq!(drift(&reported, "duplicate-address-remote"), 1.0);
    assert!(
        node.endpoints().contains("stale-remote"),
        "no --apply, nothing removed"
    );

    let mut rounds = Rounds::on(&node);
    let repaired = rounds.round();
    assert_eq!(drift(&repaired, "duplicate-address-remote"), 1.0);
    assert_eq!(
        repaired.value(
            r#"cniwin_hns_drift_repairs_total{reason="duplicate-address-remote",result="removed"}"#
        ),
        1.0
    );
    assert!(node.client.open_endpoint(remote).is_err(), "removed");
    assert!(
        node.client.open_endpoint(endpoint).is_ok(),
        "the pod's kept"
    );
    assert_eq!(node.reserved(), [ip].into_iter().collect());
    let after = rounds.round();
    assert_eq!(drift(&after, "duplicate-address-remote"), 0.0);
    assert!(
        after.get(r#"cniwin_hns_drift_last_seen_timestamp_seconds{reason="duplicate-address-remote",network="cbr0"}"#)
            .is_some_and(|seen| seen > 0.0)
    );
}

/// Two endpoints of cni-win's on one address, and a local endpoint of another component on a
/// pod's address (Azure/AKS#5653): reported, classified, never removed, even with `--apply`;
/// doctor fails naming whose each is and what to do.
#[test]
fn duplicates_with_our_own_or_a_foreign_endpoint_are_reported_never_removed() {
    let node = ScratchNode::new();
    let (_, a) = pod(&node, "a");
    let identity = cni_win_core::identity::Identity::of("cbr0", "b", "eth0");
    let b = node.inject_endpoint(identity.guid, &identity.name, &a, false);
    node.client.attach_endpoint(node.namespace(), b).unwrap();
    let (_, c) = pod(&node, "c");
    node.inject_endpoint(Guid::ZERO, "other-plugin", &c, false);
    let before = node.endpoints();

    let scrape = Rounds::on(&node).round();
    assert_eq!(drift(&scrape, "duplicate-address-ours"), 1.0);
    assert_eq!(drift(&scrape, "duplicate-address-foreign"), 1.0);
    assert_eq!(drift(&scrape, "duplicate-address-remote"), 0.0);
    assert_eq!(
        scrape.sum("cniwin_hns_drift_repairs_total", ""),
        0.0,
        "nothing is provably wrong"
    );
    assert_eq!(node.endpoints(), before);
    for reason in ["duplicate-address-ours", "duplicate-address-foreign"] {
        let check =
            format!(r#"cniwin_doctor_check_failing{{check="network \"cbr0\": drift {reason}"}}"#);
        assert_eq!(scrape.value(&check), 1.0, "{check}");
    }
}

/// A remote endpoint in this node's pod subnet no pod of ours holds is reported (a stale
/// remote endpoint of kube-proxy's); kube-proxy's source VIP, whose endpoint may be remote, is
/// not drift.
#[test]
fn a_remote_endpoint_in_the_pod_subnet_is_reported_but_not_the_source_vip() {
    let node = ScratchNode::new();
    pod(&node, "live");
    let vip = node.reserve_as("kube-proxy", "source-vip");
    node.inject_endpoint(Guid::ZERO, "source-vip", &vip, true);
    node.inject_endpoint(Guid::ZERO, "stale", "10.244.1.200", true);
    node.inject_endpoint(Guid::ZERO, "other-node", "10.244.2.7", true);
    let scrape = Rounds::on(&node).round();
    assert_eq!(drift(&scrape, "remote-endpoint-in-pod-subnet"), 1.0);
    assert_eq!(node.endpoints().len(), 4, "{:?}", node.endpoints());
}

/// kube-proxy's load balancers on host-gw's L2Bridge (doctor used to judge them on overlay
/// only): half-created (no port mapping, kubernetes#141488) and sending to an endpoint that
/// is gone; reported with the network of their backends, never touched.
#[test]
fn half_created_and_backend_gone_load_balancers_are_reported_never_removed() {
    let node = ScratchNode::new();
    let (a, _) = pod(&node, "a");
    let (b, _) = pod(&node, "b");
    node.engine
        .inject(&hns_emulator::Injection::HalfCreatedLoadBalancer {
            frontend: "10.96.0.10".parse().unwrap(),
            backends: vec![a],
        })
        .unwrap();
    let document = serde_json::json!({
        "HostComputeEndpoints": [a.to_string(), b.to_string()],
        "FrontendVIPs": ["10.96.0.20"],
        "PortMappings": [{"Protocol": 6, "InternalPort": 80, "ExternalPort": 80}],
        "SchemaVersion": {"Major": 2, "Minor": 0}
    });
    node.client
        .create_load_balancer(Guid::ZERO, &serde_json::from_value(document).unwrap())
        .unwrap();
    node.client.delete_endpoint(b).unwrap();

    let scrape = Rounds::on(&node).round();
    let on_cbr0 = |reason: &str| {
        scrape.value(&format!(
            r#"cniwin_hns_drift{{reason="{reason}",network="cbr0"}}"#
        ))
    };
    assert_eq!(on_cbr0("load-balancer-half-created"), 1.0);
    assert_eq!(on_cbr0("load-balancer-backend-gone"), 1.0);
    assert_eq!(node.client.list_load_balancers().unwrap().len(), 2);
}

/// The repair reads both endpoints again under the pod's claim; a read that fails repairs
/// nothing ("cannot read" is never "absent").
#[test]
fn a_failed_read_before_the_repair_removes_nothing() {
    let node = ScratchNode::new();
    let (_, ip) = pod(&node, "live");
    let remote = node.inject_endpoint(Guid::ZERO, "stale-remote", &ip, true);
    let read = cni_win::node::Node::read(
        Ok(&node.client),
        &NodePaths::with_bin_dir(node.conf_dir(), node.dir().join("bin")),
        None,
    );
    let found = cni_win::drift::find(&read);
    node.engine
        .inject_fault(hns::Function::OpenEndpoint, 1, hns::HResult::E_FAIL)
        .unwrap();
    let repaired = cni_win::drift::repair::apply(
        &node.client,
        &found,
        &cni_win::sweep::AttachmentLocks,
        &Shutdown::new(),
    );
    assert!(
        matches!(repaired.as_slice(), [(_, Outcome::Failed(why))] if why.contains("read HNS again")),
        "{repaired:?}"
    );
    assert!(node.client.open_endpoint(remote).is_ok(), "kept");
}

/// A Flannel-native network: subnet.env's lease against the HNS network flanneld made. A new
/// lease the network does not hold (flanneld's lease changed) is `flannel-network-stale`; no
/// network at all is `flannel-network-missing`; both reported, nothing of flanneld's removed.
/// A subnet.env that cannot be read is no drift: it says nothing of what HNS should hold.
#[test]
fn a_network_flanneld_s_lease_does_not_match_is_reported() {
    let node = ScratchNode::new();
    let subnet_env = node.dir().join("subnet.env");
    let lease = |subnet: &str| {
        std::fs::write(
            &subnet_env,
            format!(
                "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET={subnet}\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n"
            ),
        )
        .unwrap();
    };
    let config = serde_json::json!({
        "cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
        "subnetFile": subnet_env, "dataDir": node.dir().join("flannel"),
        "ipam": {"dataDir": node.dir().join("ipam")},
    });
    std::fs::write(
        node.conf_dir().join("10-cbr0.conf"),
        serde_json::to_vec(&config).unwrap(),
    )
    .unwrap();
    let flannel = |scrape: &Scrape| {
        (
            drift(scrape, "flannel-network-stale"),
            drift(scrape, "flannel-network-missing"),
        )
    };
    let mut rounds = Rounds::on(&node);
    assert_eq!(flannel(&rounds.round()), (0.0, 0.0), "no subnet.env yet");
    lease("10.244.1.1/24");
    assert_eq!(flannel(&rounds.round()), (0.0, 0.0));
    lease("10.244.3.1/24");
    assert_eq!(flannel(&rounds.round()), (1.0, 0.0));
    assert_eq!(node.client.list_networks().unwrap().len(), 1, "kept");
    node.client.delete_network(node.network_id()).unwrap();
    assert_eq!(flannel(&rounds.round()), (0.0, 1.0));
}

/// Finding drift costs no HCN call beyond the round's read: on a node whose drift is all
/// reported (a foreign duplicate, a half-created load balancer, a stale remote endpoint in the
/// subnet), a round costs exactly what reading the node once costs.
#[test]
fn finding_drift_costs_no_hcn_call_beyond_the_rounds_read() {
    let node = ScratchNode::new();
    let (a, ip) = pod(&node, "a");
    pod(&node, "b");
    node.inject_endpoint(Guid::ZERO, "other-plugin", &ip, false);
    node.inject_endpoint(Guid::ZERO, "stale", "10.244.1.200", true);
    node.engine
        .inject(&hns_emulator::Injection::HalfCreatedLoadBalancer {
            frontend: "10.96.0.10".parse().unwrap(),
            backends: vec![a],
        })
        .unwrap();
    let mut rounds = Rounds::on(&node);
    rounds.round();
    node.calls();
    let scrape = rounds.round();
    let (round, _) = node.calls();
    let features = node.client.supported_features().unwrap();
    node.calls();
    NodeSnapshot::read_knowing(&node.client, features).unwrap();
    let (read, _) = node.calls();
    println!("a round with 3 kinds of drift reported: {round} raw HCN calls; one read: {read}");
    assert_eq!(drift(&scrape, "duplicate-address-foreign"), 1.0);
    assert_eq!(drift(&scrape, "load-balancer-half-created"), 1.0);
    assert_eq!(drift(&scrape, "remote-endpoint-in-pod-subnet"), 1.0);
    assert_eq!(round, read);
}
