//! Endpoints the reference plugins made, recognised as the endpoints of their attachments.
//!
//! Operators swap the reference `win-bridge.exe`/`win-overlay.exe` for cni-win's while pods
//! run. The reference names an attachment's endpoint `<containerID>_<network>` (CNI_IFNAME
//! plays no part) and lets HNS choose its ID, so cni-win's lookups by the attachment's
//! deterministic GUID miss those pods. This module is the one place that recognises such an
//! endpoint; every lookup here runs only after the by-ID path missed, so the normal paths keep
//! their call counts.
//!
//! Which endpoints are the reference's is decided by the one ownership rule
//! ([`crate::ownership::owner`]); this module adopts such an endpoint on a repeated ADD and
//! compares its policies by effect on CHECK.
//!
//! Raw HCN calls of the fallbacks, measured on the emulator (closes in brackets): a CHECK
//! whose by-ID open misses adds one `HcnEnumerateEndpoints` by name, so a CHECK with no
//! endpoint at all costs 5 (6) instead of 4 (5) and a reference pod's CHECK 7 (9), against 5
//! (7) for cni-win's own; a repeated ADD of a reference pod costs 7 (9): the refused create
//! plus the by-name lookup, no attach. A new pod's ADD (7 (10)) gets here only when its
//! create fails because something holds its address: then the lookup adds 1 before the error.

use cni::{Error, Success};
use hns::schema::{EndpointFlags, EndpointPolicy};
use hns::{Client, Guid, HResult, HnsError, OpenEndpoint, OpenNetwork, RawHcn};
use ipnetwork::IpNetwork;

use crate::codes::ENDPOINT_CONFLICT;
use crate::endpoint::{self, Address};
use crate::hns_error::to_cni;

/// The reference plugins' endpoint name for container `container_id` on `network`.
pub fn endpoint_name(network: &str, container_id: &str) -> String {
    format!("{container_id}_{network}")
}

/// The reference's endpoint of container `container_id` on `network`, open, if there is one:
/// by name, local, on this network and not `ours` (the attachment's own GUID, which the by-ID
/// path handles).
///
/// Raw calls: `HcnEnumerateEndpoints` (filter `Name`) = 1 when there is none; + open + query
/// = 3 (+1 close on drop) when there is.
pub fn find<'c>(
    client: &'c Client,
    network: &OpenNetwork<'_, dyn RawHcn>,
    container_id: &str,
    ours: Guid,
) -> Result<Option<OpenEndpoint<'c, dyn RawHcn>>, Error> {
    let name = endpoint_name(&network.properties().name, container_id);
    let found = client
        .find_endpoint_by_name(&name)
        .map_err(|e| to_cni(&e, &format!("find endpoint {name}")))?;
    Ok(found.filter(|open| {
        let endpoint = open.properties();
        let local = !endpoint.flags.contains(EndpointFlags::REMOTE_ENDPOINT);
        let mine = local && endpoint.host_compute_network == network.id() && endpoint.id != ours;
        if !mine {
            log::info!(
                "endpoint {name} ({}) is not the reference plugin's endpoint of this attachment \
                 (network {}, flags {})",
                endpoint.id,
                endpoint.host_compute_network,
                endpoint.flags.bits()
            );
        }
        mine
    }))
}

/// What an ADD whose `HcnCreateEndpoint` failed claims: the attachment and what IPAM gave it.
#[derive(Debug)]
pub struct Claim<'a> {
    pub container_id: &'a str,
    pub ifname: &'a str,
    /// CNI_NETNS as given (the result's sandbox) and the namespace GUID it names.
    pub netns: &'a str,
    pub namespace: Guid,
    /// The attachment's deterministic GUID.
    pub ours: Guid,
    /// The addresses IPAM returned for the attachment.
    pub addresses: &'a [Address],
}

/// ADD after `HcnCreateEndpoint` failed with `failure`: when an endpoint holds the address or
/// a host port of the attachment (HNS reports whichever conflict it checks first) and it is
/// the reference's endpoint of this very attachment (its name, this network, local,
/// attached to this pod's namespace, holding exactly the addresses IPAM returned), the
/// attachment already exists and its result is returned.
///
/// `Ok(None)` when the failure is neither conflict or no reference endpoint of this
/// attachment exists: the caller's own error handling applies. An error naming the endpoint
/// (code 111) when the reference's endpoint exists but is not this attachment's as it stands.
pub fn adopt_holder(
    client: &Client,
    network: &OpenNetwork<'_, dyn RawHcn>,
    claim: &Claim<'_>,
    failure: &HnsError,
) -> Result<Option<Success>, Error> {
    let held = failure.raw().is_some_and(|raw| {
        raw.hresult == HResult::HCN_E_ADDR_INVALID_OR_RESERVED
            || raw.hresult == HResult::HCN_E_PORT_ALREADY_EXISTS
    });
    if !held {
        return Ok(None);
    }
    let Some(holder) = find(client, network, claim.container_id, claim.ours)? else {
        return Ok(None);
    };
    let holder = holder.properties();
    let conflict = |why: String| {
        Error::new(
            ENDPOINT_CONFLICT,
            format!(
                "the address is held by endpoint {} ({}), which the reference plugin made for \
                 this pod, but {why}; DEL the attachment (or delete that endpoint) and ADD again",
                holder.name, holder.id
            ),
        )
    };
    if holder.host_compute_namespace != claim.namespace {
        return Err(conflict(if holder.host_compute_namespace.is_zero() {
            "it is attached to no namespace".to_owned()
        } else {
            format!(
                "it is attached to namespace {}, not CNI_NETNS {}",
                holder.host_compute_namespace, claim.namespace
            )
        }));
    }
    let have = sorted_ips(endpoint::addresses_of(holder)?.iter().copied());
    let want = sorted_ips(claim.addresses.iter().map(|address| address.ip));
    if have != want {
        return Err(conflict(format!(
            "it holds {have:?} while IPAM holds {want:?} for this attachment"
        )));
    }
    log::info!(
        "endpoint {} ({}) made by the reference plugin is this attachment's: adopted",
        holder.name,
        holder.id
    );
    endpoint::result(holder, claim.ifname, claim.netns).map(Some)
}

fn sorted_ips(addresses: impl Iterator<Item = IpNetwork>) -> Vec<std::net::IpAddr> {
    let mut ips: Vec<_> = addresses.map(|network| network.ip()).collect();
    ips.sort_unstable();
    ips
}

/// The policies of `expected` that `present` does not carry, compared by what they do rather
/// than how they are laid out: the reference writes the `ipMasqNetwork` exception as a second
/// OutBoundNAT next to the user's (cni-win merges them into one) and a PortMapping's "any host
/// IP" as `"VIP": ""` (cni-win omits it). Each policy is first taken as HNS applies it
/// ([`EndpointPolicy::effect`]: a policy sent as written for keys HNS ignores counts as its
/// known keys, whatever their case). Exception-only OutBoundNATs with the same other
/// settings are compared as one set of exceptions; every other policy must be present as is.
pub fn missing_policies(
    present: &[EndpointPolicy],
    expected: &[EndpointPolicy],
) -> Vec<EndpointPolicy> {
    let present = canonical(present);
    canonical(expected)
        .into_iter()
        .filter(|policy| !present.contains(policy))
        .collect()
}

fn canonical(policies: &[EndpointPolicy]) -> Vec<EndpointPolicy> {
    let mut out: Vec<EndpointPolicy> = Vec::with_capacity(policies.len());
    for policy in policies.iter().map(EndpointPolicy::effect) {
        match &policy {
            EndpointPolicy::OutboundNat(nat) if nat.destinations.is_empty() => {
                let same_shape = |other: &EndpointPolicy| match other {
                    EndpointPolicy::OutboundNat(o) => {
                        o.destinations.is_empty()
                            && o.virtual_ip == nat.virtual_ip
                            && o.flags == nat.flags
                            && o.max_port_pool_usage == nat.max_port_pool_usage
                    }
                    _ => false,
                };
                match out.iter_mut().find(|p| same_shape(p)) {
                    Some(EndpointPolicy::OutboundNat(merged)) => {
                        merged.exceptions.extend(nat.exceptions.iter().cloned());
                    }
                    _ => out.push(EndpointPolicy::OutboundNat(nat.clone())),
                }
            }
            _ => out.push(policy),
        }
    }
    for policy in &mut out {
        if let EndpointPolicy::OutboundNat(nat) = policy {
            nat.exceptions.sort_unstable_by_key(|exception| {
                let network = exception.network();
                (network.ip(), network.prefix())
            });
            nat.exceptions.dedup();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use hns::schema::policy::{OutboundNatPolicy, PortMappingPolicy};

    use super::*;

    fn nat(exceptions: &[&str]) -> EndpointPolicy {
        EndpointPolicy::OutboundNat(OutboundNatPolicy {
            exceptions: exceptions.iter().map(|e| e.parse().unwrap()).collect(),
            ..OutboundNatPolicy::default()
        })
    }

    /// A port mapping as decoded; the reference's `"VIP":""` (`Some("")`) reads as no VIP.
    fn port(vip: Option<&str>) -> EndpointPolicy {
        EndpointPolicy::PortMapping(PortMappingPolicy {
            protocol: 6,
            internal_port: 80,
            external_port: 8080,
            vip: vip
                .filter(|vip| !vip.is_empty())
                .map(|vip| vip.parse().unwrap()),
            flags: hns::schema::NatFlags::NONE,
        })
    }

    #[test]
    fn the_references_split_layout_carries_the_merged_policies() {
        let ours = [nat(&["10.244.0.0/16", "10.96.0.0/12"]), port(None)];
        let reference = [
            port(Some("")),
            nat(&["10.96.0.0/12"]),
            nat(&["10.244.0.0/16"]),
        ];
        assert!(missing_policies(&reference, &ours).is_empty());
        // A missing exception is still a missing policy, and so is an extra one.
        let short = [nat(&["10.96.0.0/12"]), port(Some(""))];
        assert_eq!(missing_policies(&short, &ours).len(), 1);
        let long = [
            nat(&["10.96.0.0/12", "10.244.0.0/16", "10.0.0.0/8"]),
            port(None),
        ];
        assert_eq!(missing_policies(&long, &ours).len(), 1);
        // A port mapping bound to a host IP is not the "any host IP" one.
        assert_eq!(
            missing_policies(
                &[
                    nat(&["10.244.0.0/16", "10.96.0.0/12"]),
                    port(Some("10.0.0.4"))
                ],
                &ours
            )
            .len(),
            1
        );
    }
}
