//! The drift family: what a round found out of step between HNS and the node's own records,
//! by reason ([`crate::drift`]).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::drift::{Drift, Reason};

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DriftLabels {
    reason: &'static str,
}

/// The drift family.
#[derive(Debug, Clone, Default)]
pub struct DriftMetrics {
    drift: Family<DriftLabels, Gauge>,
}

impl DriftMetrics {
    /// Registers the family in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "hns_drift",
            "What the last round found out of step between HNS and the node's records, by \
             reason: endpoint-detached (an endpoint of cni-win's attached to no namespace; the \
             sweep removes it), remote-endpoint-on-pod-address (another component's remote \
             endpoint holding a local pod's address; reported, never removed), network-gone \
             (pods' reservations of a network HNS no longer has, as after a reboot; the sweep \
             releases them), hns-unreadable (HNS could not be read; nothing is removed that \
             round)",
            self.drift.clone(),
        );
    }

    /// Records a round's drift: every reason has a series, 0 when nothing drifted that way.
    pub fn record(&self, found: &[Drift]) {
        for reason in Reason::ALL {
            let count = found.iter().filter(|drift| drift.reason == reason).count();
            self.drift
                .get_or_create(&DriftLabels {
                    reason: reason.as_str(),
                })
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
    }
}
