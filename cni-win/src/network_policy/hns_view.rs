//! What the programmer knows HNS holds: a daemon round's read of the node, kept up to date
//! between rounds for little.
//!
//! A full read costs 2 raw calls per network and per endpoint (open, query): on a node with a
//! hundred pods and HNS answering in 5 ms, half a second, which a change that must reach HNS
//! within a second cannot spend, and which a round has just spent anyway. So the view starts
//! from each round's read ([`HnsView::from_round`]: what the programmer wrote since that read
//! started is read again, and only that) and, between rounds, is brought up to date at the
//! start of each pass ([`HnsView::catch_up`]: one `HcnEnumerateEndpoints`, new endpoints read
//! (2 calls each), vanished ones dropped, and what the programmer wrote since read again (2
//! calls each)), so the view holds what HNS answered, not what the agent meant. Any failure
//! drops the view; the programmer then reads everything itself ([`HnsView::read`]), the one
//! read of its own, until the next round hands it one.
//!
//! Only the networks and endpoints of the read are kept current: they are all a pass reads.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use cni_win_core::snapshot::NodeSnapshot;
use hns::{Client, Guid, HnsError, SupportedFeatures};

/// What HNS holds, as far as the programmer knows.
#[derive(Debug)]
pub(crate) struct HnsView {
    read: NodeSnapshot,
    /// Endpoints and networks written to since they were last read.
    stale: BTreeSet<Guid>,
}

/// When the programmer last wrote to each endpoint and network.
#[derive(Debug, Default)]
pub(crate) struct Written(BTreeMap<Guid, Instant>);

impl Written {
    /// Notes writes to `objects`, made now.
    pub fn note(&mut self, objects: &BTreeSet<Guid>) {
        let now = Instant::now();
        self.0.extend(objects.iter().map(|id| (*id, now)));
    }

    /// What was written after `read_at`; forgets what is older (a read after it holds it).
    fn since(&mut self, read_at: Instant) -> BTreeSet<Guid> {
        self.0.retain(|_, at| *at >= read_at);
        self.0.keys().copied().collect()
    }
}

impl HnsView {
    /// A round's read: the endpoints and networks the programmer wrote to after it started are
    /// read again (2 raw calls each; none on a quiet node).
    pub fn from_round(
        read: NodeSnapshot,
        written: &mut Written,
        client: &Client,
    ) -> Result<HnsView, HnsError> {
        let stale = written.since(read.read_at);
        let mut view = HnsView { read, stale };
        view.read_stale(client)?;
        Ok(view)
    }

    /// A full read of its own, after a failure.
    pub fn read(client: &Client, features: SupportedFeatures) -> Result<HnsView, HnsError> {
        Ok(HnsView {
            read: NodeSnapshot::read_knowing(client, features)?,
            stale: BTreeSet::new(),
        })
    }

    /// What HNS holds.
    pub fn hns(&self) -> &NodeSnapshot {
        &self.read
    }

    /// Brings the view up to date: raw calls `HcnEnumerateEndpoints` = 1, then 2 for each
    /// endpoint that is new or was written to, and for each network written to (every
    /// network, when an endpoint is on one the view does not know).
    pub fn catch_up(&mut self, client: &Client) -> Result<(), HnsError> {
        let ids: BTreeSet<Guid> = client.list_endpoint_ids(None)?.into_iter().collect();
        self.read
            .endpoints
            .retain(|endpoint| ids.contains(&endpoint.id));
        let held: BTreeSet<Guid> = self.read.endpoints.iter().map(|e| e.id).collect();
        self.stale.extend(ids.difference(&held));
        self.read_stale(client)
    }

    /// Notes that the programmer wrote to these endpoints and networks: they are read again.
    pub fn wrote(&mut self, objects: &BTreeSet<Guid>) {
        self.stale.extend(objects);
    }

    /// Reads again every endpoint and network written to (or new) since the last read.
    fn read_stale(&mut self, client: &Client) -> Result<(), HnsError> {
        let stale = std::mem::take(&mut self.stale);
        let networks: BTreeSet<Guid> = self.read.networks.iter().map(|n| n.id).collect();
        for id in stale.iter().filter(|id| !networks.contains(id)) {
            self.read.endpoints.retain(|endpoint| endpoint.id != *id);
            match client.open_endpoint(*id) {
                Ok(endpoint) => self.read.endpoints.push(endpoint.into_properties()),
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        // An endpoint on a network the view does not know: the network was created since
        // (flanneld's again after a reboot, under a new ID): read the networks again.
        if self
            .read
            .endpoints
            .iter()
            .any(|e| !networks.contains(&e.host_compute_network))
        {
            self.read.networks = client.list_networks()?;
            return Ok(());
        }
        let mut gone = BTreeSet::new();
        for network in self
            .read
            .networks
            .iter_mut()
            .filter(|n| stale.contains(&n.id))
        {
            match client.open_network(network.id) {
                Ok(fresh) => *network = fresh.into_properties(),
                Err(e) if e.is_not_found() => {
                    gone.insert(network.id);
                }
                Err(e) => return Err(e),
            }
        }
        self.read
            .networks
            .retain(|network| !gone.contains(&network.id));
        Ok(())
    }
}
