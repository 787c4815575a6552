//! Drift of addresses on one of cni-win's networks, from the round's read: endpoints sharing
//! an address (classified by whose they are), remote endpoints inside this node's own pod
//! subnet, and endpoints of cni-win's whose attachment has no reservation.

use std::collections::BTreeMap;
use std::net::IpAddr;

use cni_win_core::ownership::Verdict;
use cni_win_core::snapshot::{NetworkView, NodeSnapshot};
use hns::schema::{EndpointFlags, HostComputeEndpoint};
use ipam_host_local::layout::Content;

use super::{Drift, Reason, RemoteOnPodAddress};

/// Every address drift on the network `view` of `snapshot` shows (named `network`). An
/// address is grouped over every network of the node (HNS checks a create per network, so
/// another network's endpoint on a pod's address is only found so); a remote endpoint is
/// reported in the pod subnet, or removed, only on this network.
pub(super) fn find(snapshot: &NodeSnapshot, view: &NetworkView<'_>, network: &str) -> Vec<Drift> {
    let drift = |reason, object: String, repair| Drift {
        reason,
        network: Some(network.to_owned()),
        object,
        repair,
    };
    let verdicts = view.verdicts();
    let verdict_of = |endpoint: &HostComputeEndpoint| {
        verdicts
            .iter()
            .find(|(ours, _)| ours.id == endpoint.id)
            .map(|(_, verdict)| verdict)
    };
    let subnet = PodSubnet::of(view);
    let mut found = Vec::new();
    let mut holders: BTreeMap<IpAddr, Vec<&HostComputeEndpoint>> = BTreeMap::new();
    for endpoint in &snapshot.endpoints {
        for config in &endpoint.ip_configurations {
            holders.entry(config.ip_address).or_default().push(endpoint);
        }
    }
    for (ip, holding) in &holders {
        let mut ours = Vec::new();
        let (mut remote, mut foreign) = (Vec::new(), Vec::new());
        let here = view.network.map(|network| network.id);
        for endpoint in holding {
            match verdict_of(endpoint) {
                Some(Verdict::NotOurs) | None
                    if endpoint.flags.contains(EndpointFlags::REMOTE_ENDPOINT) =>
                {
                    remote.push(*endpoint);
                }
                Some(Verdict::NotOurs) | None => foreign.push(*endpoint),
                Some(verdict) => ours.push((*endpoint, verdict)),
            }
        }
        let names = |endpoints: &mut dyn Iterator<Item = &HostComputeEndpoint>| {
            endpoints
                .map(|e| format!("{} ({})", e.name, e.id))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let ours_named = names(&mut ours.iter().map(|(endpoint, _)| *endpoint));
        if ours.len() > 1 {
            found.push(drift(
                Reason::DuplicateAddressOurs,
                format!("{ip} is held by cni-win's endpoints {ours_named}"),
                None,
            ));
        }
        let live_pod = ours.iter().find_map(|(endpoint, verdict)| match verdict {
            Verdict::Alive(attachment) => Some((*endpoint, attachment)),
            _ => None,
        });
        if ours.is_empty() {
            if subnet.contains(*ip) && !subnet.is_node_components(*ip) {
                let on_network = remote
                    .iter()
                    .filter(|endpoint| Some(endpoint.host_compute_network) == here);
                found.extend(on_network.map(|endpoint| {
                    drift(
                        Reason::RemoteEndpointInPodSubnet,
                        format!(
                            "remote endpoint {} ({}) holds {ip}, an address of this node's pod \
                             subnet no pod of cni-win's holds",
                            endpoint.name, endpoint.id
                        ),
                        None,
                    )
                }));
            }
            continue;
        }
        for endpoint in &remote {
            let repair = live_pod
                .filter(|_| subnet.contains(*ip) && Some(endpoint.host_compute_network) == here)
                .map(|(pod, attachment)| RemoteOnPodAddress {
                    remote: endpoint.id,
                    ip: *ip,
                    pod: pod.id,
                    attachment: attachment.clone(),
                });
            found.push(drift(
                Reason::DuplicateAddressRemote,
                format!(
                    "remote endpoint {} ({}) holds {ip}, which cni-win's {ours_named} holds",
                    endpoint.name, endpoint.id
                ),
                repair,
            ));
        }
        if !foreign.is_empty() {
            found.push(drift(
                Reason::DuplicateAddressForeign,
                format!(
                    "{ip} is held by cni-win's {ours_named} and by {}",
                    names(&mut foreign.iter().copied())
                ),
                None,
            ));
        }
    }
    found.extend(without_reservation(view, &verdicts, network));
    found
}

/// cni-win's endpoints whose attachment holds no reservation in the network's host-local
/// store (none for a delegated IPAM, whose store is its own).
fn without_reservation(
    view: &NetworkView<'_>,
    verdicts: &[(&HostComputeEndpoint, Verdict)],
    network: &str,
) -> Vec<Drift> {
    if view.reservations.is_none() {
        return Vec::new();
    }
    let reservations = view.pod_reservations();
    verdicts
        .iter()
        .filter_map(|(endpoint, verdict)| match verdict {
            Verdict::NotOurs => None,
            Verdict::Alive(attachment) | Verdict::Dead(attachment, _) => {
                (!reservations.iter().any(|r| r.attachment == *attachment)).then(|| Drift {
                    reason: Reason::EndpointWithoutReservation,
                    network: Some(network.to_owned()),
                    object: format!(
                        "endpoint {} ({}) holds {} but host-local holds no address for its \
                         attachment",
                        endpoint.name,
                        endpoint.id,
                        endpoint
                            .ip_configurations
                            .iter()
                            .map(|c| c.ip_address.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    repair: None,
                })
            }
        })
        .collect()
}

/// This node's own pod subnet on a network: the ranges ADD hands pods addresses from (no
/// other node can own an address there), and the addresses node components reserved in it
/// (kube-proxy's source VIP, whose endpoint may be remote).
struct PodSubnet {
    subnets: Vec<ipnetwork::IpNetwork>,
    node_components: Vec<IpAddr>,
}

impl PodSubnet {
    /// Empty when the pool cannot be told (a delegated IPAM, a refused config): then no
    /// address is taken for this node's, and nothing is repaired.
    fn of(view: &NetworkView<'_>) -> PodSubnet {
        let subnets = view
            .pod_pool()
            .map(|pool| {
                pool.config()
                    .range_sets
                    .iter()
                    .flat_map(|set| set.ranges().iter().map(|range| range.subnet))
                    .collect()
            })
            .unwrap_or_default();
        let node_components = view
            .reservations
            .iter()
            .flatten()
            .filter_map(|(ip, content)| match content {
                Content::Owned(owner) if owner.is_node_component() => Some(*ip),
                _ => None,
            })
            .collect();
        PodSubnet {
            subnets,
            node_components,
        }
    }

    fn contains(&self, ip: IpAddr) -> bool {
        self.subnets.iter().any(|subnet| subnet.contains(ip))
    }

    fn is_node_components(&self, ip: IpAddr) -> bool {
        self.node_components.contains(&ip)
    }
}
