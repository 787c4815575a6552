//! The V1 endpoint resource (`HNSCall` `/endpoints/...`) over the same objects as V2.
//!
//! On Windows a V1 `HNSEndpoint` and a V2 `HostComputeEndpoint` are two views of one object:
//! an endpoint created with `POST /endpoints/` is listed by `HcnEnumerateEndpoints` and the
//! reverse. So V1 requests are translated to the V2 document and go through the same checks
//! (address in a subnet and free, MAC free, host ports free, policies valid), and V1 replies
//! are derived from the stored V2 object. This is the path of the reference plugins' default
//! config (no `apiVersion`): win-bridge and win-overlay V1 list `/endpoints/`, create with
//! `POST /endpoints/`, read back by ID, delete with `DELETE /endpoints/<id>`, and
//! host-attach with `POST /endpoints/<id>/attach` (flanneld's `cbr0_ep`).
//!
//! V1 error behaviour, as the field reports it:
//! - a second endpoint with a name the host already has fails the `HNSCall` itself with
//!   `ERROR_OBJECT_ALREADY_EXISTS` ("The object already exists. (0x1392)", k8s#74766),
//!   where V2 accepts duplicate names;
//! - an unknown or malformed endpoint ID is the failure envelope `"Element not found."`;
//! - a request the engine refuses (address reserved or held, bad policy, unknown network)
//!   is the failure envelope carrying the refusal's message, as Docker reports
//!   "HNS failed with error : An address provided is invalid or reserved.";
//! - attaching an endpoint again to what it is attached to is the failure envelope
//!   "This endpoint is already attached to the switch." (flannel#1391).
//!
//! The V1 attachments (`attach`/`detach`) live in `index/v1-attachments/<endpoint>.json`:
//! they are HCS-side state HNS keeps per endpoint, with no V2 field to hold them.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::engine::State;
use super::failure::HcnFailure;
use super::store::{self, ObjectDir};
use super::v1::{
    NOT_FOUND, V1Reply, comma_joined, comma_split, id_and_action, parse_body, requested_id,
};
use hns::guid::Guid;
use hns::hresult::HResult;
use hns::schema::policy::protocol;
use hns::schema::v1::endpoint_policy_from_conf;
use hns::schema::{EndpointPolicy, HostComputeEndpoint};

const V1_ATTACHMENTS: &str = "v1-attachments";
const ALREADY_ATTACHED: &str = "This endpoint is already attached to the switch.";

/// `HNSEndpoint.State`.
const STATE_CREATED: u8 = 1;
const STATE_ATTACHED: u8 = 2;

/// A V1 `HNSEndpoint` as HNS reports it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
struct V1Endpoint {
    #[serde(rename = "ID")]
    id: Guid,
    name: String,
    virtual_network: Guid,
    virtual_network_name: String,
    policies: Vec<Value>,
    mac_address: String,
    #[serde(rename = "IPAddress", skip_serializing_if = "String::is_empty")]
    ip_address: String,
    #[serde(rename = "IPv6Address", skip_serializing_if = "String::is_empty")]
    ipv6_address: String,
    #[serde(rename = "DNSSuffix", skip_serializing_if = "String::is_empty")]
    dns_suffix: String,
    #[serde(rename = "DNSServerList", skip_serializing_if = "String::is_empty")]
    dns_server_list: String,
    #[serde(rename = "DNSDomain", skip_serializing_if = "String::is_empty")]
    dns_domain: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    gateway_address: String,
    #[serde(rename = "GatewayAddressV6", skip_serializing_if = "String::is_empty")]
    gateway_address_v6: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    prefix_length: Option<u8>,
    #[serde(rename = "IPv6PrefixLength", skip_serializing_if = "Option::is_none")]
    ipv6_prefix_length: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<V1Namespace>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    shared_containers: Vec<String>,
    state: u8,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
struct V1Namespace {
    #[serde(rename = "ID")]
    id: Guid,
    compartment_id: u32,
}

/// The body of `POST /endpoints/` (fields V1 clients send; others are ignored, as by HNS).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
struct V1EndpointRequest {
    #[serde(rename = "ID")]
    id: String,
    name: String,
    virtual_network: String,
    virtual_network_name: String,
    policies: Vec<Value>,
    mac_address: String,
    #[serde(rename = "IPAddress")]
    ip_address: String,
    #[serde(rename = "IPv6Address")]
    ipv6_address: String,
    #[serde(rename = "DNSSuffix")]
    dns_suffix: String,
    #[serde(rename = "DNSServerList")]
    dns_server_list: String,
    #[serde(rename = "DNSDomain")]
    dns_domain: String,
    gateway_address: String,
    #[serde(rename = "GatewayAddressV6")]
    gateway_address_v6: String,
    prefix_length: Option<u8>,
    #[serde(rename = "IPv6PrefixLength")]
    ipv6_prefix_length: Option<u8>,
}

/// The body of `POST /endpoints/<id>/attach` and `/detach`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
struct V1AttachRequest {
    container_id: String,
    system_type: String,
    compartment_id: u32,
}

impl V1AttachRequest {
    /// What the attachment is to: a container, or the host compartment.
    fn key(&self) -> String {
        if self.system_type.eq_ignore_ascii_case("Host") {
            format!("host:{}", self.compartment_id)
        } else {
            self.container_id.clone()
        }
    }
}

impl State<'_> {
    /// `/endpoints[/<id>[/attach|/detach]]` with `method` (upper-case); `rest` is the
    /// lower-cased path after `/endpoints`, without trailing slashes.
    pub(super) fn v1_endpoints(
        &self,
        method: &str,
        rest: &str,
        request: &str,
    ) -> Result<Option<V1Reply>, HcnFailure> {
        let (id, action) = id_and_action(rest);
        Ok(Some(match (method, id, action) {
            ("GET", "", None) => V1Reply::Output(self.v1_endpoint_list()?),
            ("POST", "", None) => self.v1_create_endpoint(request)?,
            ("GET", id, None) => self.with_v1_endpoint(id, |state, endpoint| {
                state.v1_view(&endpoint).map(V1Reply::Output)
            })?,
            ("DELETE", id, None) => self.with_v1_endpoint(id, |state, endpoint| {
                let view = state.v1_view(&endpoint)?;
                state.delete_endpoint(endpoint.id)?;
                Ok(V1Reply::Output(view))
            })?,
            ("POST", id, Some(action @ ("attach" | "detach"))) => {
                let attach: V1AttachRequest = parse_body(request, "attach request")?;
                self.with_v1_endpoint(id, |state, endpoint| {
                    state.v1_attach(&endpoint, &attach, action == "attach")
                })?
            }
            _ => return Ok(None),
        }))
    }

    fn v1_endpoint_list(&self) -> Result<Value, HcnFailure> {
        let mut endpoints = Vec::new();
        for id in self.all_ids(ObjectDir::Endpoints)? {
            if let Some(endpoint) = self.load_endpoint(id)? {
                endpoints.push(self.v1_view(&endpoint)?);
            }
        }
        Ok(Value::Array(endpoints))
    }

    /// Runs `then` on the endpoint `id` names, or answers "Element not found.".
    fn with_v1_endpoint(
        &self,
        id: &str,
        then: impl FnOnce(&Self, HostComputeEndpoint) -> Result<V1Reply, HcnFailure>,
    ) -> Result<V1Reply, HcnFailure> {
        let endpoint = match id.parse::<Guid>() {
            Ok(id) => self.load_endpoint(id)?,
            Err(_) => None,
        };
        match endpoint {
            Some(endpoint) => then(self, endpoint),
            None => Ok(V1Reply::Failure(NOT_FOUND.to_owned())),
        }
    }

    /// `POST /endpoints/`: the V1 document as a V2 create on its network.
    fn v1_create_endpoint(&self, request: &str) -> Result<V1Reply, HcnFailure> {
        let v1: V1EndpointRequest = parse_body(request, "endpoint")?;
        let Some(network) = self.v1_network_of(&v1)? else {
            return Ok(V1Reply::Failure(NOT_FOUND.to_owned()));
        };
        if !v1.name.is_empty() && !self.live_endpoints_named(&v1.name)?.is_empty() {
            return Err(HcnFailure::new(
                HResult::ERROR_OBJECT_ALREADY_EXISTS,
                format!("(an endpoint named {:?} exists)", v1.name),
            ));
        }
        let requested = match requested_id(&v1.id) {
            Ok(id) => id,
            Err(refusal) => return Ok(refusal),
        };
        let settings = match v2_document(&v1) {
            Ok(settings) => settings.to_string(),
            Err(refusal) => return Ok(V1Reply::Failure(refusal.record().error)),
        };
        match self.create_endpoint(network, requested, &settings) {
            Ok(id) => {
                let endpoint = self.require_endpoint(id)?;
                self.v1_view(&endpoint).map(V1Reply::Output)
            }
            Err(refusal) => Ok(V1Reply::Failure(refusal.record().error)),
        }
    }

    /// The network a V1 document names, by `VirtualNetwork` ID or `VirtualNetworkName`.
    fn v1_network_of(&self, v1: &V1EndpointRequest) -> Result<Option<Guid>, HcnFailure> {
        if !v1.virtual_network.is_empty() {
            return Ok(match v1.virtual_network.parse::<Guid>() {
                Ok(id) if self.load_network(id)?.is_some() => Some(id),
                _ => None,
            });
        }
        for id in self.all_ids(ObjectDir::Networks)? {
            if self
                .load_network(id)?
                .is_some_and(|network| network.name == v1.virtual_network_name)
            {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }

    fn live_endpoints_named(&self, name: &str) -> Result<Vec<Guid>, HcnFailure> {
        let mut live = Vec::new();
        for id in self.endpoints_named(name)? {
            if self.load_endpoint(id)?.is_some_and(|e| e.name == name) {
                live.push(id);
            }
        }
        Ok(live)
    }

    fn v1_attach(
        &self,
        endpoint: &HostComputeEndpoint,
        request: &V1AttachRequest,
        attach: bool,
    ) -> Result<V1Reply, HcnFailure> {
        let key = request.key();
        let mut attachments = self.v1_attachments(endpoint.id)?;
        let present = attachments.contains(&key);
        match (attach, present) {
            (true, true) => return Ok(V1Reply::Failure(ALREADY_ATTACHED.to_owned())),
            (false, false) => return Ok(V1Reply::Failure(NOT_FOUND.to_owned())),
            (true, false) => attachments.push(key),
            (false, true) => attachments.retain(|member| *member != key),
        }
        let path = self.v1_attachments_path(endpoint.id);
        if attachments.is_empty() {
            store::remove_file(&path)?;
        } else {
            store::write_json(&path, &attachments)?;
        }
        self.v1_view(endpoint).map(V1Reply::Output)
    }

    fn v1_attachments(&self, endpoint: Guid) -> Result<Vec<String>, HcnFailure> {
        Ok(store::read_json(&self.v1_attachments_path(endpoint))?.unwrap_or_default())
    }

    fn v1_attachments_path(&self, endpoint: Guid) -> std::path::PathBuf {
        self.index_path(&[
            V1_ATTACHMENTS,
            &format!("{}.json", endpoint.to_upper_string()),
        ])
    }

    /// Forgets an endpoint's V1 attachments (it is deleted, or its ID is being reused).
    pub(super) fn forget_v1_attachments(&self, endpoint: Guid) -> Result<(), HcnFailure> {
        store::remove_file(&self.v1_attachments_path(endpoint))
    }

    /// The V1 view of a stored endpoint.
    fn v1_view(&self, endpoint: &HostComputeEndpoint) -> Result<Value, HcnFailure> {
        let network_name = self
            .load_network(endpoint.host_compute_network)?
            .map(|network| network.name)
            .unwrap_or_default();
        let first_of = |v6_family: bool| {
            endpoint
                .ip_configurations
                .iter()
                .find(|config| config.ip_address.is_ipv6() == v6_family)
        };
        let (v4, v6) = (first_of(false), first_of(true));
        let gateway = |v6_family: bool| {
            endpoint
                .routes
                .iter()
                .find(|route| {
                    route.destination_prefix.is_default_route()
                        && route.destination_prefix.ip().is_ipv6() == v6_family
                })
                .and_then(|route| route.next_hop)
                .map(|hop| hop.to_string())
                .unwrap_or_default()
        };
        let namespace = match endpoint.host_compute_namespace {
            id if id.is_zero() => None,
            id => self.load_namespace(id)?.map(|namespace| V1Namespace {
                id,
                compartment_id: namespace.namespace_id,
            }),
        };
        let attachments = self.v1_attachments(endpoint.id)?;
        let state = if namespace.is_some() || !attachments.is_empty() {
            STATE_ATTACHED
        } else {
            STATE_CREATED
        };
        let view = V1Endpoint {
            id: endpoint.id,
            name: endpoint.name.clone(),
            virtual_network: endpoint.host_compute_network,
            virtual_network_name: network_name,
            policies: endpoint.policies.iter().map(v1_policy).collect(),
            mac_address: endpoint
                .mac_address
                .map(|mac| mac.to_string())
                .unwrap_or_default(),
            ip_address: v4.map(|c| c.ip_address.to_string()).unwrap_or_default(),
            ipv6_address: v6.map(|c| c.ip_address.to_string()).unwrap_or_default(),
            dns_suffix: endpoint.dns.search.join(","),
            dns_server_list: comma_joined(&endpoint.dns.server_list),
            dns_domain: endpoint.dns.domain.clone(),
            gateway_address: gateway(false),
            gateway_address_v6: gateway(true),
            prefix_length: v4.and_then(|c| c.prefix_length),
            ipv6_prefix_length: v6.and_then(|c| c.prefix_length),
            namespace,
            shared_containers: attachments
                .into_iter()
                .filter(|key| !key.starts_with("host:"))
                .collect(),
            state,
        };
        serde_json::to_value(view).map_err(|e| HcnFailure::io("V1 endpoint", e))
    }
}

/// The V2 document of a V1 create: addresses with their prefix lengths, a default route
/// per gateway, DNS from the comma-joined lists, V1 policies translated (a policy V2
/// cannot express is refused as `HCN_E_INVALID_POLICY`). Values stay text: the V2 create
/// parses them and refuses a malformed one as it would in a V2 document.
fn v2_document(v1: &V1EndpointRequest) -> Result<Value, HcnFailure> {
    let address = |ip: &str, prefix: Option<u8>| {
        (!ip.is_empty()).then(|| json!({ "IpAddress": ip, "PrefixLength": prefix }))
    };
    let route = |gateway: &str, default: &str| {
        (!gateway.is_empty()).then(|| json!({ "NextHop": gateway, "DestinationPrefix": default }))
    };
    let policies = v1
        .policies
        .iter()
        .map(|policy| {
            endpoint_policy_from_conf(&policy.to_string())
                .map(|translated| translated.policy)
                .map_err(|e| HcnFailure::new(HResult::HCN_E_INVALID_POLICY, format!("({e})")))
        })
        .collect::<Result<Vec<EndpointPolicy>, _>>()?;
    let addresses: Vec<Value> = [
        address(&v1.ip_address, v1.prefix_length),
        address(&v1.ipv6_address, v1.ipv6_prefix_length),
    ]
    .into_iter()
    .flatten()
    .collect();
    let routes: Vec<Value> = [
        route(&v1.gateway_address, "0.0.0.0/0"),
        route(&v1.gateway_address_v6, "::/0"),
    ]
    .into_iter()
    .flatten()
    .collect();
    Ok(json!({
        "Name": v1.name,
        "IpConfigurations": addresses,
        "Routes": routes,
        "Dns": {
            "Domain": v1.dns_domain,
            "Search": comma_split(&v1.dns_suffix),
            "ServerList": comma_split(&v1.dns_server_list),
        },
        "MacAddress": v1.mac_address,
        "Policies": policies,
    }))
}

/// A stored (V2) policy in the V1 shape of its type; types without one are shown as stored.
fn v1_policy(policy: &EndpointPolicy) -> Value {
    match policy {
        EndpointPolicy::PortMapping(mapping) => json!({
            "Type": "NAT",
            "Protocol": match mapping.protocol {
                protocol::TCP => "TCP".to_owned(),
                protocol::UDP => "UDP".to_owned(),
                other => other.to_string(),
            },
            "InternalPort": mapping.internal_port,
            "ExternalPort": mapping.external_port,
        }),
        EndpointPolicy::OutboundNat(nat) => {
            let mut v1 = json!({ "Type": "OutBoundNAT" });
            if let Some(vip) = &nat.virtual_ip {
                v1["VIP"] = json!(vip);
            }
            if !nat.exceptions.is_empty() {
                v1["ExceptionList"] = json!(nat.exceptions);
            }
            if !nat.destinations.is_empty() {
                v1["Destinations"] = json!(nat.destinations);
            }
            v1
        }
        EndpointPolicy::SdnRoute(route) => json!({
            "Type": "ROUTE",
            "DestinationPrefix": route.destination_prefix,
            "NextHop": route.next_hop,
            "NeedEncap": route.need_encap,
        }),
        EndpointPolicy::ProviderAddress(address) => json!({
            "Type": "PA",
            "PA": address.provider_address,
        }),
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}
