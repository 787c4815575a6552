//! Policy writes on live endpoints and networks, counted so a test can assert how many
//! writes a change made: a NetworkPolicy agent should touch one IP set for a selector's
//! membership change, not rewrite every endpoint's ACLs (each rewrite of an endpoint's ACLs
//! is what resets its TCP connections in Calico's design).

use serde::{Deserialize, Serialize};

use super::evaluate::acl_of;
use super::sets::IpSet;
use crate::engine::Engine;
use crate::failure::HcnFailure;
use crate::policies::PolicyRequest;
use hns::schema::policy::AclPolicy;
use hns::schema::{EndpointPolicy, NetworkPolicy, RequestType};

/// Successful policy modify requests since the last reset, and what they touched. Failed
/// requests change nothing and count here for nothing (the call counters count every call).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct PolicyWrites {
    /// `HcnModifyEndpoint` `Policy` requests.
    #[serde(default)]
    pub endpoint_requests: u64,
    /// ACL rules those requests wrote: every ACL of an `Add` or `Update` (an `Update` carrying
    /// ACLs reprograms every ACL of the endpoint, so each of its ACLs counts).
    #[serde(default)]
    pub acl_rules_written: u64,
    /// ACL rules endpoints lost: removed, or left out of an `Update`.
    #[serde(default)]
    pub acl_rules_removed: u64,
    /// `HcnModifyNetwork` `Policy` requests (IP sets or any other network policy).
    #[serde(default)]
    pub network_requests: u64,
    /// IP sets those requests added or updated.
    #[serde(default)]
    pub sets_written: u64,
    /// IP sets those requests removed.
    #[serde(default)]
    pub sets_removed: u64,
}

impl PolicyWrites {
    /// Counts a successful endpoint request that turned `before` into `after`.
    pub(crate) fn count_endpoint(
        &mut self,
        request: &PolicyRequest<EndpointPolicy>,
        before: &[EndpointPolicy],
        after: &[EndpointPolicy],
    ) {
        self.endpoint_requests += 1;
        if request.request_type != RequestType::Remove {
            self.acl_rules_written += request.policies.iter().filter_map(acl_of).count() as u64;
        }
        let mut kept: Vec<AclPolicy> = after.iter().filter_map(acl_of).collect();
        for acl in before.iter().filter_map(acl_of) {
            match kept.iter().position(|held| *held == acl) {
                Some(index) => {
                    kept.swap_remove(index);
                }
                None => self.acl_rules_removed += 1,
            }
        }
    }

    /// Counts a successful network request that turned `before` into `after`.
    pub(crate) fn count_network(
        &mut self,
        request: &PolicyRequest<NetworkPolicy>,
        before: &[NetworkPolicy],
        after: &[NetworkPolicy],
    ) {
        self.network_requests += 1;
        let sets = |policies: &[NetworkPolicy]| -> Vec<String> {
            policies
                .iter()
                .filter_map(IpSet::read)
                .filter_map(Result::ok)
                .map(|set| set.id().to_owned())
                .collect()
        };
        if request.request_type != RequestType::Remove {
            self.sets_written += sets(&request.policies).len() as u64;
        }
        let remaining = sets(after);
        self.sets_removed += sets(before)
            .iter()
            .filter(|id| !remaining.contains(id))
            .count() as u64;
    }
}

impl Engine {
    /// Policy writes since the last reset.
    pub fn policy_writes(&self) -> Result<PolicyWrites, HcnFailure> {
        self.with_host(|host| host.policy_writes)
    }

    /// Clears the policy write counters and returns what they were.
    pub fn reset_policy_writes(&self) -> Result<PolicyWrites, HcnFailure> {
        self.with_host(|host| std::mem::take(&mut host.policy_writes))
    }
}
