//! The fewest HNS writes that turn what HNS holds into what is desired, in an order that
//! never opens a window: new sets, then new rules, then set memberships, then old rules,
//! then old sets.
//!
//! Rules are never updated in place: a rule's `Id` is its content, so a change is a new rule
//! added before the old one is removed, and while both are there traffic either allows is
//! allowed. A set keeps its `Id` (its selector) and changes members with one `Update`, which
//! comes after every new rule is in place and before any old rule goes: at no point is
//! traffic that both the old and the new rules allow refused. Only the agent's rules and
//! sets are touched (their `Id`s carry its prefix); an endpoint that `desired` does not list
//! keeps its rules, and a set some remaining rule still names, or the snapshot ADD reads
//! ([`Desired::kept_sets`]), is kept.
//!
//! A set is known by its `Id` *and* its `Name` (its group): a set HNS holds under a desired
//! set's `Id` but for another group is never updated to the desired members, which would
//! hand the old group's remaining rules the new group's members ([`renamed_sets`]). Such a
//! set is a collision: the desired set and its rules are not written this pass (fail
//! closed), the old rules are removed, then the old set once no rule names it; a later pass
//! writes the new set into the free `Id`.

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

/// The writes, in order, that make `current` hold `desired`; none when it already does.
pub fn diff(current: &Held, desired: &Desired) -> Vec<Write> {
    let renamed = renamed_sets(current, desired);
    let desired = &without_renamed(desired, renamed);
    let current_sets = held_sets(current);

    let mut added_sets = Vec::new();
    let mut updated_sets = Vec::new();
    for (id, set) in &desired.sets {
        match current_sets.get(id) {
            None => added_sets.push(set.to_network_policy()),
            Some((programmed, _)) if programmed != set => {
                updated_sets.push(set.to_network_policy())
            }
            Some(_) => {}
        }
    }

    let mut adds = Vec::new();
    let mut removes = Vec::new();
    let mut remaining_rules: Vec<&AclPolicy> = Vec::new();
    for (endpoint, programmed) in &current.endpoints {
        let Some(wanted) = desired.endpoints.get(endpoint) else {
            remaining_rules.extend(programmed);
            continue;
        };
        let (add, remove) = endpoint_changes(programmed, wanted);
        remaining_rules.extend(wanted);
        adds.extend(endpoint_write(*endpoint, RequestType::Add, add));
        removes.extend(endpoint_write(*endpoint, RequestType::Remove, remove));
    }
    for (endpoint, wanted) in &desired.endpoints {
        if !current.endpoints.contains_key(endpoint) {
            remaining_rules.extend(wanted);
            adds.extend(endpoint_write(*endpoint, RequestType::Add, wanted.clone()));
        }
    }

    let named: BTreeSet<&str> = remaining_rules
        .iter()
        .flat_map(|acl| [&acl.local_addresses, &acl.remote_addresses])
        .flat_map(|field| field.as_deref().unwrap_or_default().split(','))
        .map(str::trim)
        .collect();
    let removed_sets: Vec<NetworkPolicy> = current_sets
        .iter()
        .filter(|(id, _)| {
            !desired.sets.contains_key(*id)
                && !named.contains(id.as_str())
                && !desired.kept_sets.contains(*id)
        })
        .map(|(_, (_, policy))| (*policy).clone())
        .collect();

    let mut writes = Vec::new();
    writes.extend(network_write(RequestType::Add, added_sets));
    writes.extend(adds);
    writes.extend(network_write(RequestType::Update, updated_sets));
    writes.extend(removes);
    writes.extend(network_write(RequestType::Remove, removed_sets));
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

fn endpoint_write(
    endpoint: Guid,
    request_type: RequestType,
    acls: Vec<AclPolicy>,
) -> Option<Write> {
    (!acls.is_empty()).then(|| Write::Endpoint {
        endpoint,
        request: ModifyRequest::policies(
            request_type,
            acls.into_iter().map(EndpointPolicy::Acl).collect(),
        ),
    })
}

fn network_write(request_type: RequestType, sets: Vec<NetworkPolicy>) -> Option<Write> {
    (!sets.is_empty()).then(|| Write::Network(ModifyRequest::policies(request_type, sets)))
}

/// Whether two ACLs are one rule as HNS applies it: lists compared as sets, an empty field as
/// an absent one.
fn same_rule(a: &AclPolicy, b: &AclPolicy) -> bool {
    let list = |field: &Option<String>| -> BTreeSet<String> {
        field
            .as_deref()
            .unwrap_or_default()
            .split(',')
            .map(|entry| entry.trim().to_owned())
            .filter(|entry| !entry.is_empty())
            .collect()
    };
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
        .all(|(x, y)| list(x) == list(y))
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
