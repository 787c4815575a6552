//! `cni-win doctor`: what an operator runs first when pods have no network. Every check says
//! pass, warn or fail, with the evidence and the fix; the exit status is 0 only when no check
//! fails.
//!
//! Checks: HNS answers (its version and features); the config directory loads; for each of
//! cni-win's networks there, the plugin's own config code accepts it (a policy key HNS ignores,
//! such as a V1 `exceptionList` inside V2 settings, is a warning naming it; so are its own ACL
//! policies without an allow-all rule per direction on a build where HNS then denies by
//! default, Windows Server 2025 on), the plugin's STATUS
//! (the HNS network, its type and settings, the overlay's ProviderAddress, subnet.env in
//! Flannel mode, a usable store, each IPAM range inside the network's subnets), a free address
//! in every range set, the plugin binaries in `--bin-dir`, and the store against HNS
//! (what `sweep` would remove, and the HNS drift [`crate::drift`] finds: endpoints without
//! reservations, endpoints sharing an address, remote endpoints in this node's pod subnet,
//! half-created load balancers and ones whose backends are gone, on every network type, each
//! saying whose it is and what to do); on an overlay network, what kube-proxy needs
//! (`kube_proxy`); where a config names a NetworkPolicy snapshot, what the policy agent
//! programmed (`network_policy`: the mode HNS allows, refused policies, each local pod's
//! policies and rules, kube-proxy's DSR), from the snapshot: no API server access.
//!
//! Every check runs over one read of the node ([`Node`]: the config directory and HNS, each
//! network decoded once): on a node with one network and three pods a run costs 13 raw HCN
//! calls (the node's read), plus one for the Windows build when a config's own ACLs need it.
//! A fault is reported once: STATUS's own verdict (the plugins' code) is the check for the
//! network and its ranges. The node daemon runs the same checks every round over its own read
//! ([`Doctor::examine`]), asking each plugin binary for its version only when its file changed.

use std::fmt;

use cni_win_core::platform::{self, ConnectError, Deadline};
use cni_win_core::snapshot::NodeSnapshot;
use hns::Client;
use serde::Serialize;

use crate::drift::{self, Drift, Reason};
use crate::node::Node;
use crate::paths::NodePaths;

mod binaries;
mod kube_proxy;
mod network;
mod network_policy;
mod writers;

/// How a check came out: how much what it found matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Fine.
    Pass,
    /// Works now, but something will fail or is wrong.
    Warn,
    /// Pods cannot get (or keep) their network, or do not get the isolation their
    /// NetworkPolicies ask for.
    Fail,
}

/// One check's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// What was checked (`network "cbr0": ready`).
    pub check: String,
    /// How it came out.
    pub severity: Severity,
    /// What was seen.
    pub evidence: String,
    /// What to do (empty when it passed).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub fix: String,
}

/// Every finding, and whether the node is healthy (no check failed).
#[derive(Debug, Default, Serialize)]
pub struct Report {
    /// No check failed.
    pub healthy: bool,
    /// Every check's outcome, in order.
    pub findings: Vec<Finding>,
}

impl Report {
    fn add(&mut self, check: impl Into<String>, severity: Severity, evidence: String, fix: &str) {
        self.findings.push(Finding {
            check: check.into(),
            severity,
            evidence,
            fix: fix.to_owned(),
        });
    }

    fn pass(&mut self, check: impl Into<String>, evidence: String) {
        self.add(check, Severity::Pass, evidence, "");
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for finding in &self.findings {
            let tag = match finding.severity {
                Severity::Pass => "PASS",
                Severity::Warn => "WARN",
                Severity::Fail => "FAIL",
            };
            writeln!(f, "[{tag}] {}: {}", finding.check, finding.evidence)?;
            if !finding.fix.is_empty() {
                writeln!(f, "       fix: {}", finding.fix)?;
            }
        }
        let count = |v| self.findings.iter().filter(|f| f.severity == v).count();
        writeln!(
            f,
            "{}: {} passed, {} warning(s), {} failed",
            if self.healthy {
                "healthy"
            } else {
                "NOT healthy"
            },
            count(Severity::Pass),
            count(Severity::Warn),
            count(Severity::Fail)
        )
    }
}

/// Runs every check against this node's HNS (every call bounded by the node tools' HNS
/// deadline).
pub fn examine(paths: &NodePaths) -> Report {
    diagnose(platform::connect(Deadline::Node).as_ref(), paths)
}

/// Runs every check on one read of the node; `client` is the node's HNS or why it could not
/// be reached.
pub fn diagnose(client: Result<&Client, &ConnectError>, paths: &NodePaths) -> Report {
    let node = Node::read(client, paths, None);
    Doctor::new(paths.clone()).examine(client.ok(), &node)
}

/// doctor's checks, and what they keep between runs over the same node: each plugin binary's
/// answer to `--version`, asked again only when its file changed.
#[derive(Debug)]
pub struct Doctor {
    paths: NodePaths,
    versions: binaries::Versions,
}

impl Doctor {
    /// The checks of the node whose runtime uses `paths`.
    pub fn new(paths: NodePaths) -> Doctor {
        Doctor {
            paths,
            versions: binaries::Versions::default(),
        }
    }

    /// Runs every check over `node`, as read through `client` (`None`: HNS could not be
    /// reached).
    pub fn examine(&mut self, client: Option<&Client>, node: &Node) -> Report {
        let mut report = Report::default();
        let reached = check_hns(client, node, &mut report);
        match &node.config {
            Ok(config) => {
                for problem in &config.problems {
                    report.add(
                        "config directory",
                        Severity::Fail,
                        problem.clone(),
                        "fix or remove the file: the runtime cannot load it",
                    );
                }
                if config.networks.is_empty() {
                    report.add(
                        "config directory",
                        Severity::Fail,
                        format!(
                            "no win-bridge or win-overlay network in {}",
                            self.paths.conf_dir.display()
                        ),
                        "run `cni-win install`, or pass the runtime's conf_dir with --conf-dir",
                    );
                }
                binaries::check_present(&config.plugin_types, &self.paths, &mut report);
                writers::check(&self.paths, &mut report);
                self.versions.check_one_release(&self.paths, &mut report);
                let drift: Vec<Drift> = drift::find(node)
                    .into_iter()
                    .filter(|drift| {
                        !drift.reason.is_the_sweeps() && drift.reason != Reason::HnsUnreadable
                    })
                    .collect();
                for network in &config.networks {
                    let on_network: Vec<&Drift> = drift
                        .iter()
                        .filter(|drift| drift.network.as_deref() == Some(network.name()))
                        .collect();
                    network::check(reached.as_ref(), network, &on_network, &mut report);
                }
                let elsewhere = drift.iter().filter(|drift| {
                    !config
                        .networks
                        .iter()
                        .any(|network| drift.network.as_deref() == Some(network.name()))
                });
                for drift in elsewhere {
                    add_drift(drift, &mut report);
                }
                network_policy::check(reached.as_ref(), &config.networks, &mut report);
            }
            Err(e) => report.add(
                "config directory",
                Severity::Fail,
                e.to_string(),
                "pass the runtime's conf_dir with --conf-dir",
            ),
        }
        report.healthy = report.findings.iter().all(|f| f.severity != Severity::Fail);
        report
    }
}

/// One line of drift: what it is and whose (the evidence), and what to do; a check per reason
/// and network, so that the metrics' label stays bounded.
fn add_drift(drift: &Drift, report: &mut Report) {
    let check = match &drift.network {
        Some(network) => format!("network {network:?}: drift {}", drift.reason.as_str()),
        None => format!("drift {}", drift.reason.as_str()),
    };
    let severity = if drift.reason.breaks_pods() {
        Severity::Fail
    } else {
        Severity::Warn
    };
    report.add(
        check,
        severity,
        format!("{} ({})", drift.object, drift.reason.whose()),
        drift.reason.remedy(),
    );
}

/// HNS, reached, and the node as it read.
struct Reached<'n> {
    /// HNS as the node's one read found it.
    hns: &'n NodeSnapshot,
}

/// HNS answers: the node's read of it.
fn check_hns<'n>(
    client: Option<&'n Client>,
    node: &'n Node,
    report: &mut Report,
) -> Option<Reached<'n>> {
    let fix = "start the Host Network Service (Start-Service hns) and check its event log";
    match (client, &node.hns) {
        (Some(_), Ok(hns)) => {
            let features = hns.features;
            let supported: Vec<&str> = hns::Feature::ALL
                .into_iter()
                .filter(|f| features.supports(*f))
                .map(hns::Feature::name)
                .collect();
            report.pass(
                "HNS reachable",
                format!(
                    "version {}; features: {}",
                    features.version(),
                    supported.join(", ")
                ),
            );
            Some(Reached { hns })
        }
        (_, Err(unread)) => {
            report.add("HNS reachable", Severity::Fail, unread.to_string(), fix);
            None
        }
        (None, Ok(_)) => None,
    }
}
