//! What the node tools (`cni-win sweep`, `cni-win doctor`) share with the plugins, so they
//! decide what is whose, and remove it, with the plugins' own rules rather than a copy:
//!
//! - [`hns_client`]: the platform's HNS, as the plugins connect to it;
//! - [`endpoint_owner`]: the attachment an endpoint provably belongs to (the GC rule of
//!   `reference::owner`: cni-win's deterministic GUID, or the reference plugin's
//!   `<containerID>_<network>`);
//! - [`endpoint_identity`]: the deterministic ID and name of an attachment's endpoint;
//! - [`ipam_subnets`]: the subnets of the config's host-local ranges;
//! - [`reservations`]: what the network's IPAM store holds for pods, by attachment;
//! - [`releasable`]: the reservations GC's rule (`Retention`) lets a sweep release;
//! - [`status`]: STATUS of a network, what `doctor` reports as the node's readiness;
//! - [`del_attachment`]: DEL of one attachment, exactly as the runtime's DEL runs it (detach,
//!   delete, release, Flannel's record).

use std::net::IpAddr;
use std::time::Duration;

use cni::{CniArgs, DelRequest, Error, GcAttachment, NetworkRequest};
use hns::schema::HostComputeEndpoint;
use hns::{Client, Guid, HnsError};
use ipam_host_local::HostLocal;
use ipam_host_local::layout::{Content, Owner};
pub use ipam_host_local::{Exhausted, Retention};
use ipnetwork::IpNetwork;

use crate::ipam::Ipam;
use crate::kind::NetworkKind;
use crate::reference;

/// How long one HCN call of a node tool may take: the plugins' default.
pub const HNS_DEADLINE: Duration = crate::hns_deadline::DEFAULT;

/// The platform's HNS, every raw call bounded by `deadline`: computenetwork.dll on Windows,
/// the emulator named by `HCN_EMULATOR_STATE` elsewhere (a Windows build contains no
/// emulator).
pub fn hns_client(deadline: Duration) -> Result<Client, HnsError> {
    #[cfg(windows)]
    let client = Ok(Client::native());
    #[cfg(not(windows))]
    let client = hns_emulator::Emulator::client_from_env();
    client.map(|client| client.with_deadline(deadline))
}

/// The attachment endpoint `endpoint` of network `network` (whose HNS ID is `network_id`) is
/// provably the endpoint of, or `None` when it is not provably ours (remote, another network,
/// a name our rule did not make, an `…@ifname` name under a foreign ID): GC's rule, so a sweep
/// never touches what GC would not.
pub fn endpoint_owner(
    network: &str,
    network_id: Guid,
    endpoint: &HostComputeEndpoint,
) -> Option<GcAttachment> {
    reference::owner(network, network_id, endpoint).map(|owner| owner.attachment())
}

/// The endpoint ID and name cni-win gives the endpoint of an attachment (see `identity`):
/// for tools that look an attachment's endpoint up, and for tests that build a node.
pub fn endpoint_identity(network: &str, container_id: &str, ifname: &str) -> (Guid, String) {
    let identity = crate::prepare::Identity::of(network, container_id, ifname);
    (identity.guid, identity.name)
}

/// A pod's reservation in the network's host-local store: the address and the attachment
/// holding it. Legacy ID-only reservations and unreadable files name no attachment and are
/// left out (they are not provably any attachment's), and so are the node components' (see
/// `Owner::is_node_component`: kube-proxy's source VIP is not a pod's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    /// The reserved address.
    pub ip: IpAddr,
    /// Who holds it.
    pub attachment: GcAttachment,
}

/// The pods' reservations of the network `request` configures, read with the IPAM DEL would
/// use (in Flannel-native mode host-local's store without subnet.env). `None` when the IPAM
/// is not host-local (a delegated plugin's store is its own) or the config has none.
pub fn reservations(request: &NetworkRequest) -> Result<Option<Vec<Reservation>>, Error> {
    let Some(host_local) = teardown_host_local(request)? else {
        return Ok(None);
    };
    let reservations = host_local
        .reservations()?
        .into_iter()
        .filter_map(|(ip, content)| match content {
            Content::Owned(owner) => pod_reservation(ip, owner),
            _ => None,
        })
        .collect();
    Ok(Some(reservations))
}

/// The pods' reservations GC's rule releases when `retention` is what is kept (see
/// `Retention`: never a node component's, nor an attachment an endpoint's address is
/// reserved for): what a sweep may remove. `None` as for [`reservations`].
pub fn releasable(
    request: &NetworkRequest,
    retention: &Retention,
) -> Result<Option<Vec<Reservation>>, Error> {
    let Some(host_local) = teardown_host_local(request)? else {
        return Ok(None);
    };
    let releasable = host_local
        .releasable(retention)?
        .into_iter()
        .filter_map(|(ip, owner)| pod_reservation(ip, owner))
        .collect();
    Ok(Some(releasable))
}

fn teardown_host_local(request: &NetworkRequest) -> Result<Option<HostLocal>, Error> {
    match crate::flannel::teardown_ipam(&request.config, &CniArgs::default())? {
        Some(Ipam::HostLocal(host_local)) => Ok(Some(host_local)),
        _ => Ok(None),
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

/// DEL of `attachment` on the network `request` configures, as the runtime would run it with
/// `CNI_NETNS` = `namespace` (none once the namespace is gone): detach, delete the endpoint
/// (by its GUID, else the reference plugin's by name), release its addresses, drop Flannel's
/// record. Succeeds only when nothing of the attachment is left.
pub fn del_attachment(
    client: &Client,
    request: &NetworkRequest,
    attachment: &GcAttachment,
    namespace: Option<Guid>,
) -> Result<(), Error> {
    let del = DelRequest {
        container_id: attachment.container_id.clone(),
        ifname: attachment.ifname.clone(),
        netns: namespace.map(|guid| guid.to_string()),
        args: CniArgs::default(),
        config: request.config.clone(),
        stdin: request.stdin.clone(),
        cni_path: request.cni_path.clone(),
    };
    let teardown = crate::teardown::Teardown::of(&del)?;
    crate::del::del(client, &del, &teardown)
}

/// STATUS of the network `request` configures, as the runtime's STATUS runs it (in
/// Flannel-native mode subnet.env first): `Ok` when the node can run pods, with the range sets
/// that are full (new pods fail there, but STATUS stays ready unless `ipam.notReadyWhenFull`),
/// otherwise code 50 naming what is missing (the network, its type or settings, the overlay's
/// ProviderAddress, subnet.env or a key of it, a usable store).
pub fn status<K: NetworkKind>(
    client: &Client,
    request: &NetworkRequest,
) -> Result<Vec<Exhausted>, Error> {
    crate::flannel::status(request, client, |request| {
        crate::status::status::<K>(client, request)
    })
}

/// The subnets of the host-local ranges the config names (empty for a delegated IPAM, or in
/// Flannel-native mode without ranges, where they come from subnet.env): each must lie inside
/// a subnet of the HNS network, or HNS refuses the pods' endpoints.
pub fn ipam_subnets(request: &NetworkRequest) -> Result<Vec<IpNetwork>, Error> {
    Ok(Ipam::from_conf(&request.config, &CniArgs::default())?
        .map(|ipam| ipam.ranges().map(|range| range.subnet).collect())
        .unwrap_or_default())
}
