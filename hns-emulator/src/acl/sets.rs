//! Network-level IP sets: the `SetPolicy` network policy (HNS 13.0; nested sets 15.0).
//!
//! A set is `{"Type":"SetPolicy","Settings":{"Id","Name","PolicyType","Values"}}` on a
//! network. `PolicyType` `IPSET` lists addresses and prefixes in `Values`; `NESTEDIPSET` lists
//! the `Id`s of other sets. An endpoint's ACL names a set by its `Id` in `LocalAddresses` or
//! `RemoteAddresses`, as Azure NPM does (`Id` = the set's hashed name, e.g.
//! `azure-npm-3216600258`, in a comma list like any address), so a membership change is one
//! network write instead of a rewrite of every endpoint's ACLs. A set in `LocalAddresses` is
//! compared with the packet's source, in `RemoteAddresses` with its destination, where plain
//! addresses are the endpoint's side and the peer's: both readings and their sources are in
//! [`super::fields`].
//!
//! An empty `IPSET` holds nothing; an empty `NESTEDIPSET` matches every address: "In HNS, an
//! ACL conditioned on a list (nested ipset) will apply to any IP if the list has no members"
//! (azure-container-networking PR #1431, which is why Azure NPM puts an empty `IPSET` in every
//! list it makes, `npm/pkg/dataplane/ipsets/ipsetmanager.go:67-70`). Likely: NPM's finding on
//! real hosts, stated by no Microsoft document.
//!
//! The key is `PolicyType`: hcsshim writes it so since renaming the field from `Type`, which
//! HNS does not read. Settings keys are matched regardless of case, as Go matches them.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnetwork::IpNetwork;
use serde_json::{Map, Value};

use crate::failure::HcnFailure;
use hns::hresult::HResult;
use hns::schema::{AddressOrPrefix, NetworkPolicy};

/// The network policy `Type` of an IP set.
const SET_POLICY: &str = "SetPolicy";

/// What a set holds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Members {
    /// `IPSET`: addresses and prefixes (an address is its /32 or /128).
    Addresses(Vec<IpNetwork>),
    /// `NESTEDIPSET`: the `Id`s of `IPSET`s on the same network.
    Sets(Vec<String>),
}

/// One `SetPolicy`, read as HNS reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpSet {
    id: String,
    name: String,
    members: Members,
}

impl IpSet {
    /// The `Id` ACLs name the set by.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The set's `Name` (for people; HNS matches on `Id`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether this is a `NESTEDIPSET` (a set of sets).
    pub fn is_nested(&self) -> bool {
        matches!(self.members, Members::Sets(_))
    }

    /// Whether `policy` is an IP set, whatever its settings.
    pub(crate) fn is_set_policy(policy: &NetworkPolicy) -> bool {
        policy.type_name().eq_ignore_ascii_case(SET_POLICY)
    }

    /// Reads a `SetPolicy` network policy; `None` for any other type. A set whose settings
    /// HNS cannot take is `HCN_E_INVALID_POLICY`, naming the key and the fix.
    pub(crate) fn read(policy: &NetworkPolicy) -> Option<Result<IpSet, HcnFailure>> {
        if !IpSet::is_set_policy(policy) {
            return None;
        }
        let json = serde_json::to_value(policy).unwrap_or(Value::Null);
        Some(IpSet::from_settings(
            json.as_object()
                .and_then(|object| member(object, "Settings"))
                .and_then(Value::as_object),
        ))
    }

    fn from_settings(settings: Option<&Map<String, Value>>) -> Result<IpSet, HcnFailure> {
        let settings = settings.ok_or_else(|| invalid("has no Settings object"))?;
        let text = |key: &str| match member(settings, key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.as_str())),
            Some(other) => Err(invalid(&format!("{key} {other} is not a string"))),
        };
        let id = text("Id")?.unwrap_or_default();
        check_id(id)?;
        let values = text("Values")?.unwrap_or_default();
        let members = match text("PolicyType")? {
            Some(kind) if kind.eq_ignore_ascii_case("IPSET") => Members::Addresses(
                tokens(values)
                    .map(|token| {
                        let token = token.map_err(|why| invalid(&format!("{id}: Values {why}")))?;
                        token.parse::<AddressOrPrefix>().map(|a| a.network()).map_err(|_| {
                            invalid(&format!(
                                "{id}: Values entry {token:?} is neither an IP address nor a prefix"
                            ))
                        })
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Some(kind) if kind.eq_ignore_ascii_case("NESTEDIPSET") => Members::Sets(
                tokens(values)
                    .map(|token| {
                        token
                            .map(str::to_owned)
                            .map_err(|why| invalid(&format!("{id}: Values {why}")))
                    })
                    .collect::<Result<_, _>>()?,
            ),
            Some(other) => {
                return Err(invalid(&format!(
                    "{id}: PolicyType {other:?} is neither IPSET nor NESTEDIPSET"
                )));
            }
            None => {
                return Err(invalid(&format!(
                    "{id}: PolicyType is missing (IPSET or NESTEDIPSET; hcsshim before the \
                     PolicyType rename wrote the set type as \"Type\", which HNS does not read)"
                )));
            }
        };
        Ok(IpSet {
            id: id.to_owned(),
            name: text("Name")?.unwrap_or_default().to_owned(),
            members,
        })
    }
}

/// The IP sets of one network, by `Id`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IpSets(BTreeMap<String, IpSet>);

impl IpSets {
    /// The sets among a network's policies, checked as a whole: `Id`s unique, each nested
    /// set's members existing `IPSET`s of the network.
    pub fn of(policies: &[NetworkPolicy]) -> Result<IpSets, HcnFailure> {
        let sets = IpSets::read(policies)?;
        sets.check_members()?;
        Ok(sets)
    }

    /// The sets among `policies`, each read on its own.
    pub(crate) fn read(policies: &[NetworkPolicy]) -> Result<IpSets, HcnFailure> {
        let mut sets = BTreeMap::new();
        for set in policies.iter().filter_map(IpSet::read) {
            let set = set?;
            if sets.contains_key(&set.id) {
                return Err(HcnFailure::new(
                    HResult::HCN_E_POLICY_ALREADY_EXISTS,
                    format!("(the network has two IP sets with Id {:?})", set.id),
                ));
            }
            sets.insert(set.id.clone(), set);
        }
        Ok(IpSets(sets))
    }

    /// A nested set lists only `IPSET`s that exist: Azure NPM nests one level (plain sets
    /// added before the nested sets naming them, removed after), and deeper nesting is not
    /// known to work on HNS.
    pub(crate) fn check_members(&self) -> Result<(), HcnFailure> {
        for set in self.0.values() {
            let Members::Sets(members) = &set.members else {
                continue;
            };
            for member in members {
                match self.0.get(member) {
                    Some(found) if !found.is_nested() => {}
                    Some(_) => {
                        return Err(invalid(&format!(
                            "{}: member {member:?} is itself a NESTEDIPSET; a nested set lists IPSETs",
                            set.id
                        )));
                    }
                    None => {
                        return Err(invalid(&format!(
                            "{}: member {member:?} is not an IP set of the network (add it first)",
                            set.id
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// The set with this `Id`.
    pub fn get(&self, id: &str) -> Option<&IpSet> {
        self.0.get(id)
    }

    /// Every set, ordered by `Id`.
    pub fn iter(&self) -> impl Iterator<Item = &IpSet> {
        self.0.values()
    }

    /// Whether the set `id` holds `ip` (through its members for a nested set; a nested set
    /// without members holds every address, as the module documentation says). An unknown
    /// `Id` holds nothing.
    pub fn contains(&self, id: &str, ip: IpAddr) -> bool {
        match self.0.get(id).map(|set| &set.members) {
            Some(Members::Addresses(networks)) => networks.iter().any(|net| net.contains(ip)),
            Some(Members::Sets(members)) if members.is_empty() => true,
            Some(Members::Sets(members)) => members.iter().any(|member| {
                matches!(self.0.get(member).map(|set| &set.members),
                    Some(Members::Addresses(networks)) if networks.iter().any(|net| net.contains(ip)))
            }),
            None => false,
        }
    }

    /// The nested sets that list `id`.
    pub(crate) fn nesting(&self, id: &str) -> impl Iterator<Item = &IpSet> {
        self.0.values().filter(move |set| {
            matches!(&set.members, Members::Sets(members) if members.iter().any(|m| m == id))
        })
    }
}

/// A set `Id` is what an ACL's address list names it by, so it cannot contain a comma or
/// read as an address itself.
fn check_id(id: &str) -> Result<(), HcnFailure> {
    if id.trim().is_empty() {
        return Err(invalid("has no Id"));
    }
    if id.contains(',') || id.parse::<AddressOrPrefix>().is_ok() {
        return Err(invalid(&format!(
            "Id {id:?} cannot be told from an address in an ACL's address list"
        )));
    }
    Ok(())
}

/// The entries of a comma list, trimmed; an empty list has none, an empty entry is an error.
pub(crate) fn tokens(list: &str) -> impl Iterator<Item = Result<&str, String>> {
    let list = list.trim();
    list.split(',')
        .filter(move |_| !list.is_empty())
        .map(move |token| match token.trim() {
            "" => Err(format!("{list:?} has an empty entry")),
            token => Ok(token),
        })
}

/// A member of a JSON object as Go's `encoding/json` finds it: the exact key, else one that
/// differs only in case.
fn member<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    object.get(key).or_else(|| {
        object
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(key))
            .map(|(_, value)| value)
    })
}

fn invalid(why: &str) -> HcnFailure {
    HcnFailure::new(HResult::HCN_E_INVALID_POLICY, format!("(SetPolicy {why})"))
}

#[cfg(test)]
mod tests {
    use super::super::assert_refused;
    use super::*;

    fn set(settings: &str) -> Result<IpSet, HcnFailure> {
        let policy: NetworkPolicy =
            serde_json::from_str(&format!(r#"{{"Type":"SetPolicy","Settings":{settings}}}"#))
                .unwrap();
        IpSet::read(&policy).unwrap()
    }

    fn sets(settings: &[&str]) -> Result<IpSets, HcnFailure> {
        let policies: Vec<NetworkPolicy> = settings
            .iter()
            .map(|s| {
                serde_json::from_str(&format!(r#"{{"Type":"SetPolicy","Settings":{s}}}"#)).unwrap()
            })
            .collect();
        IpSets::of(&policies)
    }

    #[test]
    fn sets_are_read_as_npm_writes_them() {
        let plain = set(r#"{"Id":"azure-npm-1","Name":"ns-x","PolicyType":"IPSET","Values":"10.244.1.5,10.0.0.0/8"}"#)
            .unwrap();
        assert_eq!(
            (plain.id(), plain.name(), plain.is_nested()),
            ("azure-npm-1", "ns-x", false)
        );
        let empty = set(r#"{"id":"azure-npm-2","policytype":"ipset","values":""}"#).unwrap();
        assert_eq!(empty.members, Members::Addresses(vec![]));
        let nested = set(
            r#"{"Id":"azure-npm-3","PolicyType":"NESTEDIPSET","Values":"azure-npm-1,azure-npm-2"}"#,
        )
        .unwrap();
        assert!(nested.is_nested());
    }

    #[test]
    fn settings_hns_cannot_take_are_invalid_policies() {
        for (settings, needle) in [
            (
                r#"{"Id":"a","Type":"IPSET","Values":""}"#,
                "PolicyType is missing",
            ),
            (
                r#"{"Id":"a","PolicyType":"HASHSET","Values":""}"#,
                "neither IPSET nor NESTEDIPSET",
            ),
            (r#"{"PolicyType":"IPSET","Values":""}"#, "has no Id"),
            (
                r#"{"Id":"10.0.0.1","PolicyType":"IPSET"}"#,
                "cannot be told from an address",
            ),
            (
                r#"{"Id":"a,b","PolicyType":"IPSET"}"#,
                "cannot be told from an address",
            ),
            (
                r#"{"Id":"a","PolicyType":"IPSET","Values":"10.0.0.1,,10.0.0.2"}"#,
                "empty entry",
            ),
            (
                r#"{"Id":"a","PolicyType":"IPSET","Values":"Any"}"#,
                "neither an IP address nor a prefix",
            ),
            (
                r#"{"Id":"a","PolicyType":"IPSET","Values":["10.0.0.1"]}"#,
                "is not a string",
            ),
        ] {
            assert_refused(set(settings), HResult::HCN_E_INVALID_POLICY, needle);
        }
    }

    #[test]
    fn nested_sets_list_existing_plain_sets() {
        let ok = sets(&[
            r#"{"Id":"a","PolicyType":"IPSET","Values":"10.244.1.5"}"#,
            r#"{"Id":"b","PolicyType":"IPSET","Values":"10.244.2.0/24"}"#,
            r#"{"Id":"n","PolicyType":"NESTEDIPSET","Values":"a,b"}"#,
        ])
        .unwrap();
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        assert!(ok.contains("n", ip("10.244.2.9")) && ok.contains("n", ip("10.244.1.5")));
        assert!(!ok.contains("a", ip("10.244.2.9")) && !ok.contains("missing", ip("10.244.1.5")));
        assert_eq!(ok.nesting("a").map(IpSet::id).collect::<Vec<_>>(), ["n"]);
        let missing = sets(&[r#"{"Id":"n","PolicyType":"NESTEDIPSET","Values":"a"}"#]);
        assert_refused(
            missing,
            HResult::HCN_E_INVALID_POLICY,
            "not an IP set of the network",
        );
        let deep = sets(&[
            r#"{"Id":"a","PolicyType":"IPSET","Values":""}"#,
            r#"{"Id":"n","PolicyType":"NESTEDIPSET","Values":"a"}"#,
            r#"{"Id":"m","PolicyType":"NESTEDIPSET","Values":"n"}"#,
        ]);
        assert_refused(deep, HResult::HCN_E_INVALID_POLICY, "itself a NESTEDIPSET");
        // ACN PR #1431: an empty nested set applies to any address; an empty plain set to none.
        let empty = sets(&[
            r#"{"Id":"a","PolicyType":"IPSET","Values":""}"#,
            r#"{"Id":"none","PolicyType":"NESTEDIPSET","Values":""}"#,
            r#"{"Id":"n","PolicyType":"NESTEDIPSET","Values":"a"}"#,
        ])
        .unwrap();
        assert!(empty.contains("none", ip("192.0.2.1")) && empty.contains("none", ip("fd00::1")));
        assert!(!empty.contains("a", ip("192.0.2.1")) && !empty.contains("n", ip("192.0.2.1")));
        let twice = sets(&[
            r#"{"Id":"a","PolicyType":"IPSET","Values":""}"#,
            r#"{"Id":"a","PolicyType":"IPSET","Values":"10.0.0.1"}"#,
        ]);
        assert_refused(
            twice,
            HResult::HCN_E_POLICY_ALREADY_EXISTS,
            "two IP sets with Id \"a\"",
        );
    }
}
