//! The endpoint's policies, composed from the config in a fixed order: the user's policies,
//! ONE merged OutBoundNAT, a PortMapping (and with `allowAclPortMapping` an ACL) per runtime
//! port mapping, with any such ACL the allow-all fallback pair, with any switch ACL the
//! Host-layer allow-alls, loopback DSR, then the plugin's own (the overlay's ProviderAddress)
//! unless the user already wrote the same policy.
//!
//! An endpoint with any ACL denies all traffic no ACL allows on Windows Server 2025
//! (microsoft/Windows-Containers#616) and, likely, on Windows Server 2022's L2Bridge and Overlay
//! networks once an ACL blocks, so a lone Allow for a mapped port could cut the pod off. Every
//! ACL cni-win writes therefore comes with allow-all rules, In and Out, at the lowest
//! precedence ([`acl_fallback::rules`]): the endpoint behaves the same on every build. The
//! user's own ACLs are sent as written, without it: they are the user's security policy, a
//! default-deny may be what they mean, and an added allow-all could tie with their own
//! catch-all rule (`cni-win doctor` warns where they lack it). Switch ACLs, the user's
//! included, come with Host-layer allow-alls, as Calico and Azure NPM write them
//! ([`acl_fallback::host_rules`]): they widen no switch rule.
//!
//! The reference appends a second OutBoundNAT for `ipMasqNetwork` next to the user's; here
//! every OutBoundNAT that only lists exceptions is merged into one, with the plugin's
//! exceptions (`ipMasqNetwork`, the overlay subnet) appended, duplicates dropped and the order
//! kept. Every exception is a CIDR (`address/prefix`), parsed where the policy is read.

use cni::Error;
use hns::schema::policy::{
    AclAction, AclDirection, AclPolicy, AclRuleType, OutboundNatPolicy, PortMappingPolicy,
};
use hns::schema::{AddressOrPrefix, EndpointPolicy, HostComputeNetwork, IpPrefix, NatFlags};
use ipnetwork::IpNetwork;

use crate::acl_fallback;
use crate::config::{Conf, PortMapping};
use crate::kind::NetworkKind;

/// Every policy the endpoint of this attachment must carry, in order.
pub(crate) fn compose<K: NetworkKind>(
    conf: &Conf<K>,
    network: &HostComputeNetwork,
    ips: &[IpNetwork],
) -> Result<Vec<EndpointPolicy>, Error> {
    let kind = &conf.kind;
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
    for exception in kind.nat_exceptions(network)? {
        nat.add_exception(&exception.source, IpPrefix::from(exception.network));
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
    if conf.flags.allow_acl_port_mapping && !conf.port_mappings.is_empty() {
        for fallback in acl_fallback::rules() {
            if !policies.iter().any(|policy| policy.effect() == fallback) {
                policies.push(fallback);
            }
        }
    }
    add_host_layer(&mut policies);
    if conf.loopback_dsr {
        policies.push(EndpointPolicy::OutboundNat(OutboundNatPolicy {
            destinations: ips.iter().map(IpNetwork::ip).collect(),
            ..OutboundNatPolicy::default()
        }));
    }
    // A user policy the plugin would add anyway (sdnoverlay configs carry the host's
    // ProviderAddress, spelt as they like) is not repeated.
    for extra in kind.extra_policies(network, ips)? {
        if !policies.iter().any(|policy| policy.effect() == extra) {
            policies.push(extra);
        }
    }
    Ok(policies)
}

/// Adds the Host-layer allow-alls that `policies`' switch ACLs go with
/// ([`acl_fallback::host_rules`]); ADD runs it again once the NetworkPolicy snapshot's rules
/// are in, so they get theirs even from a snapshot written without them.
pub(crate) fn add_host_layer(policies: &mut Vec<EndpointPolicy>) {
    let acls: Vec<AclPolicy> = policies
        .iter()
        .filter_map(|policy| match policy.effect() {
            EndpointPolicy::Acl(acl) => Some(acl),
            _ => None,
        })
        .collect();
    policies.extend(
        acl_fallback::host_rules(&acls)
            .into_iter()
            .map(EndpointPolicy::Acl),
    );
}

/// Takes out the Host-layer allow-alls [`add_host_layer`] put in (the last of each), for
/// CHECK: they are the plugins' precaution beside switch ACLs, as production writes them, not
/// something the config says, and an endpoint the reference plugin or an older cni-win made
/// has none and works; CHECK does not hold an endpoint to them.
pub(crate) fn drop_host_layer(policies: &mut Vec<EndpointPolicy>) {
    for direction in [AclDirection::In, AclDirection::Out] {
        let ours = EndpointPolicy::Acl(AclPolicy::host_allow_all(direction));
        if let Some(at) = policies.iter().rposition(|policy| policy.effect() == ours) {
            policies.remove(at);
        }
    }
}

/// The OutBoundNAT being merged, and which entry set its non-exception settings.
#[derive(Default)]
struct NatMerge {
    merged: Option<(String, OutboundNatPolicy)>,
    seen: Vec<IpPrefix>,
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
            match exception {
                AddressOrPrefix::Prefix(prefix) => self.add_exception(source, *prefix),
                // HNS would except that one host only: almost always a forgotten `/prefix`.
                AddressOrPrefix::Address(_) => {
                    return Err(Error::invalid_config(format!(
                        "{source} OutBoundNAT exception: \"{exception}\" is not a CIDR (expected e.g. 10.244.0.0/16)"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Adds `exception` unless already listed.
    fn add_exception(&mut self, source: &str, exception: IpPrefix) {
        if self.seen.contains(&exception) {
            return;
        }
        self.seen.push(exception);
        let (_, merged) = self
            .merged
            .get_or_insert_with(|| (source.to_owned(), OutboundNatPolicy::default()));
        merged.exceptions.push(exception.into());
    }

    fn finish(self) -> Option<OutboundNatPolicy> {
        self.merged.map(|(_, policy)| policy)
    }
}

fn port_mapping(mapping: &PortMapping, local_routed: bool) -> EndpointPolicy {
    let mut flags = NatFlags::NONE;
    if local_routed {
        flags |= NatFlags::LOCAL_ROUTED_VIP;
    }
    if mapping.host_ip.is_some_and(|ip| ip.is_ipv6()) {
        flags |= NatFlags::IPV6;
    }
    EndpointPolicy::PortMapping(PortMappingPolicy {
        protocol: mapping.protocol,
        internal_port: mapping.container_port,
        external_port: mapping.host_port,
        vip: mapping.host_ip,
        flags,
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
