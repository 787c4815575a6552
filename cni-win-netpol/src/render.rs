//! Allow rules spelt as HNS ACLs, at the priorities of the plan, with the rules no policy
//! states: the node's and the pod's own traffic, and each direction's default.
//!
//! # Priorities
//!
//! HNS evaluates lower numbers first. The plan ([`Priorities::NOMINAL`]):
//!
//! | priority | rule | why there |
//! | --- | --- | --- |
//! | below 4200 | other owners' rules: the conflist's ACL policies, `allowAclPortMapping`'s per-port allows (no priority), Azure CNI's wireserver block (200) | an operator's rules (documented for 100-4096) keep precedence over policy, never overridden silently |
//! | 4200 | allow from the node; from and to the pod itself | the API: a pod isolated for ingress still accepts its node's connections (kubelet's probes), and a pod cannot block itself; what a pod sends to its node is what its egress rules allow, as for any address (Calico and Azure NPM allow host addresses inbound only too) |
//! | 4300 | every policy allow | allows only, so their order among themselves does not matter |
//! | 65000 | block all, In or Out, for a direction the pod is isolated in | after every allow; before `allowAclPortMapping`'s allow-all at 65500, which it must beat |
//! | 65100 | allow all, In or Out, for a direction the pod is not isolated in | Windows Server 2025 denies what no ACL allows once an endpoint has any ACL, so openness is written out; after the block, so a pod becoming isolated gets its block added before its allow-all is removed, and the reverse, without a window or a tie |
//!
//! Two rules of one priority with opposite actions are never written (what HNS does with
//! them is undocumented): where another owner's rule sits at one of these numbers with
//! another action, the agent's rule moves to the next free number before the next slot
//! ([`Priorities::clear_of`]); on a tie the other owner's rule is the one that stays first.
//!
//! # Address fields
//!
//! Plain addresses (the node, `ipBlock`s, inline peers) are the peer's in `RemoteAddresses`,
//! in both directions, as Calico writes them. A peer IP set goes where Azure NPM, the one
//! production writer of sets, puts it: the packet's source in `LocalAddresses` on ingress, its
//! destination in `RemoteAddresses` on egress (NPM: "LocalAddresses = Source Sets,
//! RemoteAddresses = Destination Sets", `npm/pkg/dataplane/policies/policy_windows.go`), a
//! layout that passes the NetworkPolicy conformance suite on Windows Server 2022.
//!
//! # The Host layer
//!
//! Beside its switch rules, every endpoint gets the agent's Host-layer allow-all, In and Out
//! ([`AclPolicy::host_allow_all`]), as Calico and Azure NPM write them ("Required by l2bridge
//! network"): whether HNS needs them is not documented, so the agent writes what the
//! NetworkPolicy implementations that run on real hosts write. Not in a direction where another
//! owner (a conflist, the plugin beside its own ACLs) has a Host rule: that owner's rules govern
//! the layer, and one without a priority beside theirs could tie.
//!
//! # Identity
//!
//! Every rule the agent writes has an `Id` starting [`RULE_ID_PREFIX`], followed by a
//! fingerprint of the rule itself, so the agent recognises its rules among others', an
//! unchanged rule keeps its `Id` across restarts, and a changed one is a new rule (added
//! before the old one is removed: rules are never updated in place). A set's `Id` is the
//! fingerprint of its group's name ([`IpSet::for_group`]). Fingerprints are 128 bits of
//! SHA-256: a tenant who writes selectors cannot make two groups meet one `Id` (a 64-bit
//! non-cryptographic hash let a second preimage be searched for), and if two ever did, the
//! pass leaves both out (`crate::sets`).
//!
//! # Size
//!
//! No rule lists more than [`MAX_RULE_ENTRIES`] addresses or ports in any one list, in every
//! mode and in the rules ADD writes: a longer rule is written as several of the same
//! priority and action, each with the `Id` of its own content.

use std::cell::OnceCell;
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use hns::schema::policy::{AclAction, AclDirection, AclPolicy, AclRuleType};
use hns::{Feature, SupportedFeatures};
use ipnetwork::IpNetwork;

use sha2::{Digest, Sha256};

use crate::cluster::Cluster;
use crate::ports::{self, PortRange, Protocol};
use crate::rules::{Allow, Direction, Family, Group, PodPolicy, Remote, Service};
use crate::sets::Sets;

/// How pod peers' addresses reach HNS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Each rule lists its peers' addresses: a membership change rewrites the rules of every
    /// endpoint that refers to the peer. For hosts without IP sets (HNS before 13.0).
    Inline,
    /// Each pod peer is a network-level IP set (`SetPolicy`, HNS 13.0 and later) that rules
    /// name by its `Id` where Azure NPM does (see the module documentation): a membership
    /// change is one set update, and no endpoint's rules change.
    IpSets,
}

impl Mode {
    /// The mode the host's HNS allows: IP sets from 13.0 (`SetPolicy`), rules listing their
    /// peers before.
    pub fn for_features(features: SupportedFeatures) -> Mode {
        if features.supports(Feature::SetPolicy) {
            Mode::IpSets
        } else {
            Mode::Inline
        }
    }

    /// The mode's one name, in metrics (`mode` label), the snapshot and doctor.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Inline => "inline",
            Mode::IpSets => "ip-sets",
        }
    }
}

/// The `Id` prefixes of the agent's rules and sets, stated once for the agent and the
/// plugins (which refuse a config ACL spelt as one of the agent's).
pub use netpol_ids::{RULE_ID_PREFIX, SET_ID_PREFIX};

/// Whether an ACL is one of the agent's (its `Id` has [`RULE_ID_PREFIX`]).
pub fn is_agents(acl: &AclPolicy) -> bool {
    acl.id.as_deref().is_some_and(netpol_ids::is_agents)
}

/// A network-level IP set: the addresses of one group of pods, of one family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpSet {
    /// What rules name it by: [`SET_ID_PREFIX`] and a fingerprint of `name`.
    pub id: String,
    /// What selects its members, readable (`ns/x pod:pod=b v4`).
    pub name: String,
    /// Its members' addresses, sorted; never empty (a peer with no member needs no rule).
    pub addresses: Vec<IpAddr>,
}

impl IpSet {
    /// The set of the group named `name` (what selects its members), with `addresses`.
    pub fn for_group(name: String, addresses: Vec<IpAddr>) -> IpSet {
        IpSet {
            id: format!("{SET_ID_PREFIX}{}", fingerprint(&name)),
            name,
            addresses,
        }
    }
}

/// The priorities of the agent's rules (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priorities {
    /// Allow from and to the node and the pod itself.
    pub node: u16,
    /// Every policy allow.
    pub allow: u16,
    /// Block all in a direction the pod is isolated in.
    pub isolate: u16,
    /// Allow all in a direction the pod is not isolated in.
    pub open: u16,
}

/// No priority is free for one of the agent's rules on an endpoint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "every priority from {first} to {last} holds another owner's ACL with another action than the agent's {slot} rule; the agent leaves this endpoint's rules as they are"
)]
pub struct PriorityConflict {
    /// Which of the agent's rules found no room.
    pub slot: &'static str,
    /// The first priority tried.
    pub first: u16,
    /// The last.
    pub last: u16,
}

/// The number after which HNS's lowest-precedence rules of other owners start
/// (`allowAclPortMapping`'s and Azure CNI's allow-all at 65500).
const PLAN_END: u16 = 65500;

impl Priorities {
    /// The plan, before other owners' rules are seen.
    pub const NOMINAL: Priorities = Priorities {
        node: 4200,
        allow: 4300,
        isolate: 65000,
        open: 65100,
    };

    /// The plan moved clear of `others`' rules: each of the agent's rules takes the first
    /// number from its nominal one (and before the next slot's) where no rule of another owner
    /// has another action.
    ///
    /// This is the agent's side of the one relation HNS imposes, [`AclPolicy::ties_with`] (ADD
    /// checks the snapshot's rules against a config's ACLs with it), made stricter: a slot
    /// holds rules of both directions, and an action other than the slot's, blocking or not,
    /// is kept apart too. So no rule the agent places ties with another owner's (the tests
    /// show the implication over every action, direction, layer and nearby priority).
    pub fn clear_of(others: &[AclPolicy]) -> Result<Priorities, PriorityConflict> {
        let nominal = Priorities::NOMINAL;
        let free = |slot: &'static str, first: u16, end: u16, action: AclAction| {
            (first..end)
                .find(|priority| {
                    !others
                        .iter()
                        .any(|other| other.priority == Some(*priority) && other.action != action)
                })
                .ok_or(PriorityConflict {
                    slot,
                    first,
                    last: end - 1,
                })
        };
        Ok(Priorities {
            node: free("node", nominal.node, nominal.allow, AclAction::Allow)?,
            allow: free(
                "policy allow",
                nominal.allow,
                nominal.isolate,
                AclAction::Allow,
            )?,
            isolate: free(
                "isolation block",
                nominal.isolate,
                nominal.open,
                AclAction::Block,
            )?,
            open: free("allow-all", nominal.open, PLAN_END, AclAction::Allow)?,
        })
    }
}

/// Where the rules of one endpoint are being spelt.
pub(crate) struct Renderer<'a> {
    pub(crate) cluster: &'a Cluster,
    pub(crate) mode: Mode,
    pub(crate) priorities: Priorities,
    /// The sets rules refer to, gathered across endpoints.
    pub(crate) sets: &'a mut Sets,
    /// The groups as rules name them, worked out across endpoints.
    pub(crate) groups: &'a mut NamedGroups,
    /// The directions the agent writes its Host-layer allow-all for ([`host_directions`]).
    pub(crate) host: Vec<AclDirection>,
}

impl Renderer<'_> {
    /// Every ACL of one endpoint, in priority order then `Id` order: the node's addresses
    /// inbound, its own both ways, the policy allows, each direction's default.
    pub(crate) fn endpoint(
        &mut self,
        policy: &PodPolicy,
        node: &[IpAddr],
        own: &[IpAddr],
    ) -> Vec<AclPolicy> {
        const IN: &[Direction] = &[Direction::In];
        const BOTH: &[Direction] = &[Direction::In, Direction::Out];
        let mut acls = Vec::new();
        for (addresses, directions) in [(node, IN), (own, BOTH)] {
            for family in [Family::V4, Family::V6] {
                let of_family: Vec<IpNetwork> = addresses
                    .iter()
                    .filter(|ip| Family::of(**ip) == family)
                    .map(|ip| IpNetwork::from(*ip))
                    .collect();
                if of_family.is_empty() {
                    continue;
                }
                let peer = Peer::Addresses(spell_prefixes(&of_family));
                for direction in directions {
                    acls.push(acl(
                        *direction,
                        AclAction::Allow,
                        self.priorities.node,
                        peer.clone(),
                        None,
                        None,
                    ));
                }
            }
        }
        for (direction, isolated) in [
            (Direction::In, policy.isolated_in),
            (Direction::Out, policy.isolated_out),
        ] {
            let (action, priority) = if isolated {
                (AclAction::Block, self.priorities.isolate)
            } else {
                (AclAction::Allow, self.priorities.open)
            };
            acls.push(acl(direction, action, priority, Peer::Anyone, None, None));
        }
        acls.extend(
            self.host
                .iter()
                .map(|direction| identified(AclPolicy::host_allow_all(*direction))),
        );
        let mut acls: Vec<AclPolicy> = acls.into_iter().flat_map(split).collect();
        acls.extend(self.allows(policy));
        acls.sort_by(|a, b| (a.priority, &a.id).cmp(&(b.priority, &b.id)));
        acls.dedup();
        acls
    }

    /// The policy allows, those of one direction, remote and protocol merged into one rule
    /// listing all their ports ([`split`] where its lists are too long).
    fn allows(&mut self, policy: &PodPolicy) -> Vec<AclPolicy> {
        type Key = (Direction, Peer, Option<Protocol>);
        // The ports, and a group the peer is of: rules of a group's peer are made once a pass.
        let mut merged: BTreeMap<Key, (Option<Vec<PortRange>>, Option<&Group>)> = BTreeMap::new();
        for Allow {
            direction,
            remote,
            service,
        } in &policy.allows
        {
            let Some(peer) = self.peer(remote) else {
                continue;
            };
            let (protocol, ranges) = match service {
                Service::Any => (None, Vec::new()),
                Service::Ports(protocol, ranges) => (Some(*protocol), ranges.clone()),
            };
            let group = match remote {
                Remote::Group(group) => Some(group),
                _ => None,
            };
            let (ports, _) = merged
                .entry((*direction, peer, protocol))
                .or_insert_with(|| (Some(Vec::new()), group));
            match ports {
                // All ports of the protocol already.
                None => {}
                Some(_) if ranges.is_empty() => *ports = None,
                Some(list) => list.extend(ranges),
            }
        }
        let priority = self.priorities.allow;
        merged
            .into_iter()
            .flat_map(|((direction, peer, protocol), (ranges, group))| {
                let ports = ranges.map(|ranges| {
                    ports::merge(ranges)
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(",")
                });
                let allow = |peer, ports| {
                    split(acl(
                        direction,
                        AclAction::Allow,
                        priority,
                        peer,
                        protocol,
                        ports,
                    ))
                };
                match group {
                    Some(group) => {
                        let key = GroupRule {
                            group: group.clone(),
                            mode: self.mode,
                            direction,
                            protocol,
                            ports,
                            priority,
                        };
                        self.groups.rule(key, |key| allow(peer, key.ports.clone()))
                    }
                    None => allow(peer, ports),
                }
            })
            .collect()
    }

    /// How a rule names a remote; `None` for a group without a member (an empty list would
    /// mean anyone to HNS, so such a rule is not written at all).
    fn peer(&mut self, remote: &Remote) -> Option<Peer> {
        match remote {
            Remote::Any => Some(Peer::Anyone),
            Remote::Prefixes(prefixes) => Some(Peer::Addresses(spell_prefixes(prefixes))),
            Remote::Group(group) => {
                let named = self.groups.of(self.cluster, group);
                if named.addresses.is_empty() {
                    return None;
                }
                Some(match self.mode {
                    Mode::Inline => Peer::Addresses(named.spelled().to_owned()),
                    Mode::IpSets => Peer::Set(self.sets.name(named.set(group))),
                })
            }
        }
    }
}

/// Each group as rules name it, worked out once per pass: the rules of many endpoints name
/// the same groups, each of up to thousands of addresses, which are listed, spelt and
/// fingerprinted once.
#[derive(Debug, Default)]
pub(crate) struct NamedGroups {
    by_group: HashMap<Group, NamedGroup>,
    /// The allow rules whose peer is a group's, made once (and split, where a list is too
    /// long): an inline rule's `Id` is a fingerprint of up to thousands of addresses, and
    /// every endpoint the rule applies to holds the same rules.
    rules: HashMap<GroupRule, Vec<AclPolicy>>,
}

impl NamedGroups {
    /// `group` as rules name it, from the cluster's members the first time.
    pub(crate) fn of(&mut self, cluster: &Cluster, group: &Group) -> &NamedGroup {
        self.by_group
            .entry(group.clone())
            .or_insert_with(|| NamedGroup {
                addresses: group.addresses(cluster),
                spelled: OnceCell::new(),
                set: OnceCell::new(),
            })
    }
}

/// What an allow rule whose peer is a group's is made of, but for the group's addresses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct GroupRule {
    group: Group,
    /// How the rule names the group: its set, or its addresses.
    mode: Mode,
    direction: Direction,
    protocol: Option<Protocol>,
    ports: Option<String>,
    priority: u16,
}

impl NamedGroups {
    /// The rules `key` names, made by `make` the first time.
    fn rule(
        &mut self,
        key: GroupRule,
        make: impl FnOnce(&GroupRule) -> Vec<AclPolicy>,
    ) -> Vec<AclPolicy> {
        self.rules
            .entry(key)
            .or_insert_with_key(|key| make(key))
            .clone()
    }
}

/// One group's addresses, and what rules name them by in either mode.
#[derive(Debug)]
pub(crate) struct NamedGroup {
    /// Its members' addresses of its family, sorted.
    pub(crate) addresses: Vec<IpAddr>,
    spelled: OnceCell<String>,
    set: OnceCell<IpSet>,
}

impl NamedGroup {
    /// Its addresses as an inline rule lists them.
    fn spelled(&self) -> &str {
        self.spelled
            .get_or_init(|| spell_addresses(&self.addresses))
    }

    /// Its IP set; `group` is the group it is of.
    fn set(&self, group: &Group) -> &IpSet {
        self.set
            .get_or_init(|| IpSet::for_group(group.to_string(), self.addresses.clone()))
    }
}

/// How a rule names its peer.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Peer {
    /// Any address: no address field.
    Anyone,
    /// Addresses and prefixes, spelt: the peer's side, `RemoteAddresses`, in both directions.
    Addresses(String),
    /// An IP set's `Id`: the packet's source on ingress (`LocalAddresses`), its destination
    /// on egress (`RemoteAddresses`), as Azure NPM writes sets.
    Set(String),
}

/// The directions in which the agent writes its Host-layer allow-all on an endpoint that
/// holds `others`, another owner's ACLs: those in which no other owner has a Host rule.
pub(crate) fn host_directions(others: &[AclPolicy]) -> Vec<AclDirection> {
    [AclDirection::In, AclDirection::Out]
        .into_iter()
        .filter(|direction| {
            !others
                .iter()
                .any(|acl| acl.direction == *direction && acl.rule_type == Some(AclRuleType::Host))
        })
        .collect()
}

/// One switch ACL of the agent, its `Id` the fingerprint of everything else in it. Protocol
/// `None` is every protocol (`256`, as cni-win's own allow-all rules write it); `ports` are the
/// destination's: the pod's (`LocalPorts`) on ingress, the remote's on egress.
fn acl(
    direction: Direction,
    action: AclAction,
    priority: u16,
    peer: Peer,
    protocol: Option<Protocol>,
    ports: Option<String>,
) -> AclPolicy {
    let (local_ports, remote_ports, direction) = match direction {
        Direction::In => (ports, None, AclDirection::In),
        Direction::Out => (None, ports, AclDirection::Out),
    };
    let (local_addresses, remote_addresses) = match (peer, direction) {
        (Peer::Anyone, _) => (None, None),
        (Peer::Addresses(addresses), _) => (None, Some(addresses)),
        (Peer::Set(id), AclDirection::In) => (Some(id), None),
        (Peer::Set(id), AclDirection::Out) => (None, Some(id)),
    };
    identified(AclPolicy {
        id: None,
        protocols: Some(protocol.map_or_else(|| "256".to_owned(), |p| p.number().to_string())),
        action,
        direction,
        local_addresses,
        remote_addresses,
        local_ports,
        remote_ports,
        rule_type: Some(AclRuleType::Switch),
        priority: Some(priority),
    })
}

/// `acl` with its `Id`: [`RULE_ID_PREFIX`] and the fingerprint of everything else in it.
fn identified(mut acl: AclPolicy) -> AclPolicy {
    acl.id = None;
    let content = serde_json::to_string(&acl).unwrap_or_default();
    acl.id = Some(format!("{RULE_ID_PREFIX}{}", fingerprint(&content)));
    acl
}

/// The most entries (addresses or prefixes; ports or port ranges) one rule lists in any of its
/// address and port lists: what production software writes
/// ([`AclPolicy::KNOWN_LIST_ENTRIES`]). A rule of one peer group can exceed it: an `ipBlock`
/// of `0.0.0.0/0` with 300 `/32` excepts is some 6,800 prefixes; a namespace selector across
/// a large cluster lists every pod inline.
pub const MAX_RULE_ENTRIES: usize = AclPolicy::KNOWN_LIST_ENTRIES;

/// `acl` as rules of at most [`MAX_RULE_ENTRIES`] entries per list, as Calico cuts them: each
/// longer list in chunks, and one rule for each combination of chunks, so together they match
/// exactly what `acl` matches. Each keeps the priority and action (no tie between them: they
/// agree) and gets the `Id` of its own content. A rule within the limit is returned as it is.
///
/// A rule's lists never mix address families (rules are per family), so neither do its chunks.
fn split(acl: AclPolicy) -> Vec<AclPolicy> {
    let fields = [
        &acl.local_addresses,
        &acl.remote_addresses,
        &acl.local_ports,
        &acl.remote_ports,
    ];
    if fields
        .iter()
        .all(|field| entries(field) <= MAX_RULE_ENTRIES)
    {
        return vec![acl];
    }
    let [local_addresses, remote_addresses, local_ports, remote_ports] = fields.map(chunks);
    let mut rules = Vec::new();
    for local_addresses in &local_addresses {
        for remote_addresses in &remote_addresses {
            for local_ports in &local_ports {
                for remote_ports in &remote_ports {
                    rules.push(identified(AclPolicy {
                        local_addresses: local_addresses.clone(),
                        remote_addresses: remote_addresses.clone(),
                        local_ports: local_ports.clone(),
                        remote_ports: remote_ports.clone(),
                        ..acl.clone()
                    }));
                }
            }
        }
    }
    rules
}

/// How many entries a comma list holds (none when absent).
fn entries(list: &Option<String>) -> usize {
    list.as_deref().map_or(0, |list| {
        list.split(',').filter(|e| !e.trim().is_empty()).count()
    })
}

/// A list cut in comma lists of at most [`MAX_RULE_ENTRIES`] entries, in order; an absent
/// list stays one absent list.
fn chunks(list: &Option<String>) -> Vec<Option<String>> {
    let Some(list) = list else {
        return vec![None];
    };
    let entries: Vec<&str> = list.split(',').filter(|e| !e.trim().is_empty()).collect();
    if entries.len() <= MAX_RULE_ENTRIES {
        return vec![Some(list.clone())];
    }
    entries
        .chunks(MAX_RULE_ENTRIES)
        .map(|chunk| Some(chunk.join(",")))
        .collect()
}

/// Addresses as HNS lists them: comma-separated, hosts without their `/32` or `/128`.
fn spell_prefixes(prefixes: &[IpNetwork]) -> String {
    prefixes
        .iter()
        .map(|prefix| {
            if prefix.prefix() == crate::cidr::host(prefix.ip()).prefix() {
                prefix.ip().to_string()
            } else {
                prefix.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn spell_addresses(addresses: &[IpAddr]) -> String {
    addresses
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The first 128 bits of `text`'s SHA-256, in hex: stable across builds and platforms,
/// which an identity must be (it is compared with what an earlier run wrote), and
/// collision-resistant, which it must be too (tenants choose what is hashed).
fn fingerprint(text: &str) -> String {
    Sha256::digest(text.as_bytes())[..16]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACTIONS: [AclAction; 3] = [AclAction::Allow, AclAction::Block, AclAction::Pass];

    /// Every rule the agent may write with `plan`: each slot's action, in both directions,
    /// on the switch.
    fn agents_rules(plan: Priorities) -> Vec<AclPolicy> {
        [
            (AclAction::Allow, plan.node),
            (AclAction::Allow, plan.allow),
            (AclAction::Block, plan.isolate),
            (AclAction::Allow, plan.open),
        ]
        .into_iter()
        .flat_map(|(action, priority)| {
            [AclDirection::In, AclDirection::Out]
                .map(|direction| AclPolicy::all_traffic(action, direction, priority))
        })
        .collect()
    }

    /// Another owner's rules of every shape near the plan's numbers: every action, direction
    /// and layer, at each slot's first two numbers.
    fn others() -> Vec<AclPolicy> {
        let nominal = Priorities::NOMINAL;
        let mut others = Vec::new();
        for first in [nominal.node, nominal.allow, nominal.isolate, nominal.open] {
            for priority in [first, first + 1] {
                for action in ACTIONS {
                    for direction in [AclDirection::In, AclDirection::Out] {
                        for layer in [Some(AclRuleType::Switch), Some(AclRuleType::Host), None] {
                            others.push(AclPolicy {
                                rule_type: layer,
                                ..AclPolicy::all_traffic(action, direction, priority)
                            });
                        }
                    }
                }
            }
        }
        others
    }

    /// The implication: wherever `clear_of` places the agent's rules, none ties with another
    /// owner's (the relation ADD checks), for every other rule alone and every pair.
    #[test]
    fn a_plan_clear_of_others_never_ties_with_them() {
        let others = others();
        let mut sets: Vec<Vec<AclPolicy>> = others.iter().map(|o| vec![o.clone()]).collect();
        for (i, a) in others.iter().enumerate() {
            for b in &others[i + 1..] {
                sets.push(vec![a.clone(), b.clone()]);
            }
        }
        let mut placed = 0;
        for set in &sets {
            let Ok(plan) = Priorities::clear_of(set) else {
                continue;
            };
            placed += 1;
            for rule in agents_rules(plan) {
                for other in set {
                    assert!(
                        !rule.ties_with(other),
                        "{rule:?} ties with {other:?} (plan {plan:?})"
                    );
                }
            }
        }
        assert_eq!(placed, sets.len(), "two rules never fill a slot's range");
    }

    /// Ties the stricter rule avoids too: an allow beside another owner's Pass, or a rule of
    /// the other direction, at the nominal number moves the slot.
    #[test]
    fn clear_of_keeps_apart_what_ties_with_does_not_forbid() {
        let pass = AclPolicy::all_traffic(AclAction::Pass, AclDirection::In, 4300);
        assert!(!AclPolicy::all_traffic(AclAction::Allow, AclDirection::In, 4300).ties_with(&pass));
        assert_eq!(Priorities::clear_of(&[pass]).unwrap().allow, 4301);
        let block_out = AclPolicy::all_traffic(AclAction::Block, AclDirection::Out, 4200);
        assert_eq!(Priorities::clear_of(&[block_out]).unwrap().node, 4201);
    }

    /// Identities are 128 bits of SHA-256, spelt in hex: what an earlier run wrote is
    /// recognised, and what a tenant controls cannot be searched for a second preimage.
    #[test]
    fn identities_are_128_bits_of_sha_256() {
        // FIPS 180-2's first example, "abc".
        assert_eq!(fingerprint("abc"), "ba7816bf8f01cfea414140de5dae2223");
        let set = IpSet::for_group("ns/x pod:pod=b v4".to_owned(), Vec::new());
        assert_eq!(set.id.len(), SET_ID_PREFIX.len() + 32, "{}", set.id);
        let rule = acl(
            Direction::In,
            AclAction::Block,
            65000,
            Peer::Anyone,
            None,
            None,
        );
        let id = rule.id.unwrap();
        assert_eq!(id.len(), RULE_ID_PREFIX.len() + 32, "{id}");
        assert!(
            id[RULE_ID_PREFIX.len()..]
                .bytes()
                .all(|b| b.is_ascii_hexdigit())
        );
    }

    /// A rule over the limit in two lists becomes one rule per pair of chunks: together they
    /// list every entry of each list with every entry of the other, none lists more than the
    /// limit, all keep the priority and action, and each has the `Id` of its own content.
    #[test]
    fn a_rule_over_the_entry_limit_is_split_into_rules_that_match_the_same() {
        let addresses: Vec<String> = (0..MAX_RULE_ENTRIES + 1)
            .map(|i| format!("10.{}.{}.1", i / 256, i % 256))
            .collect();
        let ports: Vec<String> = (1..=MAX_RULE_ENTRIES as u16 + 2)
            .map(|port| (port * 2).to_string())
            .collect();
        let whole = acl(
            Direction::Out,
            AclAction::Allow,
            4300,
            Peer::Addresses(addresses.join(",")),
            Some(Protocol::Tcp),
            Some(ports.join(",")),
        );
        let rules = split(whole.clone());
        assert_eq!(rules.len(), 4, "2 address chunks × 2 port chunks");
        let mut pairs = std::collections::BTreeSet::new();
        for rule in &rules {
            assert_eq!(
                (rule.action, rule.priority, rule.direction, &rule.protocols),
                (
                    whole.action,
                    whole.priority,
                    whole.direction,
                    &whole.protocols
                )
            );
            assert!(entries(&rule.remote_addresses) <= MAX_RULE_ENTRIES);
            assert!(entries(&rule.remote_ports) <= MAX_RULE_ENTRIES);
            assert_eq!(rule, &identified(rule.clone()), "its Id is its content's");
            for address in rule.remote_addresses.as_deref().unwrap().split(',') {
                for port in rule.remote_ports.as_deref().unwrap().split(',') {
                    assert!(pairs.insert((address.to_owned(), port.to_owned())));
                }
            }
        }
        assert_eq!(
            pairs.len(),
            addresses.len() * ports.len(),
            "every pair once"
        );
        let ids: std::collections::BTreeSet<_> = rules.iter().map(|r| r.id.clone()).collect();
        assert_eq!(ids.len(), 4, "each its own Id");

        let small = acl(
            Direction::In,
            AclAction::Allow,
            4300,
            Peer::Addresses("10.0.0.1".into()),
            None,
            None,
        );
        assert_eq!(split(small.clone()), [small], "within the limit: as it is");
    }

    #[test]
    fn the_mode_follows_hns_13_and_has_one_name() {
        use hns::HnsVersion;
        let at =
            |major, minor| Mode::for_features(SupportedFeatures::of(HnsVersion::new(major, minor)));
        assert_eq!(at(12, 0), Mode::Inline);
        assert_eq!(at(13, 0), Mode::IpSets);
        assert_eq!(at(15, 4), Mode::IpSets);
        assert_eq!(
            [Mode::Inline, Mode::IpSets].map(Mode::as_str),
            ["inline", "ip-sets"]
        );
    }
}
