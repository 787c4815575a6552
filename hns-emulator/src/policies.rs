//! Policy validation and policy modify requests, shared by networks, subnets and endpoints.

use super::failure::HcnFailure;
use hns::hresult::HResult;
use hns::schema::policy::Policy;
use hns::schema::{ModifyRequest, PolicyList, RequestType, ResourceType};

/// Rejects what HNS rejects: a `Type` not documented for the object kind
/// (`HCN_E_INVALID_POLICY_TYPE`), or a documented type whose known settings
/// have a value that does not fit or miss a required one, or that is not in the
/// V2 shape at all (a flat V1 policy): `HCN_E_INVALID_POLICY`. Settings keys
/// the type does not have (a V1 `ExceptionList` inside V2 `Settings`, a
/// camelCase key of another type) are ignored as HNS ignores them; the policy is
/// kept as received. Documented types the crate does not model are accepted as
/// they are.
pub fn check_policies<P: Policy>(policies: &[P]) -> Result<(), HcnFailure> {
    for policy in policies.iter().filter(|policy| policy.is_raw()) {
        let type_name = policy.type_name();
        if !P::is_documented_type(type_name) {
            return Err(HcnFailure::new(
                HResult::HCN_E_INVALID_POLICY_TYPE,
                format!("(policy Type {type_name:?})"),
            ));
        }
        if let Some(misfit) = policy.misfit() {
            let json = serde_json::to_string(policy).unwrap_or_default();
            return Err(HcnFailure::new(
                HResult::HCN_E_INVALID_POLICY,
                format!(
                    "({type_name} policy does not have the V2 Settings shape: {misfit}: {json})"
                ),
            ));
        }
    }
    Ok(())
}

/// An `HcnModify{Network,Endpoint}` `Policy` request, its policies checked as
/// [`check_policies`] checks them.
#[derive(Debug)]
pub struct PolicyRequest<P> {
    /// `Add`, `Remove` or `Update`; what `Update` means is the object's to say.
    pub request_type: RequestType,
    /// The request's policies, in the order given.
    pub policies: Vec<P>,
}

/// Reads a modify request for `object`'s policies. Only `Policy` requests are modelled
/// (anything else is `HCN_E_REQUEST_UNSUPPORTED`).
pub fn read_policy_request<P: Policy>(
    object: &str,
    settings: &str,
) -> Result<PolicyRequest<P>, HcnFailure> {
    let request: ModifyRequest = serde_json::from_str(settings)
        .map_err(|e| HcnFailure::invalid_json("modify request", e))?;
    if request.resource_type != ResourceType::Policy {
        return Err(HcnFailure::new(
            HResult::HCN_E_REQUEST_UNSUPPORTED,
            format!(
                "({object} ResourceType {:?} is not modelled by the emulator)",
                request.resource_type
            ),
        ));
    }
    let list: PolicyList<P> = serde_json::from_str(request.settings.get())
        .map_err(|e| HcnFailure::invalid_json("policy request Settings", e))?;
    check_policies(&list.policies)?;
    Ok(PolicyRequest {
        request_type: request.request_type,
        policies: list.policies,
    })
}

/// Applies one policy of an `Add` or `Remove` request: `Add` appends (an identical policy
/// is `HCN_E_POLICY_ALREADY_EXISTS`), `Remove` removes an identical policy (a missing one is
/// `HCN_E_POLICY_NOT_FOUND`). Any other request type is `HCN_E_REQUEST_UNSUPPORTED`: what
/// `Update` does depends on the object and the policy type, so its callers model it.
pub fn add_or_remove<P: Policy>(
    policies: &mut Vec<P>,
    request_type: RequestType,
    policy: P,
) -> Result<(), HcnFailure> {
    let value = serde_json::to_value(&policy).map_err(|e| HcnFailure::io("policy", e))?;
    let position = policies
        .iter()
        .position(|held| serde_json::to_value(held).ok().as_ref() == Some(&value));
    match (request_type, position) {
        (RequestType::Add, None) => policies.push(policy),
        (RequestType::Add, Some(_)) => {
            return Err(HcnFailure::new(
                HResult::HCN_E_POLICY_ALREADY_EXISTS,
                format!("({value})"),
            ));
        }
        (RequestType::Remove, Some(index)) => {
            policies.remove(index);
        }
        (RequestType::Remove, None) => {
            return Err(HcnFailure::new(
                HResult::HCN_E_POLICY_NOT_FOUND,
                format!("({value})"),
            ));
        }
        (other, _) => {
            return Err(HcnFailure::new(
                HResult::HCN_E_REQUEST_UNSUPPORTED,
                format!(
                    "(policy RequestType {other:?} of a {} policy is not modelled by the emulator)",
                    policy.type_name()
                ),
            ));
        }
    }
    Ok(())
}
