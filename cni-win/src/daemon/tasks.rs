//! The daemon's built-in tasks, in the order a round runs them: the drift report (over the
//! round's read), the sweep (which may change HNS) and doctor's checks (over the node as the
//! sweep left it).

use std::collections::BTreeSet;
use std::time::{Duration, Instant, SystemTime};

use prometheus_client::registry::Registry;

use super::{Ran, Round, Task};
use crate::doctor::{Doctor, Report};
use crate::drift::{self, Drift, Reason};
use crate::error::Error;
use crate::metrics::doctor::DoctorMetrics;
use crate::metrics::drift::{DriftMetrics, Round as DriftRound};
use crate::metrics::sweep::SweepMetrics;
use crate::paths::NodePaths;
use crate::sweep::{self, AttachmentLocks, Outcome, Pass};

/// What is told of each pass (the binary prints it).
type OnPass = Box<dyn FnMut(Result<&Pass, &Error>)>;

/// The sweep: what is stale and, with `apply`, its removal (see [`crate::sweep`]).
pub struct SweepTask {
    apply: bool,
    on_pass: OnPass,
    metrics: SweepMetrics,
    last: Option<Swept>,
}

/// The last pass, or why it could not run, how long it took and when it ended.
struct Swept {
    pass: Result<Pass, Error>,
    duration: Duration,
    ended: SystemTime,
}

impl SweepTask {
    /// The sweep, removing what is stale when `apply`; `on_pass` gets each pass.
    pub fn new(apply: bool, on_pass: impl FnMut(Result<&Pass, &Error>) + 'static) -> SweepTask {
        SweepTask {
            apply,
            on_pass: Box::new(on_pass),
            metrics: SweepMetrics::default(),
            last: None,
        }
    }
}

impl std::fmt::Debug for SweepTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SweepTask")
            .field("apply", &self.apply)
            .finish_non_exhaustive()
    }
}

impl Task for SweepTask {
    fn register(&mut self, registry: &mut Registry) {
        self.metrics.register(registry);
    }

    fn run(&mut self, round: &Round<'_>) -> Ran {
        let started = Instant::now();
        let pass = sweep::sweep_node(
            round.client.map(AsRef::as_ref),
            round.node,
            &AttachmentLocks,
            self.apply,
            round.stop,
        );
        let duration = started.elapsed();
        (self.on_pass)(pass.as_ref());
        let changed_hns = pass.as_ref().is_ok_and(|pass| {
            pass.stale
                .iter()
                .any(|stale| matches!(stale.outcome, Some(Outcome::Removed | Outcome::Failed(_))))
        });
        self.last = Some(Swept {
            pass,
            duration,
            ended: SystemTime::now(),
        });
        Ran { changed_hns }
    }

    fn publish(&mut self) {
        if let Some(swept) = &self.last {
            self.metrics
                .record(swept.pass.as_ref(), swept.duration, swept.ended);
        }
    }
}

/// What HNS shows out of step with the node's records ([`crate::drift`]) and, with `apply`,
/// its one repair ([`crate::drift::repair`]).
#[derive(Debug, Default)]
pub struct DriftTask {
    apply: bool,
    metrics: DriftMetrics,
    last: Vec<Drift>,
    networks: Vec<String>,
    judged_at: Option<SystemTime>,
    /// Repairs not yet published.
    repairs: Vec<(Reason, Outcome)>,
    /// The reasons (per network) the last round found: a log line is written when one
    /// appears or clears, not every round.
    logged: BTreeSet<Seen>,
}

impl DriftTask {
    /// The drift report, repairing what is provably wrong when `apply`.
    pub fn new(apply: bool) -> DriftTask {
        DriftTask {
            apply,
            ..DriftTask::default()
        }
    }

    /// Logs each reason (per network) that appeared or cleared since the last round.
    fn log_changes(&mut self) {
        let (now, appeared, cleared) = changes(&self.logged, &self.last);
        for key in &appeared {
            let (reason, network) = key;
            let mut objects = self
                .last
                .iter()
                .filter(|drift| (drift.reason, &drift.network) == (*reason, network));
            let first = objects.next().map(|drift| drift.object.as_str());
            log::warn!(
                "HNS drift appeared ({}){}: {} object(s), first {}; {}; {}",
                reason.as_str(),
                on(network.as_deref()),
                1 + objects.count(),
                first.unwrap_or_default(),
                reason.whose(),
                reason.remedy()
            );
        }
        for (reason, network) in &cleared {
            log::info!(
                "HNS drift cleared ({}){}",
                reason.as_str(),
                on(network.as_deref())
            );
        }
        self.logged = now;
    }
}

/// A reason on a network (`None`: on none).
type Seen = (Reason, Option<String>);

/// What `found` holds, what of it was not in `before` (appeared) and what of `before` it no
/// longer holds (cleared): a reason seen round after round is logged once.
fn changes(before: &BTreeSet<Seen>, found: &[Drift]) -> (BTreeSet<Seen>, Vec<Seen>, Vec<Seen>) {
    let now: BTreeSet<Seen> = found
        .iter()
        .map(|drift| (drift.reason, drift.network.clone()))
        .collect();
    let appeared = now.difference(before).cloned().collect();
    let cleared = before.difference(&now).cloned().collect();
    (now, appeared, cleared)
}

fn on(network: Option<&str>) -> String {
    network
        .map(|network| format!(" on network {network:?}"))
        .unwrap_or_default()
}

impl Task for DriftTask {
    fn register(&mut self, registry: &mut Registry) {
        self.metrics.register(registry);
    }

    fn run(&mut self, round: &Round<'_>) -> Ran {
        self.last = drift::find(round.node);
        self.networks = round
            .node
            .networks()
            .iter()
            .map(|network| network.name().to_owned())
            .collect();
        self.judged_at = Some(SystemTime::now());
        self.log_changes();
        let (true, Some(client)) = (self.apply, round.client) else {
            return Ran::default();
        };
        let repaired = drift::repair::apply(client, &self.last, &AttachmentLocks, round.stop);
        let changed_hns = repaired
            .iter()
            .any(|(_, outcome)| matches!(outcome, Outcome::Removed | Outcome::Failed(_)));
        for (drift, outcome) in repaired {
            log::info!(
                "HNS drift repair ({}){}: {}: {}",
                drift.reason.as_str(),
                on(drift.network.as_deref()),
                drift.object,
                match &outcome {
                    Outcome::Failed(why) => format!("failed: {why}"),
                    other => other.as_str().to_owned(),
                }
            );
            self.repairs.push((drift.reason, outcome));
        }
        Ran { changed_hns }
    }

    fn publish(&mut self) {
        self.metrics.record(&DriftRound {
            found: &self.last,
            networks: &self.networks,
            at: self.judged_at,
            repairs: &self.repairs,
        });
        self.repairs.clear();
    }
}

/// doctor's checks of the node as the round left it ([`crate::doctor`]).
#[derive(Debug)]
pub struct DoctorTask {
    doctor: Doctor,
    metrics: DoctorMetrics,
    last: Option<Report>,
}

impl DoctorTask {
    /// The checks of the node whose runtime uses `paths`.
    pub fn new(paths: NodePaths) -> DoctorTask {
        DoctorTask {
            doctor: Doctor::new(paths),
            metrics: DoctorMetrics::default(),
            last: None,
        }
    }
}

impl Task for DoctorTask {
    fn register(&mut self, registry: &mut Registry) {
        self.metrics.register(registry);
    }

    fn run(&mut self, round: &Round<'_>) -> Ran {
        self.last = Some(
            self.doctor
                .examine(round.client.map(AsRef::as_ref), round.node),
        );
        Ran::default()
    }

    fn publish(&mut self) {
        if let Some(report) = &self.last {
            self.metrics.record(report);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drift(reason: Reason, network: &str) -> Drift {
        Drift {
            reason,
            network: Some(network.to_owned()),
            object: String::new(),
            repair: None,
        }
    }

    /// A reason is logged when it appears on a network and when it clears, not every round it
    /// stays, however many objects it counts.
    #[test]
    fn a_reason_is_logged_when_it_appears_and_when_it_clears_only() {
        let seen = |reason, network: &str| (reason, Some(network.to_owned()));
        let first = [
            drift(Reason::DuplicateAddressOurs, "cbr0"),
            drift(Reason::DuplicateAddressOurs, "cbr0"),
        ];
        let (now, appeared, cleared) = changes(&BTreeSet::new(), &first);
        assert_eq!(appeared, [seen(Reason::DuplicateAddressOurs, "cbr0")]);
        assert!(cleared.is_empty());
        let (now, appeared, cleared) = changes(&now, &first[..1]);
        assert!(appeared.is_empty() && cleared.is_empty(), "still there");
        let (_, appeared, cleared) =
            changes(&now, &[drift(Reason::DuplicateAddressOurs, "vxlan0")]);
        assert_eq!(appeared, [seen(Reason::DuplicateAddressOurs, "vxlan0")]);
        assert_eq!(cleared, [seen(Reason::DuplicateAddressOurs, "cbr0")]);
    }
}
