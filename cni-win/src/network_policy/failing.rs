//! The items HNS refused a write of (an endpoint's rules, an IP set of a network), each tried
//! again on a backoff of its own, while every other item is programmed as usual.
//!
//! A refusal keeps the writes the pass planned for its item. A later pass that plans the same
//! writes for it before its retry is due holds the item back (HNS refuses a rule it cannot
//! take, or an endpoint in a state it rejects, the same way each time), so a stuck endpoint
//! costs no write between retries however often the cluster changes; a pass that plans other
//! writes for it (the cluster or HNS changed) tries it at once. The wait is 1 s doubling to
//! 30 s, as Felix reschedules a failed dataplane update. A retry re-reads only what it needs:
//! the programmer's view reads again every object a write was sent to.
//!
//! "Policy not found" on a `Remove` is tried again at once the first time: it says HNS does not
//! hold a rule the agent read (one removed behind its back since), and the retry's read of the
//! endpoint makes the next `Remove` fit what HNS holds. So is a write HNS refused because it was
//! stopped or restarting (`ERROR_SERVICE_NOT_ACTIVE`): that says nothing of the item, and the
//! next pass that reads HNS (the first round after it is back, or the programmer's own retry
//! of its read) writes it, so a restart in the middle of a pass costs no backoff.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use cni_win_netpol::{Item, Write, Writes};
use hns::{Guid, HResult, HnsError};

use super::program::{Applied, Refused};

/// The first wait after a refusal.
const BACKOFF_FIRST: Duration = Duration::from_secs(1);
/// The longest.
const BACKOFF_AT_MOST: Duration = Duration::from_secs(30);

/// The refused items, and the endpoints that wait for a set HNS has not taken.
#[derive(Debug, Default)]
pub(crate) struct Failing {
    items: BTreeMap<(Guid, Item), Failure>,
    /// Endpoints left with their rules because their new rules name a set that is not there:
    /// the network and the set, as the last pass found them.
    waiting: BTreeMap<Guid, (Guid, String)>,
}

/// One refused item.
#[derive(Debug)]
struct Failure {
    /// The item's writes the refused pass planned.
    writes: Vec<Write>,
    /// HNS's answer.
    error: HnsError,
    /// The wait before the retry, doubling with each refusal.
    backoff: Duration,
    /// When it is tried again.
    due: Instant,
}

impl Failing {
    /// Whether a pass holds `item` of `network` back: HNS refused it, its retry is not due,
    /// and the pass's `writes` plan the same for it.
    pub fn holds(&self, network: Guid, item: &Item, writes: &Writes, now: Instant) -> bool {
        self.items
            .get(&(network, item.clone()))
            .is_some_and(|failure| now < failure.due && failure.writes == writes.planned(item))
    }

    /// Takes in what a pass came to: each refusal starts or doubles its item's backoff, items
    /// held back keep theirs, and every other item is no longer failing (written, or no
    /// longer with writes to make). Returns each refusal's wait before its retry.
    pub fn note(&mut self, applied: &Applied, now: Instant) -> Vec<Duration> {
        let mut items = BTreeMap::new();
        for key in &applied.held {
            if let Some((key, failure)) = self.items.remove_entry(key) {
                items.insert(key, failure);
            }
        }
        let mut waits = Vec::new();
        for refused in &applied.refused {
            let key = (refused.network, refused.item.clone());
            let backoff = match self.items.get(&key) {
                _ if hns_stopped(refused) => Duration::ZERO,
                Some(failure) => (failure.backoff * 2).clamp(BACKOFF_FIRST, BACKOFF_AT_MOST),
                None if stale(refused) => Duration::ZERO,
                None => BACKOFF_FIRST,
            };
            waits.push(backoff);
            items.insert(
                key,
                Failure {
                    writes: refused.writes.clone(),
                    error: refused.source.clone(),
                    backoff,
                    due: now + backoff,
                },
            );
        }
        self.items = items;
        self.waiting = applied.waiting.clone();
        waits
    }

    /// The endpoints the last pass left waiting for a set: the network and the set.
    pub fn waiting(&self) -> &BTreeMap<Guid, (Guid, String)> {
        &self.waiting
    }

    /// When the first retry is due, if any.
    pub fn next_due(&self) -> Option<Instant> {
        self.items.values().map(|failure| failure.due).min()
    }

    /// The endpoints that do not hold their rules because of a refusal, each with why: HNS's
    /// answer (with its HRESULT) to the endpoint's own write, or the set its new rules wait
    /// for.
    pub fn endpoints(&self) -> BTreeMap<Guid, String> {
        let mut endpoints: BTreeMap<Guid, String> = self
            .items
            .iter()
            .filter_map(|((_, item), failure)| match item {
                Item::Endpoint(endpoint) => Some((*endpoint, failure.error.to_string())),
                Item::Set(_) => None,
            })
            .collect();
        for (endpoint, (network, set)) in &self.waiting {
            let why = match self.items.get(&(*network, Item::Set(set.clone()))) {
                Some(failure) => format!("its new rules name IP set {set}: {}", failure.error),
                None => format!("its new rules name IP set {set}, which is not written yet"),
            };
            endpoints.entry(*endpoint).or_insert(why);
        }
        endpoints
    }
}

/// Whether HNS refused the write only because the service was not running.
fn hns_stopped(refused: &Refused) -> bool {
    refused.source.hresult() == Some(HResult::ERROR_SERVICE_NOT_ACTIVE)
}

/// Whether HNS refused an endpoint's write because it does not hold one of the rules the
/// write removes: the agent's read of the endpoint is stale.
fn stale(refused: &Refused) -> bool {
    matches!(refused.item, Item::Endpoint(_))
        && refused.source.hresult() == Some(HResult::HCN_E_POLICY_NOT_FOUND)
}
