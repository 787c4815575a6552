//! The V1 network resource (`HNSCall` `/networks/...`) over the same objects as V2.
//!
//! Reads derive the V1 `HNSNetwork` from the stored V2 network (see [`V1Network`] for where
//! each field comes from), with the management IP HNS fills in (see [`super::adapter`]), an
//! Overlay network's `DrMacAddress`, and each subnet's `ID` and `Policies` (the VSID in its
//! V1 shape): win-overlay reads `Subnets[0]` and `ManagementIP`, flanneld's host-gw backend
//! stops on a network whose `ManagementIP` is empty, and `Get-HnsNetwork` shows the rest.
//!
//! `POST /networks/` is how flanneld's host-gw backend creates `cbr0`
//! (`{"Name":"cbr0","Type":"L2Bridge","Subnets":[{"AddressPrefix":..,"GatewayAddress":..}]}`,
//! hcsshim's `HNSNetworkRequest`); the document is translated to the V2 network HNS keeps
//! (each subnet's gateway as its default route, V1 subnet policies as V2 ones, the adapter
//! name, source MAC and automatic DNS as their network policies, the DNS lists split) and
//! created through the V2 checks. A refusal is the failure envelope carrying the message of
//! the HRESULT HNS gives (a malformed address makes the network invalid, as in V2). `DELETE /networks/<id>` (flanneld
//! deletes a `cbr0` whose subnet changed) deletes the network as `HcnDeleteNetwork` does.
//! V1 network-level `Policies` are not modelled: a request carrying some is refused naming
//! them.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::engine::State;
use super::failure::HcnFailure;
use super::v1::{
    NOT_FOUND, V1Reply, comma_joined, comma_split, id_and_action, parse_body, requested_id,
};
use hns::guid::Guid;
use hns::hresult::HResult;
use hns::schema::policy::{AutomaticDnsPolicy, NetAdapterNamePolicy, SourceMacAddressPolicy};
use hns::schema::v1::subnet_policy_from_conf;
use hns::schema::{
    Dns, HostComputeNetwork, Ipam, MacPool, MacRange, NetworkPolicy, NetworkType, Route,
    SchemaVersion, Subnet, SubnetPolicy,
};

/// A V1 `HNSNetwork`: a projection of the stored V2 network, never stored itself.
///
/// Every field is derived from the one V2 object; the sources of the shape are hcsshim's
/// `internal/hns/hnsnetwork.go` (`HNSNetwork`, `Subnet`, `MacPool`), and a V1 `GET /networks`
/// reply captured on a Windows Server 2019 node (HNS 9.2, hns.psm1's `Invoke-HNSRequest`
/// log of an Overlay network made with a `VSID` subnet policy, and Docker's `nat`). Fields
/// of that reply HNS keeps for itself and the emulator has no state for (`ActivityId`,
/// `Resources`, `Extensions`, `LayeredOn`, `Health`, `State`, `Version`, endpoint counts,
/// `DNSServerCompartment`, and a subnet's `Health`, `State`, `ObjectType`) are left out.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
struct V1Network {
    /// V2 `ID`.
    #[serde(rename = "ID")]
    id: Guid,
    /// V2 `Name`.
    name: String,
    /// V2 `Type`.
    #[serde(rename = "Type")]
    network_type: String,
    /// The V2 `NetAdapterName` policy's `NetworkAdapterName` (hcsshim `HNSNetwork`; the V1
    /// create translates it the other way).
    #[serde(skip_serializing_if = "String::is_empty")]
    network_adapter_name: String,
    /// The V2 `SourceMacAddress` policy's address (hcsshim `HNSNetwork.SourceMac`).
    #[serde(skip_serializing_if = "String::is_empty")]
    source_mac: String,
    /// The V2 `DrMacAddress` policy's address: HNS reports an Overlay network's
    /// distributed-router MAC at the top level of the V1 network (`"DrMacAddress"` in the
    /// captured reply; flanneld's vxlan backend reads the same DR MAC through V2).
    #[serde(skip_serializing_if = "String::is_empty")]
    dr_mac_address: String,
    /// V1 network-level policies. The V2 network policies with a V1 field of their own are
    /// reported there (adapter name, source MAC, DR MAC, provider address as `ManagementIP`,
    /// automatic DNS); the captured Overlay network, which has a DR MAC and a management IP,
    /// reports `"Policies":[]`, and a V1 create carrying network policies is refused (see the
    /// module docs), so the list is always empty, and always present as in the reply.
    policies: Vec<Value>,
    /// V2 `Ipams[].Subnets[]`, in order.
    subnets: Vec<V1SubnetView>,
    /// The host's address on the network (see [`State::management_ip`]); omitted while HNS
    /// has none to report.
    #[serde(rename = "ManagementIP", skip_serializing_if = "String::is_empty")]
    management_ip: String,
    /// V2 `Dns.Domain`.
    #[serde(rename = "DNSSuffix", skip_serializing_if = "String::is_empty")]
    dns_suffix: String,
    /// V2 `Dns.ServerList`, comma-joined, as V1 spells lists.
    #[serde(rename = "DNSServerList", skip_serializing_if = "String::is_empty")]
    dns_server_list: String,
    /// The V2 `AutomaticDNS` policy's `Enable` (hcsshim `HNSNetwork.AutomaticDNS`, omitted
    /// when false as hcsshim does).
    #[serde(rename = "AutomaticDNS", skip_serializing_if = "std::ops::Not::not")]
    automatic_dns: bool,
    /// V2 `MacPool.Ranges`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    mac_pools: Vec<V1MacPool>,
}

/// A subnet of a V1 network as HNS reports it: with its `ID`, and its `Policies` always
/// present (`[]` when it has none), as in the captured reply.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
struct V1SubnetView {
    /// See [`subnet_id`].
    #[serde(rename = "ID")]
    id: Guid,
    /// V2 `IpAddressPrefix`.
    address_prefix: String,
    /// The next hop of the V2 subnet's default route (hcsshim's V1 `Create` requires a
    /// gateway with a prefix, and the V1 create turns it into that route).
    #[serde(skip_serializing_if = "String::is_empty")]
    gateway_address: String,
    /// V2 subnet policies in their V1 shape (see [`v1_subnet_policy`]).
    policies: Vec<Value>,
}

/// A subnet of a V1 create request (hcsshim's `Subnet`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
struct V1Subnet {
    address_prefix: String,
    gateway_address: String,
    policies: Vec<Value>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
struct V1MacPool {
    start_mac_address: String,
    end_mac_address: String,
}

/// The body of `POST /networks/` (hcsshim's `HNSNetwork`); `ManagementIP` and
/// `DNSServerCompartment` are HNS's to fill in and are ignored, as by HNS.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
struct V1NetworkRequest {
    #[serde(rename = "ID")]
    id: String,
    name: String,
    #[serde(rename = "Type")]
    network_type: String,
    network_adapter_name: String,
    source_mac: String,
    policies: Vec<Value>,
    mac_pools: Vec<V1MacPool>,
    subnets: Vec<V1Subnet>,
    #[serde(rename = "DNSSuffix")]
    dns_suffix: String,
    #[serde(rename = "DNSServerList")]
    dns_server_list: String,
    #[serde(rename = "AutomaticDNS")]
    automatic_dns: bool,
}

impl State<'_> {
    /// `/networks[/<id>]` with `method` (upper-case); `rest` is the lower-cased path after
    /// `/networks`, without trailing slashes.
    pub(super) fn v1_networks(
        &mut self,
        method: &str,
        rest: &str,
        request: &str,
    ) -> Result<Option<V1Reply>, HcnFailure> {
        Ok(Some(match (method, id_and_action(rest)) {
            ("GET", ("", None)) => V1Reply::Output(self.v1_network_list()?),
            ("POST", ("", None)) => self.v1_create_network(request)?,
            ("GET", (id, None)) => match self.v1_network_named(id)? {
                Some(network) => V1Reply::Output(self.v1_network_view(&network)?),
                None => V1Reply::Failure(NOT_FOUND.to_owned()),
            },
            ("DELETE", (id, None)) => match self.v1_network_named(id)? {
                Some(network) => {
                    let view = self.v1_network_view(&network)?;
                    self.delete_network(network.id)?;
                    V1Reply::Output(view)
                }
                None => V1Reply::Failure(NOT_FOUND.to_owned()),
            },
            _ => return Ok(None),
        }))
    }

    fn v1_network_list(&self) -> Result<Value, HcnFailure> {
        let views = self
            .networks()?
            .iter()
            .map(|network| self.v1_network_view(network))
            .collect::<Result<_, _>>()?;
        Ok(Value::Array(views))
    }

    /// The network a path's ID segment names; V1 reports an unknown or malformed ID alike.
    fn v1_network_named(&self, id: &str) -> Result<Option<HostComputeNetwork>, HcnFailure> {
        match id.parse::<Guid>() {
            Ok(id) => self.load_network(id),
            Err(_) => Ok(None),
        }
    }

    /// `POST /networks/`: the V1 document as a V2 create.
    fn v1_create_network(&mut self, request: &str) -> Result<V1Reply, HcnFailure> {
        let v1: V1NetworkRequest = parse_body(request, "network")?;
        let requested = match requested_id(&v1.id) {
            Ok(id) => id,
            Err(refusal) => return Ok(refusal),
        };
        let created =
            v2_network(v1).and_then(|network| self.create_network_from(requested, network));
        match created {
            Ok(id) => {
                let network = self.require_network(id)?;
                self.v1_network_view(&network).map(V1Reply::Output)
            }
            Err(refusal) => Ok(V1Reply::Failure(refusal.record().error)),
        }
    }

    /// The V1 view of a stored network: a projection of the V2 object (see [`V1Network`]).
    fn v1_network_view(&self, network: &HostComputeNetwork) -> Result<Value, HcnFailure> {
        let view = V1Network {
            id: network.id,
            name: network.name.clone(),
            network_type: network.network_type.to_string(),
            network_adapter_name: network
                .find_policy(|policy| match policy {
                    NetworkPolicy::NetAdapterName(adapter) => {
                        Some(adapter.network_adapter_name.clone())
                    }
                    _ => None,
                })
                .unwrap_or_default(),
            source_mac: network
                .find_policy(|policy| match policy {
                    NetworkPolicy::SourceMacAddress(mac) => Some(mac.source_mac_address),
                    _ => None,
                })
                .map(|mac| mac.to_string())
                .unwrap_or_default(),
            dr_mac_address: network
                .find_policy(|policy| match policy {
                    NetworkPolicy::DrMacAddress(mac) => Some(mac.address),
                    _ => None,
                })
                .map(|mac| mac.to_string())
                .unwrap_or_default(),
            policies: Vec::new(),
            subnets: network
                .subnets()
                .enumerate()
                .map(|(index, subnet)| V1SubnetView {
                    id: subnet_id(network.id, index),
                    address_prefix: subnet.ip_address_prefix.to_string(),
                    gateway_address: subnet
                        .gateway()
                        .map(|gateway| gateway.to_string())
                        .unwrap_or_default(),
                    policies: subnet.policies.iter().map(v1_subnet_policy).collect(),
                })
                .collect(),
            management_ip: self
                .management_ip(network)
                .map(|ip| ip.to_string())
                .unwrap_or_default(),
            dns_suffix: network.dns.domain.clone(),
            dns_server_list: comma_joined(&network.dns.server_list),
            automatic_dns: network
                .find_policy(|policy| match policy {
                    NetworkPolicy::AutomaticDns(dns) => Some(dns.enable),
                    _ => None,
                })
                .unwrap_or_default(),
            mac_pools: network
                .mac_pool
                .ranges
                .iter()
                .map(|range| V1MacPool {
                    start_mac_address: range.start_mac_address.to_string(),
                    end_mac_address: range.end_mac_address.to_string(),
                })
                .collect(),
        };
        serde_json::to_value(view).map_err(|e| HcnFailure::io("V1 network", e))
    }
}

/// The `ID` HNS reports for the `index`th subnet of `network`. V2 subnets carry no ID, so it
/// is derived, not stored: the same on every read, distinct per subnet and from the network's
/// own ID (the captured reply gives each subnet an ID of its own).
fn subnet_id(network: Guid, index: usize) -> Guid {
    Guid::from_u128(network.as_u128().rotate_left(64) ^ (index as u128 + 1))
}

/// A V2 subnet policy in its V1 shape: `VSID` and `VLAN` flat, the ID under the type's name
/// (`{"Type":"VSID","VSID":4096}`: the reference's §8.5-8.6, the captured reply, and what
/// `New-HnsNetwork -SubnetPolicies` and flanneld's old V1 vxlan backend send). A type with
/// no V1 shape is reported as stored.
fn v1_subnet_policy(policy: &SubnetPolicy) -> Value {
    match policy {
        SubnetPolicy::Vsid(vsid) => json!({ "Type": "VSID", "VSID": vsid.isolation_id }),
        SubnetPolicy::Vlan(vlan) => json!({ "Type": "VLAN", "VLAN": vlan.isolation_id }),
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}

/// The V2 network of a V1 create, or what HNS answers for it: a malformed address or MAC
/// makes the network invalid (`HCN_E_INVALID_NETWORK`, as in a V2 document), a subnet policy
/// V2 cannot express is `HCN_E_INVALID_POLICY`.
fn v2_network(v1: V1NetworkRequest) -> Result<HostComputeNetwork, HcnFailure> {
    let invalid = |field: &str, value: &str, error: &dyn std::fmt::Display| {
        HcnFailure::new(
            HResult::HCN_E_INVALID_NETWORK,
            format!("({field} {value:?}: {error})"),
        )
    };
    if !v1.policies.is_empty() {
        return Err(HcnFailure::new(
            HResult::HCN_E_REQUEST_UNSUPPORTED,
            format!(
                "(POST /networks/ with network Policies {} is not modelled by the HCN emulator)",
                Value::Array(v1.policies)
            ),
        ));
    }
    let mut subnets = Vec::new();
    for subnet in &v1.subnets {
        let mut policies = Vec::new();
        for policy in &subnet.policies {
            let translated = subnet_policy_from_conf(&policy.to_string())
                .map_err(|e| HcnFailure::new(HResult::HCN_E_INVALID_POLICY, format!("({e})")))?;
            policies.push(translated.policy);
        }
        let prefix = subnet
            .address_prefix
            .parse()
            .map_err(|e| invalid("Subnets AddressPrefix", &subnet.address_prefix, &e))?;
        let routes = if subnet.gateway_address.is_empty() {
            Vec::new()
        } else {
            let gateway = subnet
                .gateway_address
                .parse()
                .map_err(|e| invalid("Subnets GatewayAddress", &subnet.gateway_address, &e))?;
            vec![Route::default_via(gateway)]
        };
        subnets.push(Subnet {
            policies,
            routes,
            ..Subnet::new(prefix)
        });
    }
    let mut policies = Vec::new();
    if !v1.network_adapter_name.is_empty() {
        policies.push(NetworkPolicy::NetAdapterName(NetAdapterNamePolicy {
            network_adapter_name: v1.network_adapter_name,
        }));
    }
    if !v1.source_mac.is_empty() {
        let source_mac_address = v1
            .source_mac
            .parse()
            .map_err(|e| invalid("SourceMac", &v1.source_mac, &e))?;
        policies.push(NetworkPolicy::SourceMacAddress(SourceMacAddressPolicy {
            source_mac_address,
        }));
    }
    if v1.automatic_dns {
        policies.push(NetworkPolicy::AutomaticDns(AutomaticDnsPolicy {
            enable: true,
        }));
    }
    let mut ranges = Vec::new();
    for pool in &v1.mac_pools {
        let mac = |text: &str| text.parse().map_err(|e| invalid("MacPools", text, &e));
        ranges.push(MacRange {
            start_mac_address: mac(&pool.start_mac_address)?,
            end_mac_address: mac(&pool.end_mac_address)?,
        });
    }
    let mut server_list = Vec::new();
    for server in comma_split(&v1.dns_server_list) {
        server_list.push(
            server
                .parse()
                .map_err(|e| invalid("DNSServerList", &server, &e))?,
        );
    }
    Ok(HostComputeNetwork {
        name: v1.name,
        network_type: NetworkType::parse(&v1.network_type),
        policies,
        mac_pool: MacPool { ranges },
        dns: Dns {
            domain: v1.dns_suffix,
            server_list,
            ..Dns::default()
        },
        ipams: if subnets.is_empty() {
            Vec::new()
        } else {
            vec![Ipam {
                ipam_type: "Static".to_owned(),
                subnets,
            }]
        },
        schema_version: SchemaVersion::V2,
        ..HostComputeNetwork::default()
    })
}
