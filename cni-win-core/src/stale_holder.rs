//! A stale endpoint holding the new pod's address: the field's most common ADD failure on
//! Windows nodes. A pod's endpoint outlives its pod (a DEL that never came, a node reboot
//! that lost host-local's store but not HNS's endpoints), host-local hands its address to a
//! new pod, and `HcnCreateEndpoint` refuses with `HCN_E_ADDR_INVALID_OR_RESERVED`.
//!
//! The holder (named by HNS's error record, else found by the address) is removed, as DEL
//! would remove it, only when it is **provably ours and dead**:
//! - local, on this network, named as cni-win names an attachment of this network *and*
//!   under that attachment's deterministic GUID (so cni-win made it, for that attachment);
//! - attached to no namespace, or to one that no longer exists;
//! - no command of its attachment is running (its attachment lock is free).
//!
//! Then the endpoint is deleted, its attachment's reservations are released (host-local; a
//! delegated IPAM already gave the address away), and the caller retries the create once.
//! Any other holder (remote, foreign, the reference plugin's, alive) is the operator's call:
//! code 110 naming the holder and what to do.
//!
//! Raw HCN calls, only on this failure path: open + query (+ close) of the holder, the same
//! for its namespace, one delete; finding the holder by address when the record does not name
//! it enumerates the network's endpoints.

use cni::Error;
use hns::schema::EndpointFlags;
use hns::{Client, Guid, HResult, HnsError, OpenNetwork, RawHcn};

use crate::attachment_lock;
use crate::codes::HNS_CALL_FAILED;
use crate::endpoint::{self, Address};
use crate::hns_error::{details, to_cni};
use crate::ipam::Ipam;
use crate::ownership::{self, Owner};

/// Whether `failure` is HNS refusing the create because an endpoint holds an address.
pub fn is_address_held(failure: &HnsError) -> bool {
    failure
        .raw()
        .is_some_and(|raw| raw.hresult == HResult::HCN_E_ADDR_INVALID_OR_RESERVED)
}

/// Removes the endpoint holding one of `addresses` when it is provably a dead attachment of
/// this network's (see the module docs): `Ok(true)` means the caller may retry the create,
/// `Ok(false)` that no endpoint holds them (the address is refused for another reason, which
/// the caller reports). An error (code 110, naming the holder) when the holder must stay.
pub fn remove_holder(
    client: &Client,
    network: &OpenNetwork<'_, dyn RawHcn>,
    ipam: &Ipam,
    addresses: &[Address],
    failure: &HnsError,
) -> Result<bool, Error> {
    let refuse = |what: String, remedy: &str| {
        Error::new(
            HNS_CALL_FAILED,
            format!("the pod's address is held by {what}; {remedy}"),
        )
        .with_details(details(failure))
    };
    let Some(holder) = holder_id(client, network, addresses, failure)? else {
        return Ok(false);
    };
    let open = match client.open_endpoint(holder) {
        Ok(open) => open,
        // Deleted since HNS refused: the address is free now.
        Err(e) if e.is_not_found() => return Ok(true),
        Err(e) => return Err(to_cni(&e, &format!("open endpoint {holder}"))),
    };
    let properties = open.into_properties();
    let named = format!("endpoint {:?} ({holder})", properties.name);
    if properties.flags.contains(EndpointFlags::REMOTE_ENDPOINT) {
        return Err(refuse(
            format!("remote {named}, a pod of another node"),
            "two nodes hand out the same addresses: check that each node's IPAM range is its \
             own pod CIDR, or delete the remote endpoint if its node is gone",
        ));
    }
    let network_name = &network.properties().name;
    let Some(Owner::CniWin {
        container_id,
        ifname,
    }) = ownership::owner(network_name, network.id(), &properties)
    else {
        return Err(refuse(
            format!(
                "{named}, which cni-win did not make for an attachment of network {network_name:?}"
            ),
            "it belongs to another component (or to the reference plugin): remove it with that \
             component, or delete it by hand if it is stale (e.g. Remove-HnsEndpoint)",
        ));
    };
    let namespace = properties.host_compute_namespace;
    if !namespace.is_zero() && namespace_exists(client, namespace)? {
        return Err(refuse(
            format!(
                "{named} of container {container_id}, attached to namespace {namespace}, which still exists"
            ),
            "that pod may still be running: delete it (or DEL its attachment) before the \
             address can be reused",
        ));
    }
    let Some(_lock) = attachment_lock::try_lock(network_name, container_id, ifname)
        .map_err(|e| Error::new(HNS_CALL_FAILED, format!("attachment lock of {named}: {e}")))?
    else {
        return Err(refuse(
            format!("{named}, whose attachment has a command running"),
            "try again when it is done",
        ));
    };
    log::warn!(
        "{named} of container {container_id} holds the pod's address but its namespace {namespace} \
         is gone: removing it as DEL would"
    );
    match client.delete_endpoint(holder) {
        Ok(()) => {}
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(to_cni(&e, &format!("delete stale {named}"))),
    }
    ipam.release_other(container_id, ifname)?;
    Ok(true)
}

/// The holder HNS names in its error record, else the endpoint of this network that holds one
/// of `addresses`.
fn holder_id(
    client: &Client,
    network: &OpenNetwork<'_, dyn RawHcn>,
    addresses: &[Address],
    failure: &HnsError,
) -> Result<Option<Guid>, Error> {
    if let Some(holder) = failure.raw().and_then(|raw| raw.holder()) {
        return Ok(Some(holder.endpoint));
    }
    let endpoints = client
        .list_endpoints(Some(network.id()))
        .map_err(|e| to_cni(&e, "list the network's endpoints"))?;
    Ok(endpoints
        .iter()
        .find(|candidate| {
            endpoint::addresses_of(candidate).is_ok_and(|held| {
                held.iter()
                    .any(|ip| addresses.iter().any(|a| a.ip.ip() == ip.ip()))
            })
        })
        .map(|holder| holder.id))
}

fn namespace_exists(client: &Client, namespace: Guid) -> Result<bool, Error> {
    match client.open_namespace(namespace) {
        Ok(_) => Ok(true),
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(to_cni(&e, &format!("open namespace {namespace}"))),
    }
}
