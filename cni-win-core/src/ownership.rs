//! The one rule by which every collector of a node decides what is whose and what is dead:
//! the plugins' GC, `cni-win sweep` and `cni-win doctor` all judge through this module, so a fix
//! to it reaches all three.
//!
//! **Whose an endpoint is** ([`owner`]). An endpoint is provably the endpoint of an attachment
//! of a network when it is local (no `RemoteEndpoint` flag), on that network (its
//! `HostComputeNetwork` is the network's ID), and either
//! - its name is cni-win's name of an attachment (`<containerID>_<network>` or
//!   `<containerID>_<network>@<ifname>`) **and** its ID is that attachment's deterministic GUID
//!   (made by cni-win), or
//! - its name is `<containerID>_<network>` with a valid container ID and any other ID (made
//!   by the reference plugin for the attachment of that container on this network).
//!
//! Anything else on the network (Flannel's `cbr0_ep`, kube-proxy's nameless endpoint, remote
//! endpoints, an `…@ifname` name under an ID cni-win did not derive) belongs to someone else
//! and is never touched.
//!
//! **Whether it is dead** ([`judge`]). What counts as alive depends on who asks: the runtime's
//! GC lists the attachments still in use ([`Liveness::Listed`]); the node tools, which have no
//! runtime to ask, take an endpoint attached to a namespace HNS still has as alive
//! ([`Liveness::Namespaces`]). Either way the caller then asks the attachment's lock whether a
//! command is in flight before it removes anything.
//!
//! **Which reservations may go** ([`Retention`], host-local's rule): never a node component's
//! (kube-proxy's source VIP), never one whose attachment is kept, never an address an endpoint
//! on the network still holds.

use std::collections::BTreeSet;

use cni::GcAttachment;
use hns::Guid;
use hns::schema::{EndpointFlags, HostComputeEndpoint};
pub use ipam_host_local::Retention;

use crate::identity::{endpoint_guid, parse_endpoint_name};

/// The interface name the runtime gives a pod's only interface (containerd's default), under
/// which host-local holds the addresses of the reference's attachments.
const DEFAULT_IFNAME: &str = "eth0";

/// The attachment an endpoint of network `network` (named so, with ID `network_id`) is
/// provably the endpoint of (see the module docs), or `None`: GC never touches it.
pub fn owner<'e>(
    network: &str,
    network_id: Guid,
    endpoint: &'e HostComputeEndpoint,
) -> Option<Owner<'e>> {
    let local = !endpoint.flags.contains(EndpointFlags::REMOTE_ENDPOINT);
    if !local || endpoint.host_compute_network != network_id {
        return None;
    }
    let (container_id, ifname) = parse_endpoint_name(network, &endpoint.name)?;
    if endpoint.id == endpoint_guid(network, container_id, ifname) {
        Some(Owner::CniWin {
            container_id,
            ifname,
        })
    } else if endpoint.name == crate::reference::endpoint_name(network, container_id) {
        Some(Owner::Reference { container_id })
    } else {
        None
    }
}

/// Whose endpoint a local endpoint of the network is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner<'e> {
    /// cni-win's, for exactly this attachment.
    CniWin {
        /// The attachment's container.
        container_id: &'e str,
        /// The attachment's interface.
        ifname: &'e str,
    },
    /// The reference plugin's, for the attachment of this container (whatever its ifname:
    /// the reference names one endpoint per container and network).
    Reference {
        /// The attachment's container.
        container_id: &'e str,
    },
}

impl Owner<'_> {
    /// Whether the attachment this endpoint belongs to is among `valid`.
    pub fn is_valid(&self, valid: &[GcAttachment]) -> bool {
        match *self {
            Owner::CniWin {
                container_id,
                ifname,
            } => valid
                .iter()
                .any(|a| a.container_id == container_id && a.ifname == ifname),
            Owner::Reference { container_id } => {
                valid.iter().any(|a| a.container_id == container_id)
            }
        }
    }

    /// The attachment whose addresses IPAM must keep while the endpoint exists (the
    /// reference's pods were all `eth0`: it ran only under containerd, one interface per pod).
    pub fn attachment(&self) -> GcAttachment {
        let (container_id, ifname) = match *self {
            Owner::CniWin {
                container_id,
                ifname,
            } => (container_id, ifname),
            Owner::Reference { container_id } => (container_id, DEFAULT_IFNAME),
        };
        GcAttachment {
            container_id: container_id.to_owned(),
            ifname: ifname.to_owned(),
        }
    }
}

/// What tells a collector that an attachment is still in use.
#[derive(Debug, Clone, Copy)]
pub enum Liveness<'a> {
    /// The runtime's `cni.dev/valid-attachments` (empty when it listed none: libcni's meaning).
    Listed(&'a [GcAttachment]),
    /// The HCN namespaces that exist: an endpoint attached to one of them is alive, one
    /// attached to none or to a namespace that is gone is not (its pod is gone, or its ADD
    /// died before the attach).
    Namespaces(&'a BTreeSet<Guid>),
}

/// Why an endpoint of an attachment is dead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dead {
    /// The runtime did not list its attachment.
    NotListed,
    /// It is attached to a namespace HNS no longer has.
    NamespaceGone(Guid),
    /// It is attached to no namespace.
    Unattached,
}

impl std::fmt::Display for Dead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dead::NotListed => write!(f, "its attachment is not in cni.dev/valid-attachments"),
            Dead::NamespaceGone(namespace) => {
                write!(f, "its namespace {namespace} no longer exists")
            }
            Dead::Unattached => write!(f, "attached to no namespace"),
        }
    }
}

/// What the rule says of one endpoint of network `network` (ID `network_id`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Not provably an attachment's: never touched.
    NotOurs,
    /// An attachment's, in use.
    Alive(GcAttachment),
    /// An attachment's, dead: remove it as DEL would (once no command of it is in flight).
    Dead(GcAttachment, Dead),
}

/// Judges one endpoint by the rule (see the module docs).
pub fn judge(
    network: &str,
    network_id: Guid,
    endpoint: &HostComputeEndpoint,
    liveness: Liveness<'_>,
) -> Verdict {
    let Some(owner) = owner(network, network_id, endpoint) else {
        return Verdict::NotOurs;
    };
    let attachment = owner.attachment();
    let namespace = endpoint.host_compute_namespace;
    let dead = match liveness {
        Liveness::Listed(valid) => (!owner.is_valid(valid)).then_some(Dead::NotListed),
        Liveness::Namespaces(_) if namespace.is_zero() => Some(Dead::Unattached),
        Liveness::Namespaces(namespaces) => {
            (!namespaces.contains(&namespace)).then_some(Dead::NamespaceGone(namespace))
        }
    };
    match dead {
        Some(why) => Verdict::Dead(attachment, why),
        None => Verdict::Alive(attachment),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(name: &str, id: Guid, network: Guid, flags: EndpointFlags) -> HostComputeEndpoint {
        HostComputeEndpoint {
            id,
            name: name.to_owned(),
            host_compute_network: network,
            flags,
            ..HostComputeEndpoint::default()
        }
    }

    #[test]
    fn provably_ours_means_our_guid_or_the_references_plain_name() {
        let network = Guid::from_u128(7);
        let ours = endpoint_guid("cbr0", "pod", "eth1");
        let random = Guid::from_u128(42);
        let owner = |name: &str, id, net, flags| {
            let e = endpoint(name, id, net, flags);
            owner("cbr0", network, &e).map(|o| o.attachment())
        };
        let attachment = |container_id: &str, ifname: &str| GcAttachment {
            container_id: container_id.to_owned(),
            ifname: ifname.to_owned(),
        };
        assert_eq!(
            owner("pod_cbr0@eth1", ours, network, EndpointFlags::NONE),
            Some(attachment("pod", "eth1"))
        );
        assert_eq!(
            owner("pod_cbr0", random, network, EndpointFlags::NONE),
            Some(attachment("pod", "eth0"))
        );
        // An @ifname name under an ID we did not derive, a remote endpoint, another network,
        // foreign names: nobody's.
        assert_eq!(
            owner("pod_cbr0@eth1", random, network, EndpointFlags::NONE),
            None
        );
        assert_eq!(
            owner("pod_cbr0", random, network, EndpointFlags::REMOTE_ENDPOINT),
            None
        );
        assert_eq!(
            owner("pod_cbr0", random, Guid::from_u128(8), EndpointFlags::NONE),
            None
        );
        assert_eq!(owner("cbr0_ep", random, network, EndpointFlags::NONE), None);
    }

    #[test]
    fn a_reference_endpoint_is_valid_whatever_ifname_its_attachment_has() {
        let e = endpoint(
            "pod_cbr0",
            Guid::from_u128(42),
            Guid::from_u128(7),
            EndpointFlags::NONE,
        );
        let owner = owner("cbr0", Guid::from_u128(7), &e).unwrap();
        let valid = |ifname: &str| {
            vec![GcAttachment {
                container_id: "pod".to_owned(),
                ifname: ifname.to_owned(),
            }]
        };
        assert!(owner.is_valid(&valid("eth0")));
        assert!(owner.is_valid(&valid("net1")));
        assert!(!owner.is_valid(&[]));
        let ours = endpoint(
            "pod_cbr0",
            endpoint_guid("cbr0", "pod", "eth0"),
            Guid::from_u128(7),
            EndpointFlags::NONE,
        );
        let ours = super::owner("cbr0", Guid::from_u128(7), &ours).unwrap();
        assert!(ours.is_valid(&valid("eth0")));
        assert!(!ours.is_valid(&valid("net1")));
    }

    #[test]
    fn the_runtimes_list_or_the_namespaces_say_what_is_alive() {
        let network = Guid::from_u128(7);
        let mut e = endpoint(
            "pod_cbr0",
            endpoint_guid("cbr0", "pod", "eth0"),
            network,
            EndpointFlags::NONE,
        );
        let pod = GcAttachment {
            container_id: "pod".to_owned(),
            ifname: "eth0".to_owned(),
        };
        let listed = [pod.clone()];
        assert_eq!(
            judge("cbr0", network, &e, Liveness::Listed(&listed)),
            Verdict::Alive(pod.clone())
        );
        assert_eq!(
            judge("cbr0", network, &e, Liveness::Listed(&[])),
            Verdict::Dead(pod.clone(), Dead::NotListed)
        );
        let live = BTreeSet::from([Guid::from_u128(1)]);
        assert_eq!(
            judge("cbr0", network, &e, Liveness::Namespaces(&live)),
            Verdict::Dead(pod.clone(), Dead::Unattached)
        );
        e.host_compute_namespace = Guid::from_u128(1);
        assert_eq!(
            judge("cbr0", network, &e, Liveness::Namespaces(&live)),
            Verdict::Alive(pod.clone())
        );
        e.host_compute_namespace = Guid::from_u128(2);
        assert_eq!(
            judge("cbr0", network, &e, Liveness::Namespaces(&live)),
            Verdict::Dead(pod, Dead::NamespaceGone(Guid::from_u128(2)))
        );
        e.flags = EndpointFlags::REMOTE_ENDPOINT;
        assert_eq!(
            judge("cbr0", network, &e, Liveness::Listed(&[])),
            Verdict::NotOurs
        );
    }
}
