//! Where HNS and the node's own records (the host-local stores, the configs) disagree, found in
//! one read of the node and named by reason, for the node daemon's `cniwin_hns_drift` metric.
//! The field's reports (`shared/reference/field-and-peers.md`; kubernetes#139519, calico#5164,
//! containerd#8340, Windows-Containers#631, ACN#283) give the cases; the HCN emulator models
//! the HNS behaviour behind each (`hns_emulator::Outage`), and each has a test there.
//!
//! This module only finds and names them; what happens to each is the one rule every
//! collector applies ([`cni_win_core::ownership`], the sweep):
//!
//! | reason | what it is | what happens |
//! | --- | --- | --- |
//! | `endpoint-detached` | an endpoint of cni-win's attached to no namespace: an ADD whose attach failed and whose rollback could not delete it, one that died between create and attach, or a namespace deleted before DEL | removed as DEL would, once no command of its attachment is in flight; never attached again: the runtime took that ADD as failed and either retries it (ADD adopts the endpoint and attaches it) or tears the sandbox down, and the endpoint does not say which namespace it belonged to |
//! | `remote-endpoint-on-pod-address` | another component's remote endpoint (kube-proxy's, made from a stale lease of another node) holding an address a local pod holds | reported (doctor fails its check); never removed: it is not cni-win's, and while it holds the address no collector releases that address |
//! | `network-gone` | pods' reservations of a network HNS no longer has: after a reboot, which drops networks flanneld and Antrea make non-persistent, with their endpoints and namespaces | released by the rule (no endpoint holds them); node components' (kube-proxy's source VIP) are kept |
//! | `hns-unreadable` | HNS could not be reached or read (stopped, restarting, past its deadline) | nothing is removed that round: an unread HNS is never taken for objects being absent |

use cni_win_core::ownership::{Dead, Verdict};
use hns::schema::EndpointFlags;

use crate::node::Node;

/// Why HNS and the node's records disagree (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// An endpoint of cni-win's attached to no namespace.
    EndpointDetached,
    /// A remote endpoint holding a local pod's address.
    RemoteEndpointOnPodAddress,
    /// A pod's reservation of a network HNS no longer has.
    NetworkGone,
    /// HNS could not be reached or read.
    HnsUnreadable,
}

impl Reason {
    /// Every reason.
    pub const ALL: [Reason; 4] = [
        Reason::EndpointDetached,
        Reason::RemoteEndpointOnPodAddress,
        Reason::NetworkGone,
        Reason::HnsUnreadable,
    ];

    /// The word for it (the metric's label).
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::EndpointDetached => "endpoint-detached",
            Reason::RemoteEndpointOnPodAddress => "remote-endpoint-on-pod-address",
            Reason::NetworkGone => "network-gone",
            Reason::HnsUnreadable => "hns-unreadable",
        }
    }
}

/// One object (or read) out of step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    /// Why.
    pub reason: Reason,
    /// The network it is on, if it is on one.
    pub network: Option<String>,
    /// What it is: `endpoint <name> (<id>)`, `reservation <ip>`, or why HNS was not read.
    pub object: String,
}

/// Everything `node` shows out of step, network by network.
pub fn find(node: &Node) -> Vec<Drift> {
    let snapshot = match &node.hns {
        Ok(snapshot) => snapshot,
        Err(unread) => {
            return vec![Drift {
                reason: Reason::HnsUnreadable,
                network: None,
                object: unread.to_string(),
            }];
        }
    };
    let mut found = Vec::new();
    for network in node.networks() {
        let Ok(view) = snapshot.view(&network.config) else {
            continue;
        };
        let drift = |reason, object| Drift {
            reason,
            network: Some(network.name().to_owned()),
            object,
        };
        let reservations = view.pod_reservations();
        if view.network.is_none() {
            found.extend(reservations.iter().map(|reservation| {
                drift(
                    Reason::NetworkGone,
                    format!("reservation {}", reservation.ip),
                )
            }));
            continue;
        }
        for (endpoint, verdict) in view.verdicts() {
            if let Verdict::Dead(_, Dead::Unattached) = verdict {
                found.push(drift(
                    Reason::EndpointDetached,
                    format!("endpoint {} ({})", endpoint.name, endpoint.id),
                ));
            }
        }
        for reservation in &reservations {
            let remote = snapshot.endpoints.iter().filter(|endpoint| {
                endpoint.flags.contains(EndpointFlags::REMOTE_ENDPOINT)
                    && endpoint
                        .ip_configurations
                        .iter()
                        .any(|config| config.ip_address == reservation.ip)
            });
            found.extend(remote.map(|endpoint| {
                drift(
                    Reason::RemoteEndpointOnPodAddress,
                    format!("remote endpoint {} holds {}", endpoint.id, reservation.ip),
                )
            }));
        }
    }
    found
}
