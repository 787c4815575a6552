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
//! (endpoints without reservations, what `sweep` would remove, two endpoints holding one IP, a
//! remote endpoint holding a local pod's IP); on an overlay network, what kube-proxy needs
//! (`kube_proxy`).
//!
//! Every check runs over one read of the node ([`NodeSnapshot`]): on a node with one network
//! and three pods a run costs 13 raw HCN calls (the snapshot's), plus one for the Windows
//! build when a config's own ACLs need it. A fault is reported once: STATUS's own verdict
//! (the plugins' code) is the check for the network and its ranges.

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use cni_win_bridge::Bridge;
use cni_win_core::ConfigReview;
use cni_win_core::ownership::Verdict as Judged;
use cni_win_core::platform::{self, ConnectError, Deadline};
use cni_win_core::snapshot::{Exhausted, NetworkView, NodeSnapshot};
use cni_win_overlay::Overlay;
use hns::Client;
use hns::schema::{EndpointFlags, HostComputeEndpoint};
use serde::Serialize;

use crate::confdir::{self, Network};
use crate::shipped::{self, Plugin};
use crate::sweep::{self, AttachmentLocks};

mod kube_proxy;

/// Where doctor looks.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The CNI config directory the runtime reads (containerd's `conf_dir`).
    pub conf_dir: PathBuf,
    /// Where the runtime finds the plugins (containerd's `bin_dir`).
    pub bin_dir: PathBuf,
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Fine.
    Pass,
    /// Works now, but something will fail or is wrong.
    Warn,
    /// Pods cannot get (or keep) their network.
    Fail,
}

/// One check's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// What was checked (`network "cbr0": ready`).
    pub check: String,
    /// How it came out.
    pub verdict: Verdict,
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
    fn add(&mut self, check: impl Into<String>, verdict: Verdict, evidence: String, fix: &str) {
        self.findings.push(Finding {
            check: check.into(),
            verdict,
            evidence,
            fix: fix.to_owned(),
        });
    }

    fn pass(&mut self, check: impl Into<String>, evidence: String) {
        self.add(check, Verdict::Pass, evidence, "");
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for finding in &self.findings {
            let tag = match finding.verdict {
                Verdict::Pass => "PASS",
                Verdict::Warn => "WARN",
                Verdict::Fail => "FAIL",
            };
            writeln!(f, "[{tag}] {}: {}", finding.check, finding.evidence)?;
            if !finding.fix.is_empty() {
                writeln!(f, "       fix: {}", finding.fix)?;
            }
        }
        let count = |v| self.findings.iter().filter(|f| f.verdict == v).count();
        writeln!(
            f,
            "{}: {} passed, {} warning(s), {} failed",
            if self.healthy {
                "healthy"
            } else {
                "NOT healthy"
            },
            count(Verdict::Pass),
            count(Verdict::Warn),
            count(Verdict::Fail)
        )
    }
}

/// Runs every check against this node's HNS (every call bounded by the node tools' HNS
/// deadline).
pub fn examine(settings: &Settings) -> Report {
    diagnose(platform::connect(Deadline::Node).as_ref(), settings)
}

/// Runs every check; `client` is the node's HNS or why it could not be reached.
pub fn diagnose(client: Result<&Client, &ConnectError>, settings: &Settings) -> Report {
    let mut report = Report::default();
    let node = check_hns(client, &mut report);
    match confdir::read(&settings.conf_dir, std::slice::from_ref(&settings.bin_dir)) {
        Ok(found) => {
            for problem in found.problems {
                report.add(
                    "config directory",
                    Verdict::Fail,
                    problem,
                    "fix or remove the file: the runtime cannot load it",
                );
            }
            if found.networks.is_empty() {
                report.add(
                    "config directory",
                    Verdict::Fail,
                    format!(
                        "no win-bridge or win-overlay network in {}",
                        settings.conf_dir.display()
                    ),
                    "run `cni-win install`, or pass the runtime's conf_dir with --conf-dir",
                );
            }
            check_binaries(&found.plugin_types, settings, &mut report);
            check_one_release(settings, &mut report);
            for network in &found.networks {
                check_network(node.as_ref(), network, &mut report);
            }
        }
        Err(e) => report.add(
            "config directory",
            Verdict::Fail,
            e.to_string(),
            "pass the runtime's conf_dir with --conf-dir",
        ),
    }
    report.healthy = report.findings.iter().all(|f| f.verdict != Verdict::Fail);
    report
}

/// HNS, reached, and the node as it read.
struct Reached<'c> {
    client: &'c Client,
    snapshot: NodeSnapshot,
}

/// HNS answers: the node is read once, here.
fn check_hns<'c>(
    client: Result<&'c Client, &ConnectError>,
    report: &mut Report,
) -> Option<Reached<'c>> {
    let fix = "start the Host Network Service (Start-Service hns) and check its event log";
    let client = match client {
        Ok(client) => client,
        Err(e) => {
            report.add("HNS reachable", Verdict::Fail, crate::chain(e), fix);
            return None;
        }
    };
    match NodeSnapshot::read(client) {
        Ok(snapshot) => {
            let features = snapshot.features;
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
            Some(Reached { client, snapshot })
        }
        Err(e) => {
            report.add("HNS reachable", Verdict::Fail, e.to_string(), fix);
            None
        }
    }
}

/// Every plugin type the configs name has its binary in `--bin-dir` (a type without one,
/// such as a misspelt `win-overlay`, fails every ADD of its network).
fn check_binaries(plugin_types: &[String], settings: &Settings, report: &mut Report) {
    for plugin_type in plugin_types {
        let file = format!("{plugin_type}{}", std::env::consts::EXE_SUFFIX);
        let path = settings.bin_dir.join(&file);
        if path.is_file() {
            report.pass(
                format!("binary {file}"),
                format!("{} exists", path.display()),
            );
        } else {
            report.add(
                format!("binary {file}"),
                Verdict::Fail,
                format!(
                    "the configs name plugin type {plugin_type:?}, but {} does not exist",
                    path.display()
                ),
                "correct the type in the conflist, or run `cni-win install` (or pass the \
                 runtime's bin_dir with --bin-dir)",
            );
        }
    }
}

/// How long one `--version` of a plugin in `--bin-dir` may take: doctor never waits without end.
const VERSION_DEADLINE: Duration = Duration::from_secs(10);

/// The shipped CNI plugins present in `--bin-dir` are one release: each answers `--version`
/// with the same version and commit. A node mixing two releases (a half-finished upgrade, or
/// the reference's `host-local.exe` left beside ours) runs ADD and DEL with different rules.
fn check_one_release(settings: &Settings, report: &mut Report) {
    let mut releases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let plugins = shipped::binaries()
        .iter()
        .filter(|binary| binary.role.is_cni_plugin());
    for plugin in plugins {
        let file = plugin.file_name();
        let path = settings.bin_dir.join(&file);
        if !path.is_file() {
            continue;
        }
        let release = match about_line(&path) {
            Ok(line) => release_of(&line).unwrap_or_else(|| format!("not cni-win ({line})")),
            Err(why) => format!("no answer to --version ({why})"),
        };
        releases.entry(release).or_default().push(file);
    }
    let evidence = releases
        .iter()
        .map(|(release, files)| format!("{}: {release}", files.join(", ")))
        .collect::<Vec<_>>()
        .join("; ");
    match releases.len() {
        0 => {}
        1 if releases
            .keys()
            .all(|release| release.starts_with("cni-win ")) =>
        {
            report.pass("binaries are one release", evidence);
        }
        _ => report.add(
            "binaries are one release",
            Verdict::Fail,
            evidence,
            "install every binary from one release: `cni-win install --source <unzipped release>`",
        ),
    }
}

/// The first line `binary --version` prints, within [`VERSION_DEADLINE`].
fn about_line(binary: &std::path::Path) -> Result<String, String> {
    use rootsafe::child::{self, Ended, Stderr};
    let mut command = std::process::Command::new(binary);
    command.arg("--version").env_remove("CNI_COMMAND");
    let finished = child::run(&mut command, None, Stderr::Capture, VERSION_DEADLINE)
        .map_err(|e| std::io::Error::from(e).to_string())?;
    if finished.ended == Ended::TimedOut {
        return Err(format!("still running after {VERSION_DEADLINE:?}"));
    }
    let stdout = String::from_utf8_lossy(&finished.stdout);
    Ok(stdout.lines().next().unwrap_or_default().trim().to_owned())
}

/// `cni-win 0.1.0 (commit 0123456789ab)` from a cni-win plugin's about line
/// (`CNI win-bridge plugin 0.1.0 (commit 0123456789ab)`); `None` for anything else, such as the
/// reference plugins' `CNI win-bridge plugin v1.6.2`.
fn release_of(about: &str) -> Option<String> {
    let (_, release) = about.split_once(" plugin ")?;
    release
        .contains(" (commit ")
        .then(|| format!("cni-win {release}"))
}

fn check_network(node: Option<&Reached<'_>>, network: &Network, report: &mut Report) {
    let name = network.name();
    let check = |what: &str| format!("network {name:?}: {what}");
    let conf = &network.request.config;
    let loaded = match network.plugin {
        Plugin::Bridge => cni_win_core::load_config::<Bridge>(conf),
        Plugin::Overlay => cni_win_core::load_config::<Overlay>(conf),
    };
    let review = match loaded {
        Ok(review) => review,
        Err(e) => {
            report.add(
                check("config"),
                Verdict::Fail,
                e.msg().to_owned(),
                "correct the conflist (`cni-win install` writes one the plugins accept)",
            );
            return;
        }
    };
    report.pass(
        check("config"),
        "the plugin's config code accepts it".to_owned(),
    );
    for ignored in &review.ignored_policy_keys {
        report.add(
            check("policy keys"),
            Verdict::Warn,
            ignored.clone(),
            "spell the key as its policy type has it, or remove it: the policy goes to HNS as \
             written (as the reference plugins send it) and does less than it says",
        );
    }
    let Some(node) = node else {
        return;
    };
    check_acl_fallback(node.client, network, &review, report);
    let view = match node.snapshot.view(&network.request) {
        Ok(view) => view,
        Err(e) => {
            report.add(
                check("reservations"),
                Verdict::Fail,
                e.msg().to_owned(),
                "check the host-local store's directory and permissions",
            );
            return;
        }
    };
    let status = match network.plugin {
        Plugin::Bridge => view.status::<Bridge>(),
        Plugin::Overlay => view.status::<Overlay>(),
    };
    let via = if network.via_flannel {
        " (Flannel's delegate)"
    } else {
        ""
    };
    match status {
        Ok(exhausted) => {
            report.pass(check("ready"), format!("STATUS says ready{via}"));
            check_free_addresses(&exhausted, &check("free addresses"), report);
        }
        Err(e) => report.add(
            check("ready"),
            Verdict::Fail,
            e.msg().to_owned(),
            "flanneld (or the node's network setup) must create the network and subnet.env; \
             the config's ipam subnet must be this node's part of the HNS network; a range with \
             no free address (with ipam.notReadyWhenFull) needs `cni-win sweep --apply`",
        ),
    }
    check_store(node, network, &view, report);
    if network.plugin == Plugin::Overlay {
        kube_proxy::check(node, name, &view, report);
    }
}

/// A full range set leaves STATUS ready (so the node keeps its pods) but fails every new pod's
/// ADD: a warning with the fix, since leaked reservations are the usual cause.
fn check_free_addresses(exhausted: &[Exhausted], check: &str, report: &mut Report) {
    if exhausted.is_empty() {
        report.pass(check, "every IPAM range set has a free address".to_owned());
        return;
    }
    let evidence = exhausted
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    report.add(
        check,
        Verdict::Warn,
        format!("{evidence}: new pods fail with code 100 (STATUS stays ready)"),
        "run `cni-win sweep --apply` to release leaked addresses, or widen the IPAM range",
    );
}

/// The config's own ACLs keep the pods' other traffic where HNS makes an endpoint with ACLs
/// default-deny (Windows Server 2025 on: [`hns::WindowsBuild::acls_default_deny`]): each
/// direction they cover needs an allow-all rule, as cni-win adds beside the ACLs it writes.
fn check_acl_fallback(
    client: &Client,
    network: &Network,
    review: &ConfigReview,
    report: &mut Report,
) {
    if review.acl_directions_without_fallback.is_empty() {
        return;
    }
    let Ok(build) = client.windows_build() else {
        return;
    };
    if !build.acls_default_deny() {
        return;
    }
    let directions = review
        .acl_directions_without_fallback
        .iter()
        .map(|direction| format!("{direction:?}"))
        .collect::<Vec<_>>()
        .join(" and ");
    report.add(
        format!("network {:?}: ACL fallback", network.name()),
        Verdict::Warn,
        format!(
            "the config's ACL policies have no allow-all rule {directions}: on Windows build \
             {build} HNS denies every packet no ACL allows, so the pods lose all other traffic \
             {directions}"
        ),
        "add an allow-all ACL per direction at the lowest precedence, e.g. {\"name\": \
         \"EndpointPolicy\", \"value\": {\"Type\": \"ACL\", \"Settings\": {\"Action\": \
         \"Allow\", \"Direction\": \"In\", \"Protocols\": \"256\", \"RuleType\": \
         \"Switch\", \"Priority\": 65500}}} (cni-win adds these beside the ACLs it writes), \
         unless a default-deny is what you mean",
    );
}

/// The store against HNS, as the snapshot shows them.
fn check_store(node: &Reached<'_>, network: &Network, view: &NetworkView<'_>, report: &mut Report) {
    let name = network.name();
    let check = |what: &str| format!("network {name:?}: {what}");
    if view.network.is_none() {
        return;
    }
    // `None`: a delegated IPAM, whose store is its own.
    let reservations = view.reservations.as_ref().map(|_| view.pod_reservations());
    let mut healthy = true;
    // Two endpoints holding one IP; a remote endpoint holding a local pod's IP.
    let mut holders: BTreeMap<IpAddr, Vec<&HostComputeEndpoint>> = BTreeMap::new();
    for endpoint in &node.snapshot.endpoints {
        for ip in endpoint.ip_configurations.iter().map(|c| c.ip_address) {
            holders.entry(ip).or_default().push(endpoint);
        }
    }
    for (ip, holding) in &holders {
        let names = || {
            holding
                .iter()
                .map(|e| format!("{} ({})", e.name, e.id))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let local_pod_ip = reservations.iter().flatten().any(|r| r.ip == *ip);
        let remote = holding
            .iter()
            .any(|e| e.flags.contains(EndpointFlags::REMOTE_ENDPOINT));
        if local_pod_ip && remote {
            healthy = false;
            report.add(
                check("remote endpoint"),
                Verdict::Fail,
                format!(
                    "{ip} is a local pod's address but a remote endpoint holds it: {}",
                    names()
                ),
                "delete the remote endpoint (hnsctl endpoint delete ID); the overlay's controller \
                 made it from a stale lease of another node",
            );
        } else if holding.len() > 1 {
            healthy = false;
            report.add(
                check("duplicate address"),
                Verdict::Fail,
                format!("{ip} is held by {} endpoints: {}", holding.len(), names()),
                "delete the endpoint no pod uses (`cni-win sweep --apply` removes dead ones)",
            );
        }
    }
    let owned: Vec<_> = view
        .verdicts()
        .into_iter()
        .filter_map(|(endpoint, verdict)| match verdict {
            Judged::NotOurs => None,
            Judged::Alive(attachment) | Judged::Dead(attachment, _) => Some((attachment, endpoint)),
        })
        .collect();
    if let Some(reservations) = &reservations {
        for (owner, endpoint) in &owned {
            if !reservations.iter().any(|r| r.attachment == *owner) {
                healthy = false;
                report.add(
                    check("endpoint without reservation"),
                    Verdict::Warn,
                    format!(
                        "endpoint {} ({}) holds {} but host-local holds no address for its attachment",
                        endpoint.name,
                        endpoint.id,
                        endpoint_ips(endpoint)
                    ),
                    "its address may be handed out twice: DEL the pod (or delete the endpoint) and recreate it",
                );
            }
        }
    }
    for (_, row) in sweep::find(view, name, &AttachmentLocks) {
        healthy = false;
        report.add(
            check("stale"),
            Verdict::Warn,
            format!("{}: {}", row.object, row.why),
            "run `cni-win sweep --apply` (or as a DaemonSet with --every)",
        );
    }
    if healthy {
        report.pass(
            check("store"),
            format!(
                "{} endpoint(s) of cni-win and {} reservation(s) agree",
                owned.len(),
                reservations.as_ref().map_or(0, Vec::len)
            ),
        );
    }
}

fn endpoint_ips(endpoint: &HostComputeEndpoint) -> String {
    endpoint
        .ip_configurations
        .iter()
        .map(|c| c.ip_address.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
