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

use std::net::IpAddr;

use super::engine::State;
use super::failure::HcnFailure;
use super::store;
use hns::guid::Guid;
use hns::hresult::HResult;
use hns::schema::NatFlags;
use hns::schema::policy::{PortMappingPolicy, protocol};
use hns::schema::{EndpointPolicy, HostComputeEndpoint};

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
    /// them or one held by another endpoint of the host. The error record names the port and
    /// the holder (see [`hns::error::Holder`] for the format).
    pub(super) fn check_host_ports(
        &self,
        id: Guid,
        policies: &[EndpointPolicy],
    ) -> Result<(), HcnFailure> {
        let wanted = host_ports(policies);
        for (index, port) in wanted.iter().enumerate() {
            if wanted[..index].iter().any(|earlier| earlier.overlaps(port)) {
                return Err(port_taken(port, id));
            }
            for holder in self.port_bucket(port)? {
                if holder == id {
                    continue;
                }
                let Some(endpoint) = self.load_endpoint(holder)? else {
                    continue;
                };
                if host_ports(&endpoint.policies)
                    .iter()
                    .any(|held| held.overlaps(port))
                {
                    return Err(port_taken(port, holder));
                }
            }
        }
        Ok(())
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

fn port_taken(port: &HostPort, holder: Guid) -> HcnFailure {
    HcnFailure::new(
        HResult::HCN_E_PORT_ALREADY_EXISTS,
        format!(
            "(PortMapping {} is already used by endpoint {holder})",
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
