//! Which reservations a collector may release: one rule for every collector of the store, the
//! runtime's GC (host-local's own and the plugins'), `cni-win sweep` and `cni-win doctor`, so a
//! fix to it cannot be remembered in one and forgotten in another.
//!
//! A reservation is released only when all of these hold:
//! - it is a pod's: not one a node component made by running host-local directly in the pods'
//!   store ([`Owner::is_node_component`]: kube-proxy's source VIP);
//! - its attachment is not kept (the runtime's still-valid attachments, or for the node tools
//!   the attachments that still have an endpoint);
//! - no address of its attachment is held by an HNS endpoint on the network (kube-proxy's own
//!   nameless endpoint for the source VIP, remote endpoints, anything the collector cannot
//!   prove dead): an address is never freed while an endpoint holds it, or the next pod would
//!   receive an address HNS refuses, or worse, shares.

use std::collections::HashSet;
use std::net::IpAddr;

use cni::GcAttachment;

use crate::layout::{Content, Owner};

/// What a collector keeps; see the module docs for the rule.
#[derive(Debug, Clone, Default)]
pub struct Retention {
    attachments: HashSet<(String, String)>,
    containers: HashSet<String>,
    held: HashSet<IpAddr>,
}

impl Retention {
    /// Keeps `attachments` (and pre-2018 reservations of their containers, which name no
    /// interface) and, always, the node components' reservations.
    pub fn attachments<'a>(attachments: impl IntoIterator<Item = &'a GcAttachment>) -> Retention {
        let mut retention = Retention::default();
        for attachment in attachments {
            retention
                .attachments
                .insert((attachment.container_id.clone(), attachment.ifname.clone()));
            retention.containers.insert(attachment.container_id.clone());
        }
        retention
    }

    /// Also keeps every attachment holding one of `addresses`: the addresses endpoints on the
    /// network hold.
    pub fn holding(mut self, addresses: impl IntoIterator<Item = IpAddr>) -> Retention {
        self.held.extend(addresses);
        self
    }

    /// The addresses endpoints hold.
    pub fn held(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.held.iter().copied()
    }

    /// The reservations among `reservations` (a store as [`crate::HostLocal::reservations`]
    /// read it) that GC with this retention releases: what a sweep removes and doctor
    /// reports, by GC's own rule. Empty or corrupt files are GC's to reclaim, not a sweep's.
    pub fn releasable(&self, reservations: &[(IpAddr, Content)]) -> Vec<(IpAddr, Owner)> {
        let holding: HashSet<&Owner> = reservations
            .iter()
            .filter(|(ip, _)| self.held.contains(ip))
            .filter_map(|(_, content)| match content {
                Content::Owned(owner) => Some(owner),
                _ => None,
            })
            .collect();
        reservations
            .iter()
            .filter_map(|(ip, content)| match content {
                Content::Owned(owner) if !self.keeps_owner(owner) && !holding.contains(owner) => {
                    Some((*ip, owner.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// Whether `owner`'s reservations stay whatever their addresses: a node component's, or
    /// an attachment the collector was told to keep. (Whether an endpoint holds one of its
    /// addresses is the store's to find out: it knows every address of the owner.)
    pub fn keeps_owner(&self, owner: &Owner) -> bool {
        owner.is_node_component()
            || match owner {
                Owner::Attachment {
                    container_id,
                    ifname,
                } => self
                    .attachments
                    .contains(&(container_id.clone(), ifname.clone())),
                Owner::Legacy { container_id } => self.containers.contains(container_id),
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attachment(container_id: &str, ifname: &str) -> GcAttachment {
        GcAttachment {
            container_id: container_id.to_owned(),
            ifname: ifname.to_owned(),
        }
    }

    #[test]
    fn keeps_listed_attachments_their_legacy_files_and_node_components() {
        let listed = [attachment("a", "eth0")];
        let retention = Retention::attachments(&listed);
        assert!(retention.keeps_owner(&Owner::attachment("a", "eth0")));
        assert!(retention.keeps_owner(&Owner::Legacy {
            container_id: "a".to_owned()
        }));
        assert!(!retention.keeps_owner(&Owner::attachment("a", "eth1")));
        assert!(!retention.keeps_owner(&Owner::attachment("b", "eth0")));
        for (container_id, ifname) in [("dummy", "dummy"), ("kube-proxy", "source-vip")] {
            assert!(
                Retention::default().keeps_owner(&Owner::attachment(container_id, ifname)),
                "{container_id}/{ifname}"
            );
        }
    }

    #[test]
    fn held_addresses_are_kept_by_address() {
        let ip: IpAddr = "10.244.1.9".parse().unwrap();
        let retention = Retention::default().holding([ip, ip]);
        assert_eq!(retention.held().collect::<Vec<_>>(), [ip]);
    }
}
