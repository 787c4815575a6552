//! One programming pass, as two steps the programmer runs in turn: [`plan`], over one state
//! of the cluster and what HNS holds, asks the translation what each local pod endpoint
//! should hold ([`cni_win_netpol::Translation::desired`]) and the fewest writes that get it
//! there ([`cni_win_netpol::diff`]: never a window, never another owner's rule), and renders
//! the snapshot new pods start from; [`apply`] makes the writes, network by network, each
//! endpoint's and each set's refusal kept to what depends on it ([`Writes::apply`]). Neither
//! touches the agent's shared state: the programmer holds the state's lock around `plan`
//! only, and keeps the books itself.
//!
//! The snapshot is rendered with the plan; the IP sets its rules name are added to each of
//! its networks' writes (new sets come first), so the programmer writes the file after the
//! writes.
//!
//! Local pods are the pods whose `spec.nodeName` is this node; each is matched to the
//! endpoint that holds its address on one of cni-win's networks (local endpoints only:
//! remote endpoints are another host's pods). An endpoint no local pod's address names is
//! left as it is: a pod whose address the API server has not reported yet keeps the rules
//! ADD gave it from the snapshot.
//!
//! Raw HCN calls of `apply`: 2 per write (open and modify,
//! [`hns::Client::modify_endpoint_policies`], [`hns::Client::modify_network_policies`]); an
//! unchanged cluster makes no write.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use cni_win_core::configured::PolicySettings;
use cni_win_core::network_policy::MAX_SIZE;
use cni_win_core::snapshot::NodeSnapshot;
use cni_win_netpol::{
    Desired, Failed, Held, IpSet, Item, LocalEndpoint, NodeAddresses, PodKey, Translation, Write,
    Writes, diff, is_agents,
};
use hns::schema::{EndpointFlags, HostComputeEndpoint, HostComputeNetwork, NetworkPolicy};
use hns::{Client, Function, Guid, HResult, HnsError};

use super::feed::ClusterState;
use super::snapshot::{self, Rendered, Rendering};
use crate::metrics::network_policy::PolicyCounts;

/// What one pass should write: every network's writes, and the snapshots.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The generation of the cluster state planned from.
    pub generation: u64,
    pub counts: PolicyCounts,
    pub networks: Vec<NetworkPlan>,
    pub snapshots: Rendered,
    /// The pod of each local endpoint the plan programs.
    pub pods: BTreeMap<Guid, PodKey>,
}

/// The writes of one network.
#[derive(Debug)]
pub(crate) struct NetworkPlan {
    network: Guid,
    writes: Writes,
}

/// What `apply` wrote to, how many requests it made, and what HNS refused.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    /// `HcnModifyEndpoint` requests made.
    pub endpoint_writes: u64,
    /// `HcnModifyNetwork` requests made.
    pub network_writes: u64,
    /// The endpoints and networks written to (or tried): what HNS holds of them is read again.
    pub written: BTreeSet<Guid>,
    /// The writes HNS refused: each leaves its item as it was.
    pub refused: Vec<Refused>,
    /// Endpoints left with all their rules because their new rules name a set that is not
    /// there: the network and the set's `Id`.
    pub waiting: BTreeMap<Guid, (Guid, String)>,
    /// The items held back (their retry not due), by network.
    pub held: BTreeSet<(Guid, Item)>,
    /// The new IP sets a network does not hold after all (their `Add` refused or held
    /// back): a snapshot naming one cannot be used yet.
    pub absent_sets: BTreeSet<String>,
}

/// A write HNS refused: its item (an endpoint's rules, or an IP set of a network) is left as
/// it was and tried again later; nothing else waits for it but what depends on it.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "HNS refused a write to {} on network {network}: {source}",
    describe(item)
)]
pub struct Refused {
    /// The network of the item.
    pub network: Guid,
    /// What the write was to change.
    pub item: Item,
    /// Every write of the item the pass planned: what a retry sends, unless the cluster or HNS
    /// changed meanwhile.
    pub writes: Vec<Write>,
    /// HNS's answer.
    #[source]
    pub source: HnsError,
}

impl Refused {
    /// The kind of object written, as the metrics name it: `endpoint` or `network`.
    pub fn object(&self) -> &'static str {
        match self.item {
            Item::Endpoint(_) => "endpoint",
            Item::Set(_) => "network",
        }
    }
}

/// An item as a log line names it.
pub(crate) fn describe(item: &Item) -> String {
    match item {
        Item::Endpoint(endpoint) => format!("endpoint {endpoint}"),
        Item::Set(id) => format!("IP set {id}"),
    }
}

/// Plans a pass from `state` over `hns` (what HNS holds now) for cni-win's `networks`;
/// `on_disk` are the IP sets the snapshots now on disk name, which stay on the networks.
pub(crate) fn plan(
    rendering: Rendering,
    networks: &[PolicySettings],
    hns: &NodeSnapshot,
    state: &ClusterState,
    on_disk: &BTreeSet<String>,
) -> Plan {
    let mode = rendering.mode;
    let node = node_addresses(networks, hns, state);
    let local_pods = local_pods_by_address(state);
    let mut wanted_by_network = Vec::new();
    let mut mapped: BTreeMap<PodKey, (Guid, Vec<String>)> = BTreeMap::new();
    let mut pods = BTreeMap::new();
    let mut held_sets = Vec::new();
    let mut counts = PolicyCounts {
        policies_applied: (state.cluster.policies().count()).saturating_sub(state.refused.len()),
        policies_refused: state.refused.len(),
        ..PolicyCounts::default()
    };
    let mut translation = Translation::new(&state.cluster, &node);
    for network in cni_win_networks(networks, hns) {
        let endpoints: Vec<&HostComputeEndpoint> = hns
            .endpoints
            .iter()
            .filter(|e| e.host_compute_network == network.id)
            .filter(|e| !e.flags.contains(EndpointFlags::REMOTE_ENDPOINT))
            .collect();
        let held = Held {
            endpoints: endpoints
                .iter()
                .map(|e| (e.id, Held::acls(&e.policies)))
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
                    others: held.endpoints[&endpoint.id]
                        .iter()
                        .filter(|acl| !is_agents(acl))
                        .cloned()
                        .collect(),
                })
            })
            .collect();
        let wanted: Desired = translation.desired(&local, mode);
        for collision in wanted
            .collisions
            .iter()
            .chain(&cni_win_netpol::renamed_sets(&held, &wanted))
        {
            log::error!("network policy: network {}: {collision}", network.name);
        }
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
                pods.insert(endpoint.id, endpoint.pod.clone());
            }
        }
        counts.endpoints_conflicting += wanted.conflicts.len();
        let sets: BTreeMap<String, IpSet> = held
            .network
            .iter()
            .filter_map(IpSet::from_network_policy)
            .map(|set| (set.id.clone(), set))
            .collect();
        held_sets.push((network.name.as_str(), sets));
        wanted_by_network.push((network, held, wanted));
    }
    let snapshots = {
        let programmed = snapshot::Programmed {
            mapped,
            sets: wanted_by_network
                .iter()
                .map(|(network, _, wanted)| (network.name.as_str(), &wanted.sets))
                .chain(held_sets.iter().map(|(name, sets)| (*name, sets)))
                .collect(),
        };
        snapshot::render(
            rendering,
            networks,
            hns,
            &mut translation,
            &programmed,
            state,
            MAX_SIZE,
        )
    };
    let plans = wanted_by_network
        .into_iter()
        .map(|(network, held, mut wanted)| {
            // What a snapshot of the network names is on it before the file is written
            // (the file follows the writes), and stays while a file on disk names it.
            for file in snapshots.files.values() {
                if file.networks.contains(&network.name) {
                    for (id, set) in &file.sets {
                        wanted.sets.entry(id.clone()).or_insert_with(|| set.clone());
                    }
                }
            }
            wanted.kept_sets = on_disk.clone();
            NetworkPlan {
                network: network.id,
                writes: diff(&held, &wanted),
            }
        })
        .collect();
    Plan {
        generation: state.generation,
        counts,
        networks: plans,
        snapshots,
        pods,
    }
}

/// Makes the plan's writes, network by network, and says what it wrote and what HNS refused.
/// `hold` holds an item of a network back (its retry is not due). An endpoint or network that
/// is gone (its pod deleted meanwhile) loses its remaining writes; a refusal holds back only
/// what depends on it (see [`Writes::apply`]).
pub(crate) fn apply(
    client: &Client,
    plan: &Plan,
    hold: impl Fn(Guid, &Item, &Writes) -> bool,
) -> Applied {
    let mut applied = Applied::default();
    for network in &plan.networks {
        let id = network.network;
        let outcome = network.writes.apply(
            |item| hold(id, item, &network.writes),
            |write| {
                let outcome = match write {
                    Write::Network(request) => client.modify_network_policies(id, request),
                    Write::Endpoint { endpoint, request } => {
                        client.modify_endpoint_policies(*endpoint, request)
                    }
                };
                outcome.map_err(|error| {
                    if gone(&error) {
                        Failed::Gone
                    } else {
                        Failed::Refused(error)
                    }
                })
            },
        );
        applied.endpoint_writes += outcome.endpoint_writes;
        applied.network_writes += outcome.network_writes;
        applied.written.extend(&outcome.endpoints_tried);
        if outcome.network_tried {
            applied.written.insert(id);
        }
        applied
            .refused
            .extend(outcome.refused.into_iter().map(|refused| Refused {
                network: id,
                writes: network.writes.planned(&refused.item),
                item: refused.item,
                source: refused.error,
            }));
        applied.waiting.extend(
            outcome
                .waiting
                .into_iter()
                .map(|(endpoint, set)| (endpoint, (id, set))),
        );
        applied
            .held
            .extend(outcome.held.into_iter().map(|item| (id, item)));
        applied.absent_sets.extend(outcome.absent_sets);
    }
    applied
}

/// Whether HNS says the object a write went to is gone: its open found nothing, or the
/// modify answered that the endpoint or network itself is not there. Any other "not found"
/// (`HCN_E_POLICY_NOT_FOUND` for a `Remove` of a rule HNS does not hold) means HNS does not
/// hold what the agent read: the object is there, its write failed, and it is read again
/// before it is tried again (counting it gone would leave the endpoint's other old rules in
/// place and the pass done).
fn gone(error: &HnsError) -> bool {
    let opened = matches!(
        error.raw().map(|raw| raw.function),
        Some(Function::OpenEndpoint | Function::OpenNetwork)
    );
    let object = matches!(
        error.hresult(),
        Some(HResult::HCN_E_ENDPOINT_NOT_FOUND | HResult::HCN_E_NETWORK_NOT_FOUND)
    );
    error.is_not_found() && (opened || object)
}

/// The HNS networks of cni-win's configured networks.
fn cni_win_networks<'r>(
    networks: &'r [PolicySettings],
    hns: &'r NodeSnapshot,
) -> impl Iterator<Item = &'r HostComputeNetwork> {
    hns.networks
        .iter()
        .filter(|network| networks.iter().any(|config| config.network == network.name))
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

/// The addresses the node's own connections to its pods come from, always allowed in: the
/// Node object's InternalIP (kubelet's probes), and on each of cni-win's networks the host's
/// provider address (overlay) and the address of Flannel host-gw's bridge endpoint
/// `<network>_ep`, through which the host reaches its pods on an L2Bridge network.
///
/// Which of these a probe leaves the host from on each network type is not documented
/// (docs/network-policy.md, "Which addresses are the node's"): these are the host's own
/// addresses the agent can know without asking Windows for every interface's, as Calico
/// does. Not ExternalIP: probes do not come from it, and it may be a shared address.
fn node_addresses(
    networks: &[PolicySettings],
    hns: &NodeSnapshot,
    state: &ClusterState,
) -> NodeAddresses {
    let mut addresses = state.node_addresses.clone().unwrap_or_default();
    for network in cni_win_networks(networks, hns) {
        addresses.extend(network.policies.iter().filter_map(|policy| match policy {
            NetworkPolicy::ProviderAddress(provider) => Some(provider.provider_address),
            _ => None,
        }));
        let bridge = format!("{}_ep", network.name);
        addresses.extend(
            hns.endpoints
                .iter()
                .filter(|e| e.host_compute_network == network.id && e.name == bridge)
                .flat_map(|e| e.ip_configurations.iter().map(|c| c.ip_address)),
        );
    }
    addresses.sort();
    addresses.dedup();
    NodeAddresses { addresses }
}

#[cfg(test)]
mod tests {
    use hns::RawError;

    use super::*;

    fn failed(function: Function, code: HResult) -> HnsError {
        HnsError::from_raw(
            RawError::new(function, code, String::new()),
            "Remove of 2 policies on endpoint 1",
        )
    }

    /// Only the object itself missing is "gone"; "policy not found" (and every other "not
    /// found" a modify may answer) is a refusal: the endpoint is there, and read again.
    #[test]
    fn only_the_object_missing_is_gone() {
        use Function::{ModifyEndpoint, OpenEndpoint, OpenNetwork};
        let gone_when = [
            (OpenEndpoint, HResult::HCN_E_ENDPOINT_NOT_FOUND),
            (OpenEndpoint, HResult::ERROR_NOT_FOUND),
            (OpenNetwork, HResult::HCN_E_NETWORK_NOT_FOUND),
            (ModifyEndpoint, HResult::HCN_E_ENDPOINT_NOT_FOUND),
        ];
        let there_when = [
            (ModifyEndpoint, HResult::HCN_E_POLICY_NOT_FOUND),
            (ModifyEndpoint, HResult::HCN_E_PORT_NOT_FOUND),
            (ModifyEndpoint, HResult::ERROR_NOT_FOUND),
            (ModifyEndpoint, HResult::E_INVALIDARG),
        ];
        for (function, code) in gone_when {
            assert!(gone(&failed(function, code)), "{function} {code}");
        }
        for (function, code) in there_when {
            assert!(!gone(&failed(function, code)), "{function} {code}");
        }
    }

    /// What the log line says of a refusal: the item, the network and HNS's HRESULT.
    #[test]
    fn a_refusal_names_its_item_and_the_hresult() {
        let refused = Refused {
            network: Guid::from_u128(7),
            item: Item::Endpoint(Guid::from_u128(1)),
            writes: Vec::new(),
            source: failed(Function::ModifyEndpoint, HResult::E_INVALIDARG),
        };
        let text = refused.to_string();
        assert!(
            text.starts_with(
                "HNS refused a write to endpoint 00000000-0000-0000-0000-000000000001"
            ) && text.contains("HRESULT 0x80070057 (E_INVALIDARG)"),
            "{text}"
        );
        assert_eq!(refused.object(), "endpoint");
    }
}
