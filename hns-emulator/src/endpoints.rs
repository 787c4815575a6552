//! Endpoint operations.

use std::net::IpAddr;

use ipnetwork::IpNetwork;

use super::document;
use super::engine::State;
use super::failure::HcnFailure;
use super::mac::Pool;
use super::policies::{add_or_remove, check_policies, read_policy_request};
use super::query::{Query, detailed_health, id_list};
use super::state::{
    ENDPOINT_NAMES, IPS, MAC_CURSOR, MACS, NAMESPACE_ENDPOINTS, NETWORK_ENDPOINTS, ip_key,
};
use super::store::{self, ObjectDir};
use hns::guid::Guid;
use hns::hresult::HResult;
use hns::schema::{
    EndpointFlags, EndpointPolicy, HostComputeEndpoint, HostComputeNetwork, MacAddress,
    RequestType, SchemaVersion, SubnetFlags,
};

/// Endpoints are filtered by network with `VirtualNetwork` (what hcsshim sends) or `HostComputeNetwork`.
const NETWORK_FILTER_KEYS: [&str; 2] = ["VirtualNetwork", "HostComputeNetwork"];
const FILTER_ALIASES: [(&str, &str); 1] = [("VirtualNetwork", "HostComputeNetwork")];

impl State<'_> {
    /// `HcnEnumerateEndpoints`. `ID`, `Name` and network filters use indexes, so
    /// their cost does not grow with the number of endpoints.
    pub fn enumerate_endpoints(&self, query: &str) -> Result<String, HcnFailure> {
        let query = Query::parse(query)?;
        let candidates = if let Some(id) = query.guid(&["ID"])? {
            vec![id]
        } else if let Some(name) = query.string("Name") {
            self.endpoints_named(name)?
        } else if let Some(network) = query.guid(&NETWORK_FILTER_KEYS)? {
            self.markers(NETWORK_ENDPOINTS, network)?
        } else {
            self.all_ids(ObjectDir::Endpoints)?
        };
        let mut ids = Vec::new();
        for id in candidates {
            let Some(endpoint) = self.load_endpoint(id)? else {
                continue;
            };
            let matched = query.is_unfiltered()
                || query.matches(
                    &serde_json::to_value(&endpoint).map_err(|e| HcnFailure::io("endpoint", e))?,
                    &FILTER_ALIASES,
                );
            if matched && !ids.contains(&id) {
                ids.push(id);
            }
        }
        Ok(id_list(&ids))
    }

    /// `HcnCreateEndpoint` on `network`. Validates like HNS: the network exists,
    /// the ID is free, `HostComputeNamespace` is not set, every IP parses, lies in
    /// a subnet of the network, is not reserved (network, broadcast or gateway
    /// address) and is not held by another endpoint of the network; a remote endpoint
    /// (`RemoteEndpoint` flag) may hold any address, since it stands for one reached through
    /// another host (kube-proxy makes one per Service ClusterIP and per pod of another node,
    /// with that host's ProviderAddress); a local endpoint's given MAC
    /// is not held by another local endpoint of the network either (remote endpoints share
    /// their host's); policies are
    /// V2 and their host ports free on the host. A refusal because of a holder
    /// names it in the error record (see [`hns::error::Holder`]). Assigns the prefix length from the subnet and a MAC from the network's
    /// MacPool when none is given.
    pub fn create_endpoint(
        &self,
        network_id: Guid,
        requested: Guid,
        settings: &str,
    ) -> Result<Guid, HcnFailure> {
        let network = self.require_network(network_id)?;
        let mut endpoint: HostComputeEndpoint =
            document::read("endpoint settings", settings, document::ENDPOINT_RULES)?;
        if !endpoint.host_compute_namespace.is_zero() {
            return Err(HcnFailure::new(
                HResult::E_INVALIDARG,
                "(HostComputeNamespace is read-only: attach the endpoint with HcnModifyNamespace)",
            ));
        }
        if !endpoint.host_compute_network.is_zero() && endpoint.host_compute_network != network_id {
            return Err(HcnFailure::new(
                HResult::HCN_E_INVALID_ENDPOINT,
                format!(
                    "(HostComputeNetwork {} is not the network {network_id} the endpoint is created on)",
                    endpoint.host_compute_network
                ),
            ));
        }
        let id = State::choose_id(requested, endpoint.id)?;
        if self.object_exists(ObjectDir::Endpoints, id) {
            return Err(HcnFailure::new(
                HResult::ERROR_OBJECT_ALREADY_EXISTS,
                format!("(endpoint {id})"),
            ));
        }
        check_policies(&endpoint.policies)?;
        self.check_acls(&network, &endpoint.policies)?;
        self.check_host_ports(id, &endpoint.policies)?;
        let mut ips = Vec::new();
        let remote = endpoint.flags.contains(EndpointFlags::REMOTE_ENDPOINT);
        for config in &mut endpoint.ip_configurations {
            let ip = config.ip_address;
            let prefix = match subnet_for(&network, ip) {
                Ok(subnet) => subnet.prefix(),
                Err(_) if remote && !in_any_subnet(&network, ip) => host_prefix(ip),
                Err(refused) => return Err(refused),
            };
            config.prefix_length.get_or_insert(prefix);
            if ips.contains(&ip) {
                return Err(reserved(ip, "is listed twice"));
            }
            if let Some(holder) = self.live_holder(IPS, network_id, &ip_key(ip), |other| {
                other.ip_configurations.iter().any(|c| c.ip_address == ip)
            })? {
                return Err(reserved(
                    ip,
                    &format!("is already used by endpoint {holder}"),
                ));
            }
            ips.push(ip);
        }
        // Remote endpoints carry the MAC of the host that stands for them, shared by all of
        // them (kube-proxy gives each its own host's MAC): only a local endpoint claims one.
        let mac = match endpoint.mac_address {
            None => self.allocate_mac(&network)?,
            Some(mac) if remote => mac,
            Some(mac) => self.claim_mac(network_id, mac)?,
        };
        endpoint.mac_address = Some(mac);
        endpoint.id = id;
        endpoint.host_compute_network = network_id;
        endpoint.health = None;
        endpoint.schema_version = SchemaVersion::V2;

        // Index entries first, object last: a crash in between leaves only stale entries.
        for ip in &ips {
            self.set_holder(IPS, network_id, &ip_key(*ip), id)?;
        }
        if !remote {
            self.set_holder(MACS, network_id, &mac.to_string(), id)?;
        }
        self.claim_host_ports(&endpoint)?;
        self.forget_v1_attachments(id)?;
        self.add_marker(NETWORK_ENDPOINTS, network_id, id)?;
        self.index_endpoint_name(&endpoint)?;
        self.write_object(ObjectDir::Endpoints, id, &endpoint)?;
        Ok(id)
    }

    /// `HcnOpenEndpoint`: fails unless the endpoint exists.
    pub fn open_endpoint(&self, id: Guid) -> Result<(), HcnFailure> {
        self.require_endpoint(id).map(drop)
    }

    /// `HcnQueryEndpointProperties`. Reports `HostComputeNamespace` only while that namespace exists.
    pub fn query_endpoint(&self, id: Guid, query: &str) -> Result<String, HcnFailure> {
        let query = Query::parse(query)?;
        let mut endpoint = self.require_endpoint(id)?;
        if !endpoint.host_compute_namespace.is_zero()
            && !self.object_exists(ObjectDir::Namespaces, endpoint.host_compute_namespace)
        {
            endpoint.host_compute_namespace = Guid::ZERO;
        }
        if query.detailed {
            endpoint.health = Some(detailed_health());
        }
        serde_json::to_string(&endpoint).map_err(|e| HcnFailure::io("endpoint", e))
    }

    /// `HcnModifyEndpoint` `Policy` requests: `Add` appends, `Remove` removes identical
    /// policies, `Update` replaces the policies of the types it carries and keeps the others
    /// (`update_by_type`). Added ACLs are validated as at create, an added `PortMapping` must
    /// find its host port free, and the write is counted ([`crate::acl::PolicyWrites`]).
    /// `Port` requests are not modelled.
    pub fn modify_endpoint(&mut self, id: Guid, settings: &str) -> Result<(), HcnFailure> {
        let mut endpoint = self.require_endpoint(id)?;
        self.host.check_refusal(id)?;
        let request = read_policy_request::<EndpointPolicy>("endpoint", settings)?;
        let before = endpoint.policies.clone();
        match request.request_type {
            RequestType::Update => update_by_type(&mut endpoint.policies, &request.policies)?,
            request_type => {
                for policy in request.policies.iter().cloned() {
                    add_or_remove(&mut endpoint.policies, request_type, policy)?;
                }
            }
        }
        if request.request_type != RequestType::Remove {
            let network = self.require_network(endpoint.host_compute_network)?;
            self.check_acls(&network, &request.policies)?;
        }
        self.check_host_ports(id, &endpoint.policies)?;
        self.claim_host_ports(&endpoint)?;
        self.write_object(ObjectDir::Endpoints, id, &endpoint)?;
        self.host
            .policy_writes
            .count_endpoint(&request, &before, &endpoint.policies);
        Ok(())
    }

    /// `HcnDeleteEndpoint`. An attached endpoint is deleted too (and so leaves its
    /// namespace): HNS does not refuse, which is why the reference plugins detach
    /// first only as a courtesy.
    pub fn delete_endpoint(&self, id: Guid) -> Result<(), HcnFailure> {
        let endpoint = self.require_endpoint(id)?;
        self.remove_endpoint_files(&endpoint)
    }

    pub(super) fn require_endpoint(&self, id: Guid) -> Result<HostComputeEndpoint, HcnFailure> {
        self.load_endpoint(id)?.ok_or_else(|| {
            HcnFailure::new(
                HResult::HCN_E_ENDPOINT_NOT_FOUND,
                format!("(endpoint {id})"),
            )
        })
    }

    /// Object first, index entries after: a crash in between leaves only stale entries.
    pub(super) fn remove_endpoint_files(
        &self,
        endpoint: &HostComputeEndpoint,
    ) -> Result<(), HcnFailure> {
        let (id, network) = (endpoint.id, endpoint.host_compute_network);
        self.remove_object(ObjectDir::Endpoints, id)?;
        for config in &endpoint.ip_configurations {
            self.release_holder(IPS, network, &ip_key(config.ip_address), id)?;
        }
        if let Some(mac) = endpoint.mac_address {
            self.release_holder(MACS, network, &mac.to_string(), id)?;
        }
        self.release_host_ports(endpoint)?;
        self.forget_v1_attachments(id)?;
        self.remove_marker(NETWORK_ENDPOINTS, network, id)?;
        if !endpoint.host_compute_namespace.is_zero() {
            self.remove_marker(NAMESPACE_ENDPOINTS, endpoint.host_compute_namespace, id)?;
        }
        self.update_name_bucket(&endpoint.name, |bucket| {
            bucket.retain(|(_, member)| *member != id)
        })
    }

    /// The endpoint an index entry names, if it still exists on `network` and `holds` it.
    pub(super) fn live_holder(
        &self,
        kind: &str,
        network: Guid,
        key: &str,
        holds: impl Fn(&HostComputeEndpoint) -> bool,
    ) -> Result<Option<Guid>, HcnFailure> {
        let Some(holder) = self.holder(kind, network, key)? else {
            return Ok(None);
        };
        let endpoint = self.load_endpoint(holder)?;
        Ok(endpoint
            .filter(|endpoint| endpoint.host_compute_network == network && holds(endpoint))
            .map(|_| holder))
    }

    /// A caller-given MAC: it must parse and not be held by another endpoint of
    /// the network (else the pool could hand it out a third time after one of
    /// the two holders is deleted).
    fn claim_mac(&self, network: Guid, mac: MacAddress) -> Result<MacAddress, HcnFailure> {
        let key = mac.to_string();
        if let Some(holder) =
            self.live_holder(MACS, network, &key, |other| other.mac_address == Some(mac))?
        {
            return Err(HcnFailure::new(
                HResult::HCN_E_ADDR_INVALID_OR_RESERVED,
                format!("(MacAddress {key} is already used by endpoint {holder})"),
            ));
        }
        Ok(mac)
    }

    /// Next free MAC of the network's pool, starting at the network's cursor.
    pub(super) fn allocate_mac(
        &self,
        network: &HostComputeNetwork,
    ) -> Result<MacAddress, HcnFailure> {
        let pool = Pool::new(&network.mac_pool)
            .map_err(|e| HcnFailure::new(HResult::HCN_E_INVALID_NETWORK, format!("({e})")))?;
        let cursor_path = self.index_path(&[MAC_CURSOR, &network.id.to_upper_string()]);
        let start: u64 = store::read_text(&cursor_path)?
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(0);
        for step in 0..pool.len() {
            let Some(mac) = pool.nth(start + step) else {
                break;
            };
            let key = mac.to_string();
            if self
                .live_holder(MACS, network.id, &key, |other| {
                    other.mac_address == Some(mac)
                })?
                .is_none()
            {
                store::write_atomic(&cursor_path, (start + step + 1).to_string().as_bytes())?;
                return Ok(mac);
            }
        }
        Err(HcnFailure::new(
            HResult::E_FAIL,
            format!("(MacPool of network {} is exhausted)", network.id),
        ))
    }

    /// Files `endpoint` under its name, for `HcnEnumerateEndpoints`' `Name` filter.
    pub(super) fn index_endpoint_name(
        &self,
        endpoint: &HostComputeEndpoint,
    ) -> Result<(), HcnFailure> {
        self.update_name_bucket(&endpoint.name, |bucket| {
            bucket.push((endpoint.name.clone(), endpoint.id))
        })
    }

    pub(super) fn endpoints_named(&self, name: &str) -> Result<Vec<Guid>, HcnFailure> {
        Ok(self
            .read_name_bucket(name)?
            .into_iter()
            .filter(|(member, _)| member == name)
            .map(|(_, id)| id)
            .collect())
    }

    fn read_name_bucket(&self, name: &str) -> Result<Vec<(String, Guid)>, HcnFailure> {
        Ok(store::read_json(&self.name_bucket_path(name))?.unwrap_or_default())
    }

    fn update_name_bucket(
        &self,
        name: &str,
        change: impl FnOnce(&mut Vec<(String, Guid)>),
    ) -> Result<(), HcnFailure> {
        let mut bucket = self.read_name_bucket(name)?;
        change(&mut bucket);
        let path = self.name_bucket_path(name);
        if bucket.is_empty() {
            store::remove_file(&path)
        } else {
            store::write_json(&path, &bucket)
        }
    }

    fn name_bucket_path(&self, name: &str) -> std::path::PathBuf {
        self.index_path(&[
            ENDPOINT_NAMES,
            &format!("{:016x}.json", fnv1a(name.as_bytes())),
        ])
    }
}

/// Whether `ip` lies in a subnet of `network` at all (reserved addresses included).
fn in_any_subnet(network: &HostComputeNetwork, ip: IpAddr) -> bool {
    network
        .subnets()
        .any(|subnet| subnet.ip_address_prefix.network().contains(ip))
}

/// The prefix of a single host: what a remote endpoint outside every subnet is given.
fn host_prefix(ip: IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

/// The subnet of `network` that contains `ip`, after the reserved-address checks.
fn subnet_for(network: &HostComputeNetwork, ip: IpAddr) -> Result<IpNetwork, HcnFailure> {
    for subnet in network.subnets() {
        let prefix = subnet.ip_address_prefix.network();
        if !prefix.contains(ip) {
            continue;
        }
        let gateway_reserved = !subnet
            .flags
            .contains(SubnetFlags::DO_NOT_RESERVE_GATEWAY_ADDRESS);
        if gateway_reserved && subnet.gateway() == Some(ip) {
            return Err(reserved(ip, &format!("is the gateway of subnet {prefix}")));
        }
        if let IpNetwork::V4(v4) = prefix
            && v4.prefix() < 31
            && (IpAddr::V4(v4.network()) == ip || IpAddr::V4(v4.broadcast()) == ip)
        {
            return Err(reserved(
                ip,
                &format!("is the network or broadcast address of subnet {prefix}"),
            ));
        }
        return Ok(prefix);
    }
    Err(reserved(
        ip,
        &format!("is not inside any subnet of network {}", network.id),
    ))
}

fn reserved(ip: IpAddr, why: &str) -> HcnFailure {
    HcnFailure::new(
        HResult::HCN_E_ADDR_INVALID_OR_RESERVED,
        format!("(IP {ip} {why})"),
    )
}

/// FNV-1a: a stable hash for bucket file names (std's hasher is not stable across releases).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// An endpoint `Update`: the request's policies replace the endpoint's of the same types, and
/// the others stay. What HNS does is not documented beyond "RequestTypeUpdate replaces
/// settings with the ones provided" (hcsshim `hcn/hcn.go:360`); hcsshim's ncproxy sends an
/// `Update` holding only an `Iov` policy to endpoints created with others
/// (`cmd/ncproxy/ncproxy.go:123-147`), which replacing the whole list would strip, so per type
/// is the likely reading (docs/why-an-emulator.md). An `Update` carrying no policy is where
/// the readings part (nothing replaced, or everything), so it is refused.
fn update_by_type(
    held: &mut Vec<EndpointPolicy>,
    request: &[EndpointPolicy],
) -> Result<(), HcnFailure> {
    if request.is_empty() {
        return Err(HcnFailure::new(
            HResult::HCN_E_REQUEST_UNSUPPORTED,
            "(an endpoint Update carrying no policy: whether it replaces no policy or every \
             one is not documented; remove policies with Remove, or Update with the policies \
             of each type to keep)"
                .to_owned(),
        ));
    }
    let replaced = |policy: &EndpointPolicy| {
        request
            .iter()
            .any(|new| new.type_name().eq_ignore_ascii_case(policy.type_name()))
    };
    held.retain(|policy| !replaced(policy));
    held.extend(request.iter().cloned());
    Ok(())
}
