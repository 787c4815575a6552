//! Drift injected into the host: objects the field finds in HNS though HNS's own create checks
//! would refuse them, so that a test (or `hnsctl inject`) can produce what a node's collectors
//! must find.
//!
//! - **An endpoint on an address another endpoint of the network holds**: two HNS endpoints
//!   with one IP, the pod losing its traffic until the node is drained (Azure/AKS#5653); a
//!   remote endpoint kube-proxy made from a stale lease of another node on an address now a
//!   local pod's (Windows-Containers#631, kubernetes#137381). HNS refuses a second holder at
//!   create; how the field's duplicates got past that is not known (a create racing a delete,
//!   a restart between the two), so the injection writes the endpoint past the check, as it
//!   would be held. On an address nobody holds it is an ordinary endpoint (a remote endpoint
//!   in a node's own subnet, for instance).
//! - **A half-created load balancer**: one with no port mapping, or naming backends that do
//!   not exist, as a kube-proxy that died between its calls, or an HNS that restarted under
//!   it, leaves one (kubernetes#141488 crashed kube-proxy on one; kubernetes/community#8883
//!   reports orphans holding a port). HNS refuses both at create.
//!
//! Each runs under the engine's lock like a call, but is not an HCN call: not counted, no
//! fault or latency applied.

use std::net::IpAddr;

use super::engine::State;
use super::failure::HcnFailure;
use super::state::{IPS, MACS, NETWORK_ENDPOINTS, ip_key};
use super::store::ObjectDir;
use hns::guid::Guid;
use hns::schema::{
    EndpointFlags, HostComputeEndpoint, HostComputeLoadBalancer, IpConfig, SchemaVersion,
};

/// What to inject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Injection {
    /// An endpoint named `name` holding `ip` on `network`, remote (kube-proxy's kind, standing
    /// for a pod of another node) or local, whoever else holds the address.
    Endpoint {
        /// The endpoint's ID (zero: a new one), such as the one cni-win derives for a pod.
        id: Guid,
        /// The network's ID.
        network: Guid,
        /// The endpoint's name.
        name: String,
        /// The address it holds.
        ip: IpAddr,
        /// Whether it carries the `RemoteEndpoint` flag.
        remote: bool,
    },
    /// A load balancer on `frontend` with no port mapping, sending to `backends` (none, or
    /// endpoints that may not exist).
    HalfCreatedLoadBalancer {
        /// Its frontend VIP.
        frontend: IpAddr,
        /// Its backend endpoints, as named (not checked).
        backends: Vec<Guid>,
    },
}

impl State<'_> {
    /// Writes what `injection` describes; returns the new object's ID.
    pub(super) fn inject(&self, injection: &Injection) -> Result<Guid, HcnFailure> {
        match injection {
            Injection::Endpoint {
                id,
                network,
                name,
                ip,
                remote,
            } => self.inject_endpoint(*id, *network, name, *ip, *remote),
            Injection::HalfCreatedLoadBalancer { frontend, backends } => {
                let id = State::choose_id(Guid::ZERO, Guid::ZERO)?;
                let balancer = HostComputeLoadBalancer {
                    id,
                    frontend_vips: vec![*frontend],
                    host_compute_endpoints: backends.clone(),
                    schema_version: SchemaVersion::V2,
                    ..HostComputeLoadBalancer::default()
                };
                self.write_object(ObjectDir::LoadBalancers, id, &balancer)?;
                Ok(id)
            }
        }
    }

    /// The endpoint, indexed as a create indexes one, except that the address stays with the
    /// endpoint holding it already (if any): deleting the injected one leaves the other's
    /// hold; once the other is deleted, create no longer sees the injected one's (a departure
    /// from HNS, which tests that inject a duplicate do not rely on).
    fn inject_endpoint(
        &self,
        requested: Guid,
        network_id: Guid,
        name: &str,
        ip: IpAddr,
        remote: bool,
    ) -> Result<Guid, HcnFailure> {
        let network = self.require_network(network_id)?;
        let id = State::choose_id(requested, Guid::ZERO)?;
        if self.object_exists(ObjectDir::Endpoints, id) {
            return Err(HcnFailure::new(
                hns::hresult::HResult::ERROR_OBJECT_ALREADY_EXISTS,
                format!("(endpoint {id})"),
            ));
        }
        let mac = self.allocate_mac(&network)?;
        let endpoint = HostComputeEndpoint {
            id,
            name: name.to_owned(),
            host_compute_network: network_id,
            flags: if remote {
                EndpointFlags::REMOTE_ENDPOINT
            } else {
                EndpointFlags::NONE
            },
            ip_configurations: vec![IpConfig {
                ip_address: ip,
                prefix_length: Some(if ip.is_ipv4() { 32 } else { 128 }),
            }],
            mac_address: Some(mac),
            schema_version: SchemaVersion::V2,
            ..HostComputeEndpoint::default()
        };
        let held = self
            .live_holder(IPS, network_id, &ip_key(ip), |other| {
                other.ip_configurations.iter().any(|c| c.ip_address == ip)
            })?
            .is_some();
        if !held {
            self.set_holder(IPS, network_id, &ip_key(ip), id)?;
        }
        if !remote {
            self.set_holder(MACS, network_id, &mac.to_string(), id)?;
        }
        self.add_marker(NETWORK_ENDPOINTS, network_id, id)?;
        self.index_endpoint_name(&endpoint)?;
        self.write_object(ObjectDir::Endpoints, id, &endpoint)?;
        Ok(id)
    }
}
