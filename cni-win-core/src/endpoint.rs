//! The HCN endpoint document an ADD creates, and the CNI result read back from the endpoint.
//!
//! The result is always built from the endpoint HNS reports (its MAC, its prefix lengths, its
//! routes and DNS), so a repeated ADD returns exactly what the first one did, whichever path
//! (created now, found existing) produced it.

use std::net::IpAddr;
use std::path::PathBuf;

use cni::{Dns, Error, Interface, IpConfig, Route, Success};
use hns::schema::{self, EndpointPolicy, HostComputeEndpoint, IpPrefix, MacAddress};
use ipnetwork::IpNetwork;

/// One address of the pod and the gateway its default route uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Address {
    pub ip: IpNetwork,
    pub gateway: IpAddr,
}

/// What the endpoint is made of.
#[derive(Debug, Clone)]
pub struct Blueprint {
    pub name: String,
    pub addresses: Vec<Address>,
    /// IPAM's routes (a route without `gw` goes via its family's gateway).
    pub routes: Vec<Route>,
    pub dns: schema::Dns,
    pub policies: Vec<EndpointPolicy>,
    /// The NetworkPolicy snapshot some of `policies` come from (`None`: none do): HNS
    /// refusing the endpoint may be the snapshot's doing rather than the config's.
    pub policy_snapshot: Option<PathBuf>,
    pub mac: Option<MacAddress>,
}

impl Blueprint {
    /// The addresses alone, as IPAM gave them.
    pub fn ips(&self) -> Vec<IpNetwork> {
        self.addresses.iter().map(|a| a.ip).collect()
    }

    /// The `HcnCreateEndpoint` settings: addresses with prefix length, a default route per
    /// family via its gateway, IPAM's routes, DNS, policies and (when chosen) the MAC.
    pub fn settings(&self) -> HostComputeEndpoint {
        let mut routes: Vec<schema::Route> = self
            .addresses
            .iter()
            .map(|address| schema::Route::default_via(address.gateway))
            .collect();
        for route in &self.routes {
            let gateway = route.gw.or_else(|| {
                self.addresses
                    .iter()
                    .find(|a| a.gateway.is_ipv4() == route.dst.is_ipv4())
                    .map(|a| a.gateway)
            });
            let candidate = schema::Route {
                next_hop: gateway,
                destination_prefix: IpPrefix::from(route.dst),
                metric: None,
            };
            if !routes
                .iter()
                .any(|r| r.destination_prefix == candidate.destination_prefix)
            {
                routes.push(candidate);
            }
        }
        HostComputeEndpoint {
            name: self.name.clone(),
            ip_configurations: self
                .addresses
                .iter()
                .map(|address| schema::IpConfig {
                    ip_address: address.ip.ip(),
                    prefix_length: Some(address.ip.prefix()),
                })
                .collect(),
            routes,
            dns: self.dns.clone(),
            policies: self.policies.clone(),
            mac_address: self.mac,
            ..HostComputeEndpoint::default()
        }
    }
}

/// The endpoint's addresses, as HNS reports them (prefix lengths filled in by HNS when absent).
pub fn addresses_of(endpoint: &HostComputeEndpoint) -> Result<Vec<IpNetwork>, Error> {
    endpoint
        .ip_configurations
        .iter()
        .map(|config| {
            let ip = config.ip_address;
            let prefix = config
                .prefix_length
                .unwrap_or(if ip.is_ipv4() { 32 } else { 128 });
            IpNetwork::new(ip, prefix).map_err(|e| {
                Error::internal(format!(
                    "endpoint {} address {ip}/{prefix}: {e}",
                    endpoint.id
                ))
            })
        })
        .collect()
}

/// The CNI result of an attachment: the interface (CNI_IFNAME, the endpoint's MAC, the
/// namespace as sandbox), every address with its gateway on interface 0, the endpoint's
/// routes and DNS.
pub fn result(endpoint: &HostComputeEndpoint, ifname: &str, netns: &str) -> Result<Success, Error> {
    let routes: Vec<Route> = endpoint
        .routes
        .iter()
        .map(|route| Route::new(route.destination_prefix.network(), route.next_hop))
        .collect();
    let gateway_for = |ip: IpAddr| {
        routes
            .iter()
            .find(|r| r.dst.prefix() == 0 && r.dst.is_ipv4() == ip.is_ipv4())
            .and_then(|r| r.gw)
    };
    let ips = addresses_of(endpoint)?
        .into_iter()
        .map(|address| IpConfig {
            address,
            gateway: gateway_for(address.ip()),
            interface: Some(0),
        })
        .collect();
    let non_empty = |text: &str| (!text.is_empty()).then(|| text.to_owned());
    Ok(Success {
        interfaces: vec![Interface {
            name: ifname.to_owned(),
            mac: endpoint.mac_address.map(|mac| mac.to_string()),
            sandbox: non_empty(netns),
            ..Interface::default()
        }],
        ips,
        routes,
        dns: Dns {
            nameservers: endpoint
                .dns
                .server_list
                .iter()
                .map(IpAddr::to_string)
                .collect(),
            domain: non_empty(&endpoint.dns.domain),
            search: endpoint.dns.search.clone(),
            options: endpoint.dns.options.clone(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blueprint() -> Blueprint {
        Blueprint {
            name: "abc_cbr0".into(),
            addresses: vec![
                Address {
                    ip: "10.244.1.5/24".parse().unwrap(),
                    gateway: "10.244.1.2".parse().unwrap(),
                },
                Address {
                    ip: "fd00:10:244:1::5/64".parse().unwrap(),
                    gateway: "fd00:10:244:1::2".parse().unwrap(),
                },
            ],
            routes: vec![
                Route::new("0.0.0.0/0".parse().unwrap(), None),
                Route::new("10.96.0.0/12".parse().unwrap(), None),
            ],
            dns: schema::Dns {
                server_list: vec!["10.96.0.10".parse().unwrap()],
                search: vec!["svc.cluster.local".into()],
                ..schema::Dns::default()
            },
            policies: Vec::new(),
            policy_snapshot: None,
            mac: None,
        }
    }

    #[test]
    fn settings_carry_prefixes_default_routes_per_family_and_ipam_routes() {
        let settings = serde_json::to_value(blueprint().settings()).unwrap();
        assert_eq!(
            settings["IpConfigurations"],
            serde_json::json!([
                {"IpAddress": "10.244.1.5", "PrefixLength": 24},
                {"IpAddress": "fd00:10:244:1::5", "PrefixLength": 64}
            ])
        );
        assert_eq!(
            settings["Routes"],
            serde_json::json!([
                {"NextHop": "10.244.1.2", "DestinationPrefix": "0.0.0.0/0"},
                {"NextHop": "fd00:10:244:1::2", "DestinationPrefix": "::/0"},
                {"NextHop": "10.244.1.2", "DestinationPrefix": "10.96.0.0/12"}
            ])
        );
        assert_eq!(
            settings["Dns"],
            serde_json::json!({"Search": ["svc.cluster.local"], "ServerList": ["10.96.0.10"]})
        );
        assert!(settings.get("MacAddress").is_none());
    }

    #[test]
    fn the_result_comes_from_the_endpoint() {
        let mut endpoint = blueprint().settings();
        endpoint.mac_address = "00-15-5D-00-00-07".parse().ok();
        let result = result(&endpoint, "eth0", "5f3f8c1e-0b49-4b36-9a0e-6f1c2b3d4e5f").unwrap();
        assert_eq!(result.interfaces[0].name, "eth0");
        assert_eq!(
            result.interfaces[0].mac.as_deref(),
            Some("00-15-5D-00-00-07")
        );
        assert_eq!(result.ips.len(), 2);
        assert_eq!(
            result.ips[1].gateway,
            Some("fd00:10:244:1::2".parse().unwrap())
        );
        assert!(result.ips.iter().all(|ip| ip.interface == Some(0)));
        assert_eq!(result.routes.len(), 3);
        assert_eq!(result.dns.nameservers, ["10.96.0.10"]);
    }
}
