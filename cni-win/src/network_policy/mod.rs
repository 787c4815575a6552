//! The NetworkPolicy agent of the node daemon (`cni-win daemon --network-policy`):
//! Kubernetes NetworkPolicy enforced with HNS ACLs on the pods of this node, beside Flannel.
//!
//! ```text
//!  API server ── watches (kube-rs, on a tokio thread of their own: `watches`) ─┐
//!      ▲                                                                    ▼
//!      └── Events on refused policies ◄─────────────────────────── Feed ── ClusterState
//!                                                                           │ (translation's
//!                                          each change (debounced)          │  values only)
//!  daemon round ── NetworkPolicyTask ── its read of the node ──► the programmer thread:
//!                  (waits for the pass)  and the daemon's client  the one writer of HNS
//!                                                                 for policy (`programmer`):
//!                                                                 plan, write, the snapshot
//! ```
//!
//! - **One writer, the daemon's read**: the programmer thread is the only code that writes
//!   HNS for policy, through the daemon's one HNS client. It starts from the daemon's first
//!   round: each round hands it the round's read of the node (HNS and the networks' configs)
//!   and waits for its pass over that read ([`NetworkPolicyTask`]), which repairs whatever
//!   drifted (a rule removed behind the agent's back is back within one round) at no HCN
//!   call beyond the writes. Between rounds the programmer keeps that read up to date for
//!   little (`hns_view`).
//! - **Reacts** to the API server: a change wakes the programmer, which waits [`DEBOUNCE`]
//!   for the changes that come with it, then programs HNS (a [`Pass`]): the latency from a
//!   watch event to HNS holding the result is a histogram of the metrics.
//! - **A refusal stays where it happened**: HNS refusing a write leaves that endpoint (or IP
//!   set) as it was; every other endpoint, set and network is programmed in the same pass,
//!   in an order that opens no window ([`cni_win_netpol::Writes::apply`]), and the refused
//!   item is tried again on a backoff of its own (1 s doubling to 30 s), reading again only
//!   what it wrote to. It is counted (`cniwin_netpol_endpoints{state="failing"}`,
//!   `cniwin_netpol_hns_refusals_total` by HRESULT), logged with HNS's answer, and recorded
//!   in the snapshot for doctor. "Policy not found" on a `Remove` is not "endpoint gone": the
//!   endpoint is read again and its writes finished at once.
//! - **Restarts without a window**: every rule's `Id` is its content, so a new process that
//!   reads HNS and computes the same rules writes nothing; nothing at all is written (HNS or
//!   snapshot) until every watch has listed its resource once.
//! - **Fails static**: while the API server cannot be reached, what was fed stays, HNS keeps
//!   the last programmed rules, and `cniwin_netpol_api_up` is 0 (and a log line says so).
//! - **Refuses loudly**: a policy HNS cannot enforce as written is enforced by its
//!   fail-closed stand-in, logged, counted, and told as an Event on the policy (one in the
//!   cluster, whichever node's agent creates it first; retried until the API server takes
//!   it).
//! - **Meets ADD** through the snapshot ([`cni_win_core::network_policy`]), written after
//!   each pass that changed it, once the pass's writes are made (the IP sets its rules name
//!   exist then), and stamped while the agent is synced and every watch answers: a snapshot
//!   the agent stopped stamping (it stopped, or lost the API server) is refused by ADD
//!   after its bound. Before its first sync the agent says it runs (a snapshot without
//!   policy where there is none), so ADD bounds how long new pods start without rules.
//! - **Metrics** as the daemon's other tasks set theirs: a round's pass is published with the
//!   round; what happens between rounds (a pass after a change, the API server lost or back)
//!   is published at once through the same lock a scrape takes, so a scrape never sees half
//!   of either.
//!
//! The programming mode follows the host's HNS version ([`cni_win_netpol::Mode::for_features`]):
//! network IP sets (one `SetPolicy` update for a selector's membership change) from HNS 13.0,
//! rules listing their peers inline before.

mod failing;
mod feed;
mod hns_view;
mod program;
mod programmer;
mod snapshot;
mod task;
mod watches;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

pub use feed::{Event, Feed, Refusal, Resource};
pub use program::Refused;
pub use programmer::{NotProgrammed, Pass};
pub use task::NetworkPolicyTask;
pub use watches::ApiSettings;

use self::feed::ClusterState;
use self::programmer::Mailbox;
use crate::error::Error;
use crate::metrics::Metrics;
use crate::metrics::network_policy::{ApiState, NetworkPolicyMetrics};
use crate::shutdown::Shutdown;

/// How long the programmer waits after a change for the changes that come with it (a
/// Deployment's pods, a namespace relabelled with its pods), so a burst costs one pass.
pub const DEBOUNCE: Duration = Duration::from_millis(20);

/// What the agent is asked to do.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The node it runs on (`--node-name`, else `NODE_NAME`, as DaemonSets pass it).
    pub node_name: String,
    /// How long after the agent last confirmed it ADD may use the snapshot
    /// (`--snapshot-max-age`; [`cni_win_core::network_policy::DEFAULT_MAX_AGE`]): the agent
    /// stamps it at least every tenth of that while it is synced and every watch answers.
    pub snapshot_max_age: Duration,
}

/// What the agent's threads and the daemon's task share.
#[derive(Debug)]
pub(crate) struct Shared {
    state: Mutex<AgentState>,
    /// Wakes the programmer: the cluster changed, a round handed over its read, the agent
    /// stops.
    wake: Condvar,
    /// Wakes whoever waits for a pass: the round whose read it was.
    passed: Condvar,
    metrics: NetworkPolicyMetrics,
    /// The daemon's metrics, once the agent's task is one of the daemon's: what happens
    /// between rounds is published through them.
    daemon_metrics: OnceLock<Arc<Metrics>>,
    /// How long ADD may use a snapshot after its last stamp ([`Settings::snapshot_max_age`]).
    snapshot_max_age: Duration,
    /// The daemon's stop.
    stop: Shutdown,
    /// The agent's own stop (dropped).
    dropped: AtomicBool,
}

/// What is behind the agent's one lock: the cluster as fed, and the rounds' reads on their
/// way to the programmer and its passes over them on their way back.
#[derive(Debug)]
pub(crate) struct AgentState {
    pub feed: ClusterState,
    pub mailbox: Mailbox,
}

impl Shared {
    fn lock_state(&self) -> MutexGuard<'_, AgentState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn stopping(&self) -> bool {
        self.dropped.load(Ordering::SeqCst) || self.stop.is_requested()
    }

    /// Publishes, between rounds, whether the API answers. Never called holding the state's
    /// lock: a round's publication takes the metrics' lock, then the state's.
    fn publish_api(&self, api: ApiState) {
        if let Some(metrics) = self.daemon_metrics.get() {
            metrics.publish(|| self.metrics.record_api(api));
        }
    }
}

/// The agent: its programmer thread and, once [`Agent::watch`] started them, its watches.
/// Dropping it stops both.
#[derive(Debug)]
pub struct Agent {
    shared: Arc<Shared>,
    programmer: Option<JoinHandle<()>>,
    watches: Option<JoinHandle<()>>,
}

impl Agent {
    /// Starts the agent's programmer; it programs once a daemon round has handed it the node
    /// ([`Agent::task`]) and the watches (or a test, [`Agent::feed`]) have synced, and stops
    /// when `stop` is asked for or the agent is dropped.
    pub fn start(settings: Settings, stop: &Shutdown) -> Agent {
        let shared = Arc::new(Shared {
            state: Mutex::new(AgentState {
                feed: ClusterState::new(settings.node_name),
                mailbox: Mailbox::default(),
            }),
            wake: Condvar::new(),
            passed: Condvar::new(),
            metrics: NetworkPolicyMetrics::default(),
            daemon_metrics: OnceLock::new(),
            snapshot_max_age: settings.snapshot_max_age,
            stop: stop.clone(),
            dropped: AtomicBool::new(false),
        });
        let programmer = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("netpol-programmer".to_owned())
                .spawn(move || programmer::run(&shared))
                .expect("a thread can be spawned")
        };
        Agent {
            shared,
            programmer: Some(programmer),
            watches: None,
        }
    }

    /// Where the cluster's changes go in: what the watches feed, and what tests feed.
    pub fn feed(&self) -> Feed {
        Feed {
            shared: Arc::clone(&self.shared),
        }
    }

    /// The daemon's task of this agent: each round hands the programmer the round's read and
    /// waits for its pass (drift repaired); the agent's metrics.
    pub fn task(&self) -> NetworkPolicyTask {
        NetworkPolicyTask::new(Arc::clone(&self.shared))
    }

    /// Starts watching the API server `api` names (in-cluster or a kubeconfig), on a thread
    /// of its own; Events on refused policies go out from there too.
    pub fn watch(&mut self, api: ApiSettings) -> Result<(), Error> {
        let node_name = self.shared.lock_state().feed.node_name.clone();
        self.watches = Some(watches::spawn(api, node_name, self.feed())?);
        Ok(())
    }

    /// Waits until HNS holds what the state fed so far asks for (a pass has programmed the
    /// current generation), at most `timeout`; returns whether it does. For tests of what the
    /// agent does between rounds.
    #[cfg(feature = "test-support")]
    pub fn wait_programmed(&self, timeout: Duration) -> bool {
        let until = std::time::Instant::now() + timeout;
        let mut state = self.shared.lock_state();
        loop {
            if state.feed.programmed == Some(state.feed.generation) {
                return true;
            }
            let left = until.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            state = self
                .shared
                .passed
                .wait_timeout(state, left)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.shared.dropped.store(true, Ordering::SeqCst);
        self.shared.wake.notify_all();
        self.shared.passed.notify_all();
        for thread in [self.programmer.take(), self.watches.take()]
            .into_iter()
            .flatten()
        {
            if thread.join().is_err() {
                log::error!("network policy: a thread of the agent panicked");
            }
        }
    }
}
