//! `cni-win sweep`: collects what nothing else on a node collects (containerd never calls
//! GC, Flannel answers it itself), and only what it can prove is cni-win's and dead.
//!
//! One pass reads the node once ([`NodeSnapshot`]) and, for every network of the config
//! directory ([`crate::confdir`]) whose conflist does not set libcni's `disableGC`, takes what
//! the plugins' own rule judges dead ([`NetworkView::stale`]): an endpoint that is provably an
//! attachment's and whose namespace is gone, or that is attached to none while no command of
//! its attachment is in flight; a pod's reservation whose attachment has no endpoint, which
//! no endpoint's address holds, while no command is in flight.
//!
//! Stale objects are removed as DEL removes them ([`NetworkView::remove`]: detach, delete,
//! release), only with `apply`; the default is a dry run. "In flight" is asked of a
//! [`Commands`] seam, claimed without waiting and held while the attachment is removed.

use std::path::PathBuf;

use cni::GcAttachment;
use cni_win_core::ownership::Dead;
use cni_win_core::snapshot::{NetworkView, NodeSnapshot, Stale};
use hns::Client;
use serde::Serialize;

use crate::confdir::{self, Network};
use crate::error::Error;

/// What a sweep is asked to do.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The CNI config directory the runtime reads.
    pub conf_dir: PathBuf,
    /// `CNI_PATH` for a delegated IPAM plugin's DEL (host-local runs in-process).
    pub cni_path: Vec<PathBuf>,
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
    /// The network it is on.
    pub network: String,
    /// Why it is stale.
    pub why: String,
    /// The attachment it belongs to.
    pub container_id: String,
    /// The attachment's interface.
    pub ifname: String,
    /// What `apply` did: `None` in a dry run.
    pub outcome: Option<Outcome>,
}

/// What removing a stale object came to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "result", content = "error")]
pub enum Outcome {
    /// Its attachment's DEL removed everything of it.
    Removed,
    /// A command for the attachment started meanwhile: left for the next pass.
    Skipped,
    /// DEL failed, with its error.
    Failed(String),
}

/// One pass over every network.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pass {
    /// What was found stale, in order.
    pub stale: Vec<StaleObject>,
    /// Networks whose conflist sets libcni's `disableGC`: not examined.
    pub left_alone: Vec<String>,
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
/// by the node tools' HNS deadline) and the stores.
pub fn pass(settings: &Settings) -> Result<Pass, Error> {
    let found = confdir::read(&settings.conf_dir, &settings.cni_path)?;
    let deadline =
        cni_win_core::hns_deadline::node_deadline().map_err(|e| Error::new(e.msg().to_owned()))?;
    let client =
        cni_win_core::platform::client(deadline).map_err(|e| Error::hns("reach HNS", e))?;
    let snapshot = NodeSnapshot::read(&client).map_err(|e| Error::hns("read HNS", e))?;
    let mut pass = sweep(
        &client,
        &snapshot,
        &found.networks,
        &AttachmentLocks,
        settings.apply,
    );
    pass.errors.extend(found.problems);
    Ok(pass)
}

/// One pass over `networks` as `snapshot` shows them: finds what is stale and, with `apply`,
/// removes it through `client`.
pub fn sweep<C: Commands>(
    client: &Client,
    snapshot: &NodeSnapshot,
    networks: &[Network],
    commands: &C,
    apply: bool,
) -> Pass {
    let mut pass = Pass::default();
    for network in networks {
        if network.gc_disabled {
            pass.left_alone.push(network.name().to_owned());
            continue;
        }
        let view = match snapshot.view(&network.request) {
            Ok(view) => view,
            Err(e) => {
                pass.errors.push(format!(
                    "network {:?}: cannot read its reservations: {}",
                    network.name(),
                    e.msg()
                ));
                continue;
            }
        };
        for (stale, mut row) in find(&view, network.name(), commands) {
            if apply {
                row.outcome = Some(remove(client, &view, network.name(), &stale, commands));
            }
            pass.stale.push(row);
        }
    }
    pass
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
        network: network.to_owned(),
        why,
        container_id: attachment.container_id.clone(),
        ifname: attachment.ifname.clone(),
        outcome: None,
    }
}

/// Removes one stale object's attachment as DEL would, holding its claim meanwhile. An
/// attachment removed by an earlier row (its endpoint, then its reservation) is gone already:
/// DEL of it again succeeds.
fn remove<C: Commands>(
    client: &Client,
    view: &NetworkView<'_>,
    network: &str,
    stale: &Stale,
    commands: &C,
) -> Outcome {
    let Some(_claim) = commands.try_claim(network, stale.attachment()) else {
        return Outcome::Skipped;
    };
    match view.remove(client, stale) {
        Ok(()) => Outcome::Removed,
        Err(e) => Outcome::Failed(e.to_string()),
    }
}
