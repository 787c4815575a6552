//! Load balancers (read side).

use super::engine::State;
use super::failure::HcnFailure;
use super::query::{Query, id_list};
use super::store::ObjectDir;
use hns::guid::Guid;
use hns::hresult::HResult;
use hns::schema::HostComputeLoadBalancer;

impl State<'_> {
    /// `HcnEnumerateLoadBalancers`. The emulator does not create load balancers
    /// (kube-proxy does, not the plugins); it lists those found in `loadbalancers/`.
    pub fn enumerate_load_balancers(&self, query: &str) -> Result<String, HcnFailure> {
        let query = Query::parse(query)?;
        let mut ids = Vec::new();
        for id in self.all_ids(ObjectDir::LoadBalancers)? {
            if let Some(balancer) =
                self.read_object::<HostComputeLoadBalancer>(ObjectDir::LoadBalancers, id)?
            {
                let value = serde_json::to_value(&balancer)
                    .map_err(|e| HcnFailure::io("load balancer", e))?;
                if query.matches(&value, &[]) {
                    ids.push(id);
                }
            }
        }
        Ok(id_list(&ids))
    }

    /// `HcnOpenLoadBalancer`.
    pub fn open_load_balancer(&self, id: Guid) -> Result<(), HcnFailure> {
        self.require_load_balancer(id).map(drop)
    }

    /// `HcnQueryLoadBalancerProperties`.
    pub fn query_load_balancer(&self, id: Guid, query: &str) -> Result<String, HcnFailure> {
        Query::parse(query)?;
        let balancer = self.require_load_balancer(id)?;
        serde_json::to_string(&balancer).map_err(|e| HcnFailure::io("load balancer", e))
    }

    fn require_load_balancer(&self, id: Guid) -> Result<HostComputeLoadBalancer, HcnFailure> {
        self.read_object(ObjectDir::LoadBalancers, id)?
            .ok_or_else(|| {
                HcnFailure::new(HResult::ERROR_NOT_FOUND, format!("(load balancer {id})"))
            })
    }
}
