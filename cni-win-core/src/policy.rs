//! The endpoint's policies, composed from the config in a fixed order: the user's policies,
//! ONE merged OutBoundNAT, a PortMapping (and with `allowAclPortMapping` an ACL) per runtime
//! port mapping, loopback DSR, then the plugin's own (the overlay's ProviderAddress) unless the
//! user already wrote the same policy.
//!
//! The reference appends a second OutBoundNAT for `ipMasqNetwork` next to the user's; here
//! every OutBoundNAT that only lists exceptions is merged into one, with the plugin's
//! exceptions (`ipMasqNetwork`, the overlay subnet) appended, duplicates dropped and the order
//! kept. Every exception must be a CIDR (`address/prefix`).

use std::net::IpAddr;

use cni::Error;
use hns::schema::EndpointPolicy;
use hns::schema::HostComputeNetwork;
use hns::schema::policy::{
    AclAction, AclDirection, AclPolicy, AclRuleType, OutboundNatPolicy, PortMappingPolicy,
    nat_flags,
};
use ipnetwork::IpNetwork;

use crate::config::{Conf, PortMapping};
use crate::kind::NetworkKind;

/// Every policy the endpoint of this attachment must carry, in order.
pub fn compose<K: NetworkKind>(
    kind: &K,
    conf: &Conf<K>,
    network: &HostComputeNetwork,
    ips: &[IpNetwork],
) -> Result<Vec<EndpointPolicy>, Error> {
    let mut policies = Vec::new();
    let mut nat = NatMerge::default();
    for user in &conf.policies {
        match &user.policy {
            EndpointPolicy::OutboundNat(settings) if settings.destinations.is_empty() => {
                nat.merge(&user.source, settings)?;
            }
            other => policies.push(other.clone()),
        }
    }
    for exception in kind.nat_exceptions(&conf.kind, network)? {
        nat.add_exception(&exception.source, &exception.cidr)?;
    }
    if let Some(merged) = nat.finish() {
        policies.push(EndpointPolicy::OutboundNat(merged));
    }
    for mapping in &conf.port_mappings {
        policies.push(port_mapping(mapping, conf.flags.local_routed_port_mapping));
        if conf.flags.allow_acl_port_mapping {
            policies.push(allow_acl(mapping));
        }
    }
    if conf.loopback_dsr {
        policies.push(EndpointPolicy::OutboundNat(OutboundNatPolicy {
            destinations: ips.iter().map(|ip| ip.ip().to_string()).collect(),
            ..OutboundNatPolicy::default()
        }));
    }
    // A user policy the plugin would add anyway (sdnoverlay configs carry the host's
    // ProviderAddress) is not repeated.
    for extra in kind.extra_policies(&conf.kind, network, ips)? {
        if !policies.contains(&extra) {
            policies.push(extra);
        }
    }
    Ok(policies)
}

/// A CIDR in `address/prefix` form (a bare address is refused: it is usually a typo).
pub fn parse_cidr(text: &str) -> Option<IpNetwork> {
    let text = text.trim();
    text.contains('/').then(|| text.parse().ok()).flatten()
}

/// The OutBoundNAT being merged, and which entry set its non-exception settings.
#[derive(Default)]
struct NatMerge {
    merged: Option<(String, OutboundNatPolicy)>,
    seen: Vec<IpNetwork>,
}

impl NatMerge {
    fn merge(&mut self, source: &str, settings: &OutboundNatPolicy) -> Result<(), Error> {
        let (first_source, merged) = self.merged.get_or_insert_with(|| {
            (
                source.to_owned(),
                OutboundNatPolicy {
                    exceptions: Vec::new(),
                    ..settings.clone()
                },
            )
        });
        let same_shape = merged.virtual_ip == settings.virtual_ip
            && merged.flags == settings.flags
            && merged.max_port_pool_usage == settings.max_port_pool_usage;
        if !same_shape {
            return Err(Error::invalid_config(format!(
                "{source}: OutBoundNAT differs from {first_source} in VirtualIP, Flags or MaxPortPoolUsage; \
                 an endpoint gets one OutBoundNAT, so list all exceptions in one policy"
            )));
        }
        for exception in &settings.exceptions {
            self.add_exception(&format!("{source} OutBoundNAT"), exception)?;
        }
        Ok(())
    }

    fn add_exception(&mut self, source: &str, cidr: &str) -> Result<(), Error> {
        let parsed: IpNetwork = parse_cidr(cidr).ok_or_else(|| {
            Error::invalid_config(format!(
                "{source}: exception {} is not a CIDR (expected e.g. 10.244.0.0/16)",
                cni::quoted(cidr)
            ))
        })?;
        if self.seen.contains(&parsed) {
            return Ok(());
        }
        self.seen.push(parsed);
        let (_, merged) = self
            .merged
            .get_or_insert_with(|| (source.to_owned(), OutboundNatPolicy::default()));
        merged.exceptions.push(cidr.trim().to_owned());
        Ok(())
    }

    fn finish(self) -> Option<OutboundNatPolicy> {
        self.merged.map(|(_, policy)| policy)
    }
}

fn port_mapping(mapping: &PortMapping, local_routed: bool) -> EndpointPolicy {
    let mut flags = nat_flags::NONE;
    if local_routed {
        flags |= nat_flags::LOCAL_ROUTED_VIP;
    }
    if mapping.host_ip.is_some_and(|ip| ip.is_ipv6()) {
        flags |= nat_flags::IPV6;
    }
    EndpointPolicy::PortMapping(PortMappingPolicy {
        protocol: mapping.protocol,
        internal_port: mapping.container_port,
        external_port: mapping.host_port,
        vip: mapping.host_ip.as_ref().map(IpAddr::to_string),
        flags: (flags != nat_flags::NONE).then_some(flags),
    })
}

/// `allowAclPortMapping`: let inbound traffic reach the mapped container port.
fn allow_acl(mapping: &PortMapping) -> EndpointPolicy {
    EndpointPolicy::Acl(AclPolicy {
        id: None,
        protocols: Some(mapping.protocol.to_string()),
        action: AclAction::Allow,
        direction: AclDirection::In,
        local_addresses: None,
        remote_addresses: None,
        local_ports: Some(mapping.container_port.to_string()),
        remote_ports: None,
        rule_type: Some(AclRuleType::Switch),
        priority: None,
    })
}
