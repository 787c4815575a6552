//! NetworkPolicy semantics: what one pod may receive and send, as allow rules over remote
//! addresses or groups of pods, before anything is spelt as HNS spells it.
//!
//! A pod is isolated for a direction when some policy of its namespace selects it with that
//! policy type; it then accepts, in that direction, the union of what those policies' rules
//! allow. A rule allows traffic with any of its peers on any of its ports. Named ports are
//! resolved on the destination pod: on ingress the subject's own containers, on egress each
//! peer pod's, so peers with different numbers for one name get one rule per number. An
//! `ipBlock` peer's pods are the pods whose addresses lie in the block (less its `except`):
//! for pod traffic, `to` absent and `ipBlock: 0.0.0.0/0` mean the same, so a named port
//! resolves on those pods as on a pod peer's; an address outside the cluster has no container
//! and so no named port, and matches none.

use std::collections::BTreeSet;
use std::fmt;
use std::net::IpAddr;

use ipnetwork::IpNetwork;

use crate::cluster::{Cluster, NamedPort};
use crate::members::Members;
use crate::policy::{Namespaces, Peer, Peers, PodPeer, Policy, PortRef, Ports, Rule};
use crate::ports::{PortRange, Protocol};
use crate::selector::{Labels, Selector};

/// Which way traffic flows, seen from the pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Direction {
    /// Ingress: to the pod.
    In,
    /// Egress: from the pod.
    Out,
}

/// An address family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Family {
    V4,
    V6,
}

impl Family {
    pub(crate) fn of(ip: IpAddr) -> Family {
        if ip.is_ipv4() { Family::V4 } else { Family::V6 }
    }

    const BOTH: [Family; 2] = [Family::V4, Family::V6];
}

/// The pods of a peer that are members of a group, and the group's addresses of one family:
/// what becomes one IP set, or one inline address list.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Group {
    pub(crate) members: Members,
    /// Egress to a named port: only the peer's pods that resolve the name to this number.
    pub(crate) port: Option<NamedPort>,
    pub(crate) family: Family,
}

impl Group {
    /// The group's members' addresses of its family, sorted.
    pub(crate) fn addresses(&self, cluster: &Cluster) -> Vec<IpAddr> {
        let members = cluster.members(&self.members);
        let mut addresses: Vec<IpAddr> = match &self.port {
            None => members.addresses().collect(),
            Some(port) => {
                let mut resolving: Vec<IpAddr> = members
                    .pods()
                    .filter_map(|key| cluster.pod(key))
                    .filter(|pod| pod.resolve(&port.name, port.protocol) == Some(port.port))
                    .flat_map(|pod| pod.ips.iter().copied())
                    .collect();
                resolving.sort();
                resolving.dedup();
                resolving
            }
        };
        addresses.retain(|ip| Family::of(*ip) == self.family);
        addresses
    }
}

/// One line per group, as IP sets are named: what selects its pods, then the port and family.
impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.members {
            Members::Selected(peer) => {
                match &peer.namespaces {
                    Namespaces::Named(namespace) => write!(f, "ns/{namespace}")?,
                    Namespaces::Matching(selector) => write!(f, "ns:{selector}")?,
                }
                write!(f, " pod:{}", peer.pods)?;
            }
            Members::InBlock(prefixes) => {
                let prefixes: Vec<String> = prefixes.iter().map(ToString::to_string).collect();
                write!(f, "block:{}", prefixes.join(","))?;
            }
        }
        if let Some(port) = &self.port {
            write!(f, " port:{}/{}={}", port.name, port.protocol, port.port)?;
        }
        f.write_str(match self.family {
            Family::V4 => " v4",
            Family::V6 => " v6",
        })
    }
}

/// The other end of allowed traffic.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Remote {
    /// Anyone.
    Any,
    /// Addresses in these prefixes, all of one family.
    Prefixes(Vec<IpNetwork>),
    /// A group of pods.
    Group(Group),
}

/// Which protocol and ports allowed traffic uses.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Service {
    /// Any protocol, any port.
    Any,
    /// One protocol; the destination ports, none meaning all of them.
    Ports(Protocol, Vec<PortRange>),
}

/// Traffic one pod accepts in one direction.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Allow {
    pub(crate) direction: Direction,
    pub(crate) remote: Remote,
    pub(crate) service: Service,
}

/// The pod rules are made for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subject<'a> {
    pub(crate) namespace: &'a str,
    /// `None` for a pod the agent has not seen: only policies that select every pod of the
    /// namespace are known to select it.
    pub(crate) labels: Option<&'a Labels>,
    /// The pod's named ports (for ingress to a named port).
    pub(crate) named_ports: &'a [NamedPort],
}

/// What policies make of one pod: per direction, whether it is isolated, and what it allows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PodPolicy {
    pub(crate) isolated_in: bool,
    pub(crate) isolated_out: bool,
    pub(crate) allows: BTreeSet<Allow>,
}

/// The policies of `subject`'s namespace applied to it.
///
/// For an unseen pod (no labels) a direction is isolated when any policy of the namespace
/// has its type, since one may select the pod: the pod fails closed until the agent sees it.
pub(crate) fn pod_policy(cluster: &Cluster, subject: Subject<'_>) -> PodPolicy {
    let mut result = PodPolicy::default();
    for policy in cluster.policies_in(subject.namespace) {
        let selects = match subject.labels {
            Some(labels) => policy.pod_selector.matches(labels),
            None => policy.pod_selector.is_everything(),
        };
        let may_select = selects || subject.labels.is_none();
        result.isolated_in |= may_select && policy.isolates_ingress();
        result.isolated_out |= may_select && policy.isolates_egress();
        if selects {
            add_policy(cluster, subject, policy, &mut result.allows);
        }
    }
    result
}

fn add_policy(cluster: &Cluster, subject: Subject<'_>, policy: &Policy, out: &mut BTreeSet<Allow>) {
    for rule in policy.ingress.iter().flatten() {
        ingress(subject, rule, out);
    }
    for rule in policy.egress.iter().flatten() {
        egress(cluster, rule, out);
    }
}

/// Ingress: ports are the subject's own, named ones resolved on its containers.
fn ingress(subject: Subject<'_>, rule: &Rule, out: &mut BTreeSet<Allow>) {
    let services: Vec<Service> = match &rule.ports {
        Ports::Any => vec![Service::Any],
        Ports::These(specs) => specs
            .iter()
            .filter_map(|spec| {
                let ports = match &spec.port {
                    PortRef::All => Vec::new(),
                    PortRef::Numbers(range) => vec![*range],
                    PortRef::Named(name) => {
                        let port = subject
                            .named_ports
                            .iter()
                            .find(|port| &port.name == name && port.protocol == spec.protocol)?;
                        vec![PortRange::single(port.port)]
                    }
                };
                Some(Service::Ports(spec.protocol, ports))
            })
            .collect(),
    };
    allow_each(Direction::In, remotes(&rule.peers), &services, out);
}

/// Egress: numbered ports apply to every peer; a named port to each peer pod that has it,
/// with that pod's number (an address block's pods are the pods inside it).
fn egress(cluster: &Cluster, rule: &Rule, out: &mut BTreeSet<Allow>) {
    let (services, named) = match &rule.ports {
        Ports::Any => (vec![Service::Any], Vec::new()),
        Ports::These(specs) => {
            let mut services = Vec::new();
            let mut named = Vec::new();
            for spec in specs {
                match &spec.port {
                    PortRef::All => services.push(Service::Ports(spec.protocol, Vec::new())),
                    PortRef::Numbers(range) => {
                        services.push(Service::Ports(spec.protocol, vec![*range]))
                    }
                    PortRef::Named(name) => named.push((name, spec.protocol)),
                }
            }
            (services, named)
        }
    };
    allow_each(Direction::Out, remotes(&rule.peers), &services, out);
    if named.is_empty() {
        return;
    }
    for members in named_port_members(&rule.peers) {
        let pods = cluster.members(&members);
        for (name, protocol) in &named {
            let numbers: BTreeSet<u16> = pods
                .pods()
                .filter_map(|key| cluster.pod(key))
                .filter_map(|pod| pod.resolve(name, *protocol))
                .collect();
            for number in numbers {
                let port = NamedPort {
                    name: (*name).clone(),
                    protocol: *protocol,
                    port: number,
                };
                let service = Service::Ports(*protocol, vec![PortRange::single(number)]);
                let remotes = Family::BOTH.map(|family| {
                    Remote::Group(Group {
                        members: members.clone(),
                        port: Some(port.clone()),
                        family,
                    })
                });
                allow_each(Direction::Out, remotes.to_vec(), &[service], out);
            }
        }
    }
}

/// The groups whose pods an egress rule's named ports resolve on: every pod (`to` absent), a
/// pod peer's pods, or the pods inside an address block.
fn named_port_members(peers: &Peers) -> Vec<Members> {
    match peers {
        Peers::Any => vec![Members::Selected(PodPeer {
            namespaces: Namespaces::Matching(Selector::everything()),
            pods: Selector::everything(),
        })],
        Peers::These(peers) => peers
            .iter()
            .map(|peer| match peer {
                Peer::Pods(pods) => Members::Selected(pods.clone()),
                Peer::Block(prefixes) => Members::InBlock(prefixes.clone()),
            })
            .collect(),
    }
}

/// Every group `policy`'s rules may name, whatever pod it is applied to: what the cluster
/// keeps the members of ([`crate::members`]). A group left out would still be found, by a
/// look at every pod it may hold on each use.
pub(crate) fn members_named_by(policy: &Policy) -> BTreeSet<Members> {
    let pod_peers = |rule: &Rule| -> Vec<Members> {
        match &rule.peers {
            Peers::Any => Vec::new(),
            Peers::These(peers) => peers
                .iter()
                .filter_map(|peer| match peer {
                    Peer::Pods(pods) => Some(Members::Selected(pods.clone())),
                    Peer::Block(_) => None,
                })
                .collect(),
        }
    };
    let has_named_port = |rule: &Rule| match &rule.ports {
        Ports::Any => false,
        Ports::These(specs) => specs
            .iter()
            .any(|spec| matches!(spec.port, PortRef::Named(_))),
    };
    let ingress = policy.ingress.iter().flatten().flat_map(pod_peers);
    let egress = policy.egress.iter().flatten().flat_map(|rule| {
        let mut members = pod_peers(rule);
        if has_named_port(rule) {
            members.extend(named_port_members(&rule.peers));
        }
        members
    });
    ingress.chain(egress).collect()
}

/// Allows every service with every remote.
fn allow_each(
    direction: Direction,
    remotes: Vec<Remote>,
    services: &[Service],
    out: &mut BTreeSet<Allow>,
) {
    for remote in remotes {
        for service in services {
            out.insert(Allow {
                direction,
                remote: remote.clone(),
                service: service.clone(),
            });
        }
    }
}

/// The remotes of a rule's peers: anyone, each address block split by family, each pod peer
/// as a group per family.
fn remotes(peers: &Peers) -> Vec<Remote> {
    let Peers::These(peers) = peers else {
        return vec![Remote::Any];
    };
    let mut remotes = Vec::new();
    for peer in peers {
        match peer {
            Peer::Block(prefixes) => {
                for family in Family::BOTH {
                    let of_family: Vec<IpNetwork> = prefixes
                        .iter()
                        .copied()
                        .filter(|prefix| Family::of(prefix.network()) == family)
                        .collect();
                    if !of_family.is_empty() {
                        remotes.push(Remote::Prefixes(of_family));
                    }
                }
            }
            Peer::Pods(pods) => {
                for family in Family::BOTH {
                    remotes.push(Remote::Group(Group {
                        members: Members::Selected(pods.clone()),
                        port: None,
                        family,
                    }));
                }
            }
        }
    }
    remotes
}
