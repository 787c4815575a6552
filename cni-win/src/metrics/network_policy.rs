//! The NetworkPolicy agent's families (`cni-win daemon --network-policy`): whether the API
//! server answers and the agent has synced, what it enforces and refuses, how many endpoints
//! hold their rules and how many it cannot write, how the snapshot files came out, how many
//! HNS writes it made and HNS refused, and how long a change took to reach HNS.
//!
//! The agent reacts to the API server between the daemon's rounds, so these are recorded
//! when it programs or hears from the API server, not only when a round publishes; always
//! under the lock a scrape takes ([`super::Metrics::publish`]), so a scrape never sees half
//! of a pass.

use std::time::Duration;

use hns::HResult;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// Upper bounds of the programming-latency histogram, in seconds: the goal is 1 s at the 99th
/// percentile, a debounced change on a quiet node takes tens of milliseconds, and HNS near its
/// deadline takes tens of seconds.
const PROGRAMMING_SECONDS: [f64; 12] = [
    0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ObjectLabels {
    object: &'static str,
}

/// A refused write: the object and HNS's HRESULT (`0x803B0008`, or `none` when the failure
/// carried none). Not the endpoint: endpoints come and go with pods, so a label of theirs
/// would grow without bound; HNS's HRESULTs are a few dozen. The log and doctor name the
/// endpoint.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusalLabels {
    object: &'static str,
    hresult: String,
}

/// The programming modes, as `cni_win_netpol::Mode::as_str` names them.
const MODES: [&str; 2] = ["ip-sets", "inline"];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModeLabels {
    mode: &'static str,
}

/// What the API server has told the agent, as the gauges say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiState {
    /// Every watch last heard from the API server.
    pub up: bool,
    /// Every watch has listed its resource once.
    pub synced: bool,
    /// This node's Node object is known (a wrong node name lists none).
    pub node_found: bool,
}

/// What one programming pass left of the policies and endpoints, as the gauges say it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PolicyCounts {
    /// Policies enforced as written.
    pub policies_applied: usize,
    /// Policies refused (enforced by their fail-closed stand-ins).
    pub policies_refused: usize,
    /// Local pod endpoints holding exactly their rules.
    pub endpoints_programmed: usize,
    /// Local pod endpoints left as they are: another owner's ACLs leave no priority free.
    pub endpoints_conflicting: usize,
    /// Local pod endpoints that do not hold their rules because HNS refused a write of them
    /// (or of a set their new rules name): tried again on a backoff of their own.
    pub endpoints_failing: usize,
    /// The snapshot files new pods start from.
    pub snapshots: SnapshotCounts,
}

/// How the snapshot files came out of a pass, by path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SnapshotCounts {
    /// Written (or found current and stamped) in full.
    pub full: usize,
    /// Written in the narrower form that leaves pod peers out: the full one is larger than
    /// ADD reads.
    pub narrowed: usize,
    /// Left as they are: something other than a regular file is at the path (or other than
    /// a directory at its directory), which the agent never replaces.
    pub refused: usize,
    /// Left as they are: not rendered (no priority free of a config's ACLs, even the narrow
    /// form too large) or not written (a file system error).
    pub failed: usize,
}

/// The agent's families.
#[derive(Debug, Clone)]
pub struct NetworkPolicyMetrics {
    api_up: Gauge,
    synced: Gauge,
    node_found: Gauge,
    mode: Family<ModeLabels, Gauge>,
    policies: Family<StateLabels, Gauge>,
    endpoints: Family<StateLabels, Gauge>,
    snapshots: Family<StateLabels, Gauge>,
    writes: Family<ObjectLabels, Counter>,
    refusals: Family<RefusalLabels, Counter>,
    repairs: Counter,
    failures: Counter,
    latency: Histogram,
}

impl Default for NetworkPolicyMetrics {
    fn default() -> NetworkPolicyMetrics {
        NetworkPolicyMetrics {
            api_up: Gauge::default(),
            synced: Gauge::default(),
            node_found: Gauge::default(),
            mode: Family::default(),
            policies: Family::default(),
            endpoints: Family::default(),
            snapshots: Family::default(),
            writes: Family::default(),
            refusals: Family::default(),
            repairs: Counter::default(),
            failures: Counter::default(),
            latency: Histogram::new(PROGRAMMING_SECONDS),
        }
    }
}

impl NetworkPolicyMetrics {
    /// Registers every family in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "netpol_api_up",
            "Whether every watch of the NetworkPolicy agent (policies, namespaces, pods, this \
             node) last heard from the API server (1) or failed (0: the agent keeps the last \
             programmed rules, fail static)",
            self.api_up.clone(),
        );
        registry.register(
            "netpol_synced",
            "Whether the NetworkPolicy agent has listed every watched resource once since it \
             started (until then it writes nothing)",
            self.synced.clone(),
        );
        registry.register(
            "netpol_node_found",
            "Whether the API server has this node's Node object under the agent's node name (0: \
             a wrong --node-name or NODE_NAME: the node's pods get no rules and its addresses \
             are not allowed in)",
            self.node_found.clone(),
        );
        registry.register(
            "netpol_mode",
            "How the agent programs HNS on this host (1 for the mode in use): ip-sets (pod \
             peers as network IP sets, HNS 13.0 and later) or inline (peers listed in each rule)",
            self.mode.clone(),
        );
        registry.register(
            "netpol_policies",
            "NetworkPolicies by state: applied (enforced as written) or refused (HNS cannot \
             enforce it as written: its pods are isolated with nothing allowed, an Event on the \
             policy says why)",
            self.policies.clone(),
        );
        registry.register(
            "netpol_endpoints",
            "Local pod endpoints by state after the last programming pass: programmed (holding \
             their rules), conflicting (another owner's ACLs leave no priority free: left as \
             they are) or failing (HNS refused a write of their rules, or of a set their new \
             rules name: they keep what they hold and are tried again on a backoff; the log \
             and doctor name them and HNS's HRESULT)",
            self.endpoints.clone(),
        );
        registry.register(
            "netpol_snapshots",
            "The snapshot files new pods start from (the conflists' networkPolicySnapshot) by \
             state after the last programming pass: full, narrowed (the full form is larger \
             than ADD reads: pod peers left out, new pods allowed less until the agent sees \
             them), refused (something other than a regular file is at the path: never \
             replaced) or failed (not rendered or not written); a file not full goes stale and \
             ADD then refuses new pods",
            self.snapshots.clone(),
        );
        registry.register(
            "netpol_hns_writes",
            "HcnModify requests the agent made, by object: endpoint (ACLs added or removed) or \
             network (IP sets added, updated or removed)",
            self.writes.clone(),
        );
        registry.register(
            "netpol_hns_refusals",
            "HcnModify requests HNS refused, by object (endpoint or network) and HRESULT: the \
             refused endpoint or IP set keeps what it holds and is tried again; every other one \
             is programmed",
            self.refusals.clone(),
        );
        registry.register(
            "netpol_drift_repairs",
            "HNS writes that put back what drifted (rules removed or changed behind the agent's \
             back), made by a daemon round's pass when no change was pending",
            self.repairs.clone(),
        );
        registry.register(
            "netpol_programming_failures",
            "Programming passes that could not read HNS (retried from 1 s to 30 s over a new \
             read; a refused write is counted in cniwin_netpol_hns_refusals_total instead)",
            self.failures.clone(),
        );
        registry.register_with_unit(
            "netpol_programming_latency",
            "Time from a watch event that changed what policy needs to HNS holding the result",
            Unit::Seconds,
            self.latency.clone(),
        );
    }

    /// Records what the API server has told the agent.
    pub fn record_api(&self, api: ApiState) {
        self.api_up.set(i64::from(api.up));
        self.synced.set(i64::from(api.synced));
        self.node_found.set(i64::from(api.node_found));
    }

    /// Records the programming mode in use (its name, `Mode::as_str`): 1 for it, 0 for the
    /// other.
    pub fn record_mode(&self, in_use: &'static str) {
        for mode in MODES {
            self.mode
                .get_or_create(&ModeLabels { mode })
                .set(i64::from(mode == in_use));
        }
    }

    /// Records what a programming pass left.
    pub fn record_counts(&self, programmed: &PolicyCounts) {
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        for (state, n) in [
            ("applied", programmed.policies_applied),
            ("refused", programmed.policies_refused),
        ] {
            self.policies
                .get_or_create(&StateLabels { state })
                .set(count(n));
        }
        for (state, n) in [
            ("programmed", programmed.endpoints_programmed),
            ("conflicting", programmed.endpoints_conflicting),
            ("failing", programmed.endpoints_failing),
        ] {
            self.endpoints
                .get_or_create(&StateLabels { state })
                .set(count(n));
        }
        let snapshots = &programmed.snapshots;
        for (state, n) in [
            ("full", snapshots.full),
            ("narrowed", snapshots.narrowed),
            ("refused", snapshots.refused),
            ("failed", snapshots.failed),
        ] {
            self.snapshots
                .get_or_create(&StateLabels { state })
                .set(count(n));
        }
    }

    /// Counts writes: `endpoint` and `network` requests, which put back what drifted when
    /// `repair`.
    pub fn record_writes(&self, endpoint: u64, network: u64, repair: bool) {
        for (object, n) in [("endpoint", endpoint), ("network", network)] {
            self.writes
                .get_or_create(&ObjectLabels { object })
                .inc_by(n);
        }
        if repair {
            self.repairs.inc_by(endpoint + network);
        }
    }

    /// Counts a write HNS refused, to an `endpoint` or a `network`, with its HRESULT.
    pub fn record_refused(&self, object: &'static str, hresult: Option<HResult>) {
        let hresult = hresult.map_or_else(|| "none".to_owned(), |code| format!("0x{:08X}", code.0));
        self.refusals
            .get_or_create(&RefusalLabels { object, hresult })
            .inc();
    }

    /// Counts a programming pass that could not read HNS.
    pub fn record_failure(&self) {
        self.failures.inc();
    }

    /// Records how long a change took to reach HNS.
    pub fn record_latency(&self, latency: Duration) {
        self.latency.observe(latency.as_secs_f64());
    }
}
