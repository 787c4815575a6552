//! The Services the story puts into the API, with the Endpoints and EndpointSlice the endpoints
//! controllers would write for them (no controller-manager runs): which addresses back each
//! port, and on which node each address lives.

use std::net::IpAddr;

use node_lane::NODE_NAME;
use serde_json::{Value, json};

use crate::lane::REMOTE_NODE;

/// One Service port and what backs it.
#[derive(Debug, Clone)]
pub struct Service {
    pub name: &'static str,
    /// The story's namespace.
    pub namespace: &'static str,
    pub cluster_ip: IpAddr,
    /// `TCP` or `UDP`.
    pub protocol: &'static str,
    pub port: u16,
    pub target_port: u16,
    /// Set for a `NodePort` Service.
    pub node_port: Option<u16>,
    /// Backends on this node.
    pub local: Vec<IpAddr>,
    /// Backends on [`REMOTE_NODE`].
    pub remote: Vec<IpAddr>,
}

impl Service {
    /// The IANA number HNS load balancers carry for the protocol.
    pub fn protocol_number(&self) -> u32 {
        if self.protocol == "UDP" { 17 } else { 6 }
    }

    /// Every backend address.
    pub fn backends(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.local.iter().chain(&self.remote).copied()
    }

    /// The Service, its Endpoints and its EndpointSlice, as one `List` for `kubectl apply`.
    pub fn objects(&self) -> Value {
        let port = json!({ "port": self.target_port, "protocol": self.protocol });
        let mut service_port = json!({
            "port": self.port,
            "targetPort": self.target_port,
            "protocol": self.protocol,
        });
        if let Some(node_port) = self.node_port {
            service_port["nodePort"] = json!(node_port);
        }
        let addresses = |node: &str, ips: &[IpAddr]| -> Vec<Value> {
            ips.iter()
                .map(|ip| json!({ "ip": ip, "nodeName": node }))
                .collect()
        };
        let mut endpoint_addresses = addresses(NODE_NAME, &self.local);
        endpoint_addresses.extend(addresses(REMOTE_NODE, &self.remote));
        let slice_endpoints: Vec<Value> = self
            .local
            .iter()
            .map(|ip| (ip, NODE_NAME))
            .chain(self.remote.iter().map(|ip| (ip, REMOTE_NODE)))
            .map(|(ip, node)| {
                json!({
                    "addresses": [ip],
                    "conditions": { "ready": true },
                    "topology": { "kubernetes.io/hostname": node },
                })
            })
            .collect();
        let subsets = if endpoint_addresses.is_empty() {
            json!([])
        } else {
            json!([{ "addresses": endpoint_addresses, "ports": [port.clone()] }])
        };
        json!({
            "apiVersion": "v1",
            "kind": "List",
            "items": [
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": { "name": self.name, "namespace": self.namespace },
                    "spec": {
                        "type": if self.node_port.is_some() { "NodePort" } else { "ClusterIP" },
                        "clusterIP": self.cluster_ip,
                        "ports": [service_port],
                    },
                },
                {
                    "apiVersion": "v1",
                    "kind": "Endpoints",
                    "metadata": { "name": self.name, "namespace": self.namespace },
                    "subsets": subsets,
                },
                {
                    "apiVersion": "discovery.k8s.io/v1beta1",
                    "kind": "EndpointSlice",
                    "metadata": {
                        "name": format!("{}-lane", self.name),
                        "namespace": self.namespace,
                        "labels": {
                            "kubernetes.io/service-name": self.name,
                            "endpointslice.kubernetes.io/managed-by": "node-lane",
                        },
                    },
                    "addressType": "IPv4",
                    "endpoints": slice_endpoints,
                    "ports": [port],
                },
            ],
        })
    }
}
