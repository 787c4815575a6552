//! The allow-all ACL rules that come with the ACLs cni-win writes.
//!
//! - Switch allow-alls, In and Out, beside every ACL cni-win writes itself: an endpoint with
//!   any ACL denies all traffic no ACL allows on Windows Server 2025
//!   (microsoft/Windows-Containers#616) and, as far as production writers found, on Windows
//!   Server 2022's L2Bridge and Overlay networks once an ACL blocks (azure-container-networking
//!   PR #2617); these keep the pod's other traffic.
//! - Host-layer allow-alls, In and Out, on every endpoint with switch ACLs, the user's own
//!   included ([`host_rules`]): Calico and Azure NPM write them beside every endpoint's switch
//!   rules ("Required by l2bridge network"). They open nothing the switch rules close: a packet
//!   passes both layers.
//!
//! The endpoint's policies add them ([`crate::policy`]); a config's review asks whether the
//! user's own ACLs have their effect ([`crate::config`]).

use hns::schema::EndpointPolicy;
use hns::schema::policy::{AclAction, AclDirection, AclPolicy, AclRuleType};

/// The priority of the fallback rules: the lowest precedence HNS is known to take (a higher
/// number is evaluated later; Azure CNI's default allow-all In and Out rules use 65500, its
/// blocks 65498-65499), below any rule a user writes (windows-container-networking kept user
/// ACLs within 100-4096).
const FALLBACK_PRIORITY: u16 = 65500;

/// Every IP protocol, as HNS takes it in an ACL's `Protocols`.
const ANY_PROTOCOL: &str = "256";

/// Allow-all rules, In and Out, at [`FALLBACK_PRIORITY`]: what keeps an endpoint's other
/// traffic once it has an ACL, on a build where HNS then denies by default.
pub(crate) fn rules() -> [EndpointPolicy; 2] {
    [AclDirection::In, AclDirection::Out].map(|direction| {
        EndpointPolicy::Acl(AclPolicy::all_traffic(
            AclAction::Allow,
            direction,
            FALLBACK_PRIORITY,
        ))
    })
}

/// The Host-layer allow-alls ([`AclPolicy::host_allow_all`]) that go with `acls`, an endpoint's
/// ACLs as HNS applies them: when any is a switch rule, one per direction in which none is a
/// Host rule (the user's own Host rules govern their direction, and a rule without priority
/// beside them could tie).
pub(crate) fn host_rules(acls: &[AclPolicy]) -> Vec<AclPolicy> {
    let layer = |acl: &AclPolicy| acl.rule_type.unwrap_or(AclRuleType::Switch);
    if !acls.iter().any(|acl| layer(acl) == AclRuleType::Switch) {
        return Vec::new();
    }
    [AclDirection::In, AclDirection::Out]
        .into_iter()
        .filter(|direction| {
            !acls
                .iter()
                .any(|acl| acl.direction == *direction && layer(acl) == AclRuleType::Host)
        })
        .map(AclPolicy::host_allow_all)
        .collect()
}

/// Whether `acl` allows all traffic of its direction: the fallback's effect, whatever its
/// priority or rule type.
pub(crate) fn allows_all(acl: &AclPolicy) -> bool {
    acl.action == AclAction::Allow
        && acl
            .protocols
            .as_deref()
            .is_none_or(|protocols| protocols.trim() == ANY_PROTOCOL)
        && [
            &acl.local_addresses,
            &acl.remote_addresses,
            &acl.local_ports,
            &acl.remote_ports,
        ]
        .iter()
        .all(|field| field.as_deref().is_none_or(|value| value.trim().is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch_acls_get_host_allow_alls_where_no_host_rule_is() {
        let block = AclPolicy::all_traffic(AclAction::Block, AclDirection::Out, 200);
        assert_eq!(
            host_rules(std::slice::from_ref(&block)),
            [AclDirection::In, AclDirection::Out].map(AclPolicy::host_allow_all)
        );
        let unset = AclPolicy {
            rule_type: None,
            ..block.clone()
        };
        assert_eq!(host_rules(&[unset]).len(), 2, "no RuleType is Switch");
        let users_host_in = AclPolicy {
            rule_type: Some(AclRuleType::Host),
            direction: AclDirection::In,
            ..block.clone()
        };
        assert_eq!(
            host_rules(&[block, users_host_in.clone()]),
            [AclPolicy::host_allow_all(AclDirection::Out)]
        );
        assert!(host_rules(&[users_host_in]).is_empty(), "no switch rule");
        assert!(host_rules(&[]).is_empty());
    }
}
