//! Host ports: the external side of `PortMapping` endpoint policies.
//!
//! HNS forwards a host port to one endpoint only. The port belongs to the host (WinNAT's port
//! pool), not to a network, so a second endpoint mapping the same external port, protocol and
//! host address is refused with `HCN_E_PORT_ALREADY_EXISTS` whichever network either endpoint
//! is on. An empty or absent `VIP` means "every host address" and so overlaps any specific
//! one; IPv4 and IPv6 mappings (`Flags` bit `IPV6`) never collide with each other. A mapping
//! with `ExternalPort` 0 asks for no fixed host port and holds nothing.
//!
//! The index `index/host-ports/<protocol>-<port>.json` lists the endpoints that may hold the
//! port; like every index it is only a hint: the holder's own policies decide.
//!
//! A load balancer whose frontend is on the node itself reserves its external port in the
//! same TCP/IP stack: one without frontend VIPs (a NodePort: HNS puts the node IP there,
//! k8s PR #78874) or one whose VIP is the host's address. So it and an endpoint's host port
//! of the same protocol, port and family refuse each other with `HCN_E_PORT_ALREADY_EXISTS`,
//! the code kube-proxy meets when the port is already reserved on the host
//! (kubernetes/community#8883, microsoft/hcsshim#1043). Load balancers do not refuse each
//! other for a port (HNS took a second one on the same VIP and port, k8s#112836).

use std::net::IpAddr;

use super::adapter::HostAdapter;
use super::engine::State;
use super::failure::HcnFailure;
use super::store;
use hns::guid::Guid;
use hns::hresult::HResult;
use hns::schema::policy::{PortMappingPolicy, protocol};
use hns::schema::{EndpointPolicy, HostComputeEndpoint, HostComputeLoadBalancer};
use hns::schema::{LoadBalancerFlags, NatFlags};

const HOST_PORTS: &str = "host-ports";

/// The host port a mapping claims.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostPort {
    protocol: u32,
    port: u16,
    /// `None` for every host address.
    vip: Option<IpAddr>,
    ipv6: bool,
}

impl HostPort {
    fn of(mapping: &PortMappingPolicy) -> Option<HostPort> {
        (mapping.external_port != 0).then(|| HostPort {
            protocol: mapping.protocol,
            port: mapping.external_port,
            vip: mapping.vip,
            ipv6: mapping.flags.contains(NatFlags::IPV6),
        })
    }

    /// The host ports a load balancer reserves: those of its frontends on the node.
    fn of_load_balancer(balancer: &HostComputeLoadBalancer, host: &HostAdapter) -> Vec<HostPort> {
        let ipv6 = balancer.flags.contains(LoadBalancerFlags::IPV6);
        let node = host.address.ip();
        let on_node: Vec<Option<IpAddr>> = if balancer.frontend_vips.is_empty() {
            vec![(node.is_ipv6() == ipv6).then_some(node)]
        } else {
            balancer
                .frontend_vips
                .iter()
                .filter(|vip| **vip == node)
                .map(|vip| Some(*vip))
                .collect()
        };
        on_node
            .into_iter()
            .flat_map(|vip| {
                balancer.port_mappings.iter().map(move |mapping| HostPort {
                    protocol: mapping.protocol,
                    port: mapping.external_port,
                    vip,
                    ipv6,
                })
            })
            .filter(|port| port.port != 0)
            .collect()
    }

    fn overlaps(&self, other: &HostPort) -> bool {
        self.protocol == other.protocol
            && self.port == other.port
            && self.ipv6 == other.ipv6
            && match (self.vip, other.vip) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }

    fn bucket(&self) -> String {
        format!("{}-{}.json", self.protocol, self.port)
    }

    /// `TCP 8080` (or the protocol number when it has no common name), with the VIP if bound.
    fn describe(&self) -> String {
        let name = match self.protocol {
            protocol::TCP => "TCP".to_owned(),
            protocol::UDP => "UDP".to_owned(),
            other => format!("protocol {other}"),
        };
        let family = if self.ipv6 { " IPv6" } else { "" };
        match &self.vip {
            Some(vip) => format!("{name}{family} {vip}:{}", self.port),
            None => format!("{name}{family} {}", self.port),
        }
    }
}

fn host_ports(policies: &[EndpointPolicy]) -> Vec<HostPort> {
    policies
        .iter()
        .filter_map(|policy| match policy {
            EndpointPolicy::PortMapping(mapping) => HostPort::of(mapping),
            _ => None,
        })
        .collect()
}

impl State<'_> {
    /// Refuses `policies` for endpoint `id` if one of their host ports overlaps another of
    /// them, one held by another endpoint of the host, or one a load balancer reserves. The
    /// error record names the port and the holder (see [`hns::error::Holder`] for the format
    /// an endpoint holder has).
    pub(super) fn check_host_ports(
        &self,
        id: Guid,
        policies: &[EndpointPolicy],
    ) -> Result<(), HcnFailure> {
        let wanted = host_ports(policies);
        if wanted.is_empty() {
            return Ok(());
        }
        for (index, port) in wanted.iter().enumerate() {
            if wanted[..index].iter().any(|earlier| earlier.overlaps(port)) {
                return Err(port_taken(port, &format!("endpoint {id}")));
            }
            if let Some(holder) = self.endpoint_holding(port, id)? {
                return Err(port_taken(port, &format!("endpoint {holder}")));
            }
        }
        for balancer in self.load_balancers()? {
            let reserved = HostPort::of_load_balancer(&balancer, &self.host.adapter);
            if let Some(port) = wanted
                .iter()
                .find(|port| reserved.iter().any(|held| held.overlaps(port)))
            {
                return Err(port_taken(port, &format!("load balancer {}", balancer.id)));
            }
        }
        Ok(())
    }

    /// Refuses load balancer `balancer` if a frontend of it on the node wants a host port an
    /// endpoint holds.
    pub(super) fn check_node_ports(
        &self,
        balancer: &HostComputeLoadBalancer,
    ) -> Result<(), HcnFailure> {
        for port in HostPort::of_load_balancer(balancer, &self.host.adapter) {
            if let Some(holder) = self.endpoint_holding(&port, Guid::ZERO)? {
                return Err(port_taken(&port, &format!("endpoint {holder}")));
            }
        }
        Ok(())
    }

    /// The endpoint other than `except` holding a host port that overlaps `port`.
    fn endpoint_holding(&self, port: &HostPort, except: Guid) -> Result<Option<Guid>, HcnFailure> {
        for holder in self.port_bucket(port)? {
            if holder == except {
                continue;
            }
            let Some(endpoint) = self.load_endpoint(holder)? else {
                continue;
            };
            if host_ports(&endpoint.policies)
                .iter()
                .any(|held| held.overlaps(port))
            {
                return Ok(Some(holder));
            }
        }
        Ok(None)
    }

    /// Records that `endpoint` may hold its host ports (before the object is written).
    pub(super) fn claim_host_ports(
        &self,
        endpoint: &HostComputeEndpoint,
    ) -> Result<(), HcnFailure> {
        for port in host_ports(&endpoint.policies) {
            self.update_port_bucket(&port, |holders| {
                if !holders.contains(&endpoint.id) {
                    holders.push(endpoint.id);
                }
            })?;
        }
        Ok(())
    }

    /// Forgets `endpoint`'s host ports (after the object is gone).
    pub(super) fn release_host_ports(
        &self,
        endpoint: &HostComputeEndpoint,
    ) -> Result<(), HcnFailure> {
        for port in host_ports(&endpoint.policies) {
            self.update_port_bucket(&port, |holders| holders.retain(|id| *id != endpoint.id))?;
        }
        Ok(())
    }

    fn port_bucket(&self, port: &HostPort) -> Result<Vec<Guid>, HcnFailure> {
        Ok(store::read_json(&self.index_path(&[HOST_PORTS, &port.bucket()]))?.unwrap_or_default())
    }

    fn update_port_bucket(
        &self,
        port: &HostPort,
        change: impl FnOnce(&mut Vec<Guid>),
    ) -> Result<(), HcnFailure> {
        let mut holders = self.port_bucket(port)?;
        change(&mut holders);
        let path = self.index_path(&[HOST_PORTS, &port.bucket()]);
        if holders.is_empty() {
            store::remove_file(&path)
        } else {
            store::write_json(&path, &holders)
        }
    }
}

/// `holder` is `endpoint <GUID>` or `load balancer <GUID>`.
fn port_taken(port: &HostPort, holder: &str) -> HcnFailure {
    HcnFailure::new(
        HResult::HCN_E_PORT_ALREADY_EXISTS,
        format!(
            "(PortMapping {} is already used by {holder})",
            port.describe()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapping(port: u16, vip: Option<&str>, flags: NatFlags) -> HostPort {
        HostPort::of(&PortMappingPolicy {
            protocol: protocol::TCP,
            internal_port: 80,
            external_port: port,
            vip: vip.map(|vip| vip.parse().unwrap()),
            flags,
        })
        .unwrap()
    }

    #[test]
    fn any_address_overlaps_a_specific_one_but_families_and_ports_do_not() {
        let any = mapping(8080, None, NatFlags::NONE);
        let specific = mapping(8080, Some("192.168.1.10"), NatFlags::NONE);
        let other_vip = mapping(8080, Some("192.168.1.11"), NatFlags::NONE);
        assert!(any.overlaps(&specific) && specific.overlaps(&any));
        assert!(!specific.overlaps(&other_vip));
        assert!(!any.overlaps(&mapping(8081, None, NatFlags::NONE)));
        assert!(!any.overlaps(&mapping(8080, None, NatFlags::IPV6)));
        assert!(any.overlaps(&mapping(8080, None, NatFlags::LOCAL_ROUTED_VIP)));
        let mut udp = any.clone();
        udp.protocol = protocol::UDP;
        assert!(!any.overlaps(&udp));
    }

    #[test]
    fn port_zero_holds_nothing() {
        let zero = PortMappingPolicy {
            protocol: protocol::TCP,
            internal_port: 80,
            external_port: 0,
            vip: None,
            flags: NatFlags::NONE,
        };
        assert_eq!(HostPort::of(&zero), None);
    }
}
