//! One read of a node for the node tools (`cni-win sweep`, `cni-win doctor`, the node
//! daemon): every HNS network, endpoint, namespace and load balancer and the HNS version, read
//! once, and each configured network's host-local store read once
//! ([`crate::configured::ConfiguredNetwork`]), then judged by the one rule
//! ([`crate::ownership`]) that the plugins' GC applies too. Every check and every stale object
//! comes from the same read, so a tool never re-asks HNS for what it already has.
//!
//! Raw HCN calls of [`NodeSnapshot::read`] (closes not counted, one each per network,
//! endpoint and load balancer): the version 1, networks 1 + 2 each, endpoints 1 + 2 each,
//! namespaces 1 (IDs only), load balancers 1 + 2 each. A node with one network and three pods:
//! 13; 12 with [`NodeSnapshot::read_knowing`], which takes the version from an earlier read
//! (HNS reports a new one only after an update, which restarts it).

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::time::Instant;

use cni::{Error, GcAttachment};
use hns::schema::{HostComputeEndpoint, HostComputeLoadBalancer, HostComputeNetwork};
use hns::{Client, Guid, HnsError, SupportedFeatures};
pub use ipam_host_local::Exhausted;
use ipam_host_local::HostLocal;
use ipam_host_local::layout::{Content, Owner};

use crate::configured::ConfiguredNetwork;
use crate::ownership::{self, Dead, Liveness, Retention, Verdict};

/// What HNS holds, read once.
#[derive(Debug, Clone)]
pub struct NodeSnapshot {
    /// When the read started: what was written to HNS after it may be missing from it.
    pub read_at: Instant,
    /// The HNS version's features.
    pub features: SupportedFeatures,
    /// Every network.
    pub networks: Vec<HostComputeNetwork>,
    /// Every endpoint, of every network, local and remote.
    pub endpoints: Vec<HostComputeEndpoint>,
    /// The IDs of the namespaces that exist.
    pub namespaces: BTreeSet<Guid>,
    /// Every load balancer.
    pub load_balancers: Vec<HostComputeLoadBalancer>,
}

/// A pod's reservation in a network's host-local store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    /// The reserved address.
    pub ip: IpAddr,
    /// The attachment holding it.
    pub attachment: GcAttachment,
}

/// Something of a dead attachment, which the attachment's DEL removes.
#[derive(Debug, Clone, PartialEq)]
pub enum Stale {
    /// An endpoint the rule judged dead; DEL detaches it from `namespace` first.
    Endpoint {
        /// The endpoint.
        endpoint: Box<HostComputeEndpoint>,
        /// Its attachment.
        attachment: GcAttachment,
        /// Why it is dead.
        why: Dead,
    },
    /// A pod's reservation whose attachment has no endpoint, which no endpoint's address
    /// holds (GC's retention rule).
    Reservation(Reservation),
}

impl Stale {
    /// The attachment the object belongs to.
    pub fn attachment(&self) -> &GcAttachment {
        match self {
            Stale::Endpoint { attachment, .. } => attachment,
            Stale::Reservation(reservation) => &reservation.attachment,
        }
    }

    /// The namespace DEL detaches the endpoint from (none once it is gone or was never set).
    pub fn namespace(&self) -> Option<Guid> {
        match self {
            Stale::Endpoint { endpoint, .. } => {
                let namespace = endpoint.host_compute_namespace;
                (!namespace.is_zero()).then_some(namespace)
            }
            Stale::Reservation(_) => None,
        }
    }
}

/// One configured network as the snapshot shows it: its HNS network (if any), its endpoints
/// and its store.
#[derive(Debug)]
pub struct NetworkView<'s> {
    snapshot: &'s NodeSnapshot,
    configured: &'s ConfiguredNetwork,
    /// The HNS network of the config's name; `None` when HNS has none.
    pub network: Option<&'s HostComputeNetwork>,
    /// Every reservation of the network's host-local store, read once (in Flannel-native
    /// mode whether or not subnet.env is there); `None` for a delegated IPAM, whose store is
    /// its own.
    pub reservations: Option<Vec<(IpAddr, Content)>>,
}

impl NodeSnapshot {
    /// Reads HNS once (see the module docs for the raw calls).
    pub fn read(client: &Client) -> Result<NodeSnapshot, HnsError> {
        NodeSnapshot::read_knowing(client, client.supported_features()?)
    }

    /// Reads HNS once, but for its version, which an earlier read gave as `features`.
    pub fn read_knowing(
        client: &Client,
        features: SupportedFeatures,
    ) -> Result<NodeSnapshot, HnsError> {
        Ok(NodeSnapshot {
            read_at: Instant::now(),
            features,
            networks: client.list_networks()?,
            endpoints: client.list_endpoints(None)?,
            namespaces: client.list_namespace_ids()?.into_iter().collect(),
            load_balancers: client.list_load_balancers()?,
        })
    }

    /// Whether HNS holds a namespace no endpoint is attached to: a pod's whose ADD has not yet
    /// attached its endpoint, or a live pod's whose endpoint HNS dropped (a restart that loses
    /// endpoints, calico#5164). HNS does not say which attachment a namespace is for, so while
    /// there is one, no reservation without an endpoint can be proved a dead pod's: the node
    /// tools release none. A reboot drops every namespace with the pods, so it holds none.
    pub fn has_namespace_without_endpoint(&self) -> bool {
        let attached: BTreeSet<Guid> = self
            .endpoints
            .iter()
            .map(|endpoint| endpoint.host_compute_namespace)
            .collect();
        self.namespaces
            .iter()
            .any(|namespace| !attached.contains(namespace))
    }

    /// The network `configured` as this read shows it, with its store read once and only
    /// read: a store that does not exist holds no reservation and is not created
    /// ([`HostLocal::reservations`]), so a tool that looks at a node leaves no store behind.
    pub fn view<'s>(&'s self, configured: &'s ConfiguredNetwork) -> Result<NetworkView<'s>, Error> {
        let reservations = match configured.store().map_err(Clone::clone)? {
            Some(host_local) => Some(host_local.reservations()?),
            None => None,
        };
        let name = configured.name();
        Ok(NetworkView {
            snapshot: self,
            configured,
            network: self.networks.iter().find(|network| network.name == name),
            reservations,
        })
    }
}

impl<'s> NetworkView<'s> {
    /// The endpoints on this network, local and remote.
    pub fn endpoints(&self) -> impl Iterator<Item = &'s HostComputeEndpoint> + 's {
        let id = self.network.map(|network| network.id);
        self.snapshot
            .endpoints
            .iter()
            .filter(move |endpoint| Some(endpoint.host_compute_network) == id)
    }

    /// Each endpoint on this network with the rule's verdict (alive while attached to a
    /// namespace that exists).
    pub fn verdicts(&self) -> Vec<(&'s HostComputeEndpoint, Verdict)> {
        let Some(network) = self.network else {
            return Vec::new();
        };
        let liveness = Liveness::Namespaces(&self.snapshot.namespaces);
        self.endpoints()
            .map(|endpoint| {
                let verdict = ownership::judge(&network.name, network.id, endpoint, liveness);
                (endpoint, verdict)
            })
            .collect()
    }

    /// The pods' reservations: not the node components' (kube-proxy's source VIP), not the
    /// pre-2018 ID-only ones (which name no interface, so no attachment), not empty or
    /// corrupt files (GC reclaims those).
    pub fn pod_reservations(&self) -> Vec<Reservation> {
        self.reservations
            .iter()
            .flatten()
            .filter_map(|(ip, content)| match content {
                Content::Owned(owner) => pod_reservation(*ip, owner.clone()),
                _ => None,
            })
            .collect()
    }

    /// What the rule says is dead: the endpoints judged dead, then the pods' reservations
    /// without an endpoint ([`NetworkView::without_endpoint`]) unless HNS holds a namespace no
    /// endpoint is attached to ([`NodeSnapshot::has_namespace_without_endpoint`]). Whether a
    /// command of the attachment is in flight is the caller's to ask before it removes
    /// anything.
    pub fn stale(&self) -> Vec<Stale> {
        let mut stale: Vec<Stale> = self
            .verdicts()
            .into_iter()
            .filter_map(|(endpoint, verdict)| match verdict {
                Verdict::Dead(attachment, why) => Some(Stale::Endpoint {
                    endpoint: Box::new(endpoint.clone()),
                    attachment,
                    why,
                }),
                Verdict::NotOurs | Verdict::Alive(_) => None,
            })
            .collect();
        if !self.snapshot.has_namespace_without_endpoint() {
            stale.extend(self.without_endpoint().into_iter().map(Stale::Reservation));
        }
        stale
    }

    /// The pods' reservations GC's retention releases when the attachments with an endpoint
    /// on the network are kept and every address an endpoint on the network holds stays: a
    /// dead pod's, or a live pod's whose endpoint HNS dropped (nothing in HNS tells the two
    /// apart once the endpoint is gone).
    pub fn without_endpoint(&self) -> Vec<Reservation> {
        let Some(reservations) = &self.reservations else {
            return Vec::new();
        };
        let with_endpoint: Vec<GcAttachment> = self
            .verdicts()
            .into_iter()
            .filter_map(|(_, verdict)| match verdict {
                Verdict::Alive(attachment) | Verdict::Dead(attachment, _) => Some(attachment),
                Verdict::NotOurs => None,
            })
            .collect();
        let held = self
            .endpoints()
            .flat_map(|endpoint| endpoint.ip_configurations.iter().map(|c| c.ip_address));
        Retention::attachments(&with_endpoint)
            .holding(held)
            .releasable(reservations)
            .into_iter()
            .filter_map(|(ip, owner)| pod_reservation(ip, owner))
            .collect()
    }

    /// STATUS of the network as the runtime's STATUS would answer now (in Flannel-native mode
    /// subnet.env first), judged from the snapshot: no HCN call.
    pub fn status(&self) -> Result<Vec<Exhausted>, Error> {
        self.configured.status(self.network)
    }

    /// host-local over the pods' store exactly as ADD allocates from it on this network
    /// ([`ConfiguredNetwork::pod_pool`]), judged from the snapshot: no HCN call.
    pub fn pod_pool(&self) -> Result<HostLocal, Error> {
        self.configured.pod_pool(self.network)
    }

    /// Removes `stale` as the runtime's DEL of its attachment would
    /// ([`crate::removal::remove_attachment`], which the plugins' GC removes through too).
    /// Succeeds only when nothing of the attachment is left.
    pub fn remove(&self, client: &Client, stale: &Stale) -> Result<(), Error> {
        crate::removal::remove_attachment(
            client,
            self.configured.request(),
            stale.attachment(),
            stale.namespace(),
        )
    }
}

fn pod_reservation(ip: IpAddr, owner: Owner) -> Option<Reservation> {
    if owner.is_node_component() {
        return None;
    }
    match owner {
        Owner::Attachment {
            container_id,
            ifname,
        } => Some(Reservation {
            ip,
            attachment: GcAttachment {
                container_id,
                ifname,
            },
        }),
        Owner::Legacy { .. } => None,
    }
}
