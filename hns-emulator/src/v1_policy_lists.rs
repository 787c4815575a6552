//! The V1 policy-list resource (`HNSCall` `/policylists/...`): the load balancers seen
//! through V1.
//!
//! kube-proxy lists policy lists before it picks its kernel proxier (a failure makes 1.20
//! fall back to userspace and current releases refuse to run), and deletes every one when it
//! starts ("Cleaning up old HNS policy lists"), whichever API it then programs load balancers
//! with. HNS answers both from its load balancers: one policy list per load balancer, its
//! backends as `References` (`/endpoints/<id>`) and one `ELB` policy per port mapping
//! (hcsshim's `PolicyList` and `ELBPolicy`); `DELETE /policylists/<id>` deletes the load
//! balancer. Creating one (`POST /policylists/`, kube-proxy's path only on HNS older than the
//! V2 API) is not modelled and is refused naming the request.

use serde::Serialize;
use serde_json::Value;

use super::engine::State;
use super::failure::HcnFailure;
use super::v1::{NOT_FOUND, V1Reply, id_and_action};
use hns::guid::Guid;
use hns::schema::{HostComputeLoadBalancer, LoadBalancerFlags, LoadBalancerPortMappingFlags};

/// hcsshim's `PolicyList`.
#[derive(Debug, Serialize)]
struct V1PolicyList {
    #[serde(rename = "ID")]
    id: Guid,
    #[serde(rename = "References", skip_serializing_if = "Vec::is_empty")]
    references: Vec<String>,
    #[serde(rename = "Policies", skip_serializing_if = "Vec::is_empty")]
    policies: Vec<V1ElbPolicy>,
}

/// hcsshim's `ELBPolicy`: one port mapping of a load balancer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
struct V1ElbPolicy {
    #[serde(rename = "Type")]
    policy_type: &'static str,
    #[serde(skip_serializing_if = "is_zero")]
    protocol: u32,
    internal_port: u16,
    external_port: u16,
    #[serde(rename = "SourceVIP", skip_serializing_if = "String::is_empty")]
    source_vip: String,
    #[serde(rename = "VIPs", skip_serializing_if = "Vec::is_empty")]
    vips: Vec<String>,
    #[serde(rename = "ILB", skip_serializing_if = "std::ops::Not::not")]
    ilb: bool,
    #[serde(rename = "IsDSR", skip_serializing_if = "std::ops::Not::not")]
    is_dsr: bool,
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

impl From<&HostComputeLoadBalancer> for V1PolicyList {
    fn from(balancer: &HostComputeLoadBalancer) -> V1PolicyList {
        let source_vip = balancer
            .source_vip
            .map(|vip| vip.to_string())
            .unwrap_or_default();
        let vips: Vec<String> = balancer
            .frontend_vips
            .iter()
            .map(ToString::to_string)
            .collect();
        V1PolicyList {
            id: balancer.id,
            references: balancer
                .host_compute_endpoints
                .iter()
                .map(|endpoint| format!("/endpoints/{endpoint}"))
                .collect(),
            policies: balancer
                .port_mappings
                .iter()
                .map(|mapping| V1ElbPolicy {
                    policy_type: "ELB",
                    protocol: mapping.protocol,
                    internal_port: mapping.internal_port,
                    external_port: mapping.external_port,
                    source_vip: source_vip.clone(),
                    vips: vips.clone(),
                    ilb: mapping.flags.contains(LoadBalancerPortMappingFlags::ILB),
                    is_dsr: balancer.flags.contains(LoadBalancerFlags::DSR),
                })
                .collect(),
        }
    }
}

impl State<'_> {
    /// `/policylists[/<id>]` with `method` (upper-case); `rest` is the lower-cased path after
    /// `/policylists`, without trailing slashes.
    pub(super) fn v1_policy_lists(
        &self,
        method: &str,
        rest: &str,
    ) -> Result<Option<V1Reply>, HcnFailure> {
        Ok(Some(match (method, id_and_action(rest)) {
            ("GET", ("", None)) => {
                let lists: Vec<V1PolicyList> = self
                    .load_balancers()?
                    .iter()
                    .map(V1PolicyList::from)
                    .collect();
                V1Reply::Output(to_value(&lists)?)
            }
            ("GET", (id, None)) => match self.v1_policy_list_named(id)? {
                Some(balancer) => V1Reply::Output(to_value(&V1PolicyList::from(&balancer))?),
                None => V1Reply::Failure(NOT_FOUND.to_owned()),
            },
            ("DELETE", (id, None)) => match self.v1_policy_list_named(id)? {
                Some(balancer) => {
                    self.delete_load_balancer(balancer.id)?;
                    V1Reply::Output(to_value(&V1PolicyList::from(&balancer))?)
                }
                None => V1Reply::Failure(NOT_FOUND.to_owned()),
            },
            _ => return Ok(None),
        }))
    }

    /// The load balancer a path's ID segment names; an unknown or malformed ID names none.
    fn v1_policy_list_named(
        &self,
        id: &str,
    ) -> Result<Option<HostComputeLoadBalancer>, HcnFailure> {
        match id.parse::<Guid>() {
            Ok(id) => self.load_balancer(id),
            Err(_) => Ok(None),
        }
    }
}

fn to_value<T: Serialize>(value: &T) -> Result<Value, HcnFailure> {
    serde_json::to_value(value).map_err(|e| HcnFailure::io("V1 policy list", e))
}
