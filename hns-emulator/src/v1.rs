//! The V1 (`HNSCall`) view of the emulated host.
//!
//! HNS serves its V1 REST-like API from the same objects as V2. Clients still
//! read it: hcsshim's version probe (`GET /globals/version`), and win-overlay,
//! which takes `Subnets[0]` and `ManagementIP` of its network from
//! `GET /networks/`; and the reference plugins' default (V1) path, which works on
//! `/endpoints/` ([`super::v1_endpoints`]). Networks are read-only here; the V1
//! shapes are derived from the stored V2 objects, never stored themselves.

use serde::Serialize;
use serde_json::{Value, json};

use super::engine::State;
use super::failure::HcnFailure;
use super::store::ObjectDir;
use hns::guid::Guid;
use hns::schema::{HostComputeNetwork, NetworkPolicy};

/// A V1 `HNSNetwork`, as far as it can be derived from a V2 network.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
struct V1Network {
    #[serde(rename = "ID")]
    id: Guid,
    name: String,
    #[serde(rename = "Type")]
    network_type: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    network_adapter_name: String,
    subnets: Vec<V1Subnet>,
    /// The host's address on the network: the `ProviderAddress` policy HNS
    /// keeps on overlay networks (empty, and omitted, otherwise).
    #[serde(rename = "ManagementIP", skip_serializing_if = "String::is_empty")]
    management_ip: String,
    #[serde(rename = "DNSSuffix", skip_serializing_if = "String::is_empty")]
    dns_suffix: String,
    /// Comma-joined, as V1 spells lists.
    #[serde(rename = "DNSServerList", skip_serializing_if = "String::is_empty")]
    dns_server_list: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    mac_pools: Vec<V1MacPool>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
struct V1Subnet {
    address_prefix: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    gateway_address: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
struct V1MacPool {
    start_mac_address: String,
    end_mac_address: String,
}

impl From<&HostComputeNetwork> for V1Network {
    fn from(network: &HostComputeNetwork) -> V1Network {
        let policy = |pick: fn(&NetworkPolicy) -> Option<String>| {
            network.policies.iter().find_map(pick).unwrap_or_default()
        };
        V1Network {
            id: network.id,
            name: network.name.clone(),
            network_type: network.network_type.to_string(),
            network_adapter_name: policy(|p| match p {
                NetworkPolicy::NetAdapterName(adapter) => {
                    Some(adapter.network_adapter_name.clone())
                }
                _ => None,
            }),
            subnets: network
                .subnets()
                .map(|subnet| V1Subnet {
                    address_prefix: subnet.ip_address_prefix.to_string(),
                    gateway_address: subnet
                        .gateway()
                        .map(|gateway| gateway.to_string())
                        .unwrap_or_default(),
                })
                .collect(),
            management_ip: policy(|p| match p {
                NetworkPolicy::ProviderAddress(address) => {
                    Some(address.provider_address.to_string())
                }
                _ => None,
            }),
            dns_suffix: network.dns.domain.clone(),
            dns_server_list: comma_joined(&network.dns.server_list),
            mac_pools: network
                .mac_pool
                .ranges
                .iter()
                .map(|range| V1MacPool {
                    start_mac_address: range.start_mac_address.to_string(),
                    end_mac_address: range.end_mac_address.to_string(),
                })
                .collect(),
        }
    }
}

/// What a V1 request answers: the success envelope with `Output`, or the failure envelope
/// with `Error` (a failed `HNSCall` HRESULT is an `Err` of the request instead).
#[derive(Debug)]
pub(super) enum V1Reply {
    Output(Value),
    Failure(String),
}

impl V1Reply {
    fn into_json(self) -> String {
        match self {
            V1Reply::Output(output) => success(output),
            V1Reply::Failure(error) => failure(&error),
        }
    }
}

impl State<'_> {
    /// `HNSCall`: answers `GET /globals/version`, `GET /networks/`, `GET /networks/<id>` and
    /// the endpoint resource (the `v1_endpoints` module) with the V1 envelope; other
    /// requests get the V1 failure envelope, as HNS answers requests it cannot serve.
    pub fn hns_call(&self, method: &str, path: &str, request: &str) -> Result<String, HcnFailure> {
        let route = path.trim_end_matches('/').to_ascii_lowercase();
        let is_get = method.eq_ignore_ascii_case("GET");
        let reply = if let Some(rest) = route.strip_prefix("/endpoints") {
            self.v1_endpoints(method, rest, request)?
        } else if !is_get {
            None
        } else if route == "/globals/version" {
            Some(V1Reply::Output(json!(self.host.version)))
        } else if route == "/networks" {
            Some(V1Reply::Output(self.v1_networks()?))
        } else if let Some(id) = route.strip_prefix("/networks/") {
            Some(self.v1_network(id)?)
        } else {
            None
        };
        Ok(reply
            .unwrap_or_else(|| {
                V1Reply::Failure(format!(
                    "{method} {path} is not modelled by the HCN emulator"
                ))
            })
            .into_json())
    }

    fn v1_networks(&self) -> Result<Value, HcnFailure> {
        let mut networks = Vec::new();
        for id in self.all_ids(ObjectDir::Networks)? {
            if let Some(network) = self.load_network(id)? {
                networks.push(V1Network::from(&network));
            }
        }
        serde_json::to_value(networks).map_err(|e| HcnFailure::io("V1 networks", e))
    }

    /// One network; V1 reports an unknown or malformed ID as "Element not found.".
    fn v1_network(&self, id: &str) -> Result<V1Reply, HcnFailure> {
        let network = match id.parse::<Guid>() {
            Ok(id) => self.load_network(id)?,
            Err(_) => None,
        };
        Ok(match network {
            Some(network) => V1Reply::Output(
                serde_json::to_value(V1Network::from(&network))
                    .map_err(|e| HcnFailure::io("V1 network", e))?,
            ),
            None => V1Reply::Failure("Element not found.".to_owned()),
        })
    }
}

fn success(output: Value) -> String {
    json!({ "Success": true, "Output": output }).to_string()
}

fn failure(error: &str) -> String {
    json!({ "Success": false, "Error": error }).to_string()
}

/// A list as V1 writes it: comma-joined, no spaces.
pub(super) fn comma_joined<T: std::fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}
