//! V2 policies: `{"Type": <string>, "Settings": <object>}` on endpoints,
//! networks and subnets.
//!
//! Each policy type we use has a typed variant. A policy is read as HNS reads it:
//! `Type` and `Settings` and the settings' keys matched regardless of case (as Go's
//! `encoding/json` matches them, and as field configs rely on: `SDNROUTE`,
//! `exceptionList`), type names compared regardless of case. A policy whose
//! settings fit its typed variant exactly, once keys are matched, becomes that
//! variant; anything else — another type, a settings key the type does not have
//! (a V1 key such as `ExceptionList`, a misspelling), a value that does not fit
//! — becomes [`RawPolicy`], which re-serialises byte-for-byte. A user's policy is
//! never silently dropped or reshaped; HNS gets to judge it, and the raw variant
//! says how HNS will: the keys it ignores ([`EndpointPolicy::ignored_keys`]), the
//! policy it applies ([`EndpointPolicy::effect`]) or why it refuses it
//! ([`EndpointPolicy::misfit`]).
//!
//! Decoding needs serde_json's own deserializer (`from_str`/`from_slice`),
//! because the pass-through keeps the original text as a [`RawValue`].

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use serde::de::DeserializeOwned;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use super::address::{AddressOrPrefix, IpPrefix, MacAddress, empty_as_none};
use super::flags::NatFlags;
use super::keys::{self, keys_of, member};

/// A policy kept exactly as written: its `Type` and the whole JSON object.
#[derive(Clone)]
pub struct RawPolicy {
    type_name: String,
    json: Box<RawValue>,
}

impl RawPolicy {
    /// The policy's `Type` as written.
    pub fn type_name(&self) -> &str {
        &self.type_name
    }

    /// The whole policy object, byte-for-byte.
    pub fn json(&self) -> &str {
        self.json.get()
    }

    /// Parses a policy object without interpreting it.
    pub fn from_json(json: &str) -> Result<RawPolicy, PolicyError> {
        let raw: Box<RawValue> = serde_json::from_str(json)
            .map_err(|e| PolicyError::new(format!("policy is not JSON: {e}")))?;
        let envelope = Envelope::parse(&raw)?;
        Ok(RawPolicy {
            type_name: envelope.type_name,
            json: raw,
        })
    }

    /// The `Settings` member (matched as Go matches it), if the object has one.
    pub fn settings(&self) -> Option<&RawValue> {
        let fields: BTreeMap<String, &RawValue> = serde_json::from_str(self.json.get()).ok()?;
        member(&fields, "Settings")
    }
}

/// Two raw policies are equal when they are the same JSON document, whatever the whitespace
/// and key order.
impl PartialEq for RawPolicy {
    fn eq(&self, other: &RawPolicy) -> bool {
        let value =
            |raw: &RawPolicy| serde_json::from_str::<serde_json::Value>(raw.json.get()).ok();
        self.json.get() == other.json.get() || value(self).is_some_and(|v| Some(v) == value(other))
    }
}

impl fmt::Debug for RawPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RawPolicy({})", self.json.get())
    }
}

/// A policy document that is not a JSON object with a string `Type`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PolicyError {
    message: String,
}

impl PolicyError {
    pub(crate) fn new(message: impl Into<String>) -> PolicyError {
        PolicyError {
            message: message.into(),
        }
    }
}

/// The parts of a policy object the decoder looks at, matched as Go matches `hcn.EndpointPolicy`'s
/// fields: `Type` and `Settings` in any case.
struct Envelope<'a> {
    type_name: String,
    settings: Option<&'a RawValue>,
    has_other_keys: bool,
}

impl<'a> Envelope<'a> {
    fn parse(raw: &'a RawValue) -> Result<Envelope<'a>, PolicyError> {
        let fields: BTreeMap<String, &'a RawValue> =
            serde_json::from_str(raw.get()).map_err(|_| {
                PolicyError::new(format!(
                    "policy must be a JSON object with a \"Type\", got {}",
                    raw.get()
                ))
            })?;
        let type_name = member(&fields, "Type")
            .and_then(|value| serde_json::from_str::<String>(value.get()).ok())
            .ok_or_else(|| {
                PolicyError::new(format!("policy needs a string \"Type\": {}", raw.get()))
            })?;
        let has_other_keys = fields
            .keys()
            .any(|key| !key.eq_ignore_ascii_case("Type") && !key.eq_ignore_ascii_case("Settings"));
        let settings = member(&fields, "Settings").filter(|value| value.get().trim() != "null");
        Ok(Envelope {
            type_name,
            settings,
            has_other_keys,
        })
    }
}

/// Settings as HNS reads them: the typed settings their known keys make, and the keys HNS
/// ignores.
#[derive(Debug)]
struct Reading<T> {
    settings: T,
    ignored: Vec<String>,
}

impl<T> Reading<T> {
    fn map<U>(self, f: impl FnOnce(T) -> U) -> Reading<U> {
        Reading {
            settings: f(self.settings),
            ignored: self.ignored,
        }
    }
}

/// Reads `settings` (absent reads as `{}`) as `T`, its keys matched regardless of case and
/// the unknown ones set aside; the error says which value does not fit or which key is
/// missing, what HNS refuses with `HCN_E_INVALID_POLICY`.
fn read_settings<T: DeserializeOwned>(settings: Option<&RawValue>) -> Result<Reading<T>, String> {
    let text = settings.map_or("{}", RawValue::get);
    let aligned = keys::align(text, keys_of::<T>())
        .ok_or_else(|| format!("\"Settings\" must be a JSON object, got {text}"))?;
    let settings = super::decode::<T>(&aligned.json).map_err(|error| error.to_string())?;
    Ok(Reading {
        settings,
        ignored: aligned.unknown,
    })
}

/// The settings of a type that takes none: every key is one HNS ignores.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoSettings {}

/// Which keys a policy object is written with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyShape {
    /// HCN V2: `{"Type": ..., "Settings": {...}}`.
    V2,
    /// HNS V1: the settings flat beside `Type` (translated to V2 before HNS sees them).
    V1,
}

/// A settings key that has no meaning for its policy type: HNS ignores it in a V2 policy (it
/// reads the keys the type has and nothing else), and a V1 policy's translation drops it.
/// Worth saying, since a policy that runs without it rarely does what its author meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IgnoredKey {
    /// The key as written.
    pub key: String,
    /// The policy's type, as HNS names it (`OutBoundNAT`, or the V1 name such as `ROUTE`).
    pub policy_type: &'static str,
    /// Whether the key sits in V2 `Settings` or in a flat V1 policy.
    pub shape: PolicyShape,
    /// The keys the type does have in that shape (a V1 list includes `Type`).
    pub known: &'static [&'static str],
    /// The key it most likely stands for: the same setting's name in the other shape, e.g.
    /// `Exceptions` for V1's `ExceptionList`.
    pub suggestion: Option<&'static str>,
}

impl fmt::Display for IgnoredKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (shape, consequence) = match self.shape {
            PolicyShape::V2 => ("V2", "HNS ignores it"),
            PolicyShape::V1 => ("V1", "it has no V2 counterpart and is dropped"),
        };
        write!(
            f,
            "`{}` is not a {shape} {} key; {consequence}",
            self.key, self.policy_type
        )?;
        // A V1 shape's list holds its `Type` too.
        let known: Vec<&str> = self
            .known
            .iter()
            .copied()
            .filter(|key| *key != "Type")
            .collect();
        match self.suggestion {
            Some(suggestion) => write!(f, "; did you mean `{suggestion}`?"),
            None if known.is_empty() => write!(f, " (the type takes no settings)"),
            None => write!(f, " (its keys: {})", known.join(", ")),
        }
    }
}

impl IgnoredKey {
    fn v2(policy_type: &'static str, known: &'static [&'static str], key: String) -> IgnoredKey {
        IgnoredKey {
            suggestion: keys::v2_key_for(policy_type, &key),
            key,
            policy_type,
            shape: PolicyShape::V2,
            known,
        }
    }
}

fn serialize_typed<S: Serializer, T: Serialize>(
    serializer: S,
    type_name: &str,
    settings: Option<&T>,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(None)?;
    map.serialize_entry("Type", type_name)?;
    if let Some(settings) = settings {
        map.serialize_entry("Settings", settings)?;
    }
    map.end()
}

/// What the three policy enums have in common (used by validation code that
/// works on any of them).
pub trait Policy: Serialize + serde::de::DeserializeOwned + Clone {
    /// Every `Type` HCN documents for this kind of object.
    const DOCUMENTED_TYPES: &'static [&'static str];

    /// The `Type` string.
    fn type_name(&self) -> &str;

    /// True for the byte-for-byte pass-through variant.
    fn is_raw(&self) -> bool;

    /// Whether `type_name` has a typed variant (case-insensitive).
    fn is_modelled_type(type_name: &str) -> bool;

    /// Why HNS refuses a policy of a modelled type (see `EndpointPolicy::misfit`).
    fn misfit(&self) -> Option<String>;

    /// Whether `type_name` is documented for this object kind (case-insensitive).
    fn is_documented_type(type_name: &str) -> bool {
        Self::DOCUMENTED_TYPES
            .iter()
            .any(|known| known.eq_ignore_ascii_case(type_name))
    }
}

macro_rules! policy_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident($settings:ty) = $type_name:literal,)*
        }
        without settings {
            $($(#[$umeta:meta])* $unit:ident = $unit_type:literal,)*
        }
        documented types: $documented:ident = [$($doc_type:literal),* $(,)?];
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub enum $name {
            $($(#[$vmeta])* $variant($settings),)*
            $($(#[$umeta])* $unit,)*
            /// Any other policy (or one whose settings do not fit the typed variant), kept byte-for-byte.
            Other(RawPolicy),
        }

        /// Every policy `Type` HCN documents for this kind of object.
        pub const $documented: &[&str] = &[$($doc_type),*];

        impl $name {
            /// The `Type` string HNS expects for this policy, for messages and matching.
            pub fn type_name(&self) -> &str {
                match self {
                    $($name::$variant(_) => $type_name,)*
                    $($name::$unit => $unit_type,)*
                    $name::Other(raw) => raw.type_name(),
                }
            }

            /// How HNS reads a policy of `envelope`'s type: the typed policy its known keys
            /// make and the keys it ignores, or why it refuses the policy (a member beside
            /// `Type` and `Settings`, such as a V1 key, is refused). `None` for a type
            /// without a typed variant, which HNS judges on its own.
            fn read(envelope: &Envelope<'_>) -> Option<Result<Reading<$name>, String>> {
                let reading = $name::read_known_keys(envelope)?;
                Some(if envelope.has_other_keys {
                    Err("only \"Type\" and \"Settings\" belong at the top level".to_owned())
                } else {
                    reading
                })
            }

            /// [`Self::read`] of the settings alone.
            fn read_known_keys(envelope: &Envelope<'_>) -> Option<Result<Reading<$name>, String>> {
                $(
                    if envelope.type_name.eq_ignore_ascii_case($type_name) {
                        return Some(
                            read_settings::<$settings>(envelope.settings)
                                .map(|reading| reading.map($name::$variant)),
                        );
                    }
                )*
                $(
                    if envelope.type_name.eq_ignore_ascii_case($unit_type) {
                        return Some(
                            read_settings::<NoSettings>(envelope.settings)
                                .map(|reading| reading.map(|_| $name::$unit)),
                        );
                    }
                )*
                None
            }

            /// [`Self::read`] of a policy kept raw; `None` for a typed policy.
            fn raw_reading(&self) -> Option<Result<Reading<$name>, String>> {
                let $name::Other(raw) = self else {
                    return None;
                };
                $name::read(&Envelope::parse(&raw.json).ok()?)
            }

            /// The canonical type name and the settings keys of a typed policy.
            fn typed_keys(&self) -> Option<(&'static str, &'static [&'static str])> {
                match self {
                    $($name::$variant(_) => Some(($type_name, keys_of::<$settings>())),)*
                    $($name::$unit => Some(($unit_type, &[])),)*
                    $name::Other(_) => None,
                }
            }

            /// Why HNS refuses a policy of a type with a typed variant: a value that does not
            /// fit (`ProviderAddress: "10.0.0" is not an IP address`) or a required key
            /// missing, so whoever refuses it can say what to fix. `None` for typed policies,
            /// for types without a variant, and for a policy HNS takes once it ignores the
            /// keys it does not know (see [`Self::ignored_keys`]).
            pub fn misfit(&self) -> Option<String> {
                self.raw_reading()?.err()
            }

            /// The keys HNS ignores in a policy kept raw because of them: settings keys its
            /// type does not have, such as a V1 `ExceptionList` inside V2 `Settings`. Empty
            /// for typed policies, types without a variant and misfits.
            pub fn ignored_keys(&self) -> Vec<IgnoredKey> {
                let Some(Ok(reading)) = self.raw_reading() else {
                    return Vec::new();
                };
                let Some((policy_type, known)) = reading.settings.typed_keys() else {
                    return Vec::new();
                };
                reading
                    .ignored
                    .into_iter()
                    .map(|key| IgnoredKey::v2(policy_type, known, key))
                    .collect()
            }

            /// The policy as HNS applies it: a policy kept raw only for keys HNS ignores is its
            /// typed variant made of the keys HNS reads; any other policy is itself. Comparing
            /// effects is comparing what two endpoints do, however their policies were spelt.
            pub fn effect(&self) -> $name {
                match self.raw_reading() {
                    Some(Ok(reading)) => reading.settings,
                    _ => self.clone(),
                }
            }

            /// Decodes one policy object (see the module docs for the rules).
            pub fn from_raw(raw: Box<RawValue>) -> Result<$name, PolicyError> {
                let envelope = Envelope::parse(&raw)?;
                if let Some(Ok(Reading { settings, ignored })) = $name::read(&envelope)
                    && ignored.is_empty()
                {
                    return Ok(settings);
                }
                let type_name = envelope.type_name;
                Ok($name::Other(RawPolicy { type_name, json: raw }))
            }
        }

        impl Policy for $name {
            const DOCUMENTED_TYPES: &'static [&'static str] = $documented;

            fn type_name(&self) -> &str {
                $name::type_name(self)
            }

            fn is_raw(&self) -> bool {
                matches!(self, $name::Other(_))
            }

            fn misfit(&self) -> Option<String> {
                $name::misfit(self)
            }

            fn is_modelled_type(type_name: &str) -> bool {
                [$($type_name,)* $($unit_type,)*].iter().any(|known| known.eq_ignore_ascii_case(type_name))
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $($name::$variant(settings) => serialize_typed(serializer, $type_name, Some(settings)),)*
                    $($name::$unit => serialize_typed::<S, ()>(serializer, $unit_type, None),)*
                    $name::Other(raw) => raw.json.serialize(serializer),
                }
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                let raw = Box::<RawValue>::deserialize(deserializer)?;
                $name::from_raw(raw).map_err(serde::de::Error::custom)
            }
        }
    };
}

policy_enum! {
    /// A policy on an endpoint (`HostComputeEndpoint.Policies`).
    pub enum EndpointPolicy {
        /// `OutBoundNAT`: SNAT of traffic leaving the endpoint, except towards `Exceptions`.
        OutboundNat(OutboundNatPolicy) = "OutBoundNAT",
        /// `SDNRoute`: a route, optionally encapsulated.
        SdnRoute(SdnRoutePolicy) = "SDNRoute",
        /// `ProviderAddress`: the host's provider address for overlay encapsulation.
        ProviderAddress(ProviderAddressPolicy) = "ProviderAddress",
        /// `PortMapping`: a host port forwarded to the endpoint.
        PortMapping(PortMappingPolicy) = "PortMapping",
        /// `ACL`: one access-control rule.
        Acl(AclPolicy) = "ACL",
        /// `EncapOverhead`: bytes reserved for encapsulation.
        EncapOverhead(EncapOverheadPolicy) = "EncapOverhead",
        /// `QOS`: outgoing bandwidth limit.
        Qos(QosPolicy) = "QOS",
    }
    without settings {}
    documented types: ENDPOINT_POLICY_TYPES = [
        "PortMapping", "ACL", "QOS", "L2Driver", "OutBoundNAT", "SDNRoute", "L4Proxy", "L4WFPPROXY",
        "PortName", "EncapOverhead", "Iov", "ProviderAddress", "InterfaceConstraint", "TierAcl",
    ];
}

policy_enum! {
    /// A policy on a network (`HostComputeNetwork.Policies`).
    pub enum NetworkPolicy {
        /// `NetAdapterName`: the physical adapter the network's switch uses.
        NetAdapterName(NetAdapterNamePolicy) = "NetAdapterName",
        /// `ProviderAddress`: the host's management/provider IP (added by HNS for overlay networks).
        ProviderAddress(ProviderAddressPolicy) = "ProviderAddress",
        /// `DrMacAddress`: the distributed-router MAC (added by HNS for overlay networks).
        DrMacAddress(DrMacAddressPolicy) = "DrMacAddress",
        /// `RemoteSubnetRoute`: a remote node's pod subnet reached through VXLAN.
        RemoteSubnetRoute(RemoteSubnetRoutePolicy) = "RemoteSubnetRoute",
        /// `VxlanPort`: the UDP port for VXLAN.
        VxlanPort(VxlanPortPolicy) = "VxlanPort",
        /// `SourceMacAddress` network policy; decoded so networks that carry it round-trip.
        SourceMacAddress(SourceMacAddressPolicy) = "SourceMacAddress",
        /// `AutomaticDNS` network policy; decoded so networks that carry it round-trip.
        AutomaticDns(AutomaticDnsPolicy) = "AutomaticDNS",
    }
    without settings {
        /// `HostRoute`: lets the host reach the overlay (type only, no settings).
        HostRoute = "HostRoute",
    }
    documented types: NETWORK_POLICY_TYPES = [
        "SourceMacAddress", "NetAdapterName", "VSwitchExtension", "DrMacAddress", "AutomaticDNS",
        "InterfaceConstraint", "ProviderAddress", "RemoteSubnetRoute", "VxlanPort", "HostRoute",
        "SetPolicy", "L4Proxy", "LayerConstraint", "NetworkACL",
    ];
}

policy_enum! {
    /// A policy on a subnet (`Ipams[].Subnets[].Policies`).
    pub enum SubnetPolicy {
        /// `VSID`: the VXLAN network identifier (flannel's VNI).
        Vsid(IsolationIdPolicy) = "VSID",
        /// `VLAN`: the VLAN ID.
        Vlan(IsolationIdPolicy) = "VLAN",
    }
    without settings {}
    documented types: SUBNET_POLICY_TYPES = ["VLAN", "VSID"];
}

/// `OutBoundNAT` settings. Traffic to `Exceptions` is not SNATed; `Destinations`
/// is the loopback-DSR form (the endpoint's own IP).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct OutboundNatPolicy {
    /// SNAT address (`VirtualIP`; V1 `VIP`).
    #[serde(
        rename = "VirtualIP",
        default,
        with = "empty_as_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub virtual_ip: Option<IpAddr>,
    /// Destinations not to NAT, hosts or prefixes (V1 `ExceptionList`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exceptions: Vec<AddressOrPrefix>,
    /// Loopback DSR destinations: the endpoint's own addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub destinations: Vec<IpAddr>,
    /// NAT flags; `0` and absent mean the same to HNS and read the same here.
    #[serde(default, skip_serializing_if = "NatFlags::is_empty")]
    pub flags: NatFlags,
    /// Share of the port pool this endpoint may use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_port_pool_usage: Option<u16>,
}

/// `SDNRoute` settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct SdnRoutePolicy {
    /// The destination this route covers.
    #[serde(
        default,
        with = "empty_as_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub destination_prefix: Option<IpPrefix>,
    /// Next hop, if any.
    #[serde(
        default,
        with = "empty_as_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_hop: Option<IpAddr>,
    /// Encapsulate (overlay) traffic to the destination.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub need_encap: bool,
}

/// `ProviderAddress` settings (endpoint and network policy alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct ProviderAddressPolicy {
    /// The provider (host) IP.
    pub provider_address: IpAddr,
}

/// IP protocol numbers as HCN expects them in `PortMapping.Protocol` and friends.
pub mod protocol {
    /// ICMPv4, for ACLs and probes.
    pub const ICMPV4: u32 = 1;
    /// IGMP, for multicast ACLs.
    pub const IGMP: u32 = 2;
    /// TCP, the default of a port mapping.
    pub const TCP: u32 = 6;
    /// UDP, e.g. DNS and VXLAN.
    pub const UDP: u32 = 17;
    /// ICMPv6, for ACLs on IPv6 networks.
    pub const ICMPV6: u32 = 58;

    /// The number for a protocol name as plugins accept it (`tcp`, `UDP`, `icmpv4`, ...).
    pub fn number(name: &str) -> Option<u32> {
        const NAMES: &[(&str, u32)] = &[
            ("icmpv4", ICMPV4),
            ("icmp", ICMPV4),
            ("igmp", IGMP),
            ("tcp", TCP),
            ("udp", UDP),
            ("icmpv6", ICMPV6),
        ];
        NAMES
            .iter()
            .find(|(known, _)| known.eq_ignore_ascii_case(name.trim()))
            .map(|(_, number)| *number)
    }
}

/// `PortMapping` settings: a host port forwarded to a pod port (`hostPort` in a pod spec).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct PortMappingPolicy {
    /// IP protocol number (see [`protocol`]).
    pub protocol: u32,
    /// Port inside the endpoint.
    pub internal_port: u16,
    /// Port on the host.
    pub external_port: u16,
    /// Host IP the mapping is bound to; absent for any (the reference plugins send `""`,
    /// which reads as absent).
    #[serde(
        rename = "VIP",
        default,
        with = "empty_as_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub vip: Option<IpAddr>,
    /// NAT flags; `0` and absent mean the same to HNS and read the same here.
    #[serde(default, skip_serializing_if = "NatFlags::is_empty")]
    pub flags: NatFlags,
}

/// Enums whose names HNS reads in a policy's settings, matched regardless of case as HNS
/// matches policy type names (`SDNROUTE`), so `"Action": "allow"` reads as `Allow`; written
/// as HNS spells them.
macro_rules! settings_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                const NAMES: &[&str] = &[$(stringify!($variant)),*];
                let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
                $(
                    if text.eq_ignore_ascii_case(stringify!($variant)) {
                        return Ok($name::$variant);
                    }
                )*
                Err(serde::de::Error::unknown_variant(&text, NAMES))
            }
        }
    };
}

settings_enum! {
    /// What an ACL rule does to matching traffic.
    pub enum AclAction {
        /// Let matching traffic through.
        Allow,
        /// Drop matching traffic.
        Block,
        /// Pass to the next layer.
        Pass,
    }
}

settings_enum! {
    /// Which traffic an ACL rule applies to, seen from the endpoint.
    pub enum AclDirection {
        /// Traffic entering the endpoint.
        In,
        /// Traffic leaving the endpoint.
        Out,
    }
}

settings_enum! {
    /// Where an ACL is enforced.
    pub enum AclRuleType {
        /// Host firewall (WFP).
        Host,
        /// Virtual switch (VFP).
        Switch,
    }
}

/// `ACL` settings: one rule of an endpoint's firewall.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct AclPolicy {
    /// Rule ID, so a rule can be found and replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Protocol numbers as a string, e.g. `"6"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocols: Option<String>,
    /// Action (always emitted).
    pub action: AclAction,
    /// Direction (always emitted).
    pub direction: AclDirection,
    /// Local addresses (comma-separated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_addresses: Option<String>,
    /// Remote addresses (comma-separated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_addresses: Option<String>,
    /// Local ports (comma-separated or ranges).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_ports: Option<String>,
    /// Remote ports the rule matches, as HNS's comma/range string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_ports: Option<String>,
    /// Enforcement point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_type: Option<AclRuleType>,
    /// Rule priority; lower numbers are evaluated first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u16>,
}

impl AclPolicy {
    /// The most entries (addresses or prefixes; ports or port ranges) production software puts
    /// in one address or port list of one rule. HNS's own limit is undocumented; Calico Felix,
    /// which programs HNS ACLs on production Windows nodes, cuts every list there: "Microsoft
    /// recommended limiting the number of entries per rule to a few thousand (say 4000 for
    /// now)" (projectcalico/calico `felix/dataplane/windows/policysets/policysets.go`,
    /// `protoRulesToHnsRules`: `ipPortsPerRule = 4000`), and puts a host's IPv4 and IPv6
    /// addresses in rules apart "to keep each rule's RemoteAddresses short enough for the HNS
    /// API buffer" (`endpoint_mgr.go`). What HNS does with a longer list (takes it, truncates
    /// it, refuses the rule) is not documented: the NetworkPolicy agent never writes one, and
    /// the emulator refuses a verdict that rests on one.
    pub const KNOWN_LIST_ENTRIES: usize = 4000;

    /// A rule for all traffic of `direction` (protocol 256, any address or port) on the
    /// virtual switch (`Switch`, VFP) at `priority`: the shape of an endpoint's default
    /// allow or block rules, to be narrowed field by field.
    pub fn all_traffic(action: AclAction, direction: AclDirection, priority: u16) -> AclPolicy {
        AclPolicy {
            id: None,
            protocols: Some("256".to_owned()),
            action,
            direction,
            local_addresses: None,
            remote_addresses: None,
            local_ports: None,
            remote_ports: None,
            rule_type: Some(AclRuleType::Switch),
            priority: Some(priority),
        }
    }

    /// The Host-layer (`RuleType: Host`, WFP) allow-all of `direction` that production
    /// writers put beside every endpoint's switch rules: Calico adds the pair "to allow
    /// traffic through the host windows firewall. Required by l2bridge network"
    /// (projectcalico/calico `felix/dataplane/windows/policysets`, `NewHostRule`), and Azure NPM
    /// adds it to Calico's endpoints as part of its "base ACLs that are required for
    /// connectivity" (azure-container-networking PR #1752). Without a `Priority`, as both
    /// write it where HNS takes that (`AclNoHostRulePriority`, HNS 7.2: hcsshim
    /// `hcn/hcnglobals.go`), which every host with HCN's V2 API (9.2) does.
    pub fn host_allow_all(direction: AclDirection) -> AclPolicy {
        AclPolicy {
            rule_type: Some(AclRuleType::Host),
            priority: None,
            ..AclPolicy::all_traffic(AclAction::Allow, direction, 0)
        }
    }

    /// Whether HNS meets `self` and `other` at one step with opposite verdicts: the same
    /// direction, layer (no `RuleType` is `Switch`) and priority, one blocking and the other
    /// not. Which of them wins is not documented, so no one who writes ACLs (ADD beside a
    /// config's own, the NetworkPolicy agent beside anyone's) may write such a pair.
    pub fn ties_with(&self, other: &AclPolicy) -> bool {
        let layer = |acl: &AclPolicy| acl.rule_type.unwrap_or(AclRuleType::Switch);
        self.direction == other.direction
            && layer(self) == layer(other)
            && self.priority.unwrap_or(0) == other.priority.unwrap_or(0)
            && (self.action == AclAction::Block) != (other.action == AclAction::Block)
    }
}

/// `EncapOverhead` settings: room left for encapsulation headers in the MTU.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct EncapOverheadPolicy {
    /// Bytes the encapsulation adds, which the endpoint's MTU leaves room for.
    pub overhead: u16,
}

/// `QOS` settings: the endpoint's outgoing bandwidth cap.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct QosPolicy {
    /// Bandwidth cap in bytes per second.
    pub maximum_outgoing_bandwidth_in_bytes: u64,
}

/// `NetAdapterName` settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct NetAdapterNamePolicy {
    /// Adapter name, e.g. `Ethernet`.
    pub network_adapter_name: String,
}

/// `DrMacAddress` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct DrMacAddressPolicy {
    /// The distributed router's MAC.
    pub address: MacAddress,
}

/// `RemoteSubnetRoute` settings (all keys always emitted, as hcsshim does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct RemoteSubnetRoutePolicy {
    /// The remote pod subnet.
    pub destination_prefix: IpPrefix,
    /// The remote VNI.
    pub isolation_id: u16,
    /// The remote node's IP.
    pub provider_address: IpAddr,
    /// The remote node's VTEP MAC.
    pub distributed_router_mac_address: MacAddress,
}

/// `VxlanPort` settings: the UDP port VXLAN traffic uses on this network.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct VxlanPortPolicy {
    /// UDP port; Flannel's vxlan backend on Windows needs it set (4789).
    pub port: u16,
}

/// `SourceMacAddress` settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct SourceMacAddressPolicy {
    /// The MAC the network's switch sends from.
    pub source_mac_address: MacAddress,
}

/// `AutomaticDNS` settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct AutomaticDnsPolicy {
    /// The policy's one setting, kept as HNS wrote it.
    pub enable: bool,
}

/// `VSID` / `VLAN` subnet policy settings (always emitted).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct IsolationIdPolicy {
    /// VSID or VLAN ID.
    pub isolation_id: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(action: AclAction, priority: u16) -> AclPolicy {
        AclPolicy::all_traffic(action, AclDirection::In, priority)
    }

    #[test]
    fn ties_are_one_step_with_opposite_verdicts() {
        let block = rule(AclAction::Block, 4300);
        assert!(block.ties_with(&rule(AclAction::Allow, 4300)));
        assert!(block.ties_with(&rule(AclAction::Pass, 4300)));
        assert!(!block.ties_with(&rule(AclAction::Block, 4300)));
        assert!(!block.ties_with(&rule(AclAction::Allow, 4301)));
        let out = AclPolicy {
            direction: AclDirection::Out,
            ..rule(AclAction::Allow, 4300)
        };
        assert!(!block.ties_with(&out));
        let host = AclPolicy {
            rule_type: Some(AclRuleType::Host),
            ..rule(AclAction::Allow, 4300)
        };
        assert!(!block.ties_with(&host));
        let unset = AclPolicy {
            rule_type: None,
            ..rule(AclAction::Allow, 4300)
        };
        assert!(block.ties_with(&unset), "no RuleType is Switch");
    }

    /// Calico's and Azure NPM's Host rule: all traffic, no priority, which every host the V2
    /// API runs on takes (`AclNoHostRulePriority` is HNS 7.2's, the V2 API 9.2's).
    #[test]
    fn the_host_allow_all_is_written_as_calico_and_npm_write_it() {
        let rule = AclPolicy::host_allow_all(AclDirection::Out);
        assert_eq!(
            serde_json::to_value(&rule).unwrap(),
            serde_json::json!({"Protocols": "256", "Action": "Allow", "Direction": "Out",
                               "RuleType": "Host"})
        );
        let first_v2 = crate::HnsVersion::new(9, 2);
        assert!(crate::Feature::ApiV2.supported_by(first_v2));
        assert!(crate::Feature::Acl.supported_by(first_v2));
    }
}
