//! The sweep's families: how full each pool is, what the pass found stale and removed, and
//! the passes themselves.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

use super::FloatGauge;
use crate::error::Error;
use crate::sweep::{Outcome, Pass};

/// Upper bounds of the pass-duration histogram, in seconds: a pass reads HNS once and each store
/// once, which takes tens of milliseconds on a quiet node and seconds when HNS is slow; a pass
/// near a minute means HNS is near its deadline.
const PASS_SECONDS: [f64; 10] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

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
struct ResultLabels {
    result: &'static str,
}

/// The sweep's families.
#[derive(Debug, Clone)]
pub struct SweepMetrics {
    pool_addresses: Family<PoolLabels, FloatGauge>,
    pool_reserved: Family<PoolLabels, FloatGauge>,
    pool_free: Family<PoolLabels, FloatGauge>,
    stale_found: Family<StaleLabels, Gauge>,
    stale_removed: Family<StaleLabels, Counter>,
    stale_failed: Family<StaleLabels, Counter>,
    passes: Family<ResultLabels, Counter>,
    pass_duration: Histogram,
    last_success: FloatGauge,
}

impl Default for SweepMetrics {
    fn default() -> SweepMetrics {
        SweepMetrics {
            pool_addresses: Family::default(),
            pool_reserved: Family::default(),
            pool_free: Family::default(),
            stale_found: Family::default(),
            stale_removed: Family::default(),
            stale_failed: Family::default(),
            passes: Family::default(),
            pass_duration: Histogram::new(PASS_SECONDS),
            last_success: FloatGauge::default(),
        }
    }
}

impl SweepMetrics {
    /// Registers every family in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "ipam_addresses",
            "Addresses a network's host-local range set can hand out (gateways and excluded \
             addresses left out)",
            self.pool_addresses.clone(),
        );
        registry.register(
            "ipam_reserved_addresses",
            "Addresses of a range set that hold a reservation (pods' and node components' such as \
             kube-proxy's source VIP), after the last pass",
            self.pool_reserved.clone(),
        );
        registry.register(
            "ipam_free_addresses",
            "Addresses of a range set a new pod can still get; at 0 every ADD fails with code 100",
            self.pool_free.clone(),
        );
        registry.register(
            "stale_objects",
            "Stale endpoints and reservations the last pass found, by network, kind and reason",
            self.stale_found.clone(),
        );
        registry.register(
            "stale_objects_removed",
            "Stale endpoints and reservations removed since the daemon started (only with --apply)",
            self.stale_removed.clone(),
        );
        registry.register(
            "stale_objects_remove_failures",
            "Stale objects whose removal failed since the daemon started (the next pass retries)",
            self.stale_failed.clone(),
        );
        registry.register(
            "sweep_passes",
            "Sweep passes since the daemon started, by result: ok, or failed (a network or file \
             that could not be examined, a removal that failed, HNS unreachable)",
            self.passes.clone(),
        );
        registry.register_with_unit(
            "sweep_pass_duration",
            "How long a sweep pass took",
            Unit::Seconds,
            self.pass_duration.clone(),
        );
        registry.register(
            "sweep_last_success_timestamp_seconds",
            "When the last pass that failed nothing ended (Unix time); 0 until one has",
            self.last_success.clone(),
        );
    }

    /// Records one pass (or why it could not run), how long it took and when it ended.
    pub fn record(&self, pass: Result<&Pass, &Error>, duration: Duration, ended: SystemTime) {
        let ok = pass.is_ok_and(|pass| !pass.failed());
        self.passes
            .get_or_create(&ResultLabels {
                result: if ok { "ok" } else { "failed" },
            })
            .inc();
        self.pass_duration.observe(duration.as_secs_f64());
        if ok {
            let seconds = ended
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs_f64();
            self.last_success.set(seconds);
        }
        // Without a pass nothing is known of the pools and stale objects now: a scrape shows
        // none rather than the last pass's as if they were current.
        self.forget_the_node();
        if let Ok(pass) = pass {
            self.record_pass(pass);
        }
    }

    fn forget_the_node(&self) {
        for family in [&self.pool_addresses, &self.pool_reserved, &self.pool_free] {
            family.clear();
        }
        self.stale_found.clear();
    }

    fn record_pass(&self, pass: &Pass) {
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
                Some(Outcome::Skipped | Outcome::Alive | Outcome::Abandoned) | None => {}
            }
        }
    }
}
