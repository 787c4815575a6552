//! What the agent knows HNS holds, between full reads.
//!
//! A full read costs 2 raw calls per network and per endpoint (open, query): on a node with a
//! hundred pods and HNS answering in 5 ms, half a second, which a change that must reach HNS
//! within a second cannot spend. So the programmer keeps the last read and brings it up to
//! date at the start of each pass for little: one `HcnEnumerateEndpoints` (new endpoints are
//! read, 2 calls each; vanished ones dropped), and a read again of what the agent wrote to
//! since (2 calls each), so the view holds what HNS answered, not what the agent meant. A
//! daemon round reads everything (what changed behind the agent's back is found there), and
//! any failure drops the view: the next pass reads everything.

use std::collections::BTreeSet;

use hns::schema::{HostComputeEndpoint, HostComputeNetwork};
use hns::{Client, Guid, HnsError};

/// HNS as a pass sees it.
#[derive(Debug)]
pub(crate) struct HnsRead {
    pub networks: Vec<HostComputeNetwork>,
    pub endpoints: Vec<HostComputeEndpoint>,
}

impl HnsRead {
    /// Reads every network and endpoint.
    pub fn read(client: &Client) -> Result<HnsRead, HnsError> {
        Ok(HnsRead {
            networks: client.list_networks()?,
            endpoints: client.list_endpoints(None)?,
        })
    }
}

/// The last read, and what the agent has written to since.
#[derive(Debug)]
pub(crate) struct HnsView {
    read: HnsRead,
    written_endpoints: BTreeSet<Guid>,
    written_networks: BTreeSet<Guid>,
}

impl HnsView {
    /// A full read.
    pub fn read(client: &Client) -> Result<HnsView, HnsError> {
        Ok(HnsView {
            read: HnsRead::read(client)?,
            written_endpoints: BTreeSet::new(),
            written_networks: BTreeSet::new(),
        })
    }

    /// What HNS holds.
    pub fn hns(&self) -> &HnsRead {
        &self.read
    }

    /// Brings the view up to date: raw calls `HcnEnumerateEndpoints` = 1, then 2 for each
    /// endpoint that is new or was written to, and for each network written to (every
    /// network, when an endpoint is on one the view does not know).
    pub fn refresh(&mut self, client: &Client) -> Result<(), HnsError> {
        let ids: BTreeSet<Guid> = client.list_endpoint_ids(None)?.into_iter().collect();
        let written = std::mem::take(&mut self.written_endpoints);
        self.read
            .endpoints
            .retain(|endpoint| ids.contains(&endpoint.id) && !written.contains(&endpoint.id));
        let held: BTreeSet<Guid> = self.read.endpoints.iter().map(|e| e.id).collect();
        for id in ids.difference(&held) {
            match client.open_endpoint(*id) {
                Ok(endpoint) => self.read.endpoints.push(endpoint.into_properties()),
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
        }
        // An endpoint on a network the view does not know: the network was created since
        // (flanneld's again after a reboot, under a new ID): read the networks again.
        let known = |id: &Guid| self.read.networks.iter().any(|n| n.id == *id);
        if self
            .read
            .endpoints
            .iter()
            .any(|e| !known(&e.host_compute_network))
        {
            self.read.networks = client.list_networks()?;
            self.written_networks.clear();
        }
        for id in std::mem::take(&mut self.written_networks) {
            let at = self.read.networks.iter().position(|n| n.id == id);
            match (client.open_network(id), at) {
                (Ok(network), Some(at)) => self.read.networks[at] = network.into_properties(),
                (Ok(network), None) => self.read.networks.push(network.into_properties()),
                (Err(e), Some(at)) if e.is_not_found() => {
                    self.read.networks.remove(at);
                }
                (Err(e), None) if e.is_not_found() => {}
                (Err(e), _) => return Err(e),
            }
        }
        Ok(())
    }

    /// Notes that the agent wrote to these endpoints and networks: they are read again.
    pub fn wrote(&mut self, endpoints: BTreeSet<Guid>, networks: BTreeSet<Guid>) {
        self.written_endpoints.extend(endpoints);
        self.written_networks.extend(networks);
    }
}
