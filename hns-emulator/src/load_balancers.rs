//! Load balancers: kube-proxy's Service rules (`HcnCreateLoadBalancer` and the rest).
//!
//! What HNS checks, and what the emulator answers (docs/why-an-emulator.md, "What the node-component rules
//! rest on" gives the evidence for each):
//! - the document decodes through the shared schema; a frontend or source VIP that is not an
//!   address is `HCN_E_INVALID_IP`, a backend ID that is not a GUID
//!   `HCN_E_GUID_CONVERSION_FAILURE`, any other misfit `HCN_E_INVALID_JSON`;
//! - at least one port mapping, each TCP or UDP with both ports set and a known distribution
//!   type, and VIPs of the family the `IPv6` flag says: otherwise `E_INVALIDARG`;
//! - every backend (`HostComputeEndpoints`) exists: otherwise `HCN_E_ENDPOINT_NOT_FOUND`;
//! - an ID in use, or the very settings of another load balancer (what kube-proxy re-creates
//!   after an HNS restart restored its load balancers): `ERROR_ALREADY_EXISTS` (0xb7). A
//!   load balancer that differs only in its backends is taken beside the old one;
//! - a frontend on the node itself (no frontend VIP: HNS puts the node IP there; or the
//!   host's own address) reserves the port in the host's TCP/IP stack, so a host port an
//!   endpoint's `PortMapping` holds is `HCN_E_PORT_ALREADY_EXISTS` (see [`super::ports`]);
//! - `HcnModifyLoadBalancer` replaces the settings in place from HNS 15.4 (feature
//!   `ModifyLoadbalancer`), with the same checks; below it, `E_NOTIMPL`;
//! - a missing load balancer is `ERROR_NOT_FOUND` (0x490) to open, modify and delete.
//!
//! Deleting an endpoint leaves the load balancers naming it as they are, as HNS does; an HNS
//! restart keeps load balancers and drops endpoints (see [`super::outage`]).

use std::net::IpAddr;

use super::document::{self, ValueRule};
use super::engine::State;
use super::failure::HcnFailure;
use super::query::{Query, id_list};
use super::store::ObjectDir;
use hns::features::Feature;
use hns::guid::Guid;
use hns::hresult::HResult;
use hns::schema::policy::protocol;
use hns::schema::{
    HostComputeLoadBalancer, LoadBalancerFlags, LoadBalancerPortMapping, SchemaVersion,
};

/// `HcnCreateLoadBalancer` and `HcnModifyLoadBalancer` settings.
const LOAD_BALANCER_RULES: &[ValueRule] = &[
    ValueRule {
        field: &["FrontendVIPs", "[]"],
        code: HResult::HCN_E_INVALID_IP,
        expected: "an IP address",
    },
    ValueRule {
        field: &["SourceVIP"],
        code: HResult::HCN_E_INVALID_IP,
        expected: "an IP address",
    },
    ValueRule {
        field: &["HostComputeEndpoints", "[]"],
        code: HResult::HCN_E_GUID_CONVERSION_FAILURE,
        expected: "an endpoint GUID",
    },
];

/// `DistributionType` values HNS knows: none, source IP and protocol, source IP.
const DISTRIBUTION_TYPES: u32 = 3;

impl State<'_> {
    /// `HcnEnumerateLoadBalancers`.
    pub fn enumerate_load_balancers(&self, query: &str) -> Result<String, HcnFailure> {
        let query = Query::parse(query)?;
        let mut ids = Vec::new();
        for balancer in self.load_balancers()? {
            let value =
                serde_json::to_value(&balancer).map_err(|e| HcnFailure::io("load balancer", e))?;
            if query.matches(&value, &[]) {
                ids.push(balancer.id);
            }
        }
        Ok(id_list(&ids))
    }

    /// `HcnCreateLoadBalancer` (see the module docs for the checks).
    pub fn create_load_balancer(
        &self,
        requested: Guid,
        settings: &str,
    ) -> Result<Guid, HcnFailure> {
        let mut balancer = read_settings(settings)?;
        let id = State::choose_id(requested, balancer.id)?;
        if self.object_exists(ObjectDir::LoadBalancers, id) {
            return Err(HcnFailure::new(
                HResult::ERROR_ALREADY_EXISTS,
                format!("(load balancer {id})"),
            ));
        }
        // Before the backends: after an HNS restart kube-proxy's re-create of a load balancer
        // HNS kept, whose backends are gone, is refused as a duplicate (k8s#139519).
        if let Some(same) = self
            .load_balancers()?
            .into_iter()
            .find(|other| same_settings(other, &balancer))
        {
            return Err(HcnFailure::new(
                HResult::ERROR_ALREADY_EXISTS,
                format!(
                    "(load balancer {} has these frontend VIPs, port mappings, flags and backends)",
                    same.id
                ),
            ));
        }
        self.check_references(&balancer)?;
        balancer.id = id;
        balancer.schema_version = SchemaVersion::V2;
        self.write_object(ObjectDir::LoadBalancers, id, &balancer)?;
        Ok(id)
    }

    /// `HcnOpenLoadBalancer`.
    pub fn open_load_balancer(&self, id: Guid) -> Result<(), HcnFailure> {
        self.require_load_balancer(id).map(drop)
    }

    /// `HcnModifyLoadBalancer`: the settings replace the load balancer's (hcsshim's `Update`
    /// sends the whole document), checked as on create.
    pub fn modify_load_balancer(&self, id: Guid, settings: &str) -> Result<(), HcnFailure> {
        let version = self.host.version;
        if !Feature::ModifyLoadBalancer.supported_by(version) {
            return Err(HcnFailure::new(
                HResult::E_NOTIMPL,
                format!("(HcnModifyLoadBalancer needs HNS 15.4 or later; this host has {version})"),
            ));
        }
        self.require_load_balancer(id)?;
        let mut balancer = read_settings(settings)?;
        if !balancer.id.is_zero() && balancer.id != id {
            return Err(HcnFailure::new(
                HResult::E_INVALIDARG,
                format!(
                    "(ID {} in the settings is not the load balancer {id} being modified)",
                    balancer.id
                ),
            ));
        }
        self.check_references(&balancer)?;
        balancer.id = id;
        balancer.schema_version = SchemaVersion::V2;
        self.write_object(ObjectDir::LoadBalancers, id, &balancer)
    }

    /// `HcnQueryLoadBalancerProperties`.
    pub fn query_load_balancer(&self, id: Guid, query: &str) -> Result<String, HcnFailure> {
        Query::parse(query)?;
        let balancer = self.require_load_balancer(id)?;
        serde_json::to_string(&balancer).map_err(|e| HcnFailure::io("load balancer", e))
    }

    /// `HcnDeleteLoadBalancer`.
    pub fn delete_load_balancer(&self, id: Guid) -> Result<(), HcnFailure> {
        self.require_load_balancer(id)?;
        self.remove_object(ObjectDir::LoadBalancers, id)
    }

    /// Every load balancer, as stored.
    pub(super) fn load_balancers(&self) -> Result<Vec<HostComputeLoadBalancer>, HcnFailure> {
        let mut balancers = Vec::new();
        for id in self.all_ids(ObjectDir::LoadBalancers)? {
            balancers.extend(self.load_balancer(id)?);
        }
        Ok(balancers)
    }

    /// A load balancer as stored, under the ID its file is named by.
    pub(super) fn load_balancer(
        &self,
        id: Guid,
    ) -> Result<Option<HostComputeLoadBalancer>, HcnFailure> {
        let balancer: Option<HostComputeLoadBalancer> =
            self.read_object(ObjectDir::LoadBalancers, id)?;
        Ok(balancer.map(|balancer| HostComputeLoadBalancer { id, ..balancer }))
    }

    fn require_load_balancer(&self, id: Guid) -> Result<HostComputeLoadBalancer, HcnFailure> {
        self.load_balancer(id)?.ok_or_else(|| {
            HcnFailure::new(HResult::ERROR_NOT_FOUND, format!("(load balancer {id})"))
        })
    }

    /// What create and modify check against the rest of the host: every backend exists, and
    /// no endpoint holds a host port a frontend on the node wants.
    fn check_references(&self, balancer: &HostComputeLoadBalancer) -> Result<(), HcnFailure> {
        for (index, backend) in balancer.host_compute_endpoints.iter().enumerate() {
            if self.load_endpoint(*backend)?.is_none() {
                return Err(HcnFailure::new(
                    HResult::HCN_E_ENDPOINT_NOT_FOUND,
                    format!("(HostComputeEndpoints[{index}] {backend})"),
                ));
            }
        }
        self.check_node_ports(balancer)
    }
}

/// Decodes a create or modify document and checks what it says on its own: its port
/// mappings and its VIPs' family.
fn read_settings(settings: &str) -> Result<HostComputeLoadBalancer, HcnFailure> {
    let balancer: HostComputeLoadBalancer =
        document::read("load balancer settings", settings, LOAD_BALANCER_RULES)?;
    check_port_mappings(&balancer.port_mappings)?;
    check_families(&balancer)?;
    Ok(balancer)
}

fn invalid(detail: String) -> HcnFailure {
    HcnFailure::new(HResult::E_INVALIDARG, format!("({detail})"))
}

fn check_port_mappings(mappings: &[LoadBalancerPortMapping]) -> Result<(), HcnFailure> {
    if mappings.is_empty() {
        return Err(invalid(
            "PortMappings is empty: a load balancer needs at least one".to_owned(),
        ));
    }
    for (index, mapping) in mappings.iter().enumerate() {
        if ![protocol::TCP, protocol::UDP].contains(&mapping.protocol) {
            return Err(invalid(format!(
                "PortMappings[{index}].Protocol {} is neither TCP (6) nor UDP (17)",
                mapping.protocol
            )));
        }
        if mapping.internal_port == 0 || mapping.external_port == 0 {
            return Err(invalid(format!(
                "PortMappings[{index}] needs an InternalPort and an ExternalPort, got {} and {}",
                mapping.internal_port, mapping.external_port
            )));
        }
        if mapping.distribution_type >= DISTRIBUTION_TYPES {
            return Err(invalid(format!(
                "PortMappings[{index}].DistributionType {} is not 0, 1 or 2",
                mapping.distribution_type
            )));
        }
    }
    Ok(())
}

/// Every VIP is of the family the `IPv6` flag names.
fn check_families(balancer: &HostComputeLoadBalancer) -> Result<(), HcnFailure> {
    let ipv6 = balancer.flags.contains(LoadBalancerFlags::IPV6);
    let vips = balancer
        .frontend_vips
        .iter()
        .enumerate()
        .map(|(index, vip)| (format!("FrontendVIPs[{index}]"), *vip))
        .chain(balancer.source_vip.map(|vip| ("SourceVIP".to_owned(), vip)));
    for (field, vip) in vips {
        if vip.is_ipv6() != ipv6 {
            let family = if ipv6 { "IPv6" } else { "IPv4" };
            return Err(invalid(format!(
                "{field} {vip} is not {family}, the family the load balancer's Flags ({}) name",
                balancer.flags.bits()
            )));
        }
    }
    Ok(())
}

/// Whether two load balancers have the same settings: frontend VIPs, port mappings, flags,
/// source VIP and backends, each list in any order.
fn same_settings(a: &HostComputeLoadBalancer, b: &HostComputeLoadBalancer) -> bool {
    fn sorted<T: Ord + Clone>(items: &[T]) -> Vec<T> {
        let mut items = items.to_vec();
        items.sort();
        items
    }
    fn mappings(balancer: &HostComputeLoadBalancer) -> Vec<(u32, u16, u16, u32, u32)> {
        let keys: Vec<_> = balancer
            .port_mappings
            .iter()
            .map(|m| {
                (
                    m.protocol,
                    m.internal_port,
                    m.external_port,
                    m.distribution_type,
                    m.flags.bits(),
                )
            })
            .collect();
        sorted(&keys)
    }
    let vips =
        |balancer: &HostComputeLoadBalancer| -> Vec<IpAddr> { sorted(&balancer.frontend_vips) };
    vips(a) == vips(b)
        && mappings(a) == mappings(b)
        && a.flags == b.flags
        && a.source_vip == b.source_vip
        && sorted(&a.host_compute_endpoints) == sorted(&b.host_compute_endpoints)
}
