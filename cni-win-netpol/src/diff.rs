//! The fewest HNS writes that turn what HNS holds on one network into what is desired
//! ([`diff`]), grouped so that a write HNS refuses holds back only what depends on it, and the
//! order they go in ([`Writes::apply`]), which never opens a window.
//!
//! # What changes how
//!
//! Rules are never updated in place: a rule's `Id` is its content, so a changed rule is a new
//! rule added to its endpoint before the old one is removed, and while both are there traffic
//! either allows is allowed. A set keeps its `Id` (its selector) and changes members with an
//! `Update`. Only the agent's rules and sets are touched (their `Id`s carry its prefix); an
//! endpoint that `desired` does not list keeps its rules, and a set a remaining rule still
//! names, or the snapshot ADD reads ([`Desired::kept_sets`]), is kept.
//!
//! A set is known by its `Id` *and* its `Name` (its group): a set HNS holds under a desired
//! set's `Id` but for another group is never updated to the desired members, which would
//! hand the old group's remaining rules the new group's members ([`renamed_sets`]). Such a
//! set is a collision: the desired set and its rules are not written this pass (fail
//! closed), the old rules are removed, then the old set once no rule names it; a later pass
//! writes the new set into the free `Id`.
//!
//! # The order
//!
//! A window is traffic that both the old rules (with the sets' old members) and the new rules
//! (with the new members) allow, refused at some point in between. The agent's rules name
//! sets only to allow (its blocks name no address), so a set with more members never refuses
//! more. Per network:
//!
//! 1. **New sets** (`Add`), before any rule names them: HNS cannot hold a rule naming a set
//!    it does not have.
//! 2. **Sets widened**: each set that gains members is updated to its old and new members
//!    together. Refuses nothing.
//! 3. **Each endpoint whose changing rules name an updated set**, one at a time: its new rules
//!    (`Add`), then its old ones (`Remove`). In between it holds both; its new rules see every
//!    new member already (step 2), so nothing both allow is refused when the old rules go.
//! 4. **Sets narrowed**: each set that loses members is updated to its new members. Every
//!    endpoint whose old rules named it holds its new rules by now, so a member leaving takes
//!    away only what the new rules do not allow.
//! 5. **Every other endpoint**, one at a time: new rules, then old ones.
//! 6. **Old sets** (`Remove`), once no rule left on any endpoint names them: HNS must not be
//!    asked to drop a set a rule still names (Azure NPM orders its writes so, evidence §13).
//!
//! Without an endpoint of step 3 (a membership change alone, the usual case with IP sets),
//! steps 2 and 4 are one `Update` of every changed set to its new members: one write, which
//! HNS applies at once, so no member is ever between sets. Each endpoint's `Add`-then-`Remove`
//! is its own unit: one endpoint's revocations never wait behind other endpoints' writes to
//! finish, or to succeed.
//!
//! # A write HNS refuses
//!
//! It leaves its item (an endpoint, or a set) as it was: what that item should grant or take
//! away waits for its retry; nothing else waits for it, except what cannot be written without
//! it:
//!
//! - an endpoint whose new rules name a set HNS did not create keeps all its rules (its new
//!   rules cannot be written, and its old ones stay until they are);
//! - a set a rule still names is not removed (the rule's endpoint's `Remove` was refused);
//! - an endpoint whose `Add` was refused keeps its old rules, and its `Remove` is not sent.
//!
//! Sets several at a time go in one request, and one at a time only when HNS refuses that one
//! (widened all, then narrowed all, as above), so one bad set holds back no other. A failed
//! endpoint keeps its rules and those rules' sets keep following the cluster: a stuck endpoint
//! never holds up the membership changes every other endpoint's rules depend on. Likewise a
//! set HNS refuses to update does not keep the endpoints whose new rules name it from dropping
//! their old rules: what the set should newly grant waits for its retry, and no revocation
//! waits for it.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use hns::Guid;
use hns::schema::policy::AclPolicy;
use hns::schema::{
    EndpointPolicy, ModifyRequest, NetworkPolicy, PolicyList, RawPolicy, RequestType,
};

use crate::desired::Desired;
use crate::render::{IpSet, SET_ID_PREFIX, is_agents};
use crate::sets::SetCollision;

/// What HNS holds on one network, as read: every endpoint's ACLs and the network's policies.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Held {
    /// Every ACL of each endpoint, whoever wrote it.
    pub endpoints: BTreeMap<Guid, Vec<AclPolicy>>,
    /// Every policy of the network the endpoints are on (IP sets among them).
    pub network: Vec<NetworkPolicy>,
}

impl Held {
    /// The ACLs among an endpoint's policies.
    pub fn acls(policies: &[EndpointPolicy]) -> Vec<AclPolicy> {
        policies
            .iter()
            .filter_map(|policy| match policy {
                EndpointPolicy::Acl(acl) => Some(acl.clone()),
                _ => None,
            })
            .collect()
    }
}

/// One HNS write.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// `HcnModifyNetwork` on the pods' network: IP sets added, updated or removed.
    Network(ModifyRequest<PolicyList<NetworkPolicy>>),
    /// `HcnModifyEndpoint`: ACLs added to or removed from one endpoint.
    Endpoint {
        /// The endpoint.
        endpoint: Guid,
        /// The request.
        request: ModifyRequest<PolicyList<EndpointPolicy>>,
    },
}

/// What a write changes, and what a refused write holds back: one endpoint's rules, or one
/// set of the network.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Item {
    /// An endpoint's rules.
    Endpoint(Guid),
    /// An IP set, by `Id`.
    Set(String),
}

/// Why a write was not made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failed<E> {
    /// Its object (the endpoint or the network) is gone: nothing is left to program there.
    Gone,
    /// HNS refused it.
    Refused(E),
}

/// A write HNS refused.
#[derive(Debug, Clone, PartialEq)]
pub struct RefusedWrite<E> {
    /// What it was to change (and what stays as it was).
    pub item: Item,
    /// The write.
    pub write: Write,
    /// HNS's answer.
    pub error: E,
}

/// What [`Writes::apply`] came to.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied<E> {
    /// `HcnModifyEndpoint` requests HNS took.
    pub endpoint_writes: u64,
    /// `HcnModifyNetwork` requests HNS took.
    pub network_writes: u64,
    /// The endpoints written to, or tried: what HNS holds of them is to be read again.
    pub endpoints_tried: BTreeSet<Guid>,
    /// Whether the network was written to, or tried.
    pub network_tried: bool,
    /// The writes HNS refused, in order.
    pub refused: Vec<RefusedWrite<E>>,
    /// Endpoints left with all their rules because their new rules name a set that is not
    /// there (HNS refused it, or it was held back): the set's `Id`.
    pub waiting: BTreeMap<Guid, String>,
    /// Items held back by the caller ([`Writes::apply`]'s `hold`) that had writes.
    pub held: BTreeSet<Item>,
    /// The new sets the network does not hold after all (HNS refused their `Add`, or it was
    /// held back): no rule naming one can be written. A set whose update was refused is
    /// still there, with its old members.
    pub absent_sets: BTreeSet<String>,
}

impl<E> Default for Applied<E> {
    fn default() -> Applied<E> {
        Applied {
            endpoint_writes: 0,
            network_writes: 0,
            endpoints_tried: BTreeSet::new(),
            network_tried: false,
            refused: Vec::new(),
            waiting: BTreeMap::new(),
            held: BTreeSet::new(),
            absent_sets: BTreeSet::new(),
        }
    }
}

/// The writes that converge one network, in the units a failure is kept to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Writes {
    /// Sets HNS does not hold.
    added: Vec<IpSet>,
    /// Sets HNS holds with other members (or another name).
    updated: Vec<Membership>,
    /// Each endpoint's rules to add, then to remove.
    units: Vec<Unit>,
    /// The agent's sets no rule will name, as HNS holds them.
    removed: Vec<(String, NetworkPolicy)>,
}

/// One set's change of members.
#[derive(Debug, Clone, PartialEq)]
struct Membership {
    held: IpSet,
    wanted: IpSet,
}

/// One endpoint's writes: its new rules, then its old ones.
#[derive(Debug, Clone, PartialEq)]
struct Unit {
    endpoint: Guid,
    add: Vec<AclPolicy>,
    remove: Vec<AclPolicy>,
}

/// The agent's sets HNS holds, by `Id`, each with the policy as read.
fn held_sets(current: &Held) -> BTreeMap<String, (IpSet, &NetworkPolicy)> {
    current
        .network
        .iter()
        .filter_map(|policy| Some((IpSet::from_network_policy(policy)?, policy)))
        .filter(|(set, _)| set.id.starts_with(SET_ID_PREFIX))
        .map(|(set, policy)| (set.id.clone(), (set, policy)))
        .collect()
}

/// The desired sets whose `Id` HNS holds for another group (another `Name`): [`diff`]
/// writes neither them nor the rules naming them this pass.
pub fn renamed_sets(current: &Held, desired: &Desired) -> Vec<SetCollision> {
    let held = held_sets(current);
    desired
        .sets
        .iter()
        .filter_map(|(id, set)| {
            let (programmed, _) = held.get(id)?;
            (programmed.name != set.name).then(|| SetCollision {
                id: id.clone(),
                names: BTreeSet::from([programmed.name.clone(), set.name.clone()]),
            })
        })
        .collect()
}

/// The writes that make `current` hold `desired`; none when it already does.
pub fn diff(current: &Held, desired: &Desired) -> Writes {
    let renamed = renamed_sets(current, desired);
    let desired = &without_renamed(desired, renamed);
    let current_sets = held_sets(current);

    let mut writes = Writes::default();
    for (id, set) in &desired.sets {
        match current_sets.get(id) {
            None => writes.added.push(set.clone()),
            Some((held, _)) if held != set => writes.updated.push(Membership {
                held: held.clone(),
                wanted: set.clone(),
            }),
            Some(_) => {}
        }
    }

    let mut remaining_rules: Vec<&AclPolicy> = Vec::new();
    for (endpoint, programmed) in &current.endpoints {
        let Some(wanted) = desired.endpoints.get(endpoint) else {
            remaining_rules.extend(programmed);
            continue;
        };
        let (add, remove) = endpoint_changes(programmed, wanted);
        remaining_rules.extend(wanted);
        writes.units.push(Unit {
            endpoint: *endpoint,
            add,
            remove,
        });
    }
    for (endpoint, wanted) in &desired.endpoints {
        if !current.endpoints.contains_key(endpoint) {
            remaining_rules.extend(wanted);
            writes.units.push(Unit {
                endpoint: *endpoint,
                add: wanted.clone(),
                remove: Vec::new(),
            });
        }
    }
    writes
        .units
        .retain(|unit| !(unit.add.is_empty() && unit.remove.is_empty()));

    let named = set_names(remaining_rules.into_iter());
    writes.removed = current_sets
        .iter()
        .filter(|(id, _)| {
            !desired.sets.contains_key(*id)
                && !named.contains(id.as_str())
                && !desired.kept_sets.contains(*id)
        })
        .map(|(id, (_, policy))| (id.clone(), (*policy).clone()))
        .collect();
    writes
}

/// `desired` less the sets of `renamed` and the rules naming them (see [`renamed_sets`]).
fn without_renamed(desired: &Desired, renamed: Vec<SetCollision>) -> std::borrow::Cow<'_, Desired> {
    if renamed.is_empty() {
        return std::borrow::Cow::Borrowed(desired);
    }
    let mut narrowed = desired.clone();
    narrowed.fail_closed(renamed);
    std::borrow::Cow::Owned(narrowed)
}

/// The `Id`s of the agent's sets `rules` name: the entries of their address lists spelt as
/// one (an inline rule's thousands of addresses are passed over, not collected).
fn set_names<'a>(rules: impl Iterator<Item = &'a AclPolicy>) -> BTreeSet<&'a str> {
    rules
        .flat_map(|acl| [&acl.local_addresses, &acl.remote_addresses])
        .flat_map(|field| field.as_deref().unwrap_or_default().split(','))
        .map(str::trim)
        .filter(|entry| entry.starts_with(SET_ID_PREFIX))
        .collect()
}

impl Membership {
    /// The set with its old and new members, when it gains any (or only its name changes).
    fn widened(&self) -> Option<IpSet> {
        let gains = self
            .wanted
            .addresses
            .iter()
            .any(|ip| !self.held.addresses.contains(ip));
        if !gains && self.narrowed().is_some() {
            return None;
        }
        let mut addresses = self.held.addresses.clone();
        addresses.extend(&self.wanted.addresses);
        addresses.sort();
        addresses.dedup();
        Some(IpSet {
            addresses,
            ..self.wanted.clone()
        })
    }

    /// The set with its new members, when it loses any.
    fn narrowed(&self) -> Option<IpSet> {
        self.held
            .addresses
            .iter()
            .any(|ip| !self.wanted.addresses.contains(ip))
            .then(|| self.wanted.clone())
    }
}

impl Unit {
    /// Whether its rules, new or old, name any of `sets`.
    fn names_any(&self, sets: &BTreeSet<&str>) -> bool {
        set_names(self.add.iter().chain(&self.remove))
            .iter()
            .any(|name| sets.contains(name))
    }

    fn writes(&self) -> Vec<Write> {
        [
            (RequestType::Add, &self.add),
            (RequestType::Remove, &self.remove),
        ]
        .into_iter()
        .filter(|(_, acls)| !acls.is_empty())
        .map(|(request_type, acls)| Write::Endpoint {
            endpoint: self.endpoint,
            request: ModifyRequest::policies(
                request_type,
                acls.iter().cloned().map(EndpointPolicy::Acl).collect(),
            ),
        })
        .collect()
    }
}

/// A set as a request writes it: its `Id`, and the policy.
type SetPolicy = (String, NetworkPolicy);

/// Sets written with one request type: in one request, or one request each.
type SetStep = (RequestType, Vec<SetPolicy>);

fn set_policies<'a>(sets: impl IntoIterator<Item = &'a IpSet>) -> Vec<SetPolicy> {
    sets.into_iter()
        .map(|set| (set.id.clone(), set.to_network_policy()))
        .collect()
}

fn update(sets: impl Iterator<Item = IpSet>) -> SetStep {
    (RequestType::Update, set_policies(&sets.collect::<Vec<_>>()))
}

impl Writes {
    /// Whether HNS already holds what is desired.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.updated.is_empty()
            && self.units.is_empty()
            && self.removed.is_empty()
    }

    /// Every write, in order, as [`Writes::apply`] makes them when HNS takes each.
    pub fn in_order(&self) -> Vec<Write> {
        let mut all = Vec::new();
        self.apply(
            |_| false,
            |write| {
                all.push(write.clone());
                Ok::<(), Failed<()>>(())
            },
        );
        all
    }

    /// Makes the writes through `write` in the order of the module documentation, each
    /// refusal kept to what depends on it. `hold` holds an item back (its retry is not due
    /// yet): it is left as it is, as if HNS had refused it.
    pub fn apply<E, W>(&self, hold: impl Fn(&Item) -> bool, write: W) -> Applied<E>
    where
        W: FnMut(&Write) -> Result<(), Failed<E>>,
    {
        let held: BTreeSet<Item> = self.items().into_iter().filter(|item| hold(item)).collect();
        let set_held = |id: &str| held.contains(&Item::Set(id.to_owned()));
        let mut run = Run {
            write,
            held: &held,
            applied: Applied::default(),
            network_gone: false,
            refused_sets: BTreeSet::new(),
        };

        // 1. New sets; an endpoint whose new rules name one not written waits for it.
        let added: Vec<&IpSet> = self.added.iter().filter(|s| !set_held(&s.id)).collect();
        let mut missing = run.sets((RequestType::Add, set_policies(added)));
        missing.extend(
            self.added
                .iter()
                .filter(|set| set_held(&set.id))
                .map(|set| set.id.clone()),
        );

        let updates: Vec<&Membership> = self
            .updated
            .iter()
            .filter(|update| !set_held(&update.wanted.id))
            .collect();
        let widened = update(updates.iter().filter_map(|u| u.widened()));
        let narrowed = update(updates.iter().filter_map(|u| u.narrowed()));
        let updated: BTreeSet<&str> = updates.iter().map(|u| u.wanted.id.as_str()).collect();
        let (dependent, independent): (Vec<&Unit>, Vec<&Unit>) =
            self.units.iter().partition(|unit| unit.names_any(&updated));

        let mut incomplete: Vec<&Unit> = Vec::new();
        if dependent.is_empty() {
            // 2 and 4 in one request: every changed set to its new members at once.
            let merged = update(updates.iter().map(|u| u.wanted.clone()));
            run.sets_or_one_by_one(&merged, &[widened, narrowed]);
        } else {
            // 2. Widened, 3. the endpoints whose rules name them, 4. narrowed.
            run.sets(widened);
            for unit in dependent {
                if !run.unit(unit, &missing) {
                    incomplete.push(unit);
                }
            }
            run.sets(narrowed);
        }
        // 5. Every other endpoint.
        for unit in independent {
            if !run.unit(unit, &missing) {
                incomplete.push(unit);
            }
        }
        // 6. Old sets, unless a rule an endpoint still holds names them.
        let still_named = set_names(incomplete.iter().flat_map(|unit| &unit.remove));
        let removed: Vec<SetPolicy> = self
            .removed
            .iter()
            .filter(|(id, _)| !still_named.contains(id.as_str()) && !set_held(id))
            .cloned()
            .collect();
        run.sets((RequestType::Remove, removed));
        let mut applied = run.applied;
        applied.held = held;
        applied.absent_sets = missing;
        applied
    }

    /// The writes this plan makes for `item` alone, as they go when each is sent on its own:
    /// what tells a later pass whether it plans the same for an item HNS refused, whatever
    /// other sets share its requests.
    pub fn planned(&self, item: &Item) -> Vec<Write> {
        match item {
            Item::Endpoint(endpoint) => self
                .units
                .iter()
                .filter(|unit| unit.endpoint == *endpoint)
                .flat_map(Unit::writes)
                .collect(),
            Item::Set(id) => {
                let added = (self.added.iter().filter(|set| set.id == *id))
                    .map(|set| (RequestType::Add, set.to_network_policy()));
                let updated = (self.updated.iter().filter(|update| update.wanted.id == *id))
                    .map(|update| (RequestType::Update, update.wanted.to_network_policy()));
                let removed = (self.removed.iter().filter(|(held, _)| held == id))
                    .map(|(_, policy)| (RequestType::Remove, policy.clone()));
                added
                    .chain(updated)
                    .chain(removed)
                    .map(|(request_type, policy)| {
                        Write::Network(ModifyRequest::policies(request_type, vec![policy]))
                    })
                    .collect()
            }
        }
    }

    /// Every item with writes.
    fn items(&self) -> BTreeSet<Item> {
        let sets = (self.added.iter().map(|set| &set.id))
            .chain(self.updated.iter().map(|update| &update.wanted.id))
            .chain(self.removed.iter().map(|(id, _)| id))
            .map(|id| Item::Set(id.clone()));
        let endpoints = self.units.iter().map(|unit| Item::Endpoint(unit.endpoint));
        sets.chain(endpoints).collect()
    }
}

/// One [`Writes::apply`] under way.
struct Run<'h, E, W> {
    write: W,
    held: &'h BTreeSet<Item>,
    applied: Applied<E>,
    /// HNS said the network is gone: its sets and endpoints with it.
    network_gone: bool,
    /// The sets HNS refused a write of in this pass: left as they are.
    refused_sets: BTreeSet<String>,
}

impl<E, W: FnMut(&Write) -> Result<(), Failed<E>>> Run<'_, E, W> {
    /// Writes a step's sets in one request, or one at a time when HNS refuses that; the
    /// `Id`s of the sets not written.
    fn sets(&mut self, step: SetStep) -> BTreeSet<String> {
        self.sets_or_one_by_one(&step, std::slice::from_ref(&step))
    }

    /// Writes `batch` in one request; when HNS refuses it, each set of `one_by_one`'s steps in
    /// a request of its own, so that a set HNS refuses holds back no other. A set refused once
    /// is not written again in the pass. The `Id`s of the sets not written.
    fn sets_or_one_by_one(&mut self, batch: &SetStep, one_by_one: &[SetStep]) -> BTreeSet<String> {
        let (request_type, sets) = batch;
        let sets = self.not_refused(sets);
        let all = || sets.iter().map(|(id, _)| id.clone()).collect();
        if sets.is_empty() {
            return BTreeSet::new();
        }
        match self.set_request(*request_type, &sets) {
            Ok(()) => return BTreeSet::new(),
            Err(Failed::Refused(())) if sets.len() > 1 => {}
            Err(_) => return all(),
        }
        for (request_type, step) in one_by_one {
            for set in self.not_refused(step) {
                if let Err(Failed::Gone) = self.set_request(*request_type, &[set]) {
                    return all();
                }
            }
        }
        sets.iter()
            .map(|(id, _)| id.clone())
            .filter(|id| self.refused_sets.contains(id))
            .collect()
    }

    /// One request writing `sets`; a refusal of a lone set is that set's.
    fn set_request(
        &mut self,
        request_type: RequestType,
        sets: &[SetPolicy],
    ) -> Result<(), Failed<()>> {
        if self.network_gone {
            return Err(Failed::Gone);
        }
        let write = Write::Network(ModifyRequest::policies(
            request_type,
            sets.iter().map(|(_, policy)| policy.clone()).collect(),
        ));
        match self.send(&write) {
            Ok(()) => Ok(()),
            Err(Failed::Gone) => Err(Failed::Gone),
            Err(Failed::Refused(error)) => {
                if let [(id, _)] = sets {
                    self.refused_sets.insert(id.clone());
                    self.applied.refused.push(RefusedWrite {
                        item: Item::Set(id.clone()),
                        write,
                        error,
                    });
                }
                Err(Failed::Refused(()))
            }
        }
    }

    fn not_refused(&self, sets: &[SetPolicy]) -> Vec<SetPolicy> {
        sets.iter()
            .filter(|(id, _)| !self.refused_sets.contains(id))
            .cloned()
            .collect()
    }

    /// One endpoint's unit: its new rules, then its old ones. Whether it completed (or the
    /// endpoint is gone).
    fn unit(&mut self, unit: &Unit, missing: &BTreeSet<String>) -> bool {
        if self.held.contains(&Item::Endpoint(unit.endpoint)) {
            return false;
        }
        if let Some(set) = set_names(unit.add.iter())
            .into_iter()
            .find(|n| missing.contains(*n))
        {
            self.applied.waiting.insert(unit.endpoint, set.to_owned());
            return false;
        }
        for write in unit.writes() {
            if self.network_gone {
                return true;
            }
            self.applied.endpoints_tried.insert(unit.endpoint);
            match self.send(&write) {
                Ok(()) => {}
                Err(Failed::Gone) => return true,
                Err(Failed::Refused(error)) => {
                    self.applied.refused.push(RefusedWrite {
                        item: Item::Endpoint(unit.endpoint),
                        write,
                        error,
                    });
                    return false;
                }
            }
        }
        true
    }

    fn send(&mut self, write: &Write) -> Result<(), Failed<E>> {
        let network = matches!(write, Write::Network(_));
        self.applied.network_tried |= network;
        let outcome = (self.write)(write);
        match (&outcome, network) {
            (Ok(()), true) => self.applied.network_writes += 1,
            (Ok(()), false) => self.applied.endpoint_writes += 1,
            (Err(Failed::Gone), true) => self.network_gone = true,
            _ => {}
        }
        outcome
    }
}

/// The agent's rules to add to and remove from one endpoint: desired rules it lacks, and its
/// rules not desired or held twice, removed as read (HNS removes the identical policy).
fn endpoint_changes(
    programmed: &[AclPolicy],
    wanted: &[AclPolicy],
) -> (Vec<AclPolicy>, Vec<AclPolicy>) {
    let mut kept: Vec<&AclPolicy> = Vec::new();
    let mut remove = Vec::new();
    for acl in programmed.iter().filter(|acl| is_agents(acl)) {
        let desired = wanted.iter().any(|want| same_rule(want, acl));
        if desired && !kept.iter().any(|k| same_rule(k, acl)) {
            kept.push(acl);
        } else {
            remove.push(acl.clone());
        }
    }
    let add = wanted
        .iter()
        .filter(|want| !kept.iter().any(|k| same_rule(want, k)))
        .cloned()
        .collect();
    (add, remove)
}

/// Whether two ACLs are one rule as HNS applies it: lists compared as sets, an empty field as
/// an absent one.
fn same_rule(a: &AclPolicy, b: &AclPolicy) -> bool {
    // Lists spelt alike are alike: the agent's rules read back as written need no parsing.
    let same_list = |x: &Option<String>, y: &Option<String>| x == y || entries(x) == entries(y);
    a.id == b.id
        && a.action == b.action
        && a.direction == b.direction
        && a.rule_type == b.rule_type
        && a.priority == b.priority
        && [
            (&a.protocols, &b.protocols),
            (&a.local_addresses, &b.local_addresses),
            (&a.remote_addresses, &b.remote_addresses),
            (&a.local_ports, &b.local_ports),
            (&a.remote_ports, &b.remote_ports),
        ]
        .iter()
        .all(|(x, y)| same_list(x, y))
}

/// A list field's entries, as a set.
fn entries(field: &Option<String>) -> BTreeSet<&str> {
    field
        .as_deref()
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .collect()
}

impl IpSet {
    /// The set as the `SetPolicy` network policy HNS takes (`PolicyType` `IPSET`, `Values` a
    /// comma list), as Azure NPM writes it.
    pub fn to_network_policy(&self) -> NetworkPolicy {
        let values: Vec<String> = self.addresses.iter().map(ToString::to_string).collect();
        let json = serde_json::json!({
            "Type": "SetPolicy",
            "Settings": {
                "Id": self.id,
                "Name": self.name,
                "PolicyType": "IPSET",
                "Values": values.join(","),
            }
        });
        let raw = RawPolicy::from_json(&json.to_string())
            .expect("an object with a string Type is a policy object");
        NetworkPolicy::Other(raw)
    }

    /// Reads an `IPSET` `SetPolicy` of addresses; `None` for any other policy, a nested set,
    /// or a set listing something other than addresses (not one of the agent's).
    pub fn from_network_policy(policy: &NetworkPolicy) -> Option<IpSet> {
        if !policy.type_name().eq_ignore_ascii_case("SetPolicy") {
            return None;
        }
        let json = serde_json::to_value(policy).ok()?;
        let settings = json.get("Settings")?;
        let text = |key: &str| settings.get(key).and_then(|value| value.as_str());
        if !text("PolicyType")?.eq_ignore_ascii_case("IPSET") {
            return None;
        }
        let mut addresses = text("Values")?
            .split(',')
            .map(str::trim)
            .filter(|value| !value.is_empty())
            .map(|value| value.parse::<IpAddr>().ok())
            .collect::<Option<Vec<_>>>()?;
        addresses.sort();
        Some(IpSet {
            id: text("Id")?.to_owned(),
            name: text("Name").unwrap_or_default().to_owned(),
            addresses,
        })
    }
}
