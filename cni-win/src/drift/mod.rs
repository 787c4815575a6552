//! Where HNS and the node's own records (the host-local stores, the configs) disagree, or HNS
//! holds what cannot be right, found in the node's one read and named by reason: the node
//! daemon's `cniwin_hns_drift` metrics, doctor's drift lines, the log line when a reason
//! appears or clears. The field's reports give the cases (`docs/hns-drift.md` names them);
//! the HCN emulator can inject each (`hns_emulator::Injection`, `hns_emulator::Outage`).
//!
//! Finding costs no HCN call: everything comes from the round's read. What happens to each is
//! decided by whose it is ([`Reason::whose`]): what the one rule of every collector proves is
//! cni-win's and dead is the sweep's ([`cni_win_core::ownership`], [`crate::sweep`]); a remote
//! endpoint on an address of this node's own pod subnet that a live pod of cni-win's holds is
//! [`repair`]ed with `--apply`; everything else (kube-proxy's load balancers and its other
//! remote endpoints, flanneld's network, other plugins' endpoints) is reported, never touched.
//! An unread HNS is never taken for absent objects: it is one drift, and nothing else is
//! found or repaired that round.

mod addresses;
mod balancers;
mod flannel;
pub mod repair;

use std::net::IpAddr;

use cni::GcAttachment;
use cni_win_core::snapshot::Stale;
use hns::Guid;

use crate::node::Node;
use crate::sweep::{self, AttachmentLocks};

/// What kind of drift (see `docs/hns-drift.md` for each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// An endpoint of cni-win's attached to no namespace, no command of its attachment in
    /// flight.
    EndpointDetached,
    /// An endpoint of cni-win's whose attachment holds no reservation.
    EndpointWithoutReservation,
    /// A pod's reservation whose attachment has no endpoint, no command in flight.
    ReservationWithoutEndpoint,
    /// A pod's reservation whose attachment has no endpoint while HNS holds a namespace no
    /// endpoint is attached to: HNS may have dropped a live pod's endpoint, so it is kept.
    EndpointLost,
    /// A pod's reservation of a network HNS no longer has.
    NetworkGone,
    /// Two or more endpoints of cni-win's holding one address.
    DuplicateAddressOurs,
    /// An endpoint of cni-win's and a remote endpoint holding one address.
    DuplicateAddressRemote,
    /// An endpoint of cni-win's and another component's local endpoint holding one address.
    DuplicateAddressForeign,
    /// A remote endpoint on an address of this node's own pod subnet that no endpoint of
    /// cni-win's holds.
    RemoteEndpointInPodSubnet,
    /// A load balancer with no port mapping or no backend.
    LoadBalancerHalfCreated,
    /// A load balancer naming a backend endpoint that no longer exists.
    LoadBalancerBackendGone,
    /// subnet.env leases this node a subnet, and HNS holds no network of the config's name.
    FlannelNetworkMissing,
    /// HNS's network of the config's name does not hold the subnet subnet.env leases.
    FlannelNetworkStale,
    /// HNS could not be reached or read.
    HnsUnreadable,
}

impl Reason {
    /// Every reason.
    pub const ALL: [Reason; 14] = [
        Reason::EndpointDetached,
        Reason::EndpointWithoutReservation,
        Reason::ReservationWithoutEndpoint,
        Reason::EndpointLost,
        Reason::NetworkGone,
        Reason::DuplicateAddressOurs,
        Reason::DuplicateAddressRemote,
        Reason::DuplicateAddressForeign,
        Reason::RemoteEndpointInPodSubnet,
        Reason::LoadBalancerHalfCreated,
        Reason::LoadBalancerBackendGone,
        Reason::FlannelNetworkMissing,
        Reason::FlannelNetworkStale,
        Reason::HnsUnreadable,
    ];

    /// The word for it (the metrics' label, the log's and doctor's).
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::EndpointDetached => "endpoint-detached",
            Reason::EndpointWithoutReservation => "endpoint-without-reservation",
            Reason::ReservationWithoutEndpoint => "reservation-without-endpoint",
            Reason::EndpointLost => "endpoint-lost",
            Reason::NetworkGone => "network-gone",
            Reason::DuplicateAddressOurs => "duplicate-address-ours",
            Reason::DuplicateAddressRemote => "duplicate-address-remote",
            Reason::DuplicateAddressForeign => "duplicate-address-foreign",
            Reason::RemoteEndpointInPodSubnet => "remote-endpoint-in-pod-subnet",
            Reason::LoadBalancerHalfCreated => "load-balancer-half-created",
            Reason::LoadBalancerBackendGone => "load-balancer-backend-gone",
            Reason::FlannelNetworkMissing => "flannel-network-missing",
            Reason::FlannelNetworkStale => "flannel-network-stale",
            Reason::HnsUnreadable => "hns-unreadable",
        }
    }

    /// Whose the object is, which decides what cni-win may do with it.
    pub fn whose(self) -> &'static str {
        match self {
            Reason::EndpointDetached
            | Reason::EndpointWithoutReservation
            | Reason::ReservationWithoutEndpoint
            | Reason::NetworkGone
            | Reason::DuplicateAddressOurs => "cni-win's",
            Reason::DuplicateAddressRemote | Reason::RemoteEndpointInPodSubnet => {
                "the remote endpoint is kube-proxy's (or the overlay controller's)"
            }
            Reason::DuplicateAddressForeign => {
                "the other endpoint is another component's (another plugin, an operator's \
                 script)"
            }
            Reason::LoadBalancerHalfCreated | Reason::LoadBalancerBackendGone => "kube-proxy's",
            Reason::FlannelNetworkMissing | Reason::FlannelNetworkStale => "flanneld's",
            Reason::HnsUnreadable | Reason::EndpointLost => "HNS's",
        }
    }

    /// What cni-win does about it, and what the operator does.
    pub fn remedy(self) -> &'static str {
        match self {
            Reason::EndpointDetached | Reason::ReservationWithoutEndpoint => {
                "the sweep removes it as DEL would (`cni-win sweep --apply`, or the daemon with \
                 --apply)"
            }
            Reason::NetworkGone => {
                "the sweep releases the pods' reservations (`cni-win sweep --apply`) once no \
                 namespace is left without an endpoint; kube-proxy's source VIP is kept"
            }
            Reason::EndpointLost => {
                "HNS dropped the endpoint of a pod that may still run (an HNS restart that loses \
                 endpoints): its address is kept until no namespace is left without an endpoint; \
                 delete the pods whose network is gone (`kubectl delete pod`) so that they are \
                 recreated"
            }
            Reason::EndpointWithoutReservation => {
                "its address may be handed out twice: delete the pod (its DEL removes the \
                 endpoint) and let it be recreated"
            }
            Reason::DuplicateAddressOurs => {
                "one of the pods has the wrong endpoint: delete the pod that started last (`kubectl \
                 delete pod`), or drain the node; `cni-win sweep --apply` removes a dead one"
            }
            Reason::DuplicateAddressRemote => {
                "the daemon with --apply removes the remote endpoint when the address is in this \
                 node's pod subnet (kube-proxy re-creates what it needs); otherwise `hnsctl \
                 endpoint delete ID` of the remote endpoint, then restart kube-proxy"
            }
            Reason::DuplicateAddressForeign => {
                "find which component made the other endpoint (`hnsctl endpoint show ID`) and \
                 delete it there, or delete the pod; cni-win never removes it"
            }
            Reason::RemoteEndpointInPodSubnet => {
                "no other node can own the address: restart kube-proxy (it drops remote endpoints \
                 it no longer needs); if it stays, `hnsctl endpoint delete ID`"
            }
            Reason::LoadBalancerHalfCreated => {
                "restart kube-proxy, which programs its Services again; if it stays, `hnsctl lb \
                 delete ID` and restart kube-proxy (kubernetes#141488: some versions crash on it)"
            }
            Reason::LoadBalancerBackendGone => {
                "kube-proxy replaces it on its next sync of the Service; if it stays, restart \
                 kube-proxy"
            }
            Reason::FlannelNetworkMissing => {
                "check that flanneld runs on the node (its log says why it has not created the \
                 network); a reboot drops its network until flanneld starts again"
            }
            Reason::FlannelNetworkStale => {
                "flanneld's lease changed and the network is the old lease's: restart flanneld \
                 (it re-creates the network), then delete the pods still on the old subnet"
            }
            Reason::HnsUnreadable => {
                "start the Host Network Service (Start-Service hns) and check its event log; \
                 nothing is removed while HNS cannot be read"
            }
        }
    }

    /// Whether the sweep removes what this reason names (doctor's "stale" line says so
    /// already).
    pub fn is_the_sweeps(self) -> bool {
        matches!(
            self,
            Reason::EndpointDetached | Reason::ReservationWithoutEndpoint | Reason::NetworkGone
        )
    }

    /// Whether a pod's traffic is broken by it (doctor fails) rather than at risk: a remote
    /// endpoint in the pod subnet fails every ADD host-local gives its address to.
    pub fn breaks_pods(self) -> bool {
        matches!(
            self,
            Reason::EndpointLost
                | Reason::DuplicateAddressOurs
                | Reason::DuplicateAddressRemote
                | Reason::DuplicateAddressForeign
                | Reason::RemoteEndpointInPodSubnet
                | Reason::FlannelNetworkMissing
                | Reason::FlannelNetworkStale
                | Reason::HnsUnreadable
        )
    }
}

/// One object (or read) out of step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    /// Why.
    pub reason: Reason,
    /// The HNS network it is on, if it is on one.
    pub network: Option<String>,
    /// What it is: `endpoint <name> (<id>)`, `reservation <ip>`, a load balancer, or why HNS
    /// was not read.
    pub object: String,
    /// What `--apply` repairs, when the object is provably wrong ([`repair`]).
    pub repair: Option<RemoteOnPodAddress>,
}

/// A remote endpoint on an address of this node's own pod subnet that a live pod of cni-win's
/// holds: no other node can own the address, so the remote endpoint cannot be right.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteOnPodAddress {
    /// The remote endpoint.
    pub remote: Guid,
    /// The address.
    pub ip: IpAddr,
    /// The pod's endpoint.
    pub pod: Guid,
    /// The pod's attachment, claimed while the remote endpoint is removed.
    pub attachment: GcAttachment,
}

/// Everything `node` shows out of step: network by network (its subnet.env against its HNS
/// network, its store against its endpoints, its addresses), then the load balancers.
pub fn find(node: &Node) -> Vec<Drift> {
    let snapshot = match &node.hns {
        Ok(snapshot) => snapshot,
        Err(unread) => {
            return vec![Drift {
                reason: Reason::HnsUnreadable,
                network: None,
                object: unread.to_string(),
                repair: None,
            }];
        }
    };
    let mut found = Vec::new();
    for network in node.networks() {
        let Ok(view) = snapshot.view(&network.config) else {
            continue;
        };
        let name = network.name();
        found.extend(flannel::find(network, view.network));
        let drift = |reason, object: String| Drift {
            reason,
            network: Some(name.to_owned()),
            object,
            repair: None,
        };
        if view.network.is_none() {
            found.extend(view.pod_reservations().iter().map(|reservation| {
                drift(
                    Reason::NetworkGone,
                    format!("reservation {}", reservation.ip),
                )
            }));
            continue;
        }
        for (stale, row) in sweep::find(&view, name, &AttachmentLocks) {
            let reason = match stale {
                Stale::Reservation(_) => Reason::ReservationWithoutEndpoint,
                Stale::Endpoint {
                    why: cni_win_core::ownership::Dead::Unattached,
                    ..
                } => Reason::EndpointDetached,
                // A pod gone without DEL: the sweep's stale objects, not drift.
                Stale::Endpoint { .. } => continue,
            };
            found.push(drift(reason, row.object));
        }
        if snapshot.has_namespace_without_endpoint() {
            found.extend(view.without_endpoint().iter().map(|reservation| {
                drift(
                    Reason::EndpointLost,
                    format!(
                        "reservation {} ({} {})",
                        reservation.ip,
                        reservation.attachment.container_id,
                        reservation.attachment.ifname
                    ),
                )
            }));
        }
        found.extend(addresses::find(snapshot, &view, name));
    }
    found.extend(balancers::find(snapshot));
    found
}
