//! The node daemon's metrics (`cni-win sweep --every … --metrics-address …`), in the Prometheus
//! exposition format, so an operator sees a pool filling up, stale objects piling up after an
//! HNS restart, or a node going unhealthy before pods stop starting.
//!
//! A CNI plugin lives for one command and cannot be scraped; the sweep daemon is cni-win's one
//! long-running process on a node, and each of its rounds already reads everything these
//! metrics say (the pass, the pools, doctor's checks). [`NodeMetrics::observe`] records a
//! round; [`NodeMetrics::render`] is what a scrape gets ([`http`] serves it). The exposition
//! format is the Prometheus project's own client's (`prometheus-client`), not ours.
//!
//! Every family is named `cniwin_*` and has help text; series that describe the node now
//! (pools, stale objects found, checks) are replaced whole at each round, so a network or a
//! check that went away stops being reported; counters only grow.

pub mod http;

use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};

use crate::doctor::{Report, Verdict};
use crate::sweep::{Outcome, Pass};

/// What every metric name starts with.
pub const PREFIX: &str = "cniwin";

/// The check doctor reports HNS's reachability under (`cniwin_hns_up` follows it).
const HNS_CHECK: &str = "HNS reachable";

/// Upper bounds of the pass-duration histogram, in seconds: a pass reads HNS once and each store
/// once, which takes tens of milliseconds on a quiet node and seconds when HNS is slow; a pass
/// near a minute means HNS is near its deadline.
const PASS_SECONDS: [f64; 10] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

type FloatGauge = Gauge<f64, AtomicU64>;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    network: String,
    subnets: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StaleLabels {
    network: String,
    kind: &'static str,
    reason: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CheckLabels {
    check: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: String,
    commit: String,
}

/// One round of the daemon, as the metrics see it.
#[derive(Debug)]
pub struct Round<'a> {
    /// The sweep pass, or why it could not run.
    pub pass: Result<&'a Pass, &'a crate::Error>,
    /// How long the pass took.
    pub duration: Duration,
    /// When it ended.
    pub ended: SystemTime,
    /// Doctor's report of the node at the end of the round.
    pub doctor: &'a Report,
}

/// Every metric the daemon serves, registered once.
#[derive(Debug)]
pub struct NodeMetrics {
    registry: Registry,
    /// Held while a round is recorded and while the registry is encoded, so a scrape never
    /// sees half a round (families are cleared and refilled).
    round: Mutex<()>,
    pool_addresses: Family<PoolLabels, FloatGauge>,
    pool_reserved: Family<PoolLabels, FloatGauge>,
    pool_free: Family<PoolLabels, FloatGauge>,
    stale_found: Family<StaleLabels, Gauge>,
    stale_removed: Family<StaleLabels, Counter>,
    stale_failed: Family<StaleLabels, Counter>,
    passes: Family<ResultLabels, Counter>,
    pass_duration: Histogram,
    last_success: FloatGauge,
    hns_up: Gauge,
    check_failing: Family<CheckLabels, Gauge>,
}

impl NodeMetrics {
    /// Registers every family, with `version` and `commit` as `cniwin_build_info`'s labels.
    pub fn new(version: &str, commit: &str) -> NodeMetrics {
        let mut metrics = NodeMetrics {
            registry: Registry::with_prefix(PREFIX),
            round: Mutex::new(()),
            pool_addresses: Family::default(),
            pool_reserved: Family::default(),
            pool_free: Family::default(),
            stale_found: Family::default(),
            stale_removed: Family::default(),
            stale_failed: Family::default(),
            passes: Family::default(),
            pass_duration: Histogram::new(PASS_SECONDS),
            last_success: FloatGauge::default(),
            hns_up: Gauge::default(),
            check_failing: Family::default(),
        };
        let registry = &mut metrics.registry;
        registry.register(
            "build",
            "The running cni-win's version and commit (always 1)",
            Info::new(BuildLabels {
                version: version.to_owned(),
                commit: commit.to_owned(),
            }),
        );
        registry.register(
            "ipam_addresses",
            "Addresses a network's host-local range set can hand out (gateways and excluded \
             addresses left out)",
            metrics.pool_addresses.clone(),
        );
        registry.register(
            "ipam_reserved_addresses",
            "Addresses of a range set that hold a reservation (pods' and node components' such as \
             kube-proxy's source VIP), after the last pass",
            metrics.pool_reserved.clone(),
        );
        registry.register(
            "ipam_free_addresses",
            "Addresses of a range set a new pod can still get; at 0 every ADD fails with code 100",
            metrics.pool_free.clone(),
        );
        registry.register(
            "stale_objects",
            "Stale endpoints and reservations the last pass found, by network, kind and reason",
            metrics.stale_found.clone(),
        );
        registry.register(
            "stale_objects_removed",
            "Stale endpoints and reservations removed since the daemon started (only with --apply)",
            metrics.stale_removed.clone(),
        );
        registry.register(
            "stale_objects_remove_failures",
            "Stale objects whose removal failed since the daemon started (the next pass retries)",
            metrics.stale_failed.clone(),
        );
        registry.register(
            "sweep_passes",
            "Sweep passes since the daemon started, by result: ok, or failed (a network or file \
             that could not be examined, a removal that failed, HNS unreachable)",
            metrics.passes.clone(),
        );
        registry.register_with_unit(
            "sweep_pass_duration",
            "How long a sweep pass took",
            Unit::Seconds,
            metrics.pass_duration.clone(),
        );
        registry.register(
            "sweep_last_success_timestamp_seconds",
            "When the last pass that failed nothing ended (Unix time); 0 until one has",
            metrics.last_success.clone(),
        );
        registry.register(
            "hns_up",
            "Whether HNS answered at the last round (1) or not (0)",
            metrics.hns_up.clone(),
        );
        registry.register(
            "doctor_check_failing",
            "Each of doctor's checks at the last round: 1 when it fails (pods cannot get or keep \
             their network), 0 when it passes or warns. `cni-win doctor` on the node says why",
            metrics.check_failing.clone(),
        );
        metrics
    }

    /// Records one round of the daemon.
    pub fn observe(&self, round: &Round<'_>) {
        let _round = self
            .round
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let ok = round.pass.is_ok_and(|pass| !pass.failed());
        self.passes
            .get_or_create(&ResultLabels {
                result: if ok { "ok" } else { "failed" },
            })
            .inc();
        self.pass_duration.observe(round.duration.as_secs_f64());
        if ok {
            let seconds = round
                .ended
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64();
            self.last_success.set(seconds);
        }
        match round.pass {
            Ok(pass) => self.record_pass(pass),
            // Nothing is known of the pools and stale objects now: a scrape shows none rather
            // than the last pass's as if they were current.
            Err(_) => self.forget_the_node(),
        }
        self.record_doctor(round.doctor);
    }

    fn forget_the_node(&self) {
        for family in [&self.pool_addresses, &self.pool_reserved, &self.pool_free] {
            family.clear();
        }
        self.stale_found.clear();
    }

    fn record_pass(&self, pass: &Pass) {
        self.forget_the_node();
        for pool in &pass.pools {
            let labels = PoolLabels {
                network: pool.network.clone(),
                subnets: pool.subnets.clone(),
            };
            self.pool_addresses
                .get_or_create(&labels)
                .set(pool.usable as f64);
            self.pool_reserved
                .get_or_create(&labels)
                .set(pool.reserved as f64);
            self.pool_free.get_or_create(&labels).set(pool.free as f64);
        }
        for stale in &pass.stale {
            let labels = StaleLabels {
                network: stale.network.clone(),
                kind: stale.kind.as_str(),
                reason: stale.reason.as_str(),
            };
            self.stale_found.get_or_create(&labels).inc();
            match stale.outcome {
                Some(Outcome::Removed) => {
                    self.stale_removed.get_or_create(&labels).inc();
                }
                Some(Outcome::Failed(_)) => {
                    self.stale_failed.get_or_create(&labels).inc();
                }
                Some(Outcome::Skipped | Outcome::Alive) | None => {}
            }
        }
    }

    fn record_doctor(&self, report: &Report) {
        self.check_failing.clear();
        let mut hns_up = false;
        for finding in &report.findings {
            let failing = finding.verdict == Verdict::Fail;
            if finding.check == HNS_CHECK {
                hns_up = !failing;
            }
            // Two findings of one name (one per network file, say) fail together if either does.
            let gauge = self.check_failing.get_or_create(&CheckLabels {
                check: finding.check.clone(),
            });
            if failing {
                gauge.set(1);
            }
        }
        self.hns_up.set(i64::from(hns_up));
    }

    /// The registry in the text exposition format (OpenMetrics), as a scrape gets it.
    pub fn render(&self) -> String {
        let _round = self
            .round
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut text = String::new();
        // Writing into a String cannot fail; an encoding error would be a bug in a label.
        if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            log::error!("cannot encode the metrics: {e}");
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Finding;
    use crate::sweep::{ObjectKind, Pool, Reason, StaleObject};

    fn report(findings: &[(&str, Verdict)]) -> Report {
        Report {
            healthy: findings.iter().all(|(_, v)| *v != Verdict::Fail),
            findings: findings
                .iter()
                .map(|(check, verdict)| Finding {
                    check: (*check).to_owned(),
                    verdict: *verdict,
                    evidence: String::new(),
                    fix: String::new(),
                })
                .collect(),
        }
    }

    fn line<'t>(text: &'t str, series: &str) -> Option<&'t str> {
        text.lines().find(|line| line.starts_with(series))
    }

    fn stale(outcome: Outcome) -> StaleObject {
        StaleObject {
            object: "reservation 10.0.0.5".to_owned(),
            kind: ObjectKind::Reservation,
            network: "cbr0".to_owned(),
            reason: Reason::NoEndpoint,
            why: String::new(),
            container_id: "c".to_owned(),
            ifname: "eth0".to_owned(),
            outcome: Some(outcome),
        }
    }

    /// A pass with a pool, a removal and a failed removal: every family has a series.
    fn full_pass() -> Pass {
        Pass {
            stale: vec![
                stale(Outcome::Removed),
                stale(Outcome::Failed("denied".to_owned())),
            ],
            pools: vec![Pool {
                network: "cbr0".to_owned(),
                subnets: "10.0.0.0/24".to_owned(),
                usable: 252,
                reserved: 2,
                free: 250,
            }],
            ..Pass::default()
        }
    }

    /// The metrics after one round over [`full_pass`].
    fn rendered_full_round() -> String {
        let metrics = NodeMetrics::new("0.1.0", "abc");
        metrics.observe(&Round {
            pass: Ok(&full_pass()),
            duration: Duration::from_millis(20),
            ended: SystemTime::now(),
            doctor: &report(&[(HNS_CHECK, Verdict::Pass)]),
        });
        metrics.render()
    }

    #[test]
    fn every_family_is_described_and_named_as_prometheus_asks() {
        let text = rendered_full_round();
        let families: Vec<&str> = text
            .lines()
            .filter_map(|line| line.strip_prefix("# TYPE "))
            .collect();
        assert_eq!(families.len(), 12, "{text}");
        for family in families {
            let (name, kind) = family.split_once(' ').unwrap();
            assert!(name.starts_with("cniwin_"), "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{name}"
            );
            let help = line(&text, &format!("# HELP {name} ")).expect("help text");
            assert!(!help.ends_with(".."), "{help}");
            if kind == "counter" {
                assert!(text.contains(&format!("\n{name}_total")), "{name}");
            }
        }
        assert!(text.contains("# UNIT cniwin_sweep_pass_duration_seconds seconds"));
        let pool = r#"{network="cbr0",subnets="10.0.0.0/24"}"#;
        assert!(
            text.contains(&format!("cniwin_ipam_free_addresses{pool} 250.0")),
            "{text}"
        );
        let stale = r#"{network="cbr0",kind="reservation",reason="no-endpoint"}"#;
        assert!(
            text.contains(&format!("cniwin_stale_objects{stale} 2\n")),
            "{text}"
        );
        assert!(text.contains(&format!("cniwin_stale_objects_removed_total{stale} 1\n")));
        assert!(text.contains(&format!(
            "cniwin_stale_objects_remove_failures_total{stale} 1\n"
        )));
        assert_eq!(
            line(&text, "cniwin_build_info"),
            Some(r#"cniwin_build_info{version="0.1.0",commit="abc"} 1"#)
        );
    }

    #[test]
    fn an_unreachable_hns_and_a_failed_pass_are_counted() {
        let metrics = NodeMetrics::new("0.1.0", "abc");
        let ok = Pass {
            stale: vec![stale(Outcome::Removed)],
            ..full_pass()
        };
        metrics.observe(&Round {
            pass: Ok(&ok),
            duration: Duration::from_millis(20),
            ended: SystemTime::now(),
            doctor: &report(&[(HNS_CHECK, Verdict::Pass)]),
        });
        let first = metrics.render();
        assert!(first.contains("cniwin_ipam_free_addresses{"));
        let last_success = line(&first, "cniwin_sweep_last_success_timestamp_seconds ")
            .unwrap()
            .to_owned();
        let error = crate::Error::new("HNS is gone");
        metrics.observe(&Round {
            pass: Err(&error),
            duration: Duration::from_secs(30),
            ended: SystemTime::now(),
            doctor: &report(&[
                (HNS_CHECK, Verdict::Fail),
                ("config directory", Verdict::Warn),
            ]),
        });
        let text = metrics.render();
        assert_eq!(line(&text, "cniwin_hns_up "), Some("cniwin_hns_up 0"));
        // The last pass's pools and stale objects are not served as if they were current.
        assert!(!text.contains("cniwin_ipam_free_addresses{"), "{text}");
        assert!(!text.contains("cniwin_stale_objects{"), "{text}");
        assert!(
            text.contains("cniwin_stale_objects_removed_total{"),
            "counters stay"
        );
        assert!(text.contains("cniwin_sweep_passes_total{result=\"failed\"} 1\n"));
        assert_eq!(
            line(&text, "cniwin_sweep_last_success_timestamp_seconds "),
            Some(last_success.as_str()),
            "a failed pass is no success"
        );
        assert!(text.contains(r#"cniwin_doctor_check_failing{check="HNS reachable"} 1"#));
        assert!(text.contains(r#"cniwin_doctor_check_failing{check="config directory"} 0"#));

        // HNS is back: the gauge follows, the failed pass stays counted.
        metrics.observe(&Round {
            pass: Ok(&Pass::default()),
            duration: Duration::from_millis(20),
            ended: SystemTime::now(),
            doctor: &report(&[(HNS_CHECK, Verdict::Pass)]),
        });
        let text = metrics.render();
        assert_eq!(line(&text, "cniwin_hns_up "), Some("cniwin_hns_up 1"));
        assert!(text.contains(r#"cniwin_sweep_passes_total{result="failed"} 1"#));
        assert!(text.contains(r#"cniwin_sweep_passes_total{result="ok"} 2"#));
        assert!(
            !text.contains("config directory"),
            "a check no longer run is dropped"
        );
        assert_eq!(
            line(&text, "cniwin_sweep_pass_duration_seconds_count"),
            Some("cniwin_sweep_pass_duration_seconds_count 3")
        );
    }

    /// Every metric deploy/grafana-dashboard.json queries is a family the daemon serves, and
    /// every family is on some panel.
    #[test]
    fn the_dashboard_queries_what_the_daemon_serves() {
        let served: std::collections::BTreeSet<String> = rendered_full_round()
            .lines()
            .filter_map(|line| line.strip_prefix("# TYPE "))
            .map(|family| family.split(' ').next().unwrap().to_owned())
            .collect();
        assert_eq!(served.len(), 12, "{served:?}");
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../deploy/grafana-dashboard.json"
        );
        let dashboard: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let mut queries = Vec::new();
        collect_queries(&dashboard, &mut queries);
        assert!(queries.len() >= 10, "{queries:?}");
        let mut queried = std::collections::BTreeSet::new();
        for query in &queries {
            for name in metric_names(query) {
                let family = family(name);
                assert!(
                    served.contains(family),
                    "{name} in {query:?} is not served: {served:?}"
                );
                queried.insert(family.to_owned());
            }
        }
        let unused: Vec<&String> = served.difference(&queried).collect();
        assert!(unused.is_empty(), "served but on no panel: {unused:?}");
    }

    /// A sample's family: the name without the suffix a histogram, counter or info adds.
    fn family(name: &str) -> &str {
        ["_bucket", "_count", "_sum", "_total", "_info"]
            .iter()
            .find_map(|suffix| name.strip_suffix(suffix))
            .unwrap_or(name)
    }

    /// Every `expr` and templating `definition` of the dashboard.
    fn collect_queries(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("expr" | "definition", serde_json::Value::String(query)) => {
                            out.push(query.clone())
                        }
                        _ => collect_queries(value, out),
                    }
                }
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| collect_queries(v, out)),
            _ => {}
        }
    }

    /// The `cniwin_*` names in a query.
    fn metric_names(query: &str) -> Vec<&str> {
        query
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|word| word.starts_with("cniwin_"))
            .collect()
    }
}
