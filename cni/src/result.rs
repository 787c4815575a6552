//! The ADD result: one internal type (spec 1.1.0) that prints as any version and parses from any.
//!
//! Conversions follow libcni (`pkg/types/{020,040,100}`, `internal/convert.go`) exactly, because
//! runtimes cache the result and hand it back as `prevResult` in whatever version the config says.

use ipnetwork::IpNetwork;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::net::IpAddr;

use crate::case_insensitive;
use crate::error::{Error, ErrorCode};
use crate::version::{ResultLayout, Version};

/// A successful ADD result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Success {
    /// The interfaces the attachment made; `ips[].interface` indexes into it.
    pub interfaces: Vec<Interface>,
    /// The attachment's addresses.
    pub ips: Vec<IpConfig>,
    /// Routes the container should have besides those implied by its addresses.
    pub routes: Vec<Route>,
    /// The DNS the container should use.
    pub dns: Dns,
}

/// An interface the plugin created (1.1.0 fields included).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interface {
    /// The interface's name in its namespace (`CNI_IFNAME` for the container's).
    pub name: String,
    /// The hardware address, as the platform writes it (dash-separated on Windows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<String>,
    /// The interface MTU (1.1.0), when the plugin sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// The network namespace (on Windows the HCN namespace GUID) the interface lives in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    /// A vhost-user socket (1.1.0): runtimes of userspace networking read it.
    #[serde(
        rename = "socketPath",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub socket_path: Option<String>,
    /// The PCI address of a device plugged in (1.1.0).
    #[serde(rename = "pciID", default, skip_serializing_if = "Option::is_none")]
    pub pci_id: Option<String>,
}

/// An address assigned to an interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpConfig {
    /// The address with its subnet's prefix length (host bits kept), e.g. `10.244.1.5/24`.
    pub address: IpNetwork,
    /// The next hop this address's subnet uses, which runtimes report to the user.
    pub gateway: Option<IpAddr>,
    /// Index into [`Success::interfaces`].
    pub interface: Option<usize>,
}

/// A route (1.1.0 fields included).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    /// The destination; `0.0.0.0/0` or `::/0` is the default route.
    #[serde(with = "serde_network")]
    pub dst: IpNetwork,
    /// The next hop; `None` means the interface's gateway for the family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gw: Option<IpAddr>,
    /// The route's MTU (1.1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// The TCP maximum segment size advertised on the route (1.1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advmss: Option<u32>,
    /// The route's priority (1.1.0): lower wins among routes to one destination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u32>,
    /// The routing table the route goes into (1.1.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table: Option<u32>,
    /// The route's scope (1.1.0), as the kernel numbers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<u32>,
}

impl Route {
    /// A plain route to `dst`, optionally via `gw`.
    pub fn new(dst: IpNetwork, gw: Option<IpAddr>) -> Route {
        Route {
            dst,
            gw,
            mtu: None,
            advmss: None,
            priority: None,
            table: None,
            scope: None,
        }
    }
}

/// DNS settings; the same shape in every version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dns {
    /// Servers the container's resolver asks, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nameservers: Vec<String>,
    /// Search domain for unqualified names (`resolv.conf`'s `domain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Domains tried for short names, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub search: Vec<String>,
    /// Resolver options (`ndots:5`), passed through as written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

impl Dns {
    /// Whether nothing is set, so results and endpoints can leave DNS out entirely.
    pub fn is_empty(&self) -> bool {
        self == &Dns::default()
    }
}

/// Wire shapes of each layout. Kept private: callers only ever see [`Success`].
mod wire {
    use super::*;

    #[derive(Serialize, Deserialize)]
    pub struct V1 {
        #[serde(
            rename = "cniVersion",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        pub cni_version: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub interfaces: Vec<Interface>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub ips: Vec<Ip>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub routes: Vec<Route>,
        #[serde(default)]
        pub dns: Dns,
    }

    /// `ips[]` entry; `version` is required in 0.3.x/0.4.0 and absent from 1.x.
    #[derive(Serialize, Deserialize)]
    pub struct Ip {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub version: Option<String>,
        #[serde(with = "serde_network")]
        pub address: IpNetwork,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub gateway: Option<IpAddr>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub interface: Option<usize>,
    }

    /// 0.3.x/0.4.0 interfaces carry only these three fields.
    #[derive(Serialize)]
    pub struct V04Interface<'a> {
        pub name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub mac: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        pub sandbox: Option<&'a str>,
    }

    #[derive(Serialize)]
    pub struct V04<'a> {
        #[serde(rename = "cniVersion")]
        pub cni_version: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub interfaces: Vec<V04Interface<'a>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pub ips: Vec<Ip>,
        #[serde(skip_serializing_if = "<[Route]>::is_empty")]
        pub routes: &'a [Route],
        pub dns: &'a Dns,
    }

    /// 0.1.0/0.2.0 `ip4`/`ip6`.
    #[derive(Serialize, Deserialize)]
    pub struct LegacyIp {
        #[serde(with = "serde_network")]
        pub ip: IpNetwork,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub gateway: Option<IpAddr>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub routes: Vec<LegacyRoute>,
    }

    #[derive(Serialize, Deserialize)]
    pub struct LegacyRoute {
        #[serde(with = "serde_network")]
        pub dst: IpNetwork,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub gw: Option<IpAddr>,
    }

    #[derive(Serialize, Deserialize)]
    pub struct Legacy {
        #[serde(
            rename = "cniVersion",
            default,
            skip_serializing_if = "Option::is_none"
        )]
        pub cni_version: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub ip4: Option<LegacyIp>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub ip6: Option<LegacyIp>,
        #[serde(default)]
        pub dns: Dns,
    }
}

/// IP networks on the wire are CIDR strings with host bits (`10.244.1.5/24`).
mod serde_network {
    use ipnetwork::IpNetwork;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(net: &IpNetwork, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(net)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<IpNetwork, D::Error> {
        let s = String::deserialize(d)?;
        if !s.contains('/') {
            return Err(serde::de::Error::custom(format!(
                "{} is not in CIDR notation (address/prefix)",
                crate::quote::quoted(&s)
            )));
        }
        s.parse().map_err(|e| {
            serde::de::Error::custom(format!(
                "{} is not a valid CIDR: {e}",
                crate::quote::quoted(&s)
            ))
        })
    }
}

impl Success {
    /// The result as JSON in `version`'s layout. Down-converting to 0.1.0/0.2.0 fails (code 1)
    /// when there is no IP, as libcni's does: those versions cannot express such a result.
    pub fn to_value(&self, version: Version) -> Result<Value, Error> {
        let value = match version.result_layout() {
            ResultLayout::V1 => serde_json::to_value(wire::V1 {
                cni_version: Some(version.to_string()),
                interfaces: self.interfaces.clone(),
                ips: self.wire_ips(false),
                routes: self.routes.clone(),
                dns: self.dns.clone(),
            }),
            ResultLayout::V04 => serde_json::to_value(wire::V04 {
                cni_version: version.as_str(),
                interfaces: self
                    .interfaces
                    .iter()
                    .map(|i| wire::V04Interface {
                        name: &i.name,
                        mac: i.mac.as_deref(),
                        sandbox: i.sandbox.as_deref(),
                    })
                    .collect(),
                ips: self.wire_ips(true),
                routes: &self.routes,
                dns: &self.dns,
            }),
            ResultLayout::Legacy => serde_json::to_value(self.to_legacy(version)?),
        };
        value.map_err(|e| Error::internal(format!("cannot serialise result: {e}")))
    }

    /// The result as the compact JSON text printed on stdout.
    pub fn to_json(&self, version: Version) -> Result<String, Error> {
        Ok(self.to_value(version)?.to_string())
    }

    fn wire_ips(&self, with_version: bool) -> Vec<wire::Ip> {
        self.ips
            .iter()
            .map(|ip| wire::Ip {
                version: with_version.then(|| if ip.address.is_ipv4() { "4" } else { "6" }.into()),
                address: ip.address,
                gateway: ip.gateway,
                interface: ip.interface,
            })
            .collect()
    }

    fn to_legacy(&self, version: Version) -> Result<wire::Legacy, Error> {
        let legacy_ip = |v4: bool| {
            self.ips
                .iter()
                .find(|ip| ip.address.is_ipv4() == v4)
                .map(|ip| wire::LegacyIp {
                    ip: ip.address,
                    gateway: ip.gateway,
                    routes: self
                        .routes
                        .iter()
                        .filter(|r| r.dst.is_ipv4() == v4)
                        .map(|r| wire::LegacyRoute {
                            dst: r.dst,
                            gw: r.gw,
                        })
                        .collect(),
                })
        };
        let (ip4, ip6) = (legacy_ip(true), legacy_ip(false));
        if ip4.is_none() && ip6.is_none() {
            return Err(Error::new(
                ErrorCode::IncompatibleVersion,
                format!(
                    "cannot convert the result to cniVersion {version}: it has no IP addresses"
                ),
            ));
        }
        Ok(wire::Legacy {
            cni_version: Some(version.to_string()),
            ip4,
            ip6,
            dns: self.dns.clone(),
        })
    }

    /// Parses a result of any version: a delegated IPAM plugin's output or a `prevResult`. The
    /// version comes from its own `cniVersion`, else `default_version` (libcni's rule for results
    /// and prevResults that omit it). Decode failures are code 6 naming the field.
    pub fn from_value(value: &Value, default_version: Version) -> Result<Success, Error> {
        let version = match value.get("cniVersion") {
            Some(Value::String(v)) => v.parse::<Version>()?,
            Some(other) => {
                return Err(Error::new(
                    ErrorCode::Decode,
                    format!("result cniVersion must be a string, got {other}"),
                ));
            }
            None => default_version,
        };
        match version.result_layout() {
            ResultLayout::V1 | ResultLayout::V04 => {
                let wire: wire::V1 = decode(value, "result")?;
                Ok(Success {
                    interfaces: wire.interfaces,
                    ips: wire
                        .ips
                        .into_iter()
                        .map(|ip| IpConfig {
                            address: ip.address,
                            gateway: ip.gateway,
                            interface: ip.interface,
                        })
                        .collect(),
                    routes: wire.routes,
                    dns: wire.dns,
                })
            }
            ResultLayout::Legacy => {
                let wire: wire::Legacy = decode(value, "result")?;
                let mut success = Success {
                    dns: wire.dns,
                    ..Success::default()
                };
                for legacy in [wire.ip4, wire.ip6].into_iter().flatten() {
                    success.ips.push(IpConfig {
                        address: legacy.ip,
                        gateway: legacy.gateway,
                        interface: None,
                    });
                    success
                        .routes
                        .extend(legacy.routes.into_iter().map(|r| Route::new(r.dst, r.gw)));
                }
                Ok(success)
            }
        }
    }

    /// Parses result text (e.g. a delegated plugin's stdout).
    pub fn from_slice(bytes: &[u8], default_version: Version) -> Result<Success, Error> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| Error::new(ErrorCode::Decode, format!("result is not JSON: {e}")))?;
        Success::from_value(&value, default_version)
    }
}

fn decode<T: DeserializeOwned>(value: &Value, what: &str) -> Result<T, Error> {
    case_insensitive::decode(value, what, ErrorCode::Decode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn legacy_conversion_needs_an_ip() {
        let err = Success::default().to_value(Version::V0_2_0).unwrap_err();
        assert_eq!(err.code(), ErrorCode::IncompatibleVersion);
    }

    #[test]
    fn legacy_routes_follow_their_family_only_when_it_has_an_ip() {
        let v4_only = Success {
            ips: vec![IpConfig {
                address: "10.244.1.5/24".parse().unwrap(),
                gateway: None,
                interface: None,
            }],
            routes: vec![
                Route::new(
                    "0.0.0.0/0".parse().unwrap(),
                    Some("10.244.1.2".parse().unwrap()),
                ),
                Route::new("::/0".parse().unwrap(), None),
            ],
            ..Success::default()
        };
        let value = v4_only.to_value(Version::V0_1_0).unwrap();
        assert_eq!(
            value["ip4"]["routes"],
            json!([{"dst": "0.0.0.0/0", "gw": "10.244.1.2"}])
        );
        assert!(value.get("ip6").is_none());
    }

    #[test]
    fn rejects_malformed_fields_naming_them() {
        let err = Success::from_value(
            &json!({"cniVersion": "1.0.0", "ips": [{"address": "10.0.0.5"}]}),
            Version::V1_0_0,
        )
        .unwrap_err();
        assert_eq!(err.code(), ErrorCode::Decode);
        assert!(err.msg().contains("ips[0].address"), "{}", err.msg());
        let err =
            Success::from_value(&json!({"cniVersion": "9.9.9"}), Version::V1_0_0).unwrap_err();
        assert_eq!(err.code(), ErrorCode::IncompatibleVersion);
    }

    #[test]
    fn a_result_without_version_takes_the_default() {
        let parsed = Success::from_value(
            &json!({"ip4": {"ip": "10.1.0.7/16", "gateway": "10.1.0.1"}}),
            Version::V0_2_0,
        )
        .unwrap();
        assert_eq!(parsed.ips[0].address.to_string(), "10.1.0.7/16");
    }
}
