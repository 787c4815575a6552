//! The programmer thread: the one code that writes HNS for policy.
//!
//! It has work when a daemon round hands it the round's read (the [`Mailbox`]: a pass over
//! that read, whose outcome goes back to the round), when the cluster changed since the last
//! pass (a pass after [`DEBOUNCE`](super::DEBOUNCE), over its view of HNS brought up to
//! date), when an item HNS refused is due to be tried again (`failing`: each endpoint's and
//! set's backoff its own; the pass writes everything else as usual and re-reads only what it
//! wrote to), and when a pass that could not read HNS is due to be tried again (1 s doubling
//! to 30 s, over a full read of its own). Nothing is programmed before the first round: the
//! round's read is where the programmer learns cni-win's networks, their configs and HNS's
//! features, and the round's client is the one it writes through.
//!
//! Felix, Calico's dataplane for Windows, has the same shape: one loop owns HNS and is kicked
//! by the calculation graph's updates and by its own reschedule timer after a failure.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cni_win_core::configured::PolicySettings;
use cni_win_core::snapshot::NodeSnapshot;
use cni_win_netpol::{Item, Mode};
use hns::{Client, Guid, HnsError, SupportedFeatures};

use super::failing::Failing;
use super::hns_view::{HnsView, Written};
use super::program::{self, Refused};
use super::snapshot::{self, Rendering};
use super::{DEBOUNCE, Shared};
use crate::metrics::network_policy::{ApiState, NetworkPolicyMetrics, PolicyCounts};

/// The longest a burst of changes delays a pass: a steady stream of events still programs.
const DEBOUNCE_AT_MOST: Duration = Duration::from_millis(200);

/// How long the programmer waits before trying again after a pass could not read HNS,
/// doubling up to [`RETRY_AT_MOST`].
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_AT_MOST: Duration = Duration::from_secs(30);

/// The longest a round waits for the programmer's pass over its read. A pass is bounded
/// anyway (each HNS call has the node tools' deadline); this keeps a round from waiting for
/// a programmer busy with a very large node or a slow HNS: the pass still completes, and the
/// tasks after it read HNS again.
const ROUND_WAITS_AT_MOST: Duration = Duration::from_secs(120);

/// What a round hands the programmer: its read of the node and the daemon's client.
#[derive(Debug)]
pub(crate) struct RoundRead {
    pub client: Arc<Client>,
    pub hns: NodeSnapshot,
    /// cni-win's networks' NetworkPolicy settings; `None` when the round could not read the
    /// config directory (the programmer keeps the last it had).
    pub networks: Option<Vec<PolicySettings>>,
}

/// Rounds' reads on their way to the programmer, and its passes over them on their way back.
#[derive(Debug, Default)]
pub(crate) struct Mailbox {
    /// Reads handed over so far: each round's read is tagged with the count.
    posted: u64,
    /// The latest round's read, until the programmer takes it.
    read: Option<(u64, RoundRead)>,
    /// The pass over a round's read, until that round takes it.
    passed: Option<(u64, Result<Pass, NotProgrammed>)>,
}

/// What a pass did.
#[derive(Debug, Clone)]
pub struct Pass {
    /// How HNS was programmed.
    pub mode: Mode,
    /// `HcnModifyEndpoint` requests made.
    pub endpoint_writes: u64,
    /// `HcnModifyNetwork` requests made.
    pub network_writes: u64,
    /// The writes HNS refused: each left its endpoint or set as it was, to be tried again on
    /// a backoff of its own; everything else was programmed.
    pub refused: Vec<Refused>,
    /// What HNS and the cluster came to.
    pub counts: PolicyCounts,
    /// From the first change this pass programmed to HNS holding it.
    pub latency: Option<Duration>,
    /// The writes put back what drifted: a round's pass when HNS should have held everything
    /// already (every change was programmed before). A round's pass that also programs a
    /// change counts its writes as programming.
    pub repaired: bool,
}

impl Pass {
    /// Whether the pass wrote to HNS, or tried to.
    pub fn wrote(&self) -> bool {
        self.endpoint_writes + self.network_writes > 0 || !self.refused.is_empty()
    }
}

/// Why a pass did not program.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NotProgrammed {
    /// No daemon round has handed the programmer the node yet.
    #[error("no daemon round has read the node yet")]
    NoRead,
    /// Not every watch has listed its resource once: nothing is written yet.
    #[error("not every watch has listed its resource once")]
    NotSynced,
    /// HNS could not be read.
    #[error("cannot read HNS: {0}")]
    Read(#[source] HnsError),
}

impl NotProgrammed {
    /// HNS failed the pass: tried again after a while, over a full read.
    fn is_failure(&self) -> bool {
        matches!(self, NotProgrammed::Read(_))
    }
}

/// HNS as the last round handed it over.
#[derive(Debug)]
struct Hns {
    client: Arc<Client>,
    features: SupportedFeatures,
    /// What HNS holds; `None` after a failure, until a full read.
    view: Option<HnsView>,
}

/// The programmer's own state, on its thread.
#[derive(Debug, Default)]
struct Programmer {
    hns: Option<Hns>,
    networks: Vec<PolicySettings>,
    written: Written,
    retry: Retry,
    snapshots: snapshot::Files,
    failing: Failing,
}

/// The backoff after passes that could not read HNS.
#[derive(Debug)]
struct Retry {
    next: Duration,
    at: Option<Instant>,
}

impl Default for Retry {
    fn default() -> Retry {
        Retry {
            next: RETRY_FIRST,
            at: None,
        }
    }
}

impl Retry {
    fn after(&mut self, outcome: &Result<Pass, NotProgrammed>) {
        match outcome {
            Err(e) if e.is_failure() => {
                self.at = Some(Instant::now() + self.next);
                self.next = (self.next * 2).min(RETRY_AT_MOST);
            }
            _ => *self = Retry::default(),
        }
    }

    fn due(&self) -> bool {
        self.at.is_some_and(|at| Instant::now() >= at)
    }
}

/// What the programmer does next.
enum Work {
    /// A pass over a round's read, for that round.
    Round(u64, RoundRead),
    /// A pass after a change, or a retry.
    Change,
    /// Every tenth of the snapshots' bound: stamp them while the agent vouches for them,
    /// and look for a network whose config names a snapshot that HNS lacked (flanneld
    /// creates it after the round's read, at the node's start): a snapshot names the HNS
    /// network it is for, so ADD on that network waits until the agent has seen it.
    Tick,
}

impl Shared {
    /// Hands the programmer a round's read and waits for its pass over it: at most
    /// [`ROUND_WAITS_AT_MOST`], and not once the daemon or the agent stops (`None` then; the
    /// pass goes on).
    pub(super) fn repair(&self, read: RoundRead) -> Option<Result<Pass, NotProgrammed>> {
        let until = Instant::now() + ROUND_WAITS_AT_MOST;
        let mut state = self.lock_state();
        state.mailbox.posted += 1;
        let tag = state.mailbox.posted;
        state.mailbox.read = Some((tag, read));
        self.wake.notify_all();
        loop {
            if let Some((done, _)) = &state.mailbox.passed
                && *done == tag
            {
                return state.mailbox.passed.take().map(|(_, outcome)| outcome);
            }
            let left = until.saturating_duration_since(Instant::now());
            if self.stopping() || left.is_zero() {
                return None;
            }
            state = self
                .passed
                .wait_timeout(state, left.min(crate::shutdown::POLL))
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }
}

/// The programmer thread, until the agent stops.
pub(super) fn run(shared: &Shared) {
    let mut programmer = Programmer::default();
    while let Some(work) = next(shared, &programmer) {
        match work {
            Work::Round(tag, read) => {
                let outcome = programmer.pass(shared, Some(read));
                programmer.retry.after(&outcome);
                shared.lock_state().mailbox.passed = Some((tag, outcome));
            }
            Work::Change => {
                let outcome = programmer.pass(shared, None);
                programmer.retry.after(&outcome);
                publish(shared, &outcome);
                log_outcome(&outcome);
            }
            Work::Tick => {
                if let Some(outcome) = programmer.tick(shared) {
                    programmer.retry.after(&outcome);
                    publish(shared, &outcome);
                    log_outcome(&outcome);
                }
            }
        }
        shared.passed.notify_all();
    }
}

/// Waits for work: a round's read first, then a change not yet programmed or a refused item
/// due again (once the programmer has had a round's read; not while a failed read waits for
/// its retry), then a read's retry that is due. `None` once the agent stops.
fn next(shared: &Shared, programmer: &Programmer) -> Option<Work> {
    let mut state = shared.lock_state();
    loop {
        if shared.stopping() {
            return None;
        }
        if let Some((tag, read)) = state.mailbox.read.take() {
            return Some(Work::Round(tag, read));
        }
        let pending = programmer.hns.is_some()
            && state.feed.synced()
            && state.feed.programmed != Some(state.feed.generation);
        let item_due = programmer.retry.at.is_none()
            && programmer
                .failing
                .next_due()
                .is_some_and(|due| Instant::now() >= due);
        if programmer.retry.due() || (programmer.retry.at.is_none() && pending) || item_due {
            break;
        }
        if programmer.hns.is_some() && programmer.snapshots.tick_due(shared.snapshot_max_age) {
            return Some(Work::Tick);
        }
        state = shared
            .wake
            .wait_timeout(state, crate::shutdown::POLL)
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .0;
    }
    // Debounce: let the changes that come with this one arrive (a round's read ends it).
    let first = Instant::now();
    loop {
        let generation = state.feed.generation;
        state = shared
            .wake
            .wait_timeout(state, DEBOUNCE)
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .0;
        if state.feed.generation == generation
            || state.mailbox.read.is_some()
            || first.elapsed() >= DEBOUNCE_AT_MOST
        {
            break;
        }
    }
    Some(match state.mailbox.read.take() {
        Some((tag, read)) => Work::Round(tag, read),
        None => Work::Change,
    })
}

impl Programmer {
    /// One pass: over a round's read (`round`), or over the view brought up to date.
    fn pass(&mut self, shared: &Shared, round: Option<RoundRead>) -> Result<Pass, NotProgrammed> {
        let fresh = round.is_some();
        if let Some(round) = round {
            if let Some(networks) = round.networks {
                self.networks = networks;
            }
            let features = round.hns.features;
            let view = HnsView::from_round(round.hns, &mut self.written, &round.client);
            self.hns = Some(Hns {
                client: round.client,
                features,
                view: view.ok(),
            });
        }
        let Some(hns) = &mut self.hns else {
            return Err(NotProgrammed::NoRead);
        };
        let mode = Mode::for_features(hns.features);
        let mut view = match hns.view.take() {
            Some(view) if fresh => Ok(view),
            Some(mut view) => view.catch_up(&hns.client).map(|()| view),
            None => HnsView::read(&hns.client, hns.features),
        }
        .map_err(NotProgrammed::Read)?;
        let on_disk = self.snapshots.on_disk(&self.networks);
        let rendering = Rendering {
            mode,
            max_age: shared.snapshot_max_age,
        };
        let (plan, since, repair, as_of) = {
            let mut state = shared.lock_state();
            let Some(as_of) = state.feed.current_as_of() else {
                let node = state.feed.node_name.clone();
                drop(state);
                snapshot::announce(&node, rendering.max_age, &self.networks, view.hns());
                hns.view = Some(view);
                return Err(NotProgrammed::NotSynced);
            };
            let plan = program::plan(rendering, &self.networks, view.hns(), &state.feed, &on_disk);
            let repair = fresh && state.feed.programmed == Some(state.feed.generation);
            (plan, state.feed.changed_since.take(), repair, as_of)
        };
        let now = Instant::now();
        let applied = program::apply(&hns.client, &plan, |network, item, writes| {
            self.failing.holds(network, item, writes, now)
        });
        self.written.note(&applied.written);
        view.wrote(&applied.written);
        hns.view = Some(view);
        let was_waiting = self.failing.waiting().clone();
        let waits = self.failing.note(&applied, Instant::now());
        log_refusals(&plan, &applied, &waits, &was_waiting);
        let failing = self.failing.endpoints();
        // After the writes: the IP sets the new files name are on the networks now, but for
        // those HNS refused.
        let snapshots = self.snapshots.write(
            &plan.snapshots,
            plan.generation,
            as_of,
            &failing,
            &applied.absent_sets,
        );
        shared.lock_state().feed.programmed = Some(plan.generation);
        let (failing, programmed): (Vec<&Guid>, Vec<&Guid>) = plan
            .pods
            .keys()
            .partition(|endpoint| failing.contains_key(endpoint));
        Ok(Pass {
            mode,
            endpoint_writes: applied.endpoint_writes,
            network_writes: applied.network_writes,
            repaired: repair && applied.endpoint_writes + applied.network_writes > 0,
            refused: applied.refused,
            counts: PolicyCounts {
                snapshots,
                endpoints_programmed: programmed.len(),
                endpoints_failing: failing.len(),
                ..plan.counts
            },
            latency: since.map(|since| since.elapsed()),
        })
    }
}

/// Logs each write HNS refused (its HRESULT in HNS's answer) and each endpoint left waiting
/// for a set.
fn log_refusals(
    plan: &program::Plan,
    applied: &program::Applied,
    waits: &[Duration],
    was_waiting: &BTreeMap<Guid, (Guid, String)>,
) {
    let pod = |endpoint: &Guid| {
        plan.pods.get(endpoint).map_or_else(String::new, |pod| {
            format!(" (pod {}/{})", pod.namespace, pod.name)
        })
    };
    for (refused, wait) in applied.refused.iter().zip(waits) {
        let whose = match &refused.item {
            Item::Endpoint(endpoint) => pod(endpoint),
            Item::Set(_) => String::new(),
        };
        log::error!(
            "network policy: {refused}{whose}: it keeps what it holds; every other endpoint and \
             set is programmed; tried again in {wait:?}"
        );
    }
    // A pass follows every change: an endpoint still waiting for the same set was told.
    let told =
        |endpoint: &Guid, waiting: &(Guid, String)| was_waiting.get(endpoint) == Some(waiting);
    for (endpoint, waiting) in &applied.waiting {
        if told(endpoint, waiting) {
            continue;
        }
        let set = &waiting.1;
        log::warn!(
            "network policy: endpoint {endpoint}{}: its new rules name IP set {set}, which HNS \
             has not taken: it keeps the rules it holds until the set is written",
            pod(endpoint)
        );
    }
}

impl Programmer {
    /// The heartbeat ([`Work::Tick`]): a pass over a full read of HNS when a network the
    /// programmer lacked has appeared; else the snapshots stamped, when the agent vouches
    /// for them: synced, every watch answering, and nothing fed since they were rendered (a
    /// pass that cannot render, HNS unreadable, lets them go stale).
    fn tick(&mut self, shared: &Shared) -> Option<Result<Pass, NotProgrammed>> {
        self.snapshots.ticked();
        if let Some(hns) = &mut self.hns
            && appeared(&self.networks, hns)
        {
            hns.view = None;
            return Some(self.pass(shared, None));
        }
        let as_of = {
            let state = shared.lock_state();
            let vouched = state.feed.api().up
                && self.snapshots.rendered_from() == Some(state.feed.generation);
            vouched.then(|| state.feed.current_as_of())??
        };
        self.snapshots.stamp(as_of, shared.snapshot_max_age);
        None
    }
}

/// Whether a network whose config names a snapshot, missing from what the programmer knows
/// of HNS, is there now (3 raw calls for each missing one; none when none is).
fn appeared(networks: &[PolicySettings], hns: &Hns) -> bool {
    let Some(view) = &hns.view else {
        return false;
    };
    let known = &view.hns().networks;
    networks
        .iter()
        .filter(|network| network.snapshot.is_some())
        .filter(|network| !known.iter().any(|held| held.name == network.network))
        .any(|network| hns.client.find_network_by_name(&network.network).is_ok())
}

/// Publishes a pass made between rounds, under the lock a scrape takes.
fn publish(shared: &Shared, outcome: &Result<Pass, NotProgrammed>) {
    let api = shared.lock_state().feed.api();
    if let Some(metrics) = shared.daemon_metrics.get() {
        metrics.publish(|| record(&shared.metrics, api, outcome));
    }
}

/// Records a pass and the API's state in the agent's families. Called only inside the
/// daemon's [`crate::metrics::Metrics::publish`].
pub(super) fn record(
    metrics: &NetworkPolicyMetrics,
    api: ApiState,
    outcome: &Result<Pass, NotProgrammed>,
) {
    metrics.record_api(api);
    match outcome {
        Ok(pass) => {
            metrics.record_mode(pass.mode.as_str());
            metrics.record_writes(pass.endpoint_writes, pass.network_writes, pass.repaired);
            for refused in &pass.refused {
                metrics.record_refused(refused.object(), refused.source.hresult());
            }
            metrics.record_counts(&pass.counts);
            if let Some(latency) = pass.latency {
                metrics.record_latency(latency);
            }
        }
        Err(e) if e.is_failure() => metrics.record_failure(),
        Err(_) => {}
    }
}

/// Logs what a pass came to.
pub(super) fn log_outcome(outcome: &Result<Pass, NotProgrammed>) {
    match outcome {
        Ok(pass) if pass.repaired => log::warn!(
            "network policy: HNS had drifted from the rules: {} endpoint and {} network \
             write(s) put them back",
            pass.endpoint_writes,
            pass.network_writes
        ),
        Err(e) if e.is_failure() => log::error!(
            "network policy: programming HNS failed ({e}): what was written stays; trying again \
             over a new read"
        ),
        _ => {}
    }
}
