//! The node daemon's metrics (`cni-win daemon --metrics-address …`), in the Prometheus
//! exposition format, so an operator sees a pool filling up, stale objects piling up after an
//! HNS restart, HNS drifting from the node's records, or a node going unhealthy before pods
//! stop starting.
//!
//! A CNI plugin lives for one command and cannot be scraped; the node daemon is cni-win's one
//! long-running process on a node, and each of its rounds already reads everything these
//! metrics say. [`Metrics`] is the one registry: each task of the round registers its families
//! once, when the daemon takes the task on ([`sweep::SweepMetrics`], [`drift::DriftMetrics`],
//! [`doctor::DoctorMetrics`], [`network_policy::NetworkPolicyMetrics`]), and records what a
//! round found while holding the lock a scrape takes ([`Metrics::publish`]), so a scrape sees
//! a whole round or none of it. The NetworkPolicy agent also works between rounds: what it
//! records then goes through the same lock, so a scrape sees a whole pass or none of it.
//! [`http`] serves the registry. The exposition format is the Prometheus project's own
//! client's (`prometheus-client`), not ours.
//!
//! Every family is named `cniwin_*` and has help text; series that describe the node now
//! (pools, stale objects found, drift, checks) are replaced whole at each round, so a network
//! or a check that went away stops being reported; counters only grow.

pub mod doctor;
pub mod drift;
pub mod http;
pub mod network_policy;
pub mod sweep;

use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, MutexGuard};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

/// What every metric name starts with.
pub const PREFIX: &str = "cniwin";

type FloatGauge = Gauge<f64, AtomicU64>;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: String,
    commit: String,
}

/// Every metric the daemon serves: one registry, each family registered once.
#[derive(Debug)]
pub struct Metrics {
    /// Held while a round is recorded and while the registry is encoded, so a scrape never
    /// sees half a round (families are cleared and refilled).
    registry: Mutex<Registry>,
}

impl Metrics {
    /// The registry, with `version` and `commit` as `cniwin_build_info`'s labels.
    pub fn new(version: &str, commit: &str) -> Metrics {
        let mut registry = Registry::with_prefix(PREFIX);
        registry.register(
            "build",
            "The running cni-win's version and commit (always 1)",
            Info::new(BuildLabels {
                version: version.to_owned(),
                commit: commit.to_owned(),
            }),
        );
        Metrics {
            registry: Mutex::new(registry),
        }
    }

    /// Registers a task's families: once, when the daemon takes the task on.
    pub fn register(&self, families: impl FnOnce(&mut Registry)) {
        families(&mut self.lock());
    }

    /// Records a round: `record` runs while no scrape can encode the registry.
    pub fn publish(&self, record: impl FnOnce()) {
        let _round = self.lock();
        record();
    }

    /// The registry in the text exposition format (OpenMetrics), as a scrape gets it.
    pub fn render(&self) -> String {
        let registry = self.lock();
        let mut text = String::new();
        // Writing into a String cannot fail; an encoding error would be a bug in a label.
        if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &registry) {
            log::error!("cannot encode the metrics: {e}");
        }
        text
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::doctor::{DoctorMetrics, HNS_CHECK};
    use super::drift::{DriftMetrics, Round as DriftRound};
    use super::sweep::SweepMetrics;
    use super::*;
    use crate::doctor::{Finding, Report, Severity};
    use crate::drift::{Drift, Reason as DriftReason};
    use crate::sweep::{ObjectKind, Outcome, Pass, Pool, Reason, StaleObject};

    /// The daemon's registry with every family of its built-in tasks.
    struct Daemon {
        metrics: Metrics,
        sweep: SweepMetrics,
        drift: DriftMetrics,
        doctor: DoctorMetrics,
    }

    impl Daemon {
        fn new() -> Daemon {
            let daemon = Daemon {
                metrics: Metrics::new("0.1.0", "abc"),
                sweep: SweepMetrics::default(),
                drift: DriftMetrics::default(),
                doctor: DoctorMetrics::default(),
            };
            daemon.metrics.register(|registry| {
                daemon.sweep.register(registry);
                daemon.drift.register(registry);
                daemon.doctor.register(registry);
            });
            daemon
        }

        /// One round: the pass (or why it failed), what drifted and doctor's report.
        fn round(&self, pass: Result<&Pass, &crate::Error>, duration: Duration, report: &Report) {
            self.metrics.publish(|| {
                self.sweep.record(pass, duration, SystemTime::now());
                self.drift.record(&DriftRound::default());
                self.doctor.record(report);
            });
        }
    }

    fn report(findings: &[(&str, Severity)]) -> Report {
        Report {
            healthy: findings.iter().all(|(_, v)| *v != Severity::Fail),
            findings: findings
                .iter()
                .map(|(check, severity)| Finding {
                    check: (*check).to_owned(),
                    severity: *severity,
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

    /// The metrics after one round over [`full_pass`], with one drift of each reason.
    fn rendered_full_round() -> String {
        let daemon = Daemon::new();
        daemon.metrics.publish(|| {
            daemon.sweep.record(
                Ok(&full_pass()),
                Duration::from_millis(20),
                SystemTime::now(),
            );
            let found = DriftReason::ALL.map(|reason| Drift {
                reason,
                network: Some("cbr0".to_owned()),
                object: String::new(),
                repair: None,
            });
            daemon.drift.record(&DriftRound {
                found: &found,
                networks: &["cbr0".to_owned()],
                at: Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)),
                repairs: &[(DriftReason::DuplicateAddressRemote, Outcome::Removed)],
            });
            daemon
                .doctor
                .record(&report(&[(HNS_CHECK, Severity::Pass)]));
        });
        daemon.metrics.render()
    }

    #[test]
    fn every_family_is_described_and_named_as_prometheus_asks() {
        let text = rendered_full_round();
        let families: Vec<&str> = text
            .lines()
            .filter_map(|line| line.strip_prefix("# TYPE "))
            .collect();
        assert_eq!(families.len(), 15, "{text}");
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
        for reason in DriftReason::ALL {
            let labels = format!("{{reason=\"{}\",network=\"cbr0\"}}", reason.as_str());
            for series in [
                format!("cniwin_hns_drift{labels} 1\n"),
                format!("cniwin_hns_drift_last_seen_timestamp_seconds{labels} 1700000000.0\n"),
            ] {
                assert!(text.contains(&series), "{series} in {text}");
            }
            let none = format!(
                "cniwin_hns_drift{{reason=\"{}\",network=\"\"}} 0\n",
                reason.as_str()
            );
            assert!(text.contains(&none), "{none} in {text}");
        }
        let repaired = r#"cniwin_hns_drift_repairs_total{reason="duplicate-address-remote",result="removed"} 1"#;
        assert!(text.contains(repaired), "{text}");
    }

    #[test]
    fn an_unreachable_hns_and_a_failed_pass_are_counted() {
        let daemon = Daemon::new();
        let ok = Pass {
            stale: vec![stale(Outcome::Removed)],
            ..full_pass()
        };
        daemon.round(
            Ok(&ok),
            Duration::from_millis(20),
            &report(&[(HNS_CHECK, Severity::Pass)]),
        );
        let first = daemon.metrics.render();
        assert!(first.contains("cniwin_ipam_free_addresses{"));
        let last_success = line(&first, "cniwin_sweep_last_success_timestamp_seconds ")
            .unwrap()
            .to_owned();
        let error = crate::Error::new("HNS is gone");
        daemon.round(
            Err(&error),
            Duration::from_secs(30),
            &report(&[
                (HNS_CHECK, Severity::Fail),
                ("config directory", Severity::Warn),
            ]),
        );
        let text = daemon.metrics.render();
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
        daemon.round(
            Ok(&Pass::default()),
            Duration::from_millis(20),
            &report(&[(HNS_CHECK, Severity::Pass)]),
        );
        let text = daemon.metrics.render();
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
        assert_eq!(served.len(), 15, "{served:?}");
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
