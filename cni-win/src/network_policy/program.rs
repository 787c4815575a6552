//! One programming pass: read HNS, ask the translation what each local pod endpoint should
//! hold ([`cni_win_netpol::Translation::desired`]) and the fewest writes that get it there
//! ([`cni_win_netpol::diff`]: never a window, never another owner's rule), make them, and
//! render the snapshot new pods start from.
//!
//! Local pods are the pods whose `spec.nodeName` is this node; each is matched to the
//! endpoint that holds its address on one of cni-win's networks (local endpoints only:
//! remote endpoints are another host's pods). An endpoint no local pod's address names is
//! left as it is: a pod whose address the API server has not reported yet keeps the rules
//! ADD gave it from the snapshot.
//!
//! Raw HCN calls of a pass: what HNS holds (a daemon round's full read, or the programmer's
//! view brought up to date: see `hns_view`), then 2 per write (open and modify,
//! [`hns::Client::modify_endpoint_policies`], [`hns::Client::modify_network_policies`]); an
//! unchanged cluster makes no write.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use cni_win_netpol::{
    Desired, LocalEndpoint, Mode, Node as PolicyNode, PodKey, Programmed, Translation, Write, diff,
};
use hns::schema::policy::AclPolicy;
use hns::schema::{EndpointFlags, HostComputeEndpoint, HostComputeNetwork, NetworkPolicy};
use hns::{Client, Feature, Guid, SupportedFeatures};

use super::feed::ClusterState;
use super::hns_view::HnsRead;
use super::snapshot::{self, Rendered};
use crate::metrics::network_policy::Programmed as Counts;

/// One of cni-win's networks as its config names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NetworkConfig {
    /// The network's (and its HNS network's) name.
    pub name: String,
    /// `networkPolicySnapshot`, where new pods of the network read their rules.
    pub snapshot: Option<PathBuf>,
    /// The ACLs the config writes on every endpoint: the agent's rules keep clear of them.
    pub acls: Vec<AclPolicy>,
}

/// The programming mode the host's HNS allows: IP sets from 13.0 (`SetPolicy`), rules
/// listing their peers before.
pub fn mode(features: SupportedFeatures) -> Mode {
    if features.supports(Feature::SetPolicy) {
        Mode::IpSets
    } else {
        Mode::Inline
    }
}

/// What a pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pass {
    /// `HcnModifyEndpoint` requests made.
    pub endpoint_writes: u64,
    /// `HcnModifyNetwork` requests made.
    pub network_writes: u64,
    /// What HNS and the cluster came to.
    pub counts: Counts,
    /// The generation of the cluster state programmed.
    pub generation: u64,
    /// When the first change this pass programmed arrived.
    pub changed_since: Option<Instant>,
    /// The endpoints written to.
    pub(crate) endpoints_written: BTreeSet<Guid>,
    /// The networks written to.
    pub(crate) networks_written: BTreeSet<Guid>,
}

/// Why a pass did not program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotProgrammed {
    /// Not every watch has listed its resource once: nothing is written yet.
    NotSynced,
    /// HNS could not be read or refused a write (what was written before stays).
    Failed(String),
}

/// The writes of one network: what the translation wants there, and how to get it.
struct NetworkPlan {
    network: Guid,
    writes: Vec<Write>,
}

/// Programs HNS from `state` over `read` (what HNS holds now), then writes the snapshot
/// new pods start from. `state` is held only while the rules are computed.
pub(crate) fn program(
    client: &Client,
    mode: Mode,
    networks: &[NetworkConfig],
    read: &HnsRead,
    state: &Mutex<ClusterState>,
) -> Result<Pass, NotProgrammed> {
    let lock = || {
        state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    };
    let (plans, rendered, mut pass) = {
        let mut state = lock();
        if !state.synced() {
            return Err(NotProgrammed::NotSynced);
        }
        let (plans, rendered, mut pass) = plan(mode, networks, read, &state);
        pass.changed_since = state.changed_since.take();
        (plans, rendered, pass)
    };
    for (path, bytes) in &rendered.files {
        if let Err(e) = snapshot::write(path, bytes) {
            log::error!(
                "network policy: cannot write the snapshot {}: {e}; new pods start from the one \
                 there",
                path.display()
            );
        }
    }
    let applied = plans
        .iter()
        .try_for_each(|plan| apply(client, plan, &mut pass));
    let mut state = lock();
    match applied {
        Ok(()) => {
            state.programmed = Some(pass.generation);
            Ok(pass)
        }
        Err(why) => {
            // Not programmed: the latency still counts from the first change.
            if let Some(since) = pass.changed_since {
                let earliest = state.changed_since.map_or(since, |later| later.min(since));
                state.changed_since = Some(earliest);
            }
            Err(NotProgrammed::Failed(why))
        }
    }
}

/// What the translation wants, per network, and the snapshot, from one state.
fn plan(
    mode: Mode,
    networks: &[NetworkConfig],
    read: &HnsRead,
    state: &ClusterState,
) -> (Vec<NetworkPlan>, Rendered, Pass) {
    let node = node_addresses(networks, read, state);
    let local_pods = local_pods_by_address(state);
    let mut plans = Vec::new();
    let mut mapped: BTreeMap<PodKey, (Guid, Vec<String>)> = BTreeMap::new();
    let mut counts = Counts {
        policies_applied: (state.cluster.policies().count()).saturating_sub(state.refused.len()),
        policies_refused: state.refused.len(),
        ..Counts::default()
    };
    let mut translation = Translation::new(&state.cluster, &node);
    for network in cni_win_networks(networks, read) {
        let endpoints: Vec<&HostComputeEndpoint> = read
            .endpoints
            .iter()
            .filter(|e| e.host_compute_network == network.id)
            .filter(|e| !e.flags.contains(EndpointFlags::REMOTE_ENDPOINT))
            .collect();
        let programmed = Programmed {
            endpoints: endpoints
                .iter()
                .map(|e| (e.id, Programmed::acls(&e.policies)))
                .collect(),
            network: network.policies.clone(),
        };
        let local: Vec<LocalEndpoint> = endpoints
            .iter()
            .filter_map(|endpoint| {
                let ips: Vec<IpAddr> = endpoint
                    .ip_configurations
                    .iter()
                    .map(|c| c.ip_address)
                    .collect();
                let pod = ips.iter().find_map(|ip| local_pods.get(ip))?;
                Some(LocalEndpoint {
                    id: endpoint.id,
                    pod: (*pod).clone(),
                    ips,
                    others: programmed.endpoints[&endpoint.id]
                        .iter()
                        .filter(|acl| !cni_win_netpol::is_agents(acl))
                        .cloned()
                        .collect(),
                })
            })
            .collect();
        let wanted: Desired = translation.desired(&local, mode);
        for endpoint in &local {
            if let Some(conflict) = wanted.conflicts.get(&endpoint.id) {
                log::warn!(
                    "network policy: pod {}/{} (endpoint {}): {conflict}",
                    endpoint.pod.namespace,
                    endpoint.pod.name,
                    endpoint.id
                );
            }
            if let Some(acls) = wanted.endpoints.get(&endpoint.id) {
                let ids = acls.iter().filter_map(|acl| acl.id.clone()).collect();
                mapped.insert(endpoint.pod.clone(), (endpoint.id, ids));
            }
        }
        counts.endpoints_programmed += wanted.endpoints.len();
        counts.endpoints_conflicting += wanted.conflicts.len();
        plans.push(NetworkPlan {
            network: network.id,
            writes: diff(&programmed, &wanted),
        });
    }
    let rendered = snapshot::render(mode, networks, &mut translation, &mapped, state);
    let pass = Pass {
        counts,
        generation: state.generation,
        ..Pass::default()
    };
    (plans, rendered, pass)
}

/// Makes one network's writes in order. An endpoint that is gone (its pod deleted
/// meanwhile) loses its remaining writes; any other failure stops the pass, leaving what was
/// written (the translation orders writes so that no prefix of them opens a window).
fn apply(client: &Client, plan: &NetworkPlan, pass: &mut Pass) -> Result<(), String> {
    let mut gone = BTreeSet::new();
    for write in &plan.writes {
        match write {
            Write::Network(request) => {
                pass.networks_written.insert(plan.network);
                client
                    .modify_network_policies(plan.network, request)
                    .map_err(|e| e.to_string())?;
                pass.network_writes += 1;
            }
            Write::Endpoint { endpoint, request } => {
                if gone.contains(endpoint) {
                    continue;
                }
                pass.endpoints_written.insert(*endpoint);
                match client.modify_endpoint_policies(*endpoint, request) {
                    Ok(()) => pass.endpoint_writes += 1,
                    Err(e) if e.is_not_found() => {
                        gone.insert(*endpoint);
                    }
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
    }
    Ok(())
}

/// The HNS networks of cni-win's configured networks.
fn cni_win_networks<'r>(
    networks: &'r [NetworkConfig],
    read: &'r HnsRead,
) -> impl Iterator<Item = &'r HostComputeNetwork> {
    read.networks
        .iter()
        .filter(|network| networks.iter().any(|config| config.name == network.name))
}

/// The local pods with addresses, by address.
fn local_pods_by_address(state: &ClusterState) -> BTreeMap<IpAddr, &PodKey> {
    state
        .local
        .iter()
        .filter_map(|key| state.cluster.pod(key))
        .flat_map(|pod| pod.ips.iter().map(move |ip| (*ip, &pod.key)))
        .collect()
}

/// The addresses the node's own traffic comes from, always allowed: the Node object's
/// (kubelet's probes), and on each of cni-win's networks the host's provider address
/// (overlay) and the address of Flannel host-gw's bridge endpoint `<network>_ep`, through
/// which the host reaches its pods on an L2Bridge network.
fn node_addresses(networks: &[NetworkConfig], read: &HnsRead, state: &ClusterState) -> PolicyNode {
    let mut addresses = state.node_addresses.clone();
    for network in cni_win_networks(networks, read) {
        addresses.extend(network.policies.iter().filter_map(|policy| match policy {
            NetworkPolicy::ProviderAddress(provider) => Some(provider.provider_address),
            _ => None,
        }));
        let bridge = format!("{}_ep", network.name);
        addresses.extend(
            read.endpoints
                .iter()
                .filter(|e| e.host_compute_network == network.id && e.name == bridge)
                .flat_map(|e| e.ip_configurations.iter().map(|c| c.ip_address)),
        );
    }
    addresses.sort();
    addresses.dedup();
    PolicyNode { addresses }
}
