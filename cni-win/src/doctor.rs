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
//! Flannel mode, a free address: [`cni_win_core::node::status`]), the plugin binaries in
//! `--bin-dir`, and the store against HNS (reservations without endpoints, endpoints without
//! reservations, what `sweep` would remove, two endpoints holding one IP, a remote endpoint
//! holding a local pod's IP).

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use cni::GcAttachment;
use cni_win_bridge::Bridge;
use cni_win_core::ConfigReview;
use cni_win_core::node::{self, Exhausted};
use cni_win_overlay::Overlay;
use hns::Client;
use hns::schema::{EndpointFlags, HostComputeEndpoint};
use ipnetwork::IpNetwork;
use serde::Serialize;

use crate::confdir::{self, Network, Plugin};
use crate::defaults;
use crate::error::Error;
use crate::sweep::{self, AttachmentLocks};

/// Checks the node's HNS, configs, binaries and store, and says what to fix.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The CNI config directory the runtime reads (containerd's `conf_dir`).
    #[arg(long, value_name = "DIR", default_value = defaults::CONF_DIR)]
    conf_dir: PathBuf,
    /// Where the runtime finds the plugins (containerd's `bin_dir`).
    #[arg(long, value_name = "DIR", default_value = defaults::BIN_DIR)]
    bin_dir: PathBuf,
    /// Print JSON instead of the report.
    #[arg(long)]
    json: bool,
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Warn,
    Fail,
}

/// One check's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub check: String,
    pub verdict: Verdict,
    pub evidence: String,
    /// What to do (empty when it passed).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub fix: String,
}

/// Every finding, and whether the node is healthy (no check failed).
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub healthy: bool,
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

pub fn run(args: &Args) -> Result<(), Error> {
    let client = node::hns_client(node::HNS_DEADLINE);
    let report = diagnose(client.as_ref().map_err(ToString::to_string), args);
    if args.json {
        let json = serde_json::to_string(&report).map_err(|e| Error::new(e.to_string()))?;
        println!("{json}");
    } else {
        print!("{report}");
    }
    if report.healthy {
        Ok(())
    } else {
        Err(Error::new("the node is not healthy: see the failed checks"))
    }
}

/// Runs every check.
pub fn diagnose(client: Result<&Client, String>, args: &Args) -> Report {
    let mut report = Report::default();
    let client = check_hns(client, &mut report);
    match confdir::read(&args.conf_dir, std::slice::from_ref(&args.bin_dir)) {
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
                        args.conf_dir.display()
                    ),
                    "run `cni-win install`, or pass the runtime's conf_dir with --conf-dir",
                );
            }
            check_binaries(&found.plugin_types, args, &mut report);
            check_one_release(args, &mut report);
            for network in &found.networks {
                check_network(client, network, &mut report);
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

fn check_hns<'c>(client: Result<&'c Client, String>, report: &mut Report) -> Option<&'c Client> {
    let fix = "start the Host Network Service (Start-Service hns) and check its event log";
    let client = match client {
        Ok(client) => client,
        Err(e) => {
            report.add("HNS reachable", Verdict::Fail, e, fix);
            return None;
        }
    };
    match client.supported_features() {
        Ok(features) => {
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
            Some(client)
        }
        Err(e) => {
            report.add("HNS reachable", Verdict::Fail, e.to_string(), fix);
            None
        }
    }
}

/// Every plugin type the configs name has its binary in `--bin-dir` (a type without one,
/// such as a misspelt `win-overlay`, fails every ADD of its network).
fn check_binaries(plugin_types: &[String], args: &Args, report: &mut Report) {
    for plugin_type in plugin_types {
        let file = format!("{plugin_type}{}", std::env::consts::EXE_SUFFIX);
        let path = args.bin_dir.join(&file);
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

/// The plugins cni-win ships, by their reference names: a node mixing two releases (a
/// half-finished upgrade, or the reference's `host-local.exe` left beside ours) runs ADD and DEL
/// with different rules.
const SHIPPED_PLUGINS: [&str; 3] = ["win-bridge", "win-overlay", "host-local"];

/// How long one `--version` of a plugin in `--bin-dir` may take: doctor never waits without end.
const VERSION_DEADLINE: Duration = Duration::from_secs(10);

/// The shipped plugins present in `--bin-dir` are one release: each answers `--version` with
/// the same version and commit.
fn check_one_release(args: &Args, report: &mut Report) {
    let mut releases: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for plugin in SHIPPED_PLUGINS {
        let file = format!("{plugin}{}", std::env::consts::EXE_SUFFIX);
        let path = args.bin_dir.join(&file);
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

fn check_network(client: Option<&Client>, network: &Network, report: &mut Report) {
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
    let Some(client) = client else {
        return;
    };
    check_acl_fallback(client, network, &review, report);
    let status = match network.plugin {
        Plugin::Bridge => node::status::<Bridge>(client, &network.request),
        Plugin::Overlay => node::status::<Overlay>(client, &network.request),
    };
    check_subnets(client, network, report);
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
             a range with no free address (with ipam.notReadyWhenFull) needs `cni-win sweep --apply`",
        ),
    }
    check_store(client, network, report);
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

/// Each host-local range lies inside a subnet of the HNS network (HNS refuses an endpoint
/// outside its network's subnets).
fn check_subnets(client: &Client, network: &Network, report: &mut Report) {
    let name = network.name();
    let check = format!("network {name:?}: subnets");
    let Ok(ranges) = node::ipam_subnets(&network.request) else {
        return;
    };
    let Ok(open) = client.find_network_by_name(name) else {
        return;
    };
    let hns_subnets: Vec<IpNetwork> = open
        .properties()
        .subnets()
        .map(|subnet| subnet.ip_address_prefix.network())
        .collect();
    if ranges.is_empty() {
        return;
    }
    let outside: Vec<String> = ranges
        .iter()
        .filter(|range| {
            !hns_subnets
                .iter()
                .any(|hns| hns.prefix() <= range.prefix() && hns.contains(range.network()))
        })
        .map(ToString::to_string)
        .collect();
    let listed = hns_subnets
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    if outside.is_empty() {
        report.pass(check, format!("the IPAM ranges lie inside {listed}"));
    } else {
        report.add(
            check,
            Verdict::Fail,
            format!(
                "IPAM range {} is outside the HNS network's subnets ({listed}): HNS refuses the pods' endpoints",
                outside.join(", ")
            ),
            "make the conflist's ipam subnet this node's pod CIDR, the subnet the HNS network was created with",
        );
    }
}

/// The store against HNS.
fn check_store(client: &Client, network: &Network, report: &mut Report) {
    let name = network.name();
    let check = |what: &str| format!("network {name:?}: {what}");
    let Ok(open) = client.find_network_by_name(name) else {
        return;
    };
    let id = open.id();
    drop(open);
    let endpoints = match client.list_endpoints(None) {
        Ok(endpoints) => endpoints,
        Err(e) => {
            report.add(
                check("endpoints"),
                Verdict::Fail,
                e.to_string(),
                "check HNS",
            );
            return;
        }
    };
    // `None`: a delegated IPAM, whose store is its own.
    let reservations = match node::reservations(&network.request) {
        Ok(reservations) => reservations,
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
    let mut healthy = true;
    // Two endpoints holding one IP; a remote endpoint holding a local pod's IP.
    let mut holders: BTreeMap<IpAddr, Vec<&HostComputeEndpoint>> = BTreeMap::new();
    for endpoint in &endpoints {
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
    let owners: Vec<(GcAttachment, &HostComputeEndpoint)> = endpoints
        .iter()
        .filter_map(|e| node::endpoint_owner(name, id, e).map(|owner| (owner, e)))
        .collect();
    for (owner, endpoint) in &owners {
        let Some(reservations) = &reservations else {
            break;
        };
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
    let stale = sweep::sweep(
        client,
        std::slice::from_ref(network),
        &AttachmentLocks,
        false,
    );
    for finding in stale.stale {
        healthy = false;
        report.add(
            check("stale"),
            Verdict::Warn,
            format!("{}: {}", finding.object, finding.why),
            "run `cni-win sweep --apply` (or as a DaemonSet with --every)",
        );
    }
    if healthy {
        report.pass(
            check("store"),
            format!(
                "{} endpoint(s) of cni-win and {} reservation(s) agree",
                owners.len(),
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

/// A test per finding, each on a node broken in one way.
#[cfg(all(test, not(windows)))]
mod on_the_emulator {
    use std::fs;

    use hns::Guid;
    use hns::schema::EndpointFlags;

    use super::*;
    use crate::testnode::Node;

    struct Doctor {
        node: Node,
        bin: tempfile::TempDir,
    }

    impl Doctor {
        fn new() -> Doctor {
            let bin = tempfile::tempdir().unwrap();
            plugin(
                bin.path(),
                "win-bridge",
                "CNI win-bridge plugin 0.1.0 (commit aaaaaaaaaaaa)",
            );
            Doctor {
                node: Node::new(),
                bin,
            }
        }

        fn report(&self) -> Report {
            let args = Args {
                conf_dir: self.node.conf_dir().to_owned(),
                bin_dir: self.bin.path().to_owned(),
                json: true,
            };
            diagnose(Ok(&self.node.client), &args)
        }
    }

    /// The findings that are not a pass, as (check, verdict).
    fn problems(report: &Report) -> Vec<(String, Verdict)> {
        report
            .findings
            .iter()
            .filter(|f| f.verdict != Verdict::Pass)
            .map(|f| (f.check.clone(), f.verdict))
            .collect()
    }

    fn evidence(report: &Report, check: &str) -> String {
        report
            .findings
            .iter()
            .find(|f| f.check.contains(check))
            .map(|f| f.evidence.clone())
            .unwrap_or_default()
    }

    #[test]
    fn a_healthy_node_passes_everything() {
        let doctor = Doctor::new();
        let ns = doctor.node.namespace();
        let ip = doctor.node.reserve("live");
        let id = doctor.node.ours("live", &ip);
        doctor.node.client.attach_endpoint(ns, id).unwrap();
        let report = doctor.report();
        assert_eq!(problems(&report), [], "{report}");
        assert!(report.healthy);
        assert!(evidence(&report, "HNS reachable").contains("version"));
        assert!(evidence(&report, "store").contains("1 endpoint(s)"));
    }

    /// kube-proxy's source VIP, reserved by running host-local directly and held by
    /// kube-proxy's own nameless endpoint, is not a stale reservation and not a pod's address.
    #[test]
    fn the_source_vip_and_its_endpoint_are_not_findings() {
        let doctor = Doctor::new();
        for (container_id, ifname) in [("dummy", "dummy"), ("kube-proxy", "source-vip")] {
            let vip = doctor.node.reserve_as(container_id, ifname);
            doctor
                .node
                .endpoint(hns::Guid::ZERO, "", &vip, EndpointFlags::NONE);
        }
        let report = doctor.report();
        assert_eq!(problems(&report), [], "{report}");
    }

    #[test]
    fn hns_unreachable_fails() {
        let doctor = Doctor::new();
        let args = Args {
            conf_dir: doctor.node.conf_dir().to_owned(),
            bin_dir: doctor.bin.path().to_owned(),
            json: false,
        };
        let report = diagnose(Err("HNS is not running".to_owned()), &args);
        assert!(!report.healthy);
        assert_eq!(report.findings[0].verdict, Verdict::Fail);
        assert!(report.findings[0].fix.contains("hns"));
    }

    #[test]
    fn a_missing_network_fails_readiness() {
        let doctor = Doctor::new();
        let id = doctor.node.network_id();
        doctor.node.client.delete_network(id).unwrap();
        let report = doctor.report();
        assert_eq!(
            problems(&report),
            [("network \"cbr0\": ready".to_owned(), Verdict::Fail)],
            "{report}"
        );
        assert!(evidence(&report, "ready").contains("does not exist"));
    }

    #[test]
    fn a_config_the_plugin_refuses_fails_naming_the_key() {
        let doctor = Doctor::new();
        fs::write(
            doctor.node.conf_dir().join("10-cbr0.conf"),
            br#"{"cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
                 "ipam": {"type": "host-local", "subnet": "10.244.1.0/33"}}"#,
        )
        .unwrap();
        fs::write(doctor.node.conf_dir().join("20-broken.conflist"), b"{").unwrap();
        let report = doctor.report();
        let found = problems(&report);
        assert!(
            found.contains(&("network \"cbr0\": config".to_owned(), Verdict::Fail)),
            "{report}"
        );
        assert!(
            found.contains(&("config directory".to_owned(), Verdict::Fail)),
            "{report}"
        );
        assert!(evidence(&report, ": config").contains("subnet"), "{report}");
        assert!(!report.healthy);
    }

    /// A full range fails new pods, not the node: STATUS stays ready and doctor warns with
    /// the fix.
    #[test]
    fn a_full_range_is_a_warning_not_a_readiness_failure() {
        let doctor = Doctor::new();
        // The range is made one address wide: the second pod's (the first gets the win-bridge
        // pod gateway, which the plugin never hands out).
        let mut ip = String::new();
        for pod in ["first", "live"] {
            let ns = doctor.node.namespace();
            ip = doctor.node.reserve(pod);
            let id = doctor.node.ours(pod, &ip);
            doctor.node.client.attach_endpoint(ns, id).unwrap();
        }
        let path = doctor.node.conf_dir().join("10-cbr0.conf");
        let mut config: serde_json::Value =
            serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        config["ipam"]["rangeStart"] = ip.as_str().into();
        config["ipam"]["rangeEnd"] = ip.as_str().into();
        fs::write(&path, serde_json::to_vec(&config).unwrap()).unwrap();
        let report = doctor.report();
        assert_eq!(
            problems(&report),
            [("network \"cbr0\": free addresses".to_owned(), Verdict::Warn)],
            "{report}"
        );
        let found = evidence(&report, "free addresses");
        assert!(found.contains("all 1 are reserved"), "{found}");
        let finding = report.findings.iter().find(|f| f.check.contains("free"));
        assert!(finding.unwrap().fix.contains("cni-win sweep --apply"));
    }

    #[test]
    fn policy_keys_hns_ignores_are_warnings_naming_the_entry_and_the_key() {
        let doctor = Doctor::new();
        fs::write(
            doctor.node.conf_dir().join("10-cbr0.conf"),
            br#"{"cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
                 "ipam": {"type": "host-local", "subnet": "10.244.1.0/24"},
                 "policies": [{"name": "EndpointPolicy", "value": {"type": "OutBoundNAT",
                     "settings": {"exceptionList": ["172.30.0.0/16"], "needEncap": false}}}]}"#,
        )
        .unwrap();
        let report = doctor.report();
        let warnings: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| f.check == "network \"cbr0\": policy keys")
            .collect();
        let evidence: Vec<&str> = warnings.iter().map(|f| f.evidence.as_str()).collect();
        assert_eq!(
            evidence,
            [
                "policies[0]: `exceptionList` is not a V2 OutBoundNAT key; HNS ignores it; did you mean `Exceptions`?",
                "policies[0]: `needEncap` is not a V2 OutBoundNAT key; HNS ignores it (its keys: VirtualIP, Exceptions, Destinations, Flags, MaxPortPoolUsage)",
            ],
            "{report}"
        );
        assert!(warnings.iter().all(|f| f.verdict == Verdict::Warn));
        assert!(report.healthy, "{report}");
    }

    #[test]
    fn own_acls_without_an_allow_all_fallback_warn_on_a_default_deny_build() {
        let doctor = Doctor::new();
        let config = |policies: &str| {
            format!(
                r#"{{"cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
                     "ipam": {{"type": "host-local", "subnet": "10.244.1.0/24"}},
                     "policies": [{policies}]}}"#
            )
        };
        let acl = |settings: &str| {
            format!(
                r#"{{"name": "EndpointPolicy", "value": {{"Type": "ACL", "Settings": {settings}}}}}"#
            )
        };
        let block_imds = acl(
            r#"{"Action": "Block", "Direction": "Out", "RemoteAddresses": "169.254.169.254/32", "Priority": 200}"#,
        );
        let allow_in =
            acl(r#"{"Action": "Allow", "Direction": "In", "Protocols": "256", "Priority": 65500}"#);
        let allow_out = acl(r#"{"action": "Allow", "direction": "Out", "priority": 65000}"#);
        let conf = doctor.node.conf_dir().join("10-cbr0.conf");
        let fallback_finding = |report: &Report| {
            report
                .findings
                .iter()
                .find(|f| f.check == "network \"cbr0\": ACL fallback")
                .map(|f| (f.verdict, f.evidence.clone()))
        };

        fs::write(&conf, config(&block_imds)).unwrap();
        // Windows Server 2022 lets traffic no rule matches through.
        assert_eq!(fallback_finding(&doctor.report()), None);
        doctor
            .node
            .engine
            .set_windows_build(hns::WindowsBuild::SERVER_2025)
            .unwrap();
        let report = doctor.report();
        let (verdict, evidence) = fallback_finding(&report).expect("a finding");
        assert_eq!(verdict, Verdict::Warn);
        assert!(
            evidence.contains("no allow-all rule In and Out") && evidence.contains("26100"),
            "{evidence}"
        );
        assert!(report.healthy, "{report}");

        fs::write(&conf, config(&format!("{block_imds}, {allow_in}"))).unwrap();
        let (_, evidence) = fallback_finding(&doctor.report()).expect("a finding");
        assert!(evidence.contains("no allow-all rule Out"), "{evidence}");

        fs::write(
            &conf,
            config(&format!("{block_imds}, {allow_in}, {allow_out}")),
        )
        .unwrap();
        assert_eq!(fallback_finding(&doctor.report()), None);
    }

    #[test]
    fn a_range_outside_the_hns_subnet_fails() {
        let doctor = Doctor::new();
        fs::write(
            doctor.node.conf_dir().join("10-cbr0.conf"),
            br#"{"cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
                 "ipam": {"type": "host-local", "subnet": "10.244.9.0/24"}}"#,
        )
        .unwrap();
        let report = doctor.report();
        assert!(
            problems(&report).contains(&("network \"cbr0\": subnets".to_owned(), Verdict::Fail)),
            "{report}"
        );
        assert!(evidence(&report, "subnets").contains("10.244.9.0/24"));
    }

    /// A plugin that prints `about` for `--version`.
    fn plugin(bin: &std::path::Path, name: &str, about: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = bin.join(name);
        fs::write(&path, format!("#!/bin/sh\necho '{about}'\n")).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn plugins_of_one_release_pass_and_a_mixed_bin_dir_fails_naming_each() {
        let doctor = Doctor::new();
        let bin = doctor.bin.path();
        plugin(
            bin,
            "win-bridge",
            "CNI win-bridge plugin 0.1.0 (commit aaaaaaaaaaaa)",
        );
        plugin(
            bin,
            "host-local",
            "CNI host-local plugin 0.1.0 (commit aaaaaaaaaaaa)",
        );
        let report = doctor.report();
        assert_eq!(problems(&report), [], "{report}");
        assert!(evidence(&report, "one release").contains("cni-win 0.1.0 (commit aaaaaaaaaaaa)"));

        // The reference's host-local left beside ours.
        plugin(bin, "host-local", "CNI host-local plugin v1.6.2");
        let report = doctor.report();
        assert_eq!(
            problems(&report),
            [("binaries are one release".to_owned(), Verdict::Fail)],
            "{report}"
        );
        let evidence = evidence(&report, "one release");
        assert!(
            evidence.contains("host-local: not cni-win (CNI host-local plugin v1.6.2)")
                && evidence.contains("win-bridge: cni-win 0.1.0"),
            "{evidence}"
        );
    }

    #[test]
    fn a_missing_plugin_binary_fails() {
        let doctor = Doctor::new();
        fs::remove_file(doctor.bin.path().join("win-bridge")).unwrap();
        let report = doctor.report();
        assert_eq!(
            problems(&report),
            [("binary win-bridge".to_owned(), Verdict::Fail)],
            "{report}"
        );
    }

    #[test]
    fn an_unknown_plugin_type_is_named() {
        let doctor = Doctor::new();
        fs::write(
            doctor.node.conf_dir().join("20-typo.conflist"),
            br#"{"cniVersion": "1.1.0", "name": "vxlan0", "plugins": [{"type": "win-overlya"}]}"#,
        )
        .unwrap();
        let report = doctor.report();
        assert_eq!(
            problems(&report),
            [("binary win-overlya".to_owned(), Verdict::Fail)],
            "{report}"
        );
        assert!(evidence(&report, "win-overlya").contains("plugin type \"win-overlya\""));
    }

    #[test]
    fn what_sweep_would_remove_is_a_warning() {
        let doctor = Doctor::new();
        doctor.node.reserve("lost");
        let ip = doctor.node.reserve("crashed");
        doctor.node.ours("crashed", &ip);
        let report = doctor.report();
        assert_eq!(
            problems(&report),
            [
                ("network \"cbr0\": stale".to_owned(), Verdict::Warn),
                ("network \"cbr0\": stale".to_owned(), Verdict::Warn)
            ],
            "{report}"
        );
        assert!(report.healthy, "warnings alone leave the node healthy");
        assert!(report.to_string().contains("cni-win sweep --apply"));
    }

    #[test]
    fn an_endpoint_without_reservation_is_a_warning() {
        let doctor = Doctor::new();
        let ns = doctor.node.namespace();
        let id = doctor.node.ours("orphan", "10.244.1.50");
        doctor.node.client.attach_endpoint(ns, id).unwrap();
        let report = doctor.report();
        assert_eq!(
            problems(&report),
            [(
                "network \"cbr0\": endpoint without reservation".to_owned(),
                Verdict::Warn
            )],
            "{report}"
        );
        assert!(evidence(&report, "without reservation").contains("10.244.1.50"));
    }

    #[test]
    fn two_endpoints_holding_one_ip_fail() {
        let doctor = Doctor::new();
        let ns = doctor.node.namespace();
        let ip = doctor.node.reserve("pod");
        let id = doctor.node.ours("pod", &ip);
        doctor.node.client.attach_endpoint(ns, id).unwrap();
        // Another network's endpoint on the same address (HNS checks per network).
        doctor
            .node
            .client
            .create_network(
                Guid::ZERO,
                &cni_win_conformance::node::network_settings(
                    "other",
                    "L2Bridge",
                    &[("10.244.1.0/24", "10.244.1.1")],
                ),
            )
            .unwrap();
        let other = doctor.node.client.find_network_by_name("other").unwrap();
        let settings = doctor
            .node
            .client
            .open_endpoint(id)
            .unwrap()
            .into_properties();
        let copy = hns::schema::HostComputeEndpoint {
            name: "intruder".to_owned(),
            ip_configurations: settings.ip_configurations.clone(),
            routes: settings.routes.clone(),
            ..Default::default()
        };
        other.create_endpoint(Guid::ZERO, &copy).unwrap();
        let report = doctor.report();
        assert!(
            problems(&report).contains(&(
                "network \"cbr0\": duplicate address".to_owned(),
                Verdict::Fail
            )),
            "{report}"
        );
        assert!(!report.healthy);
    }

    #[test]
    fn a_remote_endpoint_holding_a_local_pod_ip_fails() {
        let doctor = Doctor::new();
        let ip = doctor.node.reserve("pod");
        doctor.node.endpoint(
            Guid::from_u128(5),
            "stale-remote",
            &ip,
            EndpointFlags::REMOTE_ENDPOINT,
        );
        let report = doctor.report();
        let found = problems(&report);
        assert!(
            found.contains(&(
                "network \"cbr0\": remote endpoint".to_owned(),
                Verdict::Fail
            )),
            "{report}"
        );
        assert!(!report.healthy);
    }
}
