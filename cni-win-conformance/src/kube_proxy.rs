//! kube-proxy's objects on a node, as its winkernel proxier creates them (hcsshim's documents,
//! kubernetes-windows.md): what the plugins and the node tools must leave alone and report on.

use serde_json::{Value, json};

/// The host's MAC, which kube-proxy gives its endpoints.
pub const HOST_MAC: &str = "00-15-5D-52-C0-01";

/// The ID tests give kube-proxy's load balancer.
pub const LOAD_BALANCER: &str = "1B000000-0000-4000-8000-000000000001";

/// kube-proxy's local endpoint on `ip` (its source VIP's): `{IpConfigurations, MacAddress,
/// Flags: 0}`, no name, no policies; HNS chooses the ID.
pub fn local_endpoint(ip: &str) -> Value {
    json!({
        "SchemaVersion": {"Major": 2, "Minor": 0},
        "IpConfigurations": [{"IpAddress": ip}],
        "MacAddress": HOST_MAC,
        "Flags": 0
    })
}

/// kube-proxy's remote endpoint on `ip` (a Service's ClusterIP, a pod of another node):
/// `RemoteEndpoint`, the host's MAC, the node IP as its ProviderAddress.
pub fn remote_endpoint(ip: &str) -> Value {
    json!({
        "SchemaVersion": {"Major": 2, "Minor": 0},
        "IpConfigurations": [{"IpAddress": ip}],
        "MacAddress": HOST_MAC,
        "Flags": 1,
        "Policies": [{"Type": "ProviderAddress", "Settings": {"ProviderAddress": crate::flannel::PROVIDER_ADDRESS}}]
    })
}

/// kube-proxy's load balancer [`LOAD_BALANCER`] for a Service: its source VIP `source_vip`,
/// the ClusterIP 10.96.0.50 mapping TCP port 80 to the pods' 8080, the pods' endpoints
/// `backends`, and `more` members over those.
pub fn load_balancer(source_vip: &str, backends: &[String], more: Value) -> Value {
    let mut balancer = json!({
        "ID": LOAD_BALANCER,
        "HostComputeEndpoints": backends,
        "SourceVIP": source_vip,
        "FrontendVIPs": ["10.96.0.50"],
        "PortMappings": [{"Protocol": 6, "InternalPort": 8080, "ExternalPort": 80}],
        "SchemaVersion": {"Major": 2, "Minor": 0}
    });
    if let (Some(balancer), Value::Object(more)) = (balancer.as_object_mut(), more) {
        balancer.extend(more);
    }
    balancer
}
