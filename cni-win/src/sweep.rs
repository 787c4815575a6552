//! `cni-win sweep`: collects what nothing else on a node collects (containerd never calls
//! GC, Flannel answers it itself), and only what it can prove is cni-win's and dead.
//!
//! One pass reads the node once ([`NodeSnapshot`]) and, for every network of the config
//! directory ([`crate::confdir`]) whose conflist does not set libcni's `disableGC`, takes what
//! the plugins' own rule judges dead ([`NetworkView::stale`]): an endpoint that is provably an
//! attachment's and whose namespace is gone, or that is attached to none while no command of
//! its attachment is in flight; a pod's reservation whose attachment has no endpoint, which
//! no endpoint's address holds, while no command is in flight and HNS holds no namespace
//! without an endpoint (one may be a live pod's whose endpoint HNS dropped in a restart:
//! [`NodeSnapshot::has_namespace_without_endpoint`]).
//!
//! Stale objects are removed as DEL removes them ([`NetworkView::remove`]: detach, delete,
//! release; the plugins' GC removes through the same function), only with `apply`; the
//! default is a dry run. "In flight" is asked of a [`Commands`] seam, claimed without waiting
//! and held while the attachment is removed. A stop asked for while removing ([`Shutdown`])
//! is honoured between attachments: what is left is [`Outcome::Abandoned`], for the next pass.
//!
//! A pass removes nothing unless HNS was read, and read again under the claims: HNS
//! unreachable or restarting is never taken for objects being absent.

use cni::GcAttachment;
use cni_win_core::ownership::Dead;
use cni_win_core::platform::{self, Deadline};
use cni_win_core::snapshot::{NetworkView, NodeSnapshot, Stale};
use hns::Client;
use serde::Serialize;

use crate::error::Error;
use crate::node::{Network, Node};
use crate::paths::NodePaths;
use crate::shutdown::Shutdown;

/// What a sweep is asked to do.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The config directory the networks are read from, and the plugin directories (a
    /// delegated IPAM plugin's DEL runs from them; host-local runs in-process).
    pub paths: NodePaths,
    /// Remove what is stale (otherwise only report it).
    pub apply: bool,
}

/// Whether a command (ADD, DEL, CHECK) for an attachment is running, asked without waiting.
///
/// The plugins serialise the commands of one attachment with a per-attachment lock; its
/// non-blocking try-lock implements this, and the claim holds the lock while the sweep
/// removes the attachment, so no ADD can start in between.
pub trait Commands {
    /// Held while the attachment is removed.
    type Claim;
    /// `None` when a command for `attachment` of `network` is in flight.
    fn try_claim(&self, network: &str, attachment: &GcAttachment) -> Option<Self::Claim>;
}

/// The plugins' own per-attachment lock (`cni_win_core::attachment_lock`), tried without
/// waiting: ADD, DEL and CHECK hold it for their whole run, so a lock someone holds is a command
/// in flight. A lock that cannot even be tried counts as held: sweep removes only what it can
/// prove idle.
#[derive(Debug, Clone, Copy, Default)]
pub struct AttachmentLocks;

impl Commands for AttachmentLocks {
    type Claim = cni_win_core::attachment_lock::Guard;
    fn try_claim(&self, network: &str, attachment: &GcAttachment) -> Option<Self::Claim> {
        cni_win_core::attachment_lock::try_lock(
            network,
            &attachment.container_id,
            &attachment.ifname,
        )
        .ok()
        .flatten()
    }
}

/// One stale object of a pass: what it is, why it is stale and, with `apply`, what removing
/// it came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StaleObject {
    /// `endpoint <name> (<id>)` or `reservation <ip>`.
    pub object: String,
    /// An endpoint or a reservation.
    pub kind: ObjectKind,
    /// The network it is on.
    pub network: String,
    /// Why it is stale, as a word (the metrics' label).
    pub reason: Reason,
    /// Why it is stale, in a sentence.
    pub why: String,
    /// The attachment it belongs to.
    pub container_id: String,
    /// The attachment's interface.
    pub ifname: String,
    /// What `apply` did: `None` in a dry run.
    pub outcome: Option<Outcome>,
}

/// What a stale object is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ObjectKind {
    /// An HNS endpoint.
    Endpoint,
    /// A host-local reservation.
    Reservation,
}

impl ObjectKind {
    /// The word for it (JSON, metrics).
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::Endpoint => "endpoint",
            ObjectKind::Reservation => "reservation",
        }
    }
}

/// Why an object is stale: [`Dead`] for an endpoint, and the one reason a reservation is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reason {
    /// The runtime's GC did not list the endpoint's attachment.
    NotListed,
    /// The endpoint is attached to a namespace HNS no longer has (a pod sandbox gone without
    /// DEL, an HNS restart).
    NamespaceGone,
    /// The endpoint is attached to no namespace and no command of its attachment runs.
    Unattached,
    /// The reservation's attachment has no endpoint (an ADD that died after reserving).
    NoEndpoint,
}

impl Reason {
    /// The word for it (JSON, metrics).
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NotListed => "not-listed",
            Reason::NamespaceGone => "namespace-gone",
            Reason::Unattached => "unattached",
            Reason::NoEndpoint => "no-endpoint",
        }
    }

    fn of(stale: &Stale) -> Reason {
        match stale {
            Stale::Endpoint { why, .. } => match why {
                Dead::NotListed => Reason::NotListed,
                Dead::NamespaceGone(_) => Reason::NamespaceGone,
                Dead::Unattached => Reason::Unattached,
            },
            Stale::Reservation(_) => Reason::NoEndpoint,
        }
    }
}

/// How full one range set of a network's pool is, after the pass removed what it removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pool {
    /// The network.
    pub network: String,
    /// The range set's subnets, comma-separated.
    pub subnets: String,
    /// How many addresses it can hand out.
    pub usable: u128,
    /// How many of those are reserved.
    pub reserved: u128,
    /// How many ADD can still hand out.
    pub free: u128,
}

/// What removing a stale object came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "result", content = "error")]
pub enum Outcome {
    /// Its attachment's DEL removed everything of it.
    Removed,
    /// A command for the attachment started meanwhile: left for the next pass.
    Skipped,
    /// Read again under the claim, it is no longer what the first read found (a pod's ADD
    /// finished after the pass's first read; a drift repair's pod or remote endpoint changed
    /// or went): left alone.
    Alive,
    /// DEL failed, with its error.
    Failed(String),
    /// A stop was asked for before its turn came: left for the next pass.
    Abandoned,
}

impl Outcome {
    /// The word for it (the metrics' `result` label).
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Removed => "removed",
            Outcome::Skipped => "skipped",
            Outcome::Alive => "alive",
            Outcome::Failed(_) => "failed",
            Outcome::Abandoned => "abandoned",
        }
    }
}

/// One pass over every network.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pass {
    /// What was found stale, in order.
    pub stale: Vec<StaleObject>,
    /// Networks whose conflist sets libcni's `disableGC`: not examined.
    pub left_alone: Vec<String>,
    /// How full each host-local pool is at the end of the pass (networks whose HNS network
    /// does not exist, or whose IPAM is another plugin's, have none).
    pub pools: Vec<Pool>,
    /// Networks (or files) that could not be examined, with the reason.
    pub errors: Vec<String>,
}

impl Pass {
    /// Whether something could not be examined or removed.
    pub fn failed(&self) -> bool {
        !self.errors.is_empty()
            || self
                .stale
                .iter()
                .any(|f| matches!(f.outcome, Some(Outcome::Failed(_))))
    }

    /// How many stale objects came to `outcome`.
    pub fn count(&self, outcome: &Outcome) -> usize {
        self.stale
            .iter()
            .filter(|f| f.outcome.as_ref() == Some(outcome))
            .count()
    }
}

/// One pass over the node as `settings` says: the config directory, HNS (every call bounded
/// by the node tools' HNS deadline) and the stores, each read once.
pub fn pass(settings: &Settings) -> Result<Pass, Error> {
    let client = platform::connect(Deadline::Node);
    let node = Node::read(client.as_ref(), &settings.paths, None);
    sweep_node(
        client.as_ref().ok(),
        &node,
        &AttachmentLocks,
        settings.apply,
        &Shutdown::new(),
    )
}

/// One pass over the node as `node` read it through `client` (see [`sweep`]); the
/// directory's unreadable files are the pass's errors. Fails, removing nothing, when the
/// config directory or HNS could not be read.
pub fn sweep_node<C: Commands>(
    client: Option<&Client>,
    node: &Node,
    commands: &C,
    apply: bool,
    stop: &Shutdown,
) -> Result<Pass, Error> {
    let config = node.config()?;
    let snapshot = node.snapshot()?;
    let client = client.ok_or_else(|| Error::new("HNS could not be reached"))?;
    let mut pass = sweep(client, snapshot, &config.networks, commands, apply, stop);
    pass.errors.extend(config.problems.iter().cloned());
    Ok(pass)
}

/// One pass over `networks` as `snapshot` shows them: finds what is stale and, with `apply`,
/// removes it through `client` until `stop` is asked for.
///
/// What `snapshot` shows may be old by the time a claim is taken: an ADD that finished in
/// between left a reservation the snapshot saw without its endpoint. So removal claims every
/// candidate first, reads the node again while holding the claims (no command of a claimed
/// attachment can run meanwhile), and removes only what that read still judges stale; the
/// rest is [`Outcome::Alive`]. The second read costs one [`NodeSnapshot::read_knowing`] per
/// pass, only when there is something to remove; when it fails, nothing is removed.
pub fn sweep<C: Commands>(
    client: &Client,
    snapshot: &NodeSnapshot,
    networks: &[Network],
    commands: &C,
    apply: bool,
    stop: &Shutdown,
) -> Pass {
    let mut pass = Pass::default();
    let mut candidates = Vec::new();
    let mut views = Vec::with_capacity(networks.len());
    for network in networks {
        let view = match snapshot.view(&network.config) {
            Ok(view) => view,
            Err(e) if !network.gc_disabled => {
                pass.errors.push(format!(
                    "network {:?}: cannot read its reservations: {}",
                    network.name(),
                    e.msg()
                ));
                continue;
            }
            Err(_) => {
                pass.left_alone.push(network.name().to_owned());
                continue;
            }
        };
        if network.gc_disabled {
            pass.left_alone.push(network.name().to_owned());
        } else {
            candidates.extend(
                find(&view, network.name(), commands)
                    .into_iter()
                    .map(|(stale, row)| (network, stale, row)),
            );
        }
        views.push((network, view));
    }
    if apply && !candidates.is_empty() {
        remove_confirmed(client, snapshot, candidates, commands, stop, &mut pass);
    } else {
        pass.stale
            .extend(candidates.into_iter().map(|(_, _, row)| row));
    }
    // The views' reservations are the first read's; a pool's usage reads its store again.
    for (network, view) in &views {
        match pools(view, network) {
            Ok(pools) => pass.pools.extend(pools),
            Err(error) => pass.errors.push(error),
        }
    }
    pass
}

/// Claims every candidate, reads the node again and removes what is still stale (see
/// [`sweep`]). Claims are held until every removal is done; two rows of one attachment share
/// its claim.
fn remove_confirmed<C: Commands>(
    client: &Client,
    first: &NodeSnapshot,
    candidates: Vec<(&Network, Stale, StaleObject)>,
    commands: &C,
    stop: &Shutdown,
    pass: &mut Pass,
) {
    let mut claims: Vec<((String, GcAttachment), C::Claim)> = Vec::new();
    let mut claimed = Vec::with_capacity(candidates.len());
    for (network, stale, _) in &candidates {
        let key = (network.name().to_owned(), stale.attachment().clone());
        let held = claims.iter().any(|(k, _)| *k == key);
        let ok = held
            || match commands.try_claim(network.name(), stale.attachment()) {
                Some(claim) => {
                    claims.push((key, claim));
                    true
                }
                None => false,
            };
        claimed.push(ok);
    }
    let fresh = NodeSnapshot::read_knowing(client, first.features);
    for ((network, stale, mut row), ok) in candidates.into_iter().zip(claimed) {
        row.outcome = Some(if !ok {
            Outcome::Skipped
        } else if stop.is_requested() {
            Outcome::Abandoned
        } else {
            match &fresh {
                Err(e) => Outcome::Failed(format!("cannot read HNS again before removing: {e}")),
                Ok(fresh) => remove_if_still_stale(client, fresh, network, &stale),
            }
        });
        pass.stale.push(row);
    }
    drop(claims);
}

/// Removes `stale` as its attachment's DEL would, if the fresh read still judges it stale.
fn remove_if_still_stale(
    client: &Client,
    fresh: &NodeSnapshot,
    network: &Network,
    stale: &Stale,
) -> Outcome {
    let view = match fresh.view(&network.config) {
        Ok(view) => view,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    let Some(still) = view.stale().into_iter().find(|now| same_object(now, stale)) else {
        return Outcome::Alive;
    };
    match view.remove(client, &still) {
        Ok(()) => Outcome::Removed,
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

/// Whether two reads' stale objects are the same endpoint, or the same reservation of the
/// same attachment.
fn same_object(a: &Stale, b: &Stale) -> bool {
    match (a, b) {
        (Stale::Endpoint { endpoint: x, .. }, Stale::Endpoint { endpoint: y, .. }) => x.id == y.id,
        (Stale::Reservation(x), Stale::Reservation(y)) => x == y,
        _ => false,
    }
}

/// How full `network`'s pool is now, read from its store after the pass's removals. No pool
/// when its HNS network is missing, its IPAM is another plugin's or its config is refused
/// (STATUS and doctor say so); a store that cannot be read is the pass's error, so that a
/// pool never drops out of the metrics unnoticed.
fn pools(view: &NetworkView<'_>, network: &Network) -> Result<Vec<Pool>, String> {
    let Ok(pool) = view.pod_pool() else {
        return Ok(Vec::new());
    };
    let usage = pool.usage().map_err(|e| {
        format!(
            "network {:?}: cannot read how full its pool is: {}",
            network.name(),
            e.msg()
        )
    })?;
    Ok(usage
        .into_iter()
        .map(|set| Pool {
            network: network.name().to_owned(),
            subnets: set
                .subnets
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
            usable: set.usable,
            reserved: set.reserved,
            free: set.free(),
        })
        .collect())
}

/// What a pass finds stale on the network `view` shows (named `network`), each with its
/// report row: what the rule says is dead, without what has a command in flight (an
/// attachment whose endpoint is unattached, or which has only a reservation, may be an ADD
/// that has not attached yet). What `doctor` reports as "sweep would remove".
pub fn find<C: Commands>(
    view: &NetworkView<'_>,
    network: &str,
    commands: &C,
) -> Vec<(Stale, StaleObject)> {
    view.stale()
        .into_iter()
        .filter(|stale| {
            let needs_claim = matches!(
                stale,
                Stale::Reservation(_)
                    | Stale::Endpoint {
                        why: Dead::Unattached,
                        ..
                    }
            );
            !needs_claim || commands.try_claim(network, stale.attachment()).is_some()
        })
        .map(|stale| {
            let row = row(network, &stale);
            (stale, row)
        })
        .collect()
}

fn row(network: &str, stale: &Stale) -> StaleObject {
    let (object, why) = match stale {
        Stale::Endpoint { endpoint, why, .. } => (
            format!("endpoint {} ({})", endpoint.name, endpoint.id),
            match why {
                Dead::Unattached => format!("{why} and no command in flight"),
                _ => why.to_string(),
            },
        ),
        Stale::Reservation(reservation) => (
            format!("reservation {}", reservation.ip),
            "its attachment has no endpoint and no command in flight".to_owned(),
        ),
    };
    let attachment = stale.attachment();
    StaleObject {
        object,
        kind: match stale {
            Stale::Endpoint { .. } => ObjectKind::Endpoint,
            Stale::Reservation(_) => ObjectKind::Reservation,
        },
        network: network.to_owned(),
        reason: Reason::of(stale),
        why,
        container_id: attachment.container_id.clone(),
        ifname: attachment.ifname.clone(),
        outcome: None,
    }
}
