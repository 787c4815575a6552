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

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::net::IpAddr;

use ipnetwork::IpNetwork;

use crate::cluster::{Cluster, NamedPort, PodInfo};
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

/// Which pods a group is made of.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Members {
    /// The pods a pod peer's selectors select.
    Selected(PodPeer),
    /// The pods whose addresses lie in an `ipBlock`'s prefixes: an egress rule's named port
    /// resolves on them.
    InBlock(Vec<IpNetwork>),
}

impl Members {
    /// The member pods. A pod peer's are looked for only in the namespaces it names (its own,
    /// or those its `namespaceSelector` matches): a select-all peer in each of 2,000
    /// namespaces then costs the cluster's pods once, not 2,000 times.
    fn pods<'c>(&self, cluster: &'c Cluster) -> Vec<&'c PodInfo> {
        match self {
            Members::Selected(peer) => {
                let namespaces: Vec<&str> = match &peer.namespaces {
                    Namespaces::Named(namespace) => vec![namespace.as_str()],
                    Namespaces::Matching(selector) => cluster
                        .namespaces()
                        .filter(|namespace| {
                            cluster
                                .namespace_labels(namespace)
                                .is_some_and(|labels| selector.matches(labels))
                        })
                        .collect(),
                };
                namespaces
                    .into_iter()
                    .flat_map(|namespace| cluster.pods_in(namespace))
                    .filter(|pod| peer_selects(cluster, peer, pod))
                    .collect()
            }
            Members::InBlock(prefixes) => cluster
                .pods()
                .filter(|pod| {
                    pod.ips
                        .iter()
                        .any(|ip| prefixes.iter().any(|prefix| prefix.contains(*ip)))
                })
                .collect(),
        }
    }
}

impl Group {
    /// The group's members' addresses of its family, sorted.
    pub(crate) fn addresses(&self, cluster: &Cluster) -> Vec<IpAddr> {
        let mut addresses: Vec<IpAddr> = self
            .members
            .pods(cluster)
            .into_iter()
            .filter(|pod| {
                self.port
                    .as_ref()
                    .is_none_or(|port| pod.resolve(&port.name, port.protocol) == Some(port.port))
            })
            .flat_map(|pod| pod.ips.iter().copied())
            .filter(|ip| Family::of(*ip) == self.family)
            .collect();
        addresses.sort();
        addresses.dedup();
        addresses
    }
}

/// Each group's addresses, worked out once per pass: the rules of many endpoints name the same
/// groups, and finding a group's members reads every pod of the cluster (5,000 pods, 100
/// endpoints and a few groups each would otherwise be millions of selector matches a pass).
#[derive(Debug, Default)]
pub(crate) struct GroupAddresses {
    by_group: HashMap<Group, Vec<IpAddr>>,
}

impl GroupAddresses {
    /// `group`'s addresses ([`Group::addresses`]), from the cluster the first time.
    pub(crate) fn of(&mut self, cluster: &Cluster, group: &Group) -> &[IpAddr] {
        self.by_group
            .entry(group.clone())
            .or_insert_with(|| group.addresses(cluster))
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
    // The peers whose pods the name resolves on: every pod (`to` absent), a pod peer's pods,
    // or the pods inside an address block.
    let every_pod = Members::Selected(PodPeer {
        namespaces: Namespaces::Matching(Selector::everything()),
        pods: Selector::everything(),
    });
    let peers: Vec<Members> = match &rule.peers {
        Peers::Any => vec![every_pod],
        Peers::These(peers) => peers
            .iter()
            .map(|peer| match peer {
                Peer::Pods(pods) => Members::Selected(pods.clone()),
                Peer::Block(prefixes) => Members::InBlock(prefixes.clone()),
            })
            .collect(),
    };
    for members in peers {
        for (name, protocol) in &named {
            let numbers: BTreeSet<u16> = members
                .pods(cluster)
                .into_iter()
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

/// Whether `peer` selects `pod`: its namespace is the named one or one whose labels match
/// (a namespace the agent has not seen matches no selector), and its labels match.
pub(crate) fn peer_selects(cluster: &Cluster, peer: &PodPeer, pod: &PodInfo) -> bool {
    #[cfg(test)]
    PEER_MATCHES.with(|count| count.set(count.get() + 1));
    let namespace_matches = match &peer.namespaces {
        Namespaces::Named(namespace) => &pod.key.namespace == namespace,
        Namespaces::Matching(selector) => cluster
            .namespace_labels(&pod.key.namespace)
            .is_some_and(|labels| selector.matches(labels)),
    };
    namespace_matches && peer.pods.matches(&pod.labels)
}

#[cfg(test)]
thread_local! {
    /// How many times this thread matched a peer against a pod: what translation costs.
    pub(crate) static PEER_MATCHES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}
