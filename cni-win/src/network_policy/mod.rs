//! The NetworkPolicy agent of the node daemon (`cni-win sweep --every … --network-policy`):
//! Kubernetes NetworkPolicy enforced with HNS ACLs on the pods of this node, beside Flannel.
//!
//! ```text
//!  API server ── watches (kube-rs, on a tokio thread of their own: `watches`) ─┐
//!      ▲                                                                    ▼
//!      └── Events on refused policies ◄─────────────────────────── Feed ── ClusterState
//!                                                                           │ (translation's
//!                                                                           │  values only)
//!        each change, debounced (DEBOUNCE)        each daemon round         ▼
//!        the agent's programmer thread ────────┬── NetworkPolicyTask ── program: read HNS,
//!                                              │   (drift repaired)      desired, diff, write;
//!                                    one lock: never two writers         the snapshot for ADD
//! ```
//!
//! - **Reacts** to the API server: a change wakes the programmer, which waits [`DEBOUNCE`]
//!   for the changes that come with it, then programs HNS (a [`Pass`]): the latency from a
//!   watch event to HNS holding the result is a histogram of the metrics.
//! - **Repairs** each daemon round ([`NetworkPolicyTask`]): the same pass, so a rule removed
//!   behind the agent's back is back within one round. The round and the programmer take
//!   one lock around a pass, so HNS never has two writers.
//! - **Restarts without a window**: every rule's `Id` is its content, so a new process that
//!   reads HNS and computes the same rules writes nothing; nothing at all is written (HNS or
//!   snapshot) until every watch has listed its resource once.
//! - **Fails static**: while the API server cannot be reached, what was fed stays, HNS keeps
//!   the last programmed rules, and `cniwin_netpol_api_up` is 0 (and a log line says so).
//! - **Refuses loudly**: a policy HNS cannot enforce as written is enforced by its
//!   fail-closed stand-in, logged, counted, and told as an Event on the policy.
//! - **Meets ADD** through the snapshot ([`cni_win_core::network_policy`]), written after
//!   each pass that changed it.
//!
//! The programming mode follows the host's HNS version ([`mode`]): network IP sets
//! (one `SetPolicy` update for a selector's membership change) from HNS 13.0, rules listing
//! their peers inline before.

mod feed;
mod hns_view;
mod program;
mod snapshot;
mod task;
mod watches;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cni_win_core::platform::{self, ConnectError, Deadline};
use cni_win_netpol::Mode;
use hns::{Client, SupportedFeatures};

pub use feed::{Event, Feed, Refusal, Resource};
pub use program::{NotProgrammed, Pass, mode};
pub use task::NetworkPolicyTask;
pub use watches::ApiSettings;

use self::feed::ClusterState;
use self::hns_view::HnsView;
use self::program::NetworkConfig;
use crate::confdir;
use crate::error::Error;
use crate::metrics::network_policy::NetworkPolicyMetrics;
use crate::node::Network;
use crate::paths::NodePaths;
use crate::shutdown::Shutdown;

/// How long the programmer waits after a change for the changes that come with it (a
/// Deployment's pods, a namespace relabelled with its pods), so a burst costs one pass.
pub const DEBOUNCE: Duration = Duration::from_millis(20);

/// The longest a burst of changes delays a pass: a steady stream of events still programs.
const DEBOUNCE_AT_MOST: Duration = Duration::from_millis(200);

/// How long the programmer waits before trying again after a pass failed (doubling up to
/// [`RETRY_AT_MOST`]).
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_AT_MOST: Duration = Duration::from_secs(30);

/// What the agent is asked to do.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The node it runs on (`--node-name`, else `NODE_NAME`, as DaemonSets pass it).
    pub node_name: String,
    /// The node's CNI paths: cni-win's networks, and where their configs put the snapshot.
    pub paths: NodePaths,
}

/// What the agent's threads and the daemon's task share.
#[derive(Debug)]
pub(crate) struct Shared {
    state: Mutex<ClusterState>,
    /// Notified when the state changed in a way policy needs.
    changed: Condvar,
    programmer: Mutex<Programmer>,
    metrics: NetworkPolicyMetrics,
    /// The daemon's stop.
    stop: Shutdown,
    /// The agent's own stop (dropped).
    dropped: AtomicBool,
}

impl Shared {
    fn lock_state(&self) -> MutexGuard<'_, ClusterState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock_programmer(&self) -> MutexGuard<'_, Programmer> {
        self.programmer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn stopping(&self) -> bool {
        self.dropped.load(Ordering::SeqCst) || self.stop.is_requested()
    }
}

/// The one writer of HNS for policy: whoever holds it (the programmer thread, a daemon
/// round) runs a whole pass.
#[derive(Debug)]
struct Programmer {
    client: Result<Client, ConnectError>,
    features: Option<SupportedFeatures>,
    networks: Vec<NetworkConfig>,
    /// What HNS holds, as the last pass left it; `None` until a full read, and after a failure.
    view: Option<HnsView>,
    last: Option<Result<Pass, NotProgrammed>>,
}

impl Programmer {
    /// One pass: a daemon round's (`repair`) over a full read of HNS, the programmer's over
    /// its view brought up to date.
    fn pass(&mut self, shared: &Shared, repair: bool) -> Result<Pass, NotProgrammed> {
        if self.client.is_err() {
            self.client = platform::connect(Deadline::Node);
        }
        let client = match &self.client {
            Ok(client) => client,
            Err(e) => return Err(NotProgrammed::Failed(crate::chain(e))),
        };
        let features = match self.features {
            Some(features) => features,
            None => {
                let features = client
                    .supported_features()
                    .map_err(|e| NotProgrammed::Failed(e.to_string()))?;
                self.features = Some(features);
                features
            }
        };
        let mode = program::mode(features);
        shared.metrics.record_mode(mode == Mode::IpSets);
        // A round reads everything (drift); the programmer brings its view up to date.
        let view = match self.view.take() {
            Some(mut view) if !repair => view.refresh(client).map(|()| view),
            _ => HnsView::read(client),
        };
        let outcome = match view {
            Err(e) => {
                // HNS may have restarted (an update changes its version): ask again.
                self.features = None;
                Err(NotProgrammed::Failed(e.to_string()))
            }
            Ok(mut view) => {
                let outcome =
                    program::program(client, mode, &self.networks, view.hns(), &shared.state);
                match &outcome {
                    Ok(pass) => {
                        view.wrote(
                            pass.endpoints_written.clone(),
                            pass.networks_written.clone(),
                        );
                        self.view = Some(view);
                    }
                    Err(NotProgrammed::NotSynced) => self.view = Some(view),
                    // What a failed pass wrote is not known: read everything next time.
                    Err(NotProgrammed::Failed(_)) => {}
                }
                outcome
            }
        };
        let state = shared.lock_state();
        shared.metrics.record_api(state.api_up(), state.synced());
        drop(state);
        match &outcome {
            Ok(pass) => {
                shared
                    .metrics
                    .record_writes(pass.endpoint_writes, pass.network_writes, repair);
                shared.metrics.record_programmed(&pass.counts);
                if let Some(since) = pass.changed_since {
                    shared.metrics.record_latency(since.elapsed());
                }
                if repair && pass.endpoint_writes + pass.network_writes > 0 {
                    log::warn!(
                        "network policy: HNS had drifted from the rules: {} endpoint and {} \
                         network write(s) put them back",
                        pass.endpoint_writes,
                        pass.network_writes
                    );
                }
            }
            Err(NotProgrammed::NotSynced) => {}
            Err(NotProgrammed::Failed(why)) => {
                shared.metrics.record_failure();
                log::error!(
                    "network policy: programming HNS failed ({why}): what was written stays; \
                     trying again"
                );
            }
        }
        self.last = Some(outcome.clone());
        outcome
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
    /// Starts the agent's programmer over `client` (or why HNS could not be reached: each
    /// pass tries again); it stops when `stop` is asked for or the agent is dropped. Nothing
    /// is fed yet: [`Agent::watch`] starts the watches, tests feed [`Agent::feed`].
    pub fn start(
        settings: Settings,
        client: Result<Client, ConnectError>,
        stop: &Shutdown,
    ) -> Agent {
        let networks = confdir::read(&settings.paths.conf_dir, settings.paths.cni_path())
            .map(|found| {
                found
                    .networks
                    .into_iter()
                    .map(|network| network_config(&network.decode(None)))
                    .collect()
            })
            .unwrap_or_default();
        let shared = Arc::new(Shared {
            state: Mutex::new(ClusterState::new(settings.node_name)),
            changed: Condvar::new(),
            programmer: Mutex::new(Programmer {
                client,
                features: None,
                networks,
                view: None,
                last: None,
            }),
            metrics: NetworkPolicyMetrics::default(),
            stop: stop.clone(),
            dropped: AtomicBool::new(false),
        });
        let programmer = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("netpol-programmer".to_owned())
                .spawn(move || run_programmer(&shared))
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

    /// The daemon's task of this agent: a pass each round (drift repaired), its metrics.
    pub fn task(&self) -> NetworkPolicyTask {
        NetworkPolicyTask::new(Arc::clone(&self.shared))
    }

    /// Starts watching the API server `api` names (in-cluster or a kubeconfig), on a thread
    /// of its own; Events on refused policies go out from there too.
    pub fn watch(&mut self, api: ApiSettings) -> Result<(), Error> {
        let node_name = self.shared.lock_state().node_name.clone();
        self.watches = Some(watches::spawn(api, node_name, self.feed())?);
        Ok(())
    }

    /// Runs one pass now, as a daemon round does, without the round's repair count.
    pub fn program_now(&self) -> Result<Pass, NotProgrammed> {
        self.shared.lock_programmer().pass(&self.shared, false)
    }

    /// Waits until HNS holds what the state fed so far asks for (the programmer has passed
    /// over the current generation), at most `timeout`; returns whether it does.
    pub fn wait_programmed(&self, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        loop {
            let state = self.shared.lock_state();
            if state.programmed == Some(state.generation) {
                return true;
            }
            drop(state);
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The last pass's outcome, if any ran.
    pub fn last_pass(&self) -> Option<Result<Pass, NotProgrammed>> {
        self.shared.lock_programmer().last.clone()
    }

    /// Whether every watch last heard from the API server.
    pub fn api_up(&self) -> bool {
        self.shared.lock_state().api_up()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.shared.dropped.store(true, Ordering::SeqCst);
        self.shared.changed.notify_all();
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

/// A network's NetworkPolicy settings, as its config gives them.
fn network_config(network: &Network) -> NetworkConfig {
    NetworkConfig {
        name: network.name().to_owned(),
        snapshot: network
            .config
            .network_policy_snapshot()
            .map(ToOwned::to_owned),
        acls: network.config.config_acls().to_vec(),
    }
}

/// The programmer thread: a pass after each change (debounced), and again after a failure.
fn run_programmer(shared: &Shared) {
    let mut retry = RETRY_FIRST;
    let mut retry_at: Option<Instant> = None;
    while !shared.stopping() {
        // Wait for a change not yet programmed, or for the retry.
        let mut state = shared.lock_state();
        loop {
            if shared.stopping() {
                return;
            }
            // After a failure only the retry programs: HNS is given time to come back.
            let due = retry_at.is_some_and(|at| Instant::now() >= at);
            let pending = state.synced() && state.programmed != Some(state.generation);
            if due || (retry_at.is_none() && pending) {
                break;
            }
            state = shared
                .changed
                .wait_timeout(state, crate::shutdown::POLL)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
        // Debounce: let the changes that come with this one arrive.
        let first = Instant::now();
        loop {
            let generation = state.generation;
            state = shared
                .changed
                .wait_timeout(state, DEBOUNCE)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
            if state.generation == generation || first.elapsed() >= DEBOUNCE_AT_MOST {
                break;
            }
        }
        drop(state);
        let outcome = shared.lock_programmer().pass(shared, false);
        match outcome {
            Err(NotProgrammed::Failed(_)) => {
                retry_at = Some(Instant::now() + retry);
                retry = (retry * 2).min(RETRY_AT_MOST);
            }
            Ok(_) | Err(NotProgrammed::NotSynced) => {
                retry = RETRY_FIRST;
                retry_at = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_snapshot_format_names_the_translations_rules() {
        assert_eq!(
            cni_win_core::network_policy::RULE_ID_PREFIX,
            cni_win_netpol::RULE_ID_PREFIX,
            "ADD and the agent must agree on which rules are the agent's"
        );
    }
}
