//! The IP sets one pass names, by `Id`, and the `Id`s two groups of pods met at.
//!
//! A set's `Id` is a fingerprint of its group's name ([`IpSet::for_group`]): 128 bits of
//! SHA-256, so two groups meeting one `Id` is not a thing a tenant can arrange. Should it
//! ever happen, no rule may name that `Id`: whichever group's members the set held, one of
//! the two would be allowed what its policies do not allow. So the set and every rule naming
//! it are left out and the collision is reported ([`SetCollision`]): traffic those rules
//! would allow is refused (fail closed), never let through on another group's behalf.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use hns::schema::policy::AclPolicy;

use crate::render::IpSet;

/// Two groups of pods whose sets have one `Id`: neither set is written, nor any rule naming
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetCollision {
    /// The `Id` both sets have.
    pub id: String,
    /// The groups' names (the sets' `Name`s), at least two.
    pub names: BTreeSet<String>,
}

impl fmt::Display for SetCollision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.names.iter().map(|n| format!("{n:?}")).collect();
        write!(
            f,
            "IP set {} is named by {} groups ({}): no rule names it, so what those groups \
             are allowed is refused (fail closed)",
            self.id,
            names.len(),
            names.join(", ")
        )
    }
}

impl SetCollision {
    /// Whether `acl` names the set: such a rule is never written.
    pub fn is_named_by(&self, acl: &AclPolicy) -> bool {
        names_any(acl, &BTreeSet::from([self.id.as_str()]))
    }
}

/// The sets a pass names, gathered across endpoints.
#[derive(Debug, Default)]
pub(crate) struct Sets {
    by_id: BTreeMap<String, IpSet>,
    /// `Id` → every name met at it, for the `Id`s more than one group met at.
    collided: BTreeMap<String, BTreeSet<String>>,
}

impl Sets {
    /// Notes `set` (its group's first occurrence in the pass; later ones are the same group
    /// with the same members) and returns the `Id` rules name it by.
    pub(crate) fn name(&mut self, set: &IpSet) -> String {
        let id = set.id.clone();
        match self.by_id.get(&id) {
            None => {
                self.by_id.insert(id.clone(), set.clone());
            }
            Some(held) if held.name == set.name => {}
            Some(held) => {
                self.collided
                    .entry(id.clone())
                    .or_insert_with(|| BTreeSet::from([held.name.clone()]))
                    .insert(set.name.clone());
            }
        }
        id
    }

    /// The sets to write and the collisions, whose sets are not among them.
    pub(crate) fn finish(mut self) -> (BTreeMap<String, IpSet>, Vec<SetCollision>) {
        let collisions = std::mem::take(&mut self.collided)
            .into_iter()
            .map(|(id, names)| {
                self.by_id.remove(&id);
                SetCollision { id, names }
            })
            .collect();
        (self.by_id, collisions)
    }
}

/// Whether `acl` names one of `ids` among its addresses.
pub(crate) fn names_any(acl: &AclPolicy, ids: &BTreeSet<&str>) -> bool {
    [&acl.local_addresses, &acl.remote_addresses]
        .into_iter()
        .flat_map(|field| field.as_deref().unwrap_or_default().split(','))
        .any(|entry| ids.contains(entry.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(id: &str, name: &str, last: u8) -> IpSet {
        IpSet {
            id: id.to_owned(),
            name: name.to_owned(),
            addresses: vec![[10, 244, 1, last].into()],
        }
    }

    /// Two groups at one `Id` leave the set out and say which; a group met again is one set.
    #[test]
    fn two_groups_at_one_id_leave_it_out() {
        let mut sets = Sets::default();
        assert_eq!(sets.name(&set("s1", "x/a v4", 2)), "s1");
        assert_eq!(sets.name(&set("s1", "x/a v4", 2)), "s1");
        sets.name(&set("s2", "x/b v4", 3));
        sets.name(&set("s1", "y/evil v4", 4));
        let (written, collisions) = sets.finish();
        assert_eq!(written.keys().collect::<Vec<_>>(), ["s2"]);
        assert_eq!(
            collisions,
            [SetCollision {
                id: "s1".to_owned(),
                names: BTreeSet::from(["x/a v4".to_owned(), "y/evil v4".to_owned()]),
            }]
        );
        assert!(collisions[0].to_string().contains("fail closed"));
    }
}
