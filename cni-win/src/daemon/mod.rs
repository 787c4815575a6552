//! The node daemon (`cni-win daemon`): cni-win's one long-running process on a node, what the
//! binary's `main` only wires (the way controller-rs keeps its loop in the library).
//!
//! A **round** reads the node once ([`Node`]: the config directory, HNS, each network decoded
//! once by its plugin's code) and runs each [`Task`] over that read, in order; a task that
//! changed HNS (the sweep's removals, the policy agent's repairs) has the node read again for
//! the tasks after it, and only then. The built-in tasks are the drift report (what the
//! round's read shows out of step: [`DriftTask`]), the sweep (judge, and with `apply` remove:
//! [`SweepTask`]) and, last, doctor's checks of the node as the round left it
//! ([`DoctorTask`]); another job (the NetworkPolicy agent, `crate::network_policy`) is one
//! more [`Task`] added with [`Daemon::with_task`], run before doctor's checks, with its metric
//! families registered once, when it is added. HNS has one client: the daemon's, which a task
//! with a thread of its own writes through too ([`Round::client`]).
//!
//! On a node with one network and three pods a round costs 12 raw HCN calls (the read;
//! HNS's version is asked once and again only after a round that could not read HNS), with
//! the NetworkPolicy agent on and synced too; it decodes each network's config once; plugin
//! binaries are asked their version only when their file changed.
//!
//! **Schedule**: the next round starts [`Settings::every`] after the previous one ended, so a
//! slow HNS is never asked back to back. **Stopping** ([`Shutdown`]: SIGTERM, Ctrl-C, the
//! Windows console's stop events): between rounds the wait ends at once; during a round the
//! sweep finishes the removal in hand and leaves the rest for another time, the round ends,
//! the metrics endpoint stops, and [`Daemon::run`] returns.

mod tasks;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use cni_win_core::platform::{self, ConnectError, Deadline};
use hns::{Client, SupportedFeatures};
use prometheus_client::registry::Registry;

pub use tasks::{DoctorTask, DriftTask, SweepTask};

use crate::error::Error;
use crate::metrics::Metrics;
use crate::metrics::http::MetricsEndpoint;
use crate::node::Node;
use crate::paths::NodePaths;
use crate::shutdown::Shutdown;
use crate::sweep::Pass;

/// What the daemon is asked to do.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The node's CNI paths.
    pub paths: NodePaths,
    /// Remove what is stale (otherwise the sweep only reports it).
    pub apply: bool,
    /// How long to wait after a round before the next starts.
    pub every: Duration,
    /// Where to serve the metrics (`None`: not served). Port 0 picks a free port:
    /// [`Daemon::metrics_address`] says which.
    pub metrics_address: Option<SocketAddr>,
}

/// One job of the round, run over the round's one read of the node.
pub trait Task {
    /// Registers the task's metric families; called once, when the daemon takes the task on.
    fn register(&mut self, registry: &mut Registry);

    /// Does the round's work over `round.node`.
    fn run(&mut self, round: &Round<'_>) -> Ran;

    /// Records what the last run found in the task's families. The daemon calls it for every
    /// task at the end of a round, holding the lock a scrape takes.
    fn publish(&mut self);

    /// Takes the daemon's metrics, for a task whose work goes on between rounds (the
    /// NetworkPolicy agent reacts to the API server at once): what it records then goes
    /// through [`Metrics::publish`], under the lock a scrape takes, as a round's does. Called
    /// once, after [`Task::register`]; tasks that work only in rounds need not.
    fn publish_between_rounds(&mut self, _metrics: &Arc<Metrics>) {}
}

/// What a task sees of a round.
#[derive(Debug)]
pub struct Round<'r> {
    /// HNS, or `None` when it could not be reached: the daemon's one client, shared, so a
    /// task with a thread of its own (the policy agent's programmer) writes through it too.
    pub client: Option<&'r Arc<Client>>,
    /// The node as read for this task: the round's read, or a read after an earlier task
    /// changed HNS.
    pub node: &'r Node,
    /// The daemon's stop: a task with several changes to make stops between them.
    pub stop: &'r Shutdown,
}

/// What a task's run came to, as the round needs it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ran {
    /// The task changed HNS: the tasks after it get a new read.
    pub changed_hns: bool,
}

/// The node daemon.
pub struct Daemon {
    paths: NodePaths,
    every: Duration,
    client: Result<Arc<Client>, ConnectError>,
    /// HNS's features from the last read; `None` until one succeeds and after one fails.
    features: Option<SupportedFeatures>,
    /// The tasks in the order a round runs them: the built-in ones, then those added.
    tasks: Vec<Box<dyn Task>>,
    /// doctor's checks, run last, over the node as the other tasks left it.
    checks: DoctorTask,
    metrics: Arc<Metrics>,
    endpoint: Option<MetricsEndpoint>,
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon")
            .field("paths", &self.paths)
            .field("every", &self.every)
            .field("tasks", &(self.tasks.len() + 1))
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl Daemon {
    /// The daemon over this node's HNS (every call bounded by the node tools' deadline), with
    /// the built-in tasks, its metrics served if asked; `on_pass` gets each round's sweep
    /// pass (the binary prints it).
    pub fn start(
        settings: Settings,
        on_pass: impl FnMut(Result<&Pass, &Error>) + 'static,
    ) -> Result<Daemon, Error> {
        Daemon::new(settings, platform::connect(Deadline::Node), on_pass)
    }

    /// [`Daemon::start`] over `client` (or why HNS could not be reached: each round tries
    /// again).
    pub fn new(
        settings: Settings,
        client: Result<Client, ConnectError>,
        on_pass: impl FnMut(Result<&Pass, &Error>) + 'static,
    ) -> Result<Daemon, Error> {
        let build = cni::build!();
        let metrics = Arc::new(Metrics::new(
            build.version,
            build.commit.unwrap_or("unknown"),
        ));
        let endpoint = match settings.metrics_address {
            Some(address) => Some(MetricsEndpoint::serve(address, Arc::clone(&metrics))?),
            None => None,
        };
        let mut checks = DoctorTask::new(settings.paths.clone());
        metrics.register(|registry| checks.register(registry));
        let daemon = Daemon {
            paths: settings.paths,
            every: settings.every,
            client: client.map(Arc::new),
            features: None,
            tasks: Vec::new(),
            checks,
            metrics,
            endpoint,
        };
        Ok(daemon
            .with_task(DriftTask::new(settings.apply))
            .with_task(SweepTask::new(settings.apply, on_pass)))
    }

    /// Adds `task` after the others (doctor's checks still come last, judging the node as
    /// the round left it), registering its metric families now.
    pub fn with_task(mut self, mut task: impl Task + 'static) -> Daemon {
        self.metrics.register(|registry| task.register(registry));
        task.publish_between_rounds(&self.metrics);
        self.tasks.push(Box::new(task));
        self
    }

    /// Where the metrics are served: the address bound, its port the one picked for port 0.
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.endpoint.as_ref().map(MetricsEndpoint::address)
    }

    /// The metrics as a scrape gets them.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Runs rounds until `stop` is asked for, then stops serving the metrics.
    pub fn run(mut self, stop: &Shutdown) {
        while !stop.is_requested() {
            self.round(stop);
            if stop.wait(self.every) {
                break;
            }
        }
        drop(self.endpoint.take());
        stop.finished();
    }

    /// One round: read the node once, run every task over it, publish what they found. A
    /// stop asked for meanwhile ends the round after the task running then (which stops
    /// between its own changes): nothing more is read, run or published.
    pub fn round(&mut self, stop: &Shutdown) {
        if self.client.is_err() {
            self.client = platform::connect(Deadline::Node).map(Arc::new);
        }
        let client = self.client.as_ref();
        let mut node = Node::read(client.map(AsRef::as_ref), &self.paths, self.features);
        self.features = node.features();
        let client = client.ok();
        let tasks = self
            .tasks
            .iter_mut()
            .map(|task| task.as_mut() as &mut dyn Task);
        for task in tasks.chain([&mut self.checks as &mut dyn Task]) {
            if stop.is_requested() {
                return;
            }
            let ran = task.run(&Round {
                client,
                node: &node,
                stop,
            });
            if let (true, Some(client), false) = (ran.changed_hns, client, stop.is_requested()) {
                node.read_hns_again(client);
            }
        }
        let (tasks, checks) = (&mut self.tasks, &mut self.checks);
        self.metrics.publish(|| {
            for task in tasks.iter_mut() {
                task.publish();
            }
            checks.publish();
        });
    }
}
