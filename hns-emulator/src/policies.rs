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

/// Applies an `HcnModify{Network,Endpoint}` request to `object`'s policies. Only
/// `Policy` requests are modelled (anything else is `HCN_E_REQUEST_UNSUPPORTED`):
/// `Add` appends (an identical policy is `HCN_E_POLICY_ALREADY_EXISTS`), `Remove`
/// removes identical policies (a missing one is `HCN_E_POLICY_NOT_FOUND`).
pub fn apply_policy_modify<P: Policy>(
    object: &str,
    policies: &mut Vec<P>,
    settings: &str,
) -> Result<(), HcnFailure> {
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
    let position = |policies: &[P], wanted: &serde_json::Value| {
        policies
            .iter()
            .position(|policy| serde_json::to_value(policy).ok().as_ref() == Some(wanted))
    };
    for policy in list.policies {
        let value = serde_json::to_value(&policy).map_err(|e| HcnFailure::io("policy", e))?;
        match (request.request_type, position(policies, &value)) {
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
                    format!("(policy RequestType {other:?} is not modelled by the emulator)"),
                ));
            }
        }
    }
    Ok(())
}
