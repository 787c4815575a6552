//! DEL: detach from the namespace → delete the endpoint by its ID (falling back to the name for
//! endpoints the reference plugin made) → only then release the addresses. A live pod costs 3
//! raw HCN calls (4 with the close); an attachment that is gone everywhere is success.
//!
//! DEL takes from the config only what identifies the attachment's state ([`Teardown`]): it
//! must clean up even when the plugin's keys or the network changed since ADD (or the network
//! is gone), so it neither validates the plugin's keys nor looks the network up. Flannel's
//! record, in Flannel-native mode, goes last.

use cni::{DelRequest, Error};
use hns::{Client, Guid};

use crate::config::namespace_guid;
use crate::hns_error::to_cni;
use crate::identity::Identity;
use crate::teardown::Teardown;

pub(crate) fn del(client: &Client, request: &DelRequest, teardown: &Teardown) -> Result<(), Error> {
    let network = request.config.name.as_str();
    let Identity { guid, name } = Identity::of(network, &request.container_id, &request.ifname);

    match request.netns.as_deref().map(namespace_guid) {
        Some(Ok(namespace)) => detach(client, namespace, guid, &name)?,
        // No namespace (containerd sends none once it is gone) or a docker-style one: nothing
        // to detach from; deleting the endpoint detaches it anyway.
        Some(Err(e)) => log::info!("not detaching {name}: {}", e.msg()),
        None => {}
    }
    match client.delete_endpoint(guid) {
        Ok(()) => log::info!("deleted endpoint {name} ({guid})"),
        Err(e) if e.is_not_found() => delete_reference_endpoint(client, network, guid, &name)?,
        // The endpoint may still exist: its addresses must stay reserved.
        Err(e) => return Err(to_cni(&e, &format!("delete endpoint {name} ({guid})"))),
    }
    if let Some(ipam) = &teardown.ipam {
        ipam.release(request)?;
    }
    match &teardown.record {
        Some(record) => record.remove(),
        None => Ok(()),
    }
}

/// Detaches, tolerating a namespace that is gone and an endpoint that is not in it.
fn detach(client: &Client, namespace: Guid, endpoint: Guid, name: &str) -> Result<(), Error> {
    match client.detach_endpoint(namespace, endpoint) {
        Ok(()) => Ok(()),
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) if e.kind() == hns::ErrorKind::Backend => {
            Err(to_cni(&e, &format!("detach endpoint {name}")))
        }
        Err(e) => {
            log::warn!(
                "detaching {name} from namespace {namespace} failed ({e}); deleting it anyway"
            );
            Ok(())
        }
    }
}

/// The reference plugin names endpoints `<containerID>_<network>` and lets HNS pick the ID:
/// such an endpoint is found by name and deleted if it is on this network.
fn delete_reference_endpoint(
    client: &Client,
    network: &str,
    ours: Guid,
    name: &str,
) -> Result<(), Error> {
    let found = client
        .find_endpoint_by_name(name)
        .map_err(|e| to_cni(&e, &format!("find endpoint {name}")))?;
    let Some(endpoint) = found else {
        log::info!("endpoint {name} does not exist: nothing to delete");
        return Ok(());
    };
    let properties = endpoint.into_properties();
    if properties.id == ours {
        // Deleted meanwhile by a concurrent DEL of the same attachment.
        return Ok(());
    }
    let on_this_network = match client.find_network_by_name(network) {
        Ok(open) => open.id() == properties.host_compute_network,
        Err(e) if e.is_not_found() => false,
        Err(e) => return Err(to_cni(&e, &format!("find HNS network {network:?}"))),
    };
    if !on_this_network {
        log::warn!(
            "endpoint {name} ({}) is on network {}, not {network:?}: left alone",
            properties.id,
            properties.host_compute_network
        );
        return Ok(());
    }
    if !properties.host_compute_namespace.is_zero() {
        detach(
            client,
            properties.host_compute_namespace,
            properties.id,
            name,
        )?;
    }
    match client.delete_endpoint(properties.id) {
        Ok(()) => {
            log::info!(
                "deleted endpoint {name} ({}) made by the reference plugin",
                properties.id
            );
            Ok(())
        }
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(to_cni(
            &e,
            &format!("delete endpoint {name} ({})", properties.id),
        )),
    }
}
