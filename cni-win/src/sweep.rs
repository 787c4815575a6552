//! `cni-win sweep`: collects what nothing else on a node collects (containerd never calls
//! GC, Flannel answers it itself), and only what it can prove is cni-win's and dead.
//!
//! For every network of the config directory ([`crate::confdir`]):
//! - an endpoint is a candidate only when it is provably an attachment's
//!   ([`cni_win_core::node::endpoint_owner`], GC's rule); it is stale when the HCN namespace
//!   it is attached to no longer exists, or when it is attached to none and no command for its
//!   attachment is in flight;
//! - a reservation is stale when its attachment has no endpoint and no command in flight.
//!
//! Stale objects are removed as DEL removes them ([`cni_win_core::node::del_attachment`]:
//! detach, delete, release), only with `--apply`; the default is a dry run printing what
//! would go. "In flight" is asked of a [`Commands`] seam, claimed without waiting and held
//! while the attachment is removed.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use cni::GcAttachment;
use cni_win_core::node::{self, Reservation, Retention};
use hns::Client;
use serde::Serialize;

use crate::confdir::{self, Network};
use crate::defaults;
use crate::error::Error;

/// Removes stale endpoints and reservations of cni-win's networks (dry run unless --apply).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The CNI config directory the runtime reads (containerd's `conf_dir`).
    #[arg(long, value_name = "DIR", default_value = defaults::CONF_DIR)]
    conf_dir: PathBuf,
    /// `CNI_PATH` for a delegated IPAM plugin's DEL (host-local runs in-process).
    #[arg(long, value_name = "DIR")]
    bin_dir: Vec<PathBuf>,
    /// Remove what is stale (without it, only report).
    #[arg(long)]
    apply: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Run again every DURATION (e.g. 30s, 5m, 1h), logging each pass: a DaemonSet's loop.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    every: Option<Duration>,
}

/// Whether a command (ADD, DEL, CHECK) for an attachment is running, asked without waiting.
///
/// The plugins serialise the commands of one attachment with a per-attachment lock; its
/// non-blocking try-lock implements this, and the claim holds the lock while the sweep
/// removes the attachment, so no ADD can start in between.
pub trait Commands {
    /// Held while the attachment is removed.
    type Claim;
    /// `None` when a command for `attachment` of `network` is in flight.
    fn try_claim(&self, network: &str, attachment: &GcAttachment) -> Option<Self::Claim>;
}

/// The plugins' own per-attachment lock (`cni_win_core::attachment_lock`), tried without
/// waiting: ADD, DEL and CHECK hold it for their whole run, so a lock someone holds is a command
/// in flight. A lock that cannot even be tried counts as held: sweep removes only what it can
/// prove idle.
#[derive(Debug, Clone, Copy, Default)]
pub struct AttachmentLocks;

impl Commands for AttachmentLocks {
    type Claim = cni_win_core::attachment_lock::Guard;
    fn try_claim(&self, network: &str, attachment: &GcAttachment) -> Option<Self::Claim> {
        cni_win_core::attachment_lock::try_lock(
            network,
            &attachment.container_id,
            &attachment.ifname,
        )
        .ok()
        .flatten()
    }
}

/// What is stale and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// `endpoint <name> (<id>)` or `reservation <ip>`.
    pub object: String,
    pub network: String,
    pub why: String,
    /// The attachment it belongs to.
    pub container_id: String,
    pub ifname: String,
    /// What --apply did: `None` in a dry run.
    pub outcome: Option<Outcome>,
}

/// What removing a stale object came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "result", content = "error")]
pub enum Outcome {
    Removed,
    /// A command for the attachment started meanwhile: left for the next pass.
    Skipped,
    Failed(String),
}

/// One pass over every network.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pass {
    pub stale: Vec<Finding>,
    /// Networks whose conflist sets libcni's `disableGC`: not examined.
    pub left_alone: Vec<String>,
    /// Networks (or files) that could not be examined, with the reason.
    pub errors: Vec<String>,
}

impl Pass {
    /// Whether something could not be examined or removed.
    pub fn failed(&self) -> bool {
        !self.errors.is_empty()
            || self
                .stale
                .iter()
                .any(|f| matches!(f.outcome, Some(Outcome::Failed(_))))
    }
}

pub fn run(args: &Args) -> Result<(), Error> {
    let Some(every) = args.every else {
        let pass = pass(args)?;
        print(&pass, args)?;
        return if pass.failed() {
            Err(Error::new(
                "some stale objects could not be examined or removed",
            ))
        } else {
            Ok(())
        };
    };
    loop {
        match pass(args) {
            Ok(pass) => {
                log_pass(&pass, args.apply);
                print(&pass, args)?;
            }
            Err(e) => eprintln!("cni-win sweep: pass failed: {e}"),
        }
        std::thread::sleep(every);
    }
}

fn pass(args: &Args) -> Result<Pass, Error> {
    let found = confdir::read(&args.conf_dir, &args.bin_dir)?;
    let client = node::hns_client(node::HNS_DEADLINE)
        .map_err(|e| Error::new(format!("cannot reach HNS: {e}")))?;
    let mut pass = sweep(&client, &found.networks, &AttachmentLocks, args.apply);
    pass.errors.extend(found.problems);
    Ok(pass)
}

fn log_pass(pass: &Pass, apply: bool) {
    let count = |wanted: &Outcome| {
        pass.stale
            .iter()
            .filter(|f| f.outcome.as_ref() == Some(wanted))
            .count()
    };
    if apply {
        eprintln!(
            "cni-win sweep: {} stale, {} removed, {} skipped (command in flight), {} failed, {} error(s)",
            pass.stale.len(),
            count(&Outcome::Removed),
            count(&Outcome::Skipped),
            pass.stale.len() - count(&Outcome::Removed) - count(&Outcome::Skipped),
            pass.errors.len()
        );
    } else {
        eprintln!(
            "cni-win sweep: {} stale (dry run), {} error(s)",
            pass.stale.len(),
            pass.errors.len()
        );
    }
}

fn print(pass: &Pass, args: &Args) -> Result<(), Error> {
    if args.json {
        let json = serde_json::to_string(pass).map_err(|e| Error::new(e.to_string()))?;
        println!("{json}");
    } else {
        print!("{}", Table(pass));
        for name in &pass.left_alone {
            eprintln!("cni-win sweep: network {name:?} left alone: its conflist sets disableGC");
        }
        for error in &pass.errors {
            eprintln!("cni-win sweep: {error}");
        }
    }
    Ok(())
}

/// The human report: one row per stale object.
struct Table<'a>(&'a Pass);

impl fmt::Display for Table<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.stale.is_empty() {
            return writeln!(f, "nothing stale");
        }
        let rows: Vec<[String; 4]> = self
            .0
            .stale
            .iter()
            .map(|finding| {
                let outcome = match &finding.outcome {
                    None => "would remove".to_owned(),
                    Some(Outcome::Removed) => "removed".to_owned(),
                    Some(Outcome::Skipped) => "skipped: command in flight".to_owned(),
                    Some(Outcome::Failed(e)) => format!("FAILED: {e}"),
                };
                [
                    finding.object.clone(),
                    finding.network.clone(),
                    finding.why.clone(),
                    outcome,
                ]
            })
            .collect();
        let header = ["OBJECT", "NETWORK", "WHY", "ACTION"];
        let width = |column: usize| {
            rows.iter()
                .map(|row| row[column].len())
                .chain([header[column].len()])
                .max()
                .unwrap_or(0)
        };
        let widths = [width(0), width(1), width(2)];
        let line = |f: &mut fmt::Formatter<'_>, row: [&str; 4]| {
            writeln!(
                f,
                "{:w0$}  {:w1$}  {:w2$}  {}",
                row[0],
                row[1],
                row[2],
                row[3],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2]
            )
        };
        line(f, header)?;
        for row in &rows {
            line(f, [&row[0], &row[1], &row[2], &row[3]])?;
        }
        Ok(())
    }
}

/// One pass over `networks`: finds what is stale and, with `apply`, removes it.
pub fn sweep<C: Commands>(
    client: &Client,
    networks: &[Network],
    commands: &C,
    apply: bool,
) -> Pass {
    let mut pass = Pass::default();
    let namespaces = match client.list_namespaces() {
        Ok(namespaces) => namespaces.into_iter().map(|n| n.id).collect::<Vec<_>>(),
        Err(e) => {
            pass.errors.push(format!("cannot list HCN namespaces: {e}"));
            return pass;
        }
    };
    for network in networks {
        if network.gc_disabled {
            pass.left_alone.push(network.name().to_owned());
            continue;
        }
        match stale_of(client, network, &namespaces, commands) {
            Ok(stale) => {
                for (mut finding, namespace) in stale {
                    if apply {
                        finding.outcome =
                            Some(remove(client, network, &finding, namespace, commands));
                    }
                    pass.stale.push(finding);
                }
            }
            Err(e) => pass
                .errors
                .push(format!("network {:?}: {e}", network.name())),
        }
    }
    pass
}

/// The stale objects of one network, each with the namespace its DEL detaches from.
fn stale_of<C: Commands>(
    client: &Client,
    network: &Network,
    namespaces: &[hns::Guid],
    commands: &C,
) -> Result<Vec<(Finding, Option<hns::Guid>)>, String> {
    let name = network.name();
    // Every address an endpoint on the network holds, whoever made it: never released.
    let mut held = Vec::new();
    let endpoints: Vec<_> = match client.find_network_by_name(name) {
        Ok(open) => {
            let id = open.id();
            drop(open);
            client
                .list_endpoints(Some(id))
                .map_err(|e| format!("cannot list its endpoints: {e}"))?
                .into_iter()
                .inspect(|endpoint| {
                    held.extend(endpoint.ip_configurations.iter().map(|c| c.ip_address));
                })
                .filter_map(|endpoint| {
                    node::endpoint_owner(name, id, &endpoint).map(|owner| (endpoint, owner))
                })
                .collect()
        }
        Err(e) if e.is_not_found() => Vec::new(),
        Err(e) => return Err(format!("cannot find its HNS network: {e}")),
    };
    let finding = |object: String, why: String, attachment: &GcAttachment| Finding {
        object,
        network: name.to_owned(),
        why,
        container_id: attachment.container_id.clone(),
        ifname: attachment.ifname.clone(),
        outcome: None,
    };
    let mut stale = Vec::new();
    for (endpoint, owner) in &endpoints {
        let namespace = endpoint.host_compute_namespace;
        let why = if namespace.is_zero() {
            if commands.try_claim(name, owner).is_none() {
                continue;
            }
            "attached to no namespace and no command in flight".to_owned()
        } else if !namespaces.contains(&namespace) {
            format!("its namespace {namespace} no longer exists")
        } else {
            continue;
        };
        let object = format!("endpoint {} ({})", endpoint.name, endpoint.id);
        stale.push((
            finding(object, why, owner),
            (!namespace.is_zero()).then_some(namespace),
        ));
    }
    // GC's rule: the attachments with an endpoint are kept, and so is every attachment one
    // of whose addresses an endpoint holds, and the node components' reservations.
    let retention = Retention::attachments(endpoints.iter().map(|(_, owner)| owner)).holding(held);
    let releasable = node::releasable(&network.request, &retention)
        .map_err(|e| format!("cannot read its reservations: {}", e.msg()))?
        .unwrap_or_default();
    for Reservation { ip, attachment } in releasable {
        if commands.try_claim(name, &attachment).is_none() {
            continue;
        }
        let why = "its attachment has no endpoint and no command in flight".to_owned();
        stale.push((finding(format!("reservation {ip}"), why, &attachment), None));
    }
    Ok(stale)
}

/// Removes one stale object's attachment as DEL would, holding its claim meanwhile. An
/// attachment removed by an earlier row (its endpoint, then its reservation) is gone already:
/// DEL of it again succeeds.
fn remove<C: Commands>(
    client: &Client,
    network: &Network,
    finding: &Finding,
    namespace: Option<hns::Guid>,
    commands: &C,
) -> Outcome {
    let attachment = GcAttachment {
        container_id: finding.container_id.clone(),
        ifname: finding.ifname.clone(),
    };
    let Some(_claim) = commands.try_claim(network.name(), &attachment) else {
        return Outcome::Skipped;
    };
    match node::del_attachment(client, &network.request, &attachment, namespace) {
        Ok(()) => Outcome::Removed,
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// `30s`, `5m`, `1h` or a number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (e.g. 30s, 5m, 1h)"))?;
    let seconds = match unit {
        "s" => number,
        "m" => number.saturating_mul(60),
        "h" => number.saturating_mul(3600),
        _ => return Err(format!("{text:?}: the unit must be s, m or h")),
    };
    if seconds == 0 {
        return Err("the interval must be at least 1s".to_owned());
    }
    Ok(Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_operators_write_them() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
        for bad in ["", "0s", "m", "5d", "-1s", "1.5m"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}

/// Each situation the sweep must judge, built on the emulator: what goes and what stays.
#[cfg(all(test, not(windows)))]
mod on_the_emulator {
    use std::cell::RefCell;
    use std::collections::BTreeSet;

    use hns::Guid;
    use hns::schema::EndpointFlags;

    use super::*;
    use crate::testnode::Node;

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
        let node = Node::new();
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
        let node = Node::new();
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
        let networks = crate::confdir::read(node.conf_dir(), &[]).unwrap().networks;
        let before = node.reserved();
        let pass = sweep(&node.client, &networks, &AttachmentLocks, true);
        assert_eq!(pass.left_alone, ["cbr0"]);
        assert!(pass.stale.is_empty() && !pass.failed(), "{pass:?}");
        assert_eq!(node.reserved(), before);
    }

    #[test]
    fn removes_only_what_is_provably_ours_and_dead() {
        let node = Node::new();
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
        let node = Node::new();
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
        let node = Node::new();
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
        let node = Node::new();
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
        let node = Node::new();
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
        let node = Node::new();
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
}
