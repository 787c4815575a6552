//! Translation of the V1 (HNSCall-era) policy shapes users still write in
//! cni.conf into V2 policies.
//!
//! V1 policies are flat objects (`{"Type":"OutBoundNAT","ExceptionList":[...]}`);
//! V2 wraps settings (`{"Type":"OutBoundNAT","Settings":{"Exceptions":[...]}}`)
//! and renames keys. HNS V2 rejects (or ignores) V1 shapes, so a plugin must
//! translate rather than pass them through. A policy that already has
//! `Settings` is taken as V2. Known V1 types are translated strictly: an
//! unknown key is an error naming the key, never a silent drop. V1 types with
//! no V2 counterpart are passed through untouched for HNS to judge.

use std::net::IpAddr;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

use super::address::{AddressOrPrefix, IpPrefix, empty_as_none};
use super::flags::NatFlags;

use super::policy::{
    AclAction, AclDirection, AclPolicy, AclRuleType, EndpointPolicy, IsolationIdPolicy,
    OutboundNatPolicy, PolicyError, PortMappingPolicy, ProviderAddressPolicy, SdnRoutePolicy,
    SubnetPolicy, protocol,
};

/// Turns one cni.conf endpoint policy (V1 or V2 shape) into a V2 endpoint policy.
///
/// | V1 | V2 |
/// | --- | --- |
/// | `OutBoundNAT` `ExceptionList`/`VIP`/`Destinations` | `OutBoundNAT` `Exceptions`/`VirtualIP`/`Destinations` |
/// | `ROUTE` `DestinationPrefix`/`NextHop`/`NeedEncap` | `SDNRoute` |
/// | `PA` `PA` | `ProviderAddress` `ProviderAddress` |
/// | `NAT` `Protocol` (name)/`InternalPort`/`ExternalPort` | `PortMapping` `Protocol` (number) |
/// | `ACL` | `ACL` (`Protocol` number → `Protocols` string, `LocalPort` → `LocalPorts`) |
pub fn endpoint_policy_from_conf(json: &str) -> Result<EndpointPolicy, PolicyError> {
    let raw: Box<RawValue> = serde_json::from_str(json)
        .map_err(|e| PolicyError::new(format!("policy is not valid JSON: {e}")))?;
    let shape = Shape::of(&raw)?;
    if shape.has_settings {
        return EndpointPolicy::from_raw(raw);
    }
    let type_name = shape.type_name.as_str();
    let is = |name: &str| type_name.eq_ignore_ascii_case(name);
    let policy = if is("OutBoundNAT") {
        let v1: V1OutboundNat = strict(&raw, "OutBoundNAT")?;
        EndpointPolicy::OutboundNat(OutboundNatPolicy {
            virtual_ip: v1.vip,
            exceptions: v1.exception_list,
            destinations: v1.destinations,
            flags: NatFlags::NONE,
            max_port_pool_usage: v1.max_port_pool_usage,
        })
    } else if is("ROUTE") {
        let v1: V1Route = strict(&raw, "ROUTE")?;
        EndpointPolicy::SdnRoute(SdnRoutePolicy {
            destination_prefix: v1.destination_prefix,
            next_hop: v1.next_hop,
            need_encap: v1.need_encap,
        })
    } else if is("PA") {
        let v1: V1ProviderAddress = strict(&raw, "PA")?;
        EndpointPolicy::ProviderAddress(ProviderAddressPolicy {
            provider_address: v1.pa,
        })
    } else if is("NAT") {
        let v1: V1PortMapping = strict(&raw, "NAT")?;
        let number = protocol::number(&v1.protocol).ok_or_else(|| {
            PolicyError::new(format!(
                "V1 NAT policy: unknown Protocol {:?}; use TCP, UDP, ICMPv4, ICMPv6 or IGMP",
                v1.protocol
            ))
        })?;
        EndpointPolicy::PortMapping(PortMappingPolicy {
            protocol: number,
            internal_port: v1.internal_port,
            external_port: v1.external_port,
            vip: None,
            flags: NatFlags::NONE,
        })
    } else if is("ACL") {
        EndpointPolicy::Acl(strict::<V1Acl>(&raw, "ACL")?.into_v2())
    } else {
        EndpointPolicy::from_raw(raw)?
    };
    Ok(policy)
}

/// Turns one subnet policy (V1 `{"Type":"VSID","VSID":n}` or V2) into a V2 subnet policy.
pub fn subnet_policy_from_conf(json: &str) -> Result<SubnetPolicy, PolicyError> {
    let raw: Box<RawValue> = serde_json::from_str(json)
        .map_err(|e| PolicyError::new(format!("policy is not valid JSON: {e}")))?;
    let shape = Shape::of(&raw)?;
    if shape.has_settings {
        return SubnetPolicy::from_raw(raw);
    }
    if shape.type_name.eq_ignore_ascii_case("VSID") {
        let v1: V1Vsid = strict(&raw, "VSID")?;
        return Ok(SubnetPolicy::Vsid(IsolationIdPolicy {
            isolation_id: v1.vsid,
        }));
    }
    if shape.type_name.eq_ignore_ascii_case("VLAN") {
        let v1: V1Vlan = strict(&raw, "VLAN")?;
        return Ok(SubnetPolicy::Vlan(IsolationIdPolicy {
            isolation_id: v1.vlan,
        }));
    }
    SubnetPolicy::from_raw(raw)
}

struct Shape {
    type_name: String,
    has_settings: bool,
}

impl Shape {
    fn of(raw: &RawValue) -> Result<Shape, PolicyError> {
        #[derive(Deserialize)]
        struct Head {
            #[serde(rename = "Type")]
            type_name: Option<String>,
            #[serde(rename = "Settings")]
            settings: Option<Box<RawValue>>,
        }
        let head: Head = serde_json::from_str(raw.get()).map_err(|_| {
            PolicyError::new(format!("policy must be a JSON object, got {}", raw.get()))
        })?;
        let type_name = head.type_name.ok_or_else(|| {
            PolicyError::new(format!("policy needs a string \"Type\": {}", raw.get()))
        })?;
        Ok(Shape {
            type_name,
            has_settings: head.settings.is_some(),
        })
    }
}

fn strict<T: DeserializeOwned>(raw: &RawValue, v1_type: &str) -> Result<T, PolicyError> {
    serde_json::from_str(raw.get())
        .map_err(|e| PolicyError::new(format!("V1 {v1_type} policy {}: {e}", raw.get())))
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct V1OutboundNat {
    #[serde(rename = "Type")]
    _type: String,
    #[serde(rename = "VIP", default, with = "empty_as_none")]
    vip: Option<IpAddr>,
    #[serde(default)]
    exception_list: Vec<AddressOrPrefix>,
    #[serde(default)]
    destinations: Vec<IpAddr>,
    #[serde(default)]
    max_port_pool_usage: Option<u16>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct V1Route {
    #[serde(rename = "Type")]
    _type: String,
    #[serde(default, with = "empty_as_none")]
    destination_prefix: Option<IpPrefix>,
    #[serde(default, with = "empty_as_none")]
    next_hop: Option<IpAddr>,
    #[serde(default)]
    need_encap: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct V1ProviderAddress {
    #[serde(rename = "Type")]
    _type: String,
    #[serde(rename = "PA")]
    pa: IpAddr,
}

/// `ExternalPortReserved` has no V2 counterpart; it is accepted and ignored.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct V1PortMapping {
    #[serde(rename = "Type")]
    _type: String,
    protocol: String,
    internal_port: u16,
    external_port: u16,
    #[serde(rename = "ExternalPortReserved", default)]
    _external_port_reserved: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct V1Acl {
    #[serde(rename = "Type")]
    _type: String,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    protocol: Option<u16>,
    #[serde(default)]
    protocols: Option<String>,
    action: AclAction,
    direction: AclDirection,
    #[serde(default)]
    local_addresses: Option<String>,
    #[serde(default)]
    remote_addresses: Option<String>,
    #[serde(default)]
    local_ports: Option<String>,
    #[serde(default)]
    local_port: Option<u16>,
    #[serde(default)]
    remote_ports: Option<String>,
    #[serde(default)]
    remote_port: Option<u16>,
    #[serde(default)]
    rule_type: Option<AclRuleType>,
    #[serde(default)]
    priority: Option<u16>,
}

impl V1Acl {
    fn into_v2(self) -> AclPolicy {
        let port = |ports: Option<String>, port: Option<u16>| {
            ports.or_else(|| port.map(|p| p.to_string()))
        };
        AclPolicy {
            id: self.id,
            protocols: self
                .protocols
                .or_else(|| self.protocol.map(|p| p.to_string())),
            action: self.action,
            direction: self.direction,
            local_addresses: self.local_addresses,
            remote_addresses: self.remote_addresses,
            local_ports: port(self.local_ports, self.local_port),
            remote_ports: port(self.remote_ports, self.remote_port),
            rule_type: self.rule_type,
            priority: self.priority,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct V1Vsid {
    #[serde(rename = "Type")]
    _type: String,
    #[serde(rename = "VSID")]
    vsid: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct V1Vlan {
    #[serde(rename = "Type")]
    _type: String,
    #[serde(rename = "VLAN")]
    vlan: u32,
}
