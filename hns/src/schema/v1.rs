//! Translation of the V1 (HNSCall-era) policy shapes users still write in
//! cni.conf into V2 policies.
//!
//! V1 policies are flat objects (`{"Type":"OutBoundNAT","ExceptionList":[...]}`);
//! V2 wraps settings (`{"Type":"OutBoundNAT","Settings":{"Exceptions":[...]}}`)
//! and renames keys. HCN V2 reads settings from `Settings` only (the reference
//! plugins, decoding into hcsshim's `{Type, Settings}`, send a V1 shape's `Type`
//! alone and its settings are lost), so a plugin must translate rather than pass
//! them through. Keys are matched as Go matches them
//! (regardless of case). A policy that has `Settings` is taken as V2 and sent as
//! the reference sends it: `Type` and `Settings`, whatever else the object
//! holds. Known V1 types are translated key by key: a value that does not fit is
//! an error naming it, a key the type does not have is dropped and reported
//! ([`Translated::dropped`]), never silently. V1 types with no V2 counterpart are
//! passed through untouched for HNS to judge.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::address::{AddressOrPrefix, IpPrefix, empty_as_none};
use super::flags::NatFlags;
use super::keys::{self, keys_of, member};

use super::policy::{
    AclAction, AclDirection, AclPolicy, AclRuleType, EndpointPolicy, IgnoredKey, IsolationIdPolicy,
    OutboundNatPolicy, PolicyError, PolicyShape, PortMappingPolicy, ProviderAddressPolicy,
    SdnRoutePolicy, SubnetPolicy, protocol,
};

/// A config's policy in V2, and the keys of its V1 shape that have no V2 counterpart.
#[derive(Debug, Clone, PartialEq)]
pub struct Translated<P> {
    /// The V2 policy HNS gets.
    pub policy: P,
    /// Keys of a V1 shape the translation dropped (a V2-shaped policy's unknown keys are
    /// kept in it: see [`EndpointPolicy::ignored_keys`]).
    pub dropped: Vec<IgnoredKey>,
}

/// A policy object's members, `Type` and (non-null) `Settings` matched as Go matches them.
struct Shape<'a> {
    type_name: String,
    settings: Option<&'a RawValue>,
}

impl<'a> Shape<'a> {
    fn of(json: &'a str) -> Result<Shape<'a>, PolicyError> {
        let members: BTreeMap<String, &'a RawValue> = serde_json::from_str(json)
            .map_err(|_| PolicyError::new(format!("policy must be a JSON object, got {json}")))?;
        let type_name = member(&members, "Type")
            .and_then(|value| serde_json::from_str::<String>(value.get()).ok())
            .ok_or_else(|| PolicyError::new(format!("policy needs a string \"Type\": {json}")))?;
        let settings = member(&members, "Settings").filter(|value| value.get().trim() != "null");
        Ok(Shape {
            type_name,
            settings,
        })
    }

    /// `{"Type": ..., "Settings": ...}` as hcsshim re-encodes a decoded policy: other members
    /// left out, `Settings` as written.
    fn v2_object(&self, settings: &RawValue) -> Result<Box<RawValue>, PolicyError> {
        #[derive(Serialize)]
        struct V2<'a> {
            #[serde(rename = "Type")]
            type_name: &'a str,
            #[serde(rename = "Settings")]
            settings: &'a RawValue,
        }
        let text = serde_json::to_string(&V2 {
            type_name: &self.type_name,
            settings,
        })
        .map_err(|e| PolicyError::new(format!("policy cannot be re-encoded: {e}")))?;
        RawValue::from_string(text)
            .map_err(|e| PolicyError::new(format!("policy cannot be re-encoded: {e}")))
    }
}

/// Turns one cni.conf endpoint policy (V1 or V2 shape) into a V2 endpoint policy.
///
/// | V1 | V2 |
/// | --- | --- |
/// | `OutBoundNAT` `ExceptionList`/`VIP`/`Destinations` | `OutBoundNAT` `Exceptions`/`VirtualIP`/`Destinations` |
/// | `ROUTE` `DestinationPrefix`/`NextHop`/`NeedEncap` | `SDNRoute` |
/// | `PA` `PA` | `ProviderAddress` `ProviderAddress` |
/// | `NAT` `Protocol` (name)/`InternalPort`/`ExternalPort` | `PortMapping` `Protocol` (number) |
/// | `ACL` | `ACL` (`Protocol` number → `Protocols` string, `LocalPort` → `LocalPorts`) |
pub fn endpoint_policy_from_conf(json: &str) -> Result<Translated<EndpointPolicy>, PolicyError> {
    let shape = Shape::of(json)?;
    if let Some(settings) = shape.settings {
        let policy = EndpointPolicy::from_raw(shape.v2_object(settings)?)?;
        return Ok(Translated {
            policy,
            dropped: Vec::new(),
        });
    }
    let type_name = shape.type_name.as_str();
    let is = |name: &str| type_name.eq_ignore_ascii_case(name);
    let (policy, dropped) = if is("OutBoundNAT") {
        let (v1, dropped) = read_v1::<V1OutboundNat>(json, "OutBoundNAT", "OutBoundNAT")?;
        let policy = EndpointPolicy::OutboundNat(OutboundNatPolicy {
            virtual_ip: v1.vip,
            exceptions: v1.exception_list,
            destinations: v1.destinations,
            flags: NatFlags::NONE,
            max_port_pool_usage: v1.max_port_pool_usage,
        });
        (policy, dropped)
    } else if is("ROUTE") {
        let (v1, dropped) = read_v1::<V1Route>(json, "ROUTE", "SDNRoute")?;
        let policy = EndpointPolicy::SdnRoute(SdnRoutePolicy {
            destination_prefix: v1.destination_prefix,
            next_hop: v1.next_hop,
            need_encap: v1.need_encap,
        });
        (policy, dropped)
    } else if is("PA") {
        let (v1, dropped) = read_v1::<V1ProviderAddress>(json, "PA", "ProviderAddress")?;
        let policy = EndpointPolicy::ProviderAddress(ProviderAddressPolicy {
            provider_address: v1.pa,
        });
        (policy, dropped)
    } else if is("NAT") {
        let (v1, dropped) = read_v1::<V1PortMapping>(json, "NAT", "PortMapping")?;
        let number = protocol::number(&v1.protocol).ok_or_else(|| {
            PolicyError::new(format!(
                "V1 NAT policy: unknown Protocol {:?}; use TCP, UDP, ICMPv4, ICMPv6 or IGMP",
                v1.protocol
            ))
        })?;
        let policy = EndpointPolicy::PortMapping(PortMappingPolicy {
            protocol: number,
            internal_port: v1.internal_port,
            external_port: v1.external_port,
            vip: None,
            flags: NatFlags::NONE,
        });
        (policy, dropped)
    } else if is("ACL") {
        let (v1, dropped) = read_v1::<V1Acl>(json, "ACL", "ACL")?;
        (EndpointPolicy::Acl(v1.into_v2()), dropped)
    } else {
        let raw = RawValue::from_string(json.to_owned())
            .map_err(|e| PolicyError::new(format!("policy is not valid JSON: {e}")))?;
        (EndpointPolicy::from_raw(raw)?, Vec::new())
    };
    Ok(Translated { policy, dropped })
}

/// Turns one subnet policy (V1 `{"Type":"VSID","VSID":n}` or V2) into a V2 subnet policy.
pub fn subnet_policy_from_conf(json: &str) -> Result<Translated<SubnetPolicy>, PolicyError> {
    let shape = Shape::of(json)?;
    if let Some(settings) = shape.settings {
        let policy = SubnetPolicy::from_raw(shape.v2_object(settings)?)?;
        return Ok(Translated {
            policy,
            dropped: Vec::new(),
        });
    }
    let (policy, dropped) = if shape.type_name.eq_ignore_ascii_case("VSID") {
        let (v1, dropped) = read_v1::<V1Vsid>(json, "VSID", "VSID")?;
        let policy = SubnetPolicy::Vsid(IsolationIdPolicy {
            isolation_id: v1.vsid,
        });
        (policy, dropped)
    } else if shape.type_name.eq_ignore_ascii_case("VLAN") {
        let (v1, dropped) = read_v1::<V1Vlan>(json, "VLAN", "VLAN")?;
        let policy = SubnetPolicy::Vlan(IsolationIdPolicy {
            isolation_id: v1.vlan,
        });
        (policy, dropped)
    } else {
        let raw = RawValue::from_string(json.to_owned())
            .map_err(|e| PolicyError::new(format!("policy is not valid JSON: {e}")))?;
        (SubnetPolicy::from_raw(raw)?, Vec::new())
    };
    Ok(Translated { policy, dropped })
}

/// Reads the V1 policy `json` of type `v1_type` (whose V2 type is `v2_type`) as `T`, keys
/// matched regardless of case; the keys `T` does not have come back as dropped.
fn read_v1<T: DeserializeOwned>(
    json: &str,
    v1_type: &'static str,
    v2_type: &str,
) -> Result<(T, Vec<IgnoredKey>), PolicyError> {
    let known = keys_of::<T>();
    let aligned = keys::align(json, known)
        .ok_or_else(|| PolicyError::new(format!("policy must be a JSON object, got {json}")))?;
    let policy = serde_json::from_str(&aligned.json)
        .map_err(|e| PolicyError::new(format!("V1 {v1_type} policy {json}: {e}")))?;
    let dropped = aligned
        .unknown
        .into_iter()
        .map(|key| IgnoredKey {
            suggestion: keys::v1_key_for(v2_type, &key),
            key,
            policy_type: v1_type,
            shape: PolicyShape::V1,
            known,
        })
        .collect();
    Ok((policy, dropped))
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
