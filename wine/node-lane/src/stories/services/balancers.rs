//! What kube-proxy programs, judged: the load balancers a Service must have and whether HNS
//! holds exactly those, and kube-proxy's objects compared before and after an operation that
//! must leave them.

use std::collections::BTreeSet;
use std::net::IpAddr;

use hns::Guid;
use hns::schema::{EndpointFlags, HostComputeEndpoint, HostComputeLoadBalancer, LoadBalancerFlags};

/// kube-proxy's HNS objects, compared before and after an operation that must leave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeProxyObjects {
    pub balancers: BTreeSet<Guid>,
    /// What the load balancers do, whatever their IDs.
    programming: BTreeSet<Programmed>,
    pub endpoints: BTreeSet<Guid>,
}

impl KubeProxyObjects {
    /// The load balancers and kube-proxy's own endpoints (every nameless endpoint holding
    /// none of `pods`' addresses).
    pub fn of(
        endpoints: &[HostComputeEndpoint],
        balancers: &[HostComputeLoadBalancer],
        pods: &BTreeSet<IpAddr>,
    ) -> KubeProxyObjects {
        KubeProxyObjects {
            balancers: balancers.iter().map(|b| b.id).collect(),
            programming: balancers.iter().map(Programmed::of).collect(),
            endpoints: endpoints
                .iter()
                .filter(|e| {
                    !e.ip_configurations
                        .iter()
                        .any(|c| pods.contains(&c.ip_address))
                })
                .filter(|e| e.name.is_empty())
                .map(|e| e.id)
                .collect(),
        }
    }

    /// Whether `other` programs the same and keeps the same endpoints, whatever its load
    /// balancers' IDs: what a restarted kube-proxy must leave.
    pub fn alike(&self, other: &KubeProxyObjects) -> bool {
        self.programming == other.programming && self.endpoints == other.endpoints
    }
}

/// One load balancer's programming: frontend, port mapping, source VIP and backends.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Programmed {
    frontends: Vec<IpAddr>,
    ports: Vec<(u32, u16, u16)>,
    source_vip: Option<IpAddr>,
    backends: BTreeSet<Guid>,
}

impl Programmed {
    fn of(balancer: &HostComputeLoadBalancer) -> Programmed {
        Programmed {
            frontends: balancer.frontend_vips.clone(),
            ports: balancer
                .port_mappings
                .iter()
                .map(|m| (m.protocol, m.internal_port, m.external_port))
                .collect(),
            source_vip: balancer.source_vip,
            backends: balancer.host_compute_endpoints.iter().copied().collect(),
        }
    }
}

/// One load balancer kube-proxy must have programmed.
#[derive(Debug, Clone)]
pub struct Expected {
    pub check: String,
    pub frontend: Option<IpAddr>,
    pub protocol: u32,
    pub internal_port: u16,
    pub external_port: u16,
    /// The backends' addresses: each must be one endpoint of the balancer, local for this
    /// node's pods, remote for another node's.
    pub backends: Vec<IpAddr>,
    pub source_vip: Option<IpAddr>,
    /// Whether it has the DSR flag: a ClusterIP's under kube-proxy's `--enable-dsr`, which
    /// NetworkPolicy needs (the client's address kept); not a NodePort's of a Service with
    /// `externalTrafficPolicy: Cluster`, which kube-proxy SNATs whatever its flags.
    pub dsr: bool,
}

/// Whether exactly one load balancer matches `want` and its backends are exactly the
/// endpoints holding `want`'s addresses; what it saw, or why not.
pub fn judge(
    want: &Expected,
    endpoints: &[HostComputeEndpoint],
    balancers: &[HostComputeLoadBalancer],
) -> Result<String, String> {
    let matching: Vec<&HostComputeLoadBalancer> = balancers
        .iter()
        .filter(|b| b.frontend_vips.first().copied() == want.frontend)
        .filter(|b| {
            b.port_mappings.first().is_some_and(|m| {
                m.protocol == want.protocol && m.external_port == want.external_port
            })
        })
        .collect();
    let balancer = match matching.as_slice() {
        [one] => *one,
        [] => return Err("no load balancer for it".to_owned()),
        many => return Err(format!("{} load balancers for it (duplicates)", many.len())),
    };
    let mapping = &balancer.port_mappings[0];
    if mapping.internal_port != want.internal_port {
        return Err(format!(
            "load balancer {} maps to port {}, not {}",
            balancer.id, mapping.internal_port, want.internal_port
        ));
    }
    let mut wanted = BTreeSet::new();
    for ip in &want.backends {
        let endpoint =
            backend(endpoints, *ip).ok_or_else(|| format!("no endpoint holds backend {ip}"))?;
        wanted.insert(endpoint.id);
    }
    let actual: BTreeSet<Guid> = balancer.host_compute_endpoints.iter().copied().collect();
    if actual != wanted || actual.len() != balancer.host_compute_endpoints.len() {
        return Err(format!(
            "load balancer {} has backends {:?}, the Service's endpoints are {:?}",
            balancer.id, balancer.host_compute_endpoints, wanted
        ));
    }
    let dsr = balancer.flags.contains(LoadBalancerFlags::DSR);
    if dsr != want.dsr {
        return Err(format!(
            "load balancer {} {} the DSR flag",
            balancer.id,
            if dsr { "has" } else { "lacks" }
        ));
    }
    if want.source_vip.is_some() && balancer.source_vip != want.source_vip {
        return Err(format!(
            "load balancer {} has source VIP {:?}, not {:?}",
            balancer.id, balancer.source_vip, want.source_vip
        ));
    }
    let describe = |ip: &IpAddr| {
        let remote = backend(endpoints, *ip)
            .is_some_and(|e| e.flags.contains(EndpointFlags::REMOTE_ENDPOINT));
        format!("{ip}{}", if remote { " (remote)" } else { "" })
    };
    Ok(format!(
        "load balancer {}{}: backends {}{}",
        balancer.id,
        if dsr { " (DSR)" } else { "" },
        want.backends
            .iter()
            .map(describe)
            .collect::<Vec<_>>()
            .join(", "),
        balancer
            .source_vip
            .map(|vip| format!(", source VIP {vip}"))
            .unwrap_or_default()
    ))
}

/// The endpoint a Service's backend `ip` must be balanced to: when endpoints share the address
/// (a duplicate the story injects), the pod's own, attached to its namespace; else the one
/// holding it (kube-proxy's remote endpoint for another node's pod).
fn backend(endpoints: &[HostComputeEndpoint], ip: IpAddr) -> Option<&HostComputeEndpoint> {
    let mut holding = endpoints.iter().filter(|e| holds(e, ip));
    let first = holding.clone().next();
    holding
        .find(|e| !e.host_compute_namespace.is_zero())
        .or(first)
}

/// Whether `endpoint` holds `ip`.
pub fn holds(endpoint: &HostComputeEndpoint, ip: IpAddr) -> bool {
    endpoint
        .ip_configurations
        .iter()
        .any(|config| config.ip_address == ip)
}

#[cfg(test)]
mod tests {
    use hns::schema::IpConfig;

    use super::*;

    fn endpoint(id: u128, ip: IpAddr, namespace: u128) -> HostComputeEndpoint {
        HostComputeEndpoint {
            id: Guid::from_u128(id),
            host_compute_namespace: Guid::from_u128(namespace),
            ip_configurations: vec![IpConfig {
                ip_address: ip,
                prefix_length: None,
            }],
            ..HostComputeEndpoint::default()
        }
    }

    #[test]
    fn a_backend_on_a_duplicated_address_is_the_pods_own_endpoint() {
        let ip: IpAddr = "10.244.1.5".parse().unwrap();
        let foreign = endpoint(1, ip, 0);
        let pod = endpoint(2, ip, 7);
        let remote = endpoint(3, "10.244.2.10".parse().unwrap(), 0);
        let endpoints = [foreign, pod.clone(), remote.clone()];
        assert_eq!(backend(&endpoints, ip), Some(&pod));
        assert_eq!(
            backend(&endpoints, "10.244.2.10".parse().unwrap()),
            Some(&remote)
        );
        assert_eq!(backend(&endpoints, "10.244.1.9".parse().unwrap()), None);
    }
}
