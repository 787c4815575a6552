//! Each situation `cni-win sweep` must judge, built on an emulated node: what goes and what
//! stays.

use std::cell::RefCell;
use std::collections::BTreeSet;

use cni::GcAttachment;
use cni_win::sweep::{AttachmentLocks, Commands, Outcome, Pass};
use hns::Guid;
use hns::schema::EndpointFlags;

use crate::support::ScratchNode;

/// A command is in flight for the attachments of these containers.
struct Busy(&'static [&'static str], RefCell<usize>);

impl Commands for Busy {
    type Claim = ();
    fn try_claim(&self, _: &str, attachment: &GcAttachment) -> Option<()> {
        *self.1.borrow_mut() += 1;
        (!self.0.contains(&attachment.container_id.as_str())).then_some(())
    }
}

fn objects(pass: &Pass) -> BTreeSet<(String, String)> {
    pass.stale
        .iter()
        .map(|f| {
            (
                f.container_id.clone(),
                f.object.split(' ').next().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    items
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

/// kube-proxy's source VIP, reserved by running host-local directly under the owners the
/// field uses, and any address an endpoint on the network holds are not a dead pod's:
/// never stale, whatever their owner says.
#[test]
fn never_releases_a_reservation_that_is_not_a_pods() {
    let node = ScratchNode::new();
    node.reserve_as("dummy", "dummy");
    node.reserve_as("kube-proxy", "source-vip");
    // kube-proxy's own endpoint (local, nameless) on a VIP a script reserved under an
    // owner of its own, and a remote endpoint on an address nobody live holds.
    let vip = node.reserve_as("my-script", "vip");
    node.endpoint(Guid::from_u128(7), "", &vip, EndpointFlags::NONE);
    let remote = node.reserve("moved-away");
    node.endpoint(
        Guid::from_u128(8),
        "",
        &remote,
        EndpointFlags::REMOTE_ENDPOINT,
    );
    let lost = node.reserve("lost");
    let before = node.reserved();

    let dry = node.sweep(&AttachmentLocks, false);
    assert!(dry.errors.is_empty(), "{:?}", dry.errors);
    assert_eq!(objects(&dry), pairs(&[("lost", "reservation")]));
    let applied = node.sweep(&AttachmentLocks, true);
    assert!(!applied.failed(), "{applied:?}");
    let mut expected = before;
    expected.remove(&lost);
    assert_eq!(node.reserved(), expected);
}

/// libcni's `disableGC` on a conflist: its owner wants nothing of it collected.
#[test]
fn a_network_whose_conflist_disables_gc_is_left_alone() {
    let node = ScratchNode::new();
    node.reserve("lost");
    let conf = node.conf_dir().join("10-cbr0.conf");
    let mut config: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&conf).unwrap()).unwrap();
    config["type"] = "win-bridge".into();
    let list = serde_json::json!({
        "cniVersion": "1.1.0", "name": "cbr0", "disableGC": true, "plugins": [config]
    });
    std::fs::remove_file(&conf).unwrap();
    std::fs::write(
        node.conf_dir().join("10-cbr0.conflist"),
        serde_json::to_vec(&list).unwrap(),
    )
    .unwrap();
    let before = node.reserved();
    let pass = node.sweep(&AttachmentLocks, true);
    assert_eq!(pass.left_alone, ["cbr0"]);
    assert!(pass.stale.is_empty() && !pass.failed(), "{pass:?}");
    assert_eq!(node.reserved(), before);
}

#[test]
fn removes_only_what_is_provably_ours_and_dead() {
    let node = ScratchNode::new();
    // A running pod: its namespace exists, its endpoint is attached.
    let live_ns = node.namespace();
    let ip = node.reserve("live");
    let live = node.ours("live", &ip);
    node.client.attach_endpoint(live_ns, live).unwrap();
    // A killed pod whose namespace is gone.
    let dead_ns = node.namespace();
    let ip = node.reserve("killed");
    let killed = node.ours("killed", &ip);
    node.client.attach_endpoint(dead_ns, killed).unwrap();
    node.client.delete_namespace(dead_ns).unwrap();
    // ADD crashed between create and attach.
    let ip = node.reserve("crashed");
    node.ours("crashed", &ip);
    // A reservation whose ADD crashed before the endpoint (or whose DEL lost it).
    node.reserve("lost");
    // Another plugin's endpoint, a name of ours under a foreign ID, a remote endpoint.
    node.endpoint(
        Guid::from_u128(1),
        "cbr0_ep",
        "10.244.1.200",
        EndpointFlags::NONE,
    );
    node.endpoint(
        Guid::from_u128(2),
        "x_cbr0@eth1",
        "10.244.1.201",
        EndpointFlags::NONE,
    );
    node.endpoint(
        Guid::from_u128(3),
        "remote_cbr0",
        "10.244.1.202",
        EndpointFlags::REMOTE_ENDPOINT,
    );
    let before_endpoints = node.endpoints();
    let before_reserved = node.reserved();

    let dry = node.sweep(&AttachmentLocks, false);
    assert!(dry.errors.is_empty(), "{:?}", dry.errors);
    assert_eq!(
        objects(&dry),
        pairs(&[
            ("killed", "endpoint"),
            ("crashed", "endpoint"),
            ("lost", "reservation")
        ])
    );
    assert!(dry.stale.iter().all(|f| f.outcome.is_none()));
    assert!(!dry.failed());
    assert_eq!(
        node.endpoints(),
        before_endpoints,
        "a dry run removes nothing"
    );
    assert_eq!(node.reserved(), before_reserved);
    let why = |id: &str| {
        dry.stale
            .iter()
            .find(|f| f.container_id == id)
            .unwrap()
            .why
            .clone()
    };
    // The emulator, like HNS, detaches a deleted namespace's endpoints; an endpoint still
    // naming a vanished namespace is stale for that reason instead.
    assert!(
        why("killed").contains("no longer exists") || why("killed").contains("no namespace"),
        "{}",
        why("killed")
    );
    assert!(
        why("crashed").contains("no namespace"),
        "{}",
        why("crashed")
    );
    assert!(why("lost").contains("no endpoint"), "{}", why("lost"));

    let applied = node.sweep(&AttachmentLocks, true);
    assert!(!applied.failed(), "{applied:?}");
    assert!(
        applied
            .stale
            .iter()
            .all(|f| f.outcome == Some(Outcome::Removed))
    );
    assert_eq!(
        node.endpoints(),
        ["cbr0_ep", "live_cbr0", "remote_cbr0", "x_cbr0@eth1"]
            .into_iter()
            .map(str::to_owned)
            .collect()
    );
    let live_ip = node.host_local.allocate("live", "eth0").unwrap();
    assert_eq!(
        node.reserved(),
        [live_ip.result().ips[0].address.ip().to_string()]
            .into_iter()
            .collect(),
        "only the live pod keeps its address"
    );
    assert!(
        node.sweep(&AttachmentLocks, true).stale.is_empty(),
        "a second pass finds nothing"
    );
}

#[test]
fn a_reference_plugin_endpoint_of_a_dead_pod_goes_too() {
    let node = ScratchNode::new();
    let ns = node.namespace();
    let ip = node.reserve("old");
    // The reference plugin lets HNS choose the ID.
    let id = node.endpoint(Guid::from_u128(9), "old_cbr0", &ip, EndpointFlags::NONE);
    node.client.attach_endpoint(ns, id).unwrap();
    node.client.delete_namespace(ns).unwrap();
    let pass = node.sweep(&AttachmentLocks, true);
    assert_eq!(objects(&pass), pairs(&[("old", "endpoint")]));
    assert!(node.endpoints().is_empty());
    assert!(node.reserved().is_empty());
}

#[test]
fn never_touches_an_attachment_with_a_command_in_flight() {
    let node = ScratchNode::new();
    // An ADD between create and attach, and one between IPAM and create.
    let ip = node.reserve("adding");
    node.ours("adding", &ip);
    node.reserve("allocating");
    node.reserve("lost");
    let busy = Busy(&["adding", "allocating"], RefCell::new(0));
    let pass = node.sweep(&busy, true);
    assert_eq!(objects(&pass), pairs(&[("lost", "reservation")]));
    assert!(
        *busy.1.borrow() >= 3,
        "the seam was asked for each attachment"
    );
    assert_eq!(node.endpoints().len(), 1);
    assert_eq!(node.reserved().len(), 2);
}

/// The plugins' own lock, held as a running ADD, DEL or CHECK holds it: sweep leaves that
/// attachment alone and takes the others.
#[test]
fn an_attachment_whose_lock_a_command_holds_is_left_alone() {
    let node = ScratchNode::new();
    for pod in ["running", "dead"] {
        let ip = node.reserve(pod);
        node.ours(pod, &ip);
    }
    let held = cni_win_core::attachment_lock::try_lock("cbr0", "running", "eth0")
        .unwrap()
        .expect("nobody else holds it");
    let pass = node.sweep(&AttachmentLocks, true);
    drop(held);
    assert!(!pass.failed(), "{pass:?}");
    // The dead pod's endpoint goes as DEL removes it, reservation included.
    assert_eq!(objects(&pass), pairs(&[("dead", "endpoint")]));
    assert_eq!(node.endpoints().len(), 1);
    assert_eq!(node.reserved().len(), 1);
}

#[test]
fn a_command_that_starts_after_the_scan_skips_the_removal() {
    let node = ScratchNode::new();
    node.reserve("racing");
    /// Free when scanned, busy when removed.
    struct Starts(RefCell<usize>);
    impl Commands for Starts {
        type Claim = ();
        fn try_claim(&self, _: &str, _: &GcAttachment) -> Option<()> {
            *self.0.borrow_mut() += 1;
            (*self.0.borrow() == 1).then_some(())
        }
    }
    let pass = node.sweep(&Starts(RefCell::new(0)), true);
    assert_eq!(pass.stale[0].outcome, Some(Outcome::Skipped));
    assert_eq!(node.reserved().len(), 1);
}

#[test]
fn a_removal_that_fails_makes_the_pass_fail() {
    let node = ScratchNode::new();
    let ip = node.reserve("stuck");
    node.ours("stuck", &ip);
    node.engine
        .inject_fault(hns::Function::DeleteEndpoint, 1, hns::HResult::E_FAIL)
        .unwrap();
    let pass = node.sweep(&AttachmentLocks, true);
    assert!(
        matches!(pass.stale[0].outcome, Some(Outcome::Failed(_))),
        "{pass:?}"
    );
    assert!(pass.failed());
    // DEL keeps the address while the endpoint may exist.
    assert_eq!(node.endpoints().len(), 1);
    assert_eq!(node.reserved().len(), 1);
}

/// A pod whose ADD finished between the pass's read of HNS and its claim on the attachment
/// looked stale in that read (a reservation without an endpoint) but is alive: the pass
/// judges again on a read made while it holds the claims, and leaves the pod alone.
#[test]
fn never_removes_a_pod_whose_add_finished_after_the_read() {
    let node = ScratchNode::new();
    let networks = node.networks();
    let ip = node.reserve("just-started");
    let before_add = cni_win_core::snapshot::NodeSnapshot::read(&node.client).unwrap();
    let namespace = node.namespace();
    let endpoint = node.ours("just-started", &ip);
    node.client.attach_endpoint(namespace, endpoint).unwrap();

    let pass = cni_win::sweep::sweep(
        &node.client,
        &before_add,
        &networks,
        &AttachmentLocks,
        true,
        &cni_win::shutdown::Shutdown::new(),
    );
    assert_eq!(objects(&pass), pairs(&[("just-started", "reservation")]));
    assert_eq!(pass.stale[0].outcome, Some(Outcome::Alive));
    assert!(!pass.failed(), "{pass:?}");
    assert_eq!(node.reserved(), BTreeSet::from([ip]));
    assert_eq!(node.endpoints().len(), 1);
}
