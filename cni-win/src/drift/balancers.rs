//! Drift of the node's load balancers (kube-proxy's Services), on every network type: one
//! half-created (no port mapping, or no backend: HNS refuses both at create, so a crash or a
//! restart between kube-proxy's calls left it), or naming a backend endpoint that no longer
//! exists. Reported only: they are kube-proxy's, which repairs its own, and from 1.37 expects
//! HNS to restore them after a restart.

use hns::schema::HostComputeLoadBalancer;

use super::{Drift, Reason};
use cni_win_core::snapshot::NodeSnapshot;

/// Every load balancer drift `snapshot` shows, each on the HNS network of its first backend
/// that exists (none when no backend exists).
pub(super) fn find(snapshot: &NodeSnapshot) -> Vec<Drift> {
    let mut found = Vec::new();
    for balancer in &snapshot.load_balancers {
        let backend_network = balancer.host_compute_endpoints.iter().find_map(|id| {
            let endpoint = snapshot.endpoints.iter().find(|e| e.id == *id)?;
            snapshot
                .networks
                .iter()
                .find(|network| network.id == endpoint.host_compute_network)
                .map(|network| network.name.clone())
        });
        let mut drift = |reason, what: String| {
            found.push(Drift {
                reason,
                network: backend_network.clone(),
                object: format!(
                    "load balancer {} ({}) {what}",
                    balancer.id,
                    frontends(balancer)
                ),
                repair: None,
            });
        };
        if balancer.port_mappings.is_empty() {
            drift(
                Reason::LoadBalancerHalfCreated,
                "has no port mapping".to_owned(),
            );
        } else if balancer.host_compute_endpoints.is_empty() {
            drift(Reason::LoadBalancerHalfCreated, "has no backend".to_owned());
        }
        let gone: Vec<String> = balancer
            .host_compute_endpoints
            .iter()
            .filter(|id| !snapshot.endpoints.iter().any(|e| e.id == **id))
            .map(ToString::to_string)
            .collect();
        if !gone.is_empty() {
            drift(
                Reason::LoadBalancerBackendGone,
                format!(
                    "sends to endpoint(s) that no longer exist: {}",
                    gone.join(", ")
                ),
            );
        }
    }
    found
}

/// Its frontends as an operator reads them: `frontends 10.96.0.10` or the node's.
fn frontends(balancer: &HostComputeLoadBalancer) -> String {
    if balancer.frontend_vips.is_empty() {
        return "frontend: the node's address".to_owned();
    }
    let vips: Vec<String> = balancer
        .frontend_vips
        .iter()
        .map(ToString::to_string)
        .collect();
    format!("frontend {}", vips.join(", "))
}
