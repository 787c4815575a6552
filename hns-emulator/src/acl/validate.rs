//! What HNS checks when ACLs and IP sets are written, and how a network's IP sets change.

use super::evaluate::acls;
use super::rule::Rule;
use super::sets::{IpSet, IpSets};
use crate::engine::State;
use crate::failure::HcnFailure;
use crate::policies::add_or_remove;
use crate::state::NETWORK_ENDPOINTS;
use hns::features::Feature;
use hns::hresult::HResult;
use hns::schema::{EndpointPolicy, HostComputeNetwork, NetworkPolicy, RequestType};

impl State<'_> {
    /// The ACLs among `written` (an endpoint's policies at create, a request's at `Add` or
    /// `Update`) compile against `network`'s IP sets and use only what this host's HNS
    /// supports; otherwise `HCN_E_INVALID_POLICY`, naming the rule and the field.
    pub(crate) fn check_acls(
        &self,
        network: &HostComputeNetwork,
        written: &[EndpointPolicy],
    ) -> Result<(), HcnFailure> {
        let sets = IpSets::of(&network.policies)?;
        for (index, acl) in acls(written) {
            Rule::compile(index, &acl, &sets)?.check_features(self.host.version)?;
        }
        Ok(())
    }

    /// `HcnCreateNetwork`: IP sets only where this host's HNS has them, and valid as a whole.
    pub(crate) fn check_network_sets(&self, policies: &[NetworkPolicy]) -> Result<(), HcnFailure> {
        for read in policies.iter().filter_map(IpSet::read) {
            self.check_sets_supported()?;
            self.check_set_supported(&read?)?;
        }
        IpSets::of(policies).map(drop)
    }

    /// One policy of an `HcnModifyNetwork` request. An IP set is added (its `Id` must be
    /// new: `HCN_E_POLICY_ALREADY_EXISTS`), updated or removed by `Id` (an unknown one is
    /// `HCN_E_POLICY_NOT_FOUND`), as Azure NPM adds new sets, updates existing ones with the
    /// sets alone and removes them; any other policy is added or removed as given.
    pub(crate) fn change_network_policy(
        &self,
        policies: &mut Vec<NetworkPolicy>,
        request_type: RequestType,
        policy: NetworkPolicy,
    ) -> Result<(), HcnFailure> {
        let Some(read) = IpSet::read(&policy) else {
            return add_or_remove(policies, request_type, policy);
        };
        self.check_sets_supported()?;
        let set = read?;
        let held = policies.iter().position(|held| {
            IpSet::read(held).is_some_and(|other| other.is_ok_and(|other| other.id() == set.id()))
        });
        if request_type != RequestType::Remove {
            self.check_set_supported(&set)?;
        }
        let id = set.id();
        match (request_type, held) {
            (RequestType::Add, None) => policies.push(policy),
            (RequestType::Add, Some(_)) => {
                return Err(HcnFailure::new(
                    HResult::HCN_E_POLICY_ALREADY_EXISTS,
                    format!(
                        "(IP set {id:?} is already on the network: change it with an Update request)"
                    ),
                ));
            }
            (RequestType::Update, Some(index)) => policies[index] = policy,
            (RequestType::Remove, Some(index)) => {
                policies.remove(index);
            }
            (RequestType::Update | RequestType::Remove, None) => {
                return Err(HcnFailure::new(
                    HResult::HCN_E_POLICY_NOT_FOUND,
                    format!("(no IP set {id:?} on the network)"),
                ));
            }
            (RequestType::Refresh, _) => {
                return Err(HcnFailure::new(
                    HResult::HCN_E_REQUEST_UNSUPPORTED,
                    "(policy RequestType Refresh is not modelled by the emulator)",
                ));
            }
        }
        Ok(())
    }

    /// After a request turned `before` into `network`'s policies: a removed set is named by
    /// no nested set and no ACL of the network's endpoints (`HCN_E_ENTITY_HAS_REFERENCES`:
    /// Azure NPM removes ACLs before the sets they name, and nested sets before their
    /// members), and every nested set lists existing plain sets.
    pub(crate) fn check_set_changes(
        &self,
        network: &HostComputeNetwork,
        before: &[NetworkPolicy],
    ) -> Result<(), HcnFailure> {
        let after = IpSets::read(&network.policies)?;
        let removed: Vec<IpSet> = IpSets::read(before)?
            .iter()
            .filter(|set| after.get(set.id()).is_none())
            .cloned()
            .collect();
        for set in &removed {
            let id = set.id();
            if let Some(nesting) = after.nesting(id).next() {
                return Err(referenced(format!(
                    "IP set {id:?} is a member of the nested set {:?}: update or remove that set first",
                    nesting.id()
                )));
            }
            for endpoint in self.markers(NETWORK_ENDPOINTS, network.id)? {
                let Some(endpoint) = self.load_endpoint(endpoint)? else {
                    continue;
                };
                for (index, acl) in acls(&endpoint.policies) {
                    if Rule::set_references(&acl).any(|named| named == id) {
                        return Err(referenced(format!(
                            "IP set {id:?} is named by ACL #{index} of endpoint {}: remove or update that ACL first",
                            endpoint.id
                        )));
                    }
                }
            }
        }
        after.check_members()
    }

    /// IP sets need HNS 13.0: an older HNS does not know the policy type.
    fn check_sets_supported(&self) -> Result<(), HcnFailure> {
        let version = self.host.version;
        if Feature::SetPolicy.supported_by(version) {
            return Ok(());
        }
        Err(HcnFailure::new(
            HResult::HCN_E_INVALID_POLICY_TYPE,
            format!(
                "(policy Type \"SetPolicy\": IP sets need HNS 13.0; this host runs HNS {version})"
            ),
        ))
    }

    /// Nested sets need HNS 15.0: an older HNS does not know the `PolicyType`.
    fn check_set_supported(&self, set: &IpSet) -> Result<(), HcnFailure> {
        let version = self.host.version;
        if !set.is_nested() || Feature::NestedIpSet.supported_by(version) {
            return Ok(());
        }
        Err(HcnFailure::new(
            HResult::HCN_E_INVALID_POLICY,
            format!(
                "(SetPolicy {:?}: PolicyType NESTEDIPSET needs HNS 15.0; this host runs HNS {version})",
                set.id()
            ),
        ))
    }
}

fn referenced(why: String) -> HcnFailure {
    HcnFailure::new(HResult::HCN_E_ENTITY_HAS_REFERENCES, format!("({why})"))
}
