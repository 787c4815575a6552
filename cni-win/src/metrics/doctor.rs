//! doctor's families: whether HNS answered, and which checks fail.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::doctor::{Report, Severity};

/// The check doctor reports HNS's reachability under (`cniwin_hns_up` follows it).
pub const HNS_CHECK: &str = "HNS reachable";

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CheckLabels {
    check: String,
}

/// doctor's families.
#[derive(Debug, Clone, Default)]
pub struct DoctorMetrics {
    hns_up: Gauge,
    check_failing: Family<CheckLabels, Gauge>,
}

impl DoctorMetrics {
    /// Registers every family in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "hns_up",
            "Whether HNS answered at the last round (1) or not (0)",
            self.hns_up.clone(),
        );
        registry.register(
            "doctor_check_failing",
            "Each of doctor's checks at the last round: 1 when it fails (pods cannot get or keep \
             their network), 0 when it passes or warns. `cni-win doctor` on the node says why",
            self.check_failing.clone(),
        );
    }

    /// Records doctor's report of the node at the end of a round.
    pub fn record(&self, report: &Report) {
        self.check_failing.clear();
        let mut hns_up = false;
        for finding in &report.findings {
            let failing = finding.severity == Severity::Fail;
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
}
