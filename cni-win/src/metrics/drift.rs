//! The drift families: what a round found out of step between HNS and the node's records, by
//! reason and network, when each was last seen, and what `--apply` repaired
//! ([`crate::drift`]).

use std::time::{SystemTime, UNIX_EPOCH};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::FloatGauge;
use crate::drift::{Drift, Reason};
use crate::sweep::Outcome;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DriftLabels {
    reason: &'static str,
    /// The HNS network; empty for what is on none (HNS unreadable, a load balancer whose
    /// backends are all gone).
    network: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RepairLabels {
    reason: &'static str,
    result: &'static str,
}

/// The drift families.
#[derive(Debug, Clone, Default)]
pub struct DriftMetrics {
    drift: Family<DriftLabels, Gauge>,
    last_seen: Family<DriftLabels, FloatGauge>,
    repairs: Family<RepairLabels, Counter>,
}

/// What one round found and repaired, as the families record it.
#[derive(Debug, Default)]
pub struct Round<'r> {
    /// Everything found.
    pub found: &'r [Drift],
    /// cni-win's networks this round (each gets a series per reason, 0 when none).
    pub networks: &'r [String],
    /// When the round's read was judged.
    pub at: Option<SystemTime>,
    /// What each repair came to.
    pub repairs: &'r [(Reason, Outcome)],
}

impl DriftMetrics {
    /// Registers every family in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "hns_drift",
            "What the last round found out of step between HNS and the node's records, by \
             reason and HNS network (docs/hns-drift.md says what each is, whose it is and what \
             to do): endpoint-detached, endpoint-without-reservation, \
             reservation-without-endpoint, network-gone (cni-win's; the sweep removes the \
             stale ones), duplicate-address-ours, duplicate-address-remote (repaired with \
             --apply inside this node's pod subnet), duplicate-address-foreign, \
             remote-endpoint-in-pod-subnet, load-balancer-half-created, \
             load-balancer-backend-gone, flannel-network-missing, flannel-network-stale \
             (reported, never touched), hns-unreadable (nothing is removed that round)",
            self.drift.clone(),
        );
        registry.register(
            "hns_drift_last_seen_timestamp_seconds",
            "When a round last found drift of this reason on this network (Unix time)",
            self.last_seen.clone(),
        );
        registry.register(
            "hns_drift_repairs",
            "Repairs of drift with --apply, by reason and result (removed, skipped: a command \
             of the pod was in flight, alive: read again it was no longer wrong, failed, \
             abandoned: the daemon was stopping)",
            self.repairs.clone(),
        );
    }

    /// Records a round: every reason has a series per network, 0 when nothing drifted that
    /// way; the last-seen time of what was found; the repairs.
    pub fn record(&self, round: &Round<'_>) {
        self.drift.clear();
        let networks = round
            .networks
            .iter()
            .map(String::as_str)
            .chain([""])
            .chain(round.found.iter().filter_map(|d| d.network.as_deref()));
        for network in networks {
            for reason in Reason::ALL {
                self.drift.get_or_create(&labels(reason, network)).set(0);
            }
        }
        let seconds = round
            .at
            .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
            .map(|since| since.as_secs_f64());
        for drift in round.found {
            let labels = labels(drift.reason, drift.network.as_deref().unwrap_or_default());
            self.drift.get_or_create(&labels).inc();
            if let Some(seconds) = seconds {
                self.last_seen.get_or_create(&labels).set(seconds);
            }
        }
        for (reason, outcome) in round.repairs {
            self.repairs
                .get_or_create(&RepairLabels {
                    reason: reason.as_str(),
                    result: outcome.as_str(),
                })
                .inc();
        }
    }
}

fn labels(reason: Reason, network: &str) -> DriftLabels {
    DriftLabels {
        reason: reason.as_str(),
        network: network.to_owned(),
    }
}
