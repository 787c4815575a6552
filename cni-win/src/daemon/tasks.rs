//! The daemon's built-in tasks, in the order a round runs them: the drift report (over the
//! round's read), the sweep (which may change HNS) and doctor's checks (over the node as the
//! sweep left it).

use std::time::{Duration, Instant, SystemTime};

use prometheus_client::registry::Registry;

use super::{Ran, Round, Task};
use crate::doctor::{Doctor, Report};
use crate::drift::{self, Drift};
use crate::error::Error;
use crate::metrics::doctor::DoctorMetrics;
use crate::metrics::drift::DriftMetrics;
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

/// What HNS shows out of step with the node's records ([`crate::drift`]).
#[derive(Debug, Default)]
pub struct DriftTask {
    metrics: DriftMetrics,
    last: Vec<Drift>,
}

impl Task for DriftTask {
    fn register(&mut self, registry: &mut Registry) {
        self.metrics.register(registry);
    }

    fn run(&mut self, round: &Round<'_>) -> Ran {
        self.last = drift::find(round.node);
        for drift in &self.last {
            log::info!(
                "HNS drift ({}): {}{}",
                drift.reason.as_str(),
                drift
                    .network
                    .as_ref()
                    .map(|network| format!("network {network:?}: "))
                    .unwrap_or_default(),
                drift.object
            );
        }
        Ran::default()
    }

    fn publish(&mut self) {
        self.metrics.record(&self.last);
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
