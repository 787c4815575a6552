//! How the node's NetworkPolicy agent (`cni-win daemon --network-policy`) names the HNS
//! objects it owns, stated once for both sides of the node that meet over them:
//!
//! - the agent's translation (`cni-win-netpol`) mints every ACL and IP set `Id` with these
//!   prefixes, and takes an object with one for its own: it rewrites or removes it at will,
//!   and keeps its priorities clear of every other rule;
//! - the plugins (`cni-win-core`) refuse a config ACL whose `Id` has the rule prefix: the
//!   agent would take it for its own and remove it, and set its own rules beside it as if it
//!   were not there.
//!
//! A crate of its own, with no dependency, because the plugins must not link the
//! translation (it pulls in the Kubernetes API types) and the translation has no business
//! depending on the plugins' core.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// The prefix of the `Id` of every ACL the agent writes: rules with it are the agent's, all
/// others another owner's ([`is_agents`]).
pub const RULE_ID_PREFIX: &str = "cni-win-netpol-";

/// The prefix of the `Id` of every IP set the agent writes (a rule's prefix too: a set is
/// the agent's as its rules are).
pub const SET_ID_PREFIX: &str = "cni-win-netpol-set-";

/// Whether an ACL or IP set `Id` is one the agent minted (it has [`RULE_ID_PREFIX`]).
pub fn is_agents(id: &str) -> bool {
    id.starts_with(RULE_ID_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_id_is_the_agents_as_its_rules_are() {
        assert!(SET_ID_PREFIX.starts_with(RULE_ID_PREFIX));
        assert!(is_agents("cni-win-netpol-0123456789abcdef"));
        assert!(is_agents("cni-win-netpol-set-0123456789abcdef"));
        for other in ["", "cni-win-netpol", "allow-dns", "CNI-WIN-NETPOL-x"] {
            assert!(!is_agents(other), "{other}");
        }
    }
}
