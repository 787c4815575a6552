//! The allow-all ACL rules, In and Out, that come with every ACL cni-win writes: on Windows
//! Server 2025 an endpoint with any ACL denies all traffic no ACL allows
//! ([`hns::WindowsBuild::acls_default_deny`]), and these keep the pod's other traffic. The
//! endpoint's policies add them ([`crate::policy`]); a config's review asks whether the user's
//! own ACLs have their effect ([`crate::config`]).

use hns::schema::EndpointPolicy;
use hns::schema::policy::{AclAction, AclDirection, AclPolicy};

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
