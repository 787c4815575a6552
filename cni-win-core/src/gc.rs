//! GC: the only enumeration the plugins do. Every endpoint of this network that is local, named
//! by our rule and not listed in `cni.dev/valid-attachments` is removed; remote endpoints,
//! endpoints named otherwise (Flannel's `cbr0_ep`, kube-proxy's) and other networks are never
//! touched. Then IPAM's GC, which keeps the addresses of the valid attachments and of every
//! endpoint the sweep could not delete (an address is never freed while its endpoint exists).
//! Errors do not stop the sweep; all are reported (code 114).

use cni::{Error, GcAttachment, NetworkRequest};
use hns::Client;
use hns::schema::EndpointFlags;

use crate::codes::GC_INCOMPLETE;
use crate::hns_error::to_cni;
use crate::identity::parse_endpoint_name;
use crate::ipam::Ipam;
use crate::kind::NetworkKind;

pub fn gc<K: NetworkKind>(
    kind: &K,
    client: &Client,
    request: &NetworkRequest,
) -> Result<(), Error> {
    let config: K::Config = request.config.plugin_config()?;
    let Some(valid) = request.config.valid_attachments()? else {
        return Err(Error::invalid_config(
            "GC needs cni.dev/valid-attachments (the attachments still in use); without it nothing is removed",
        ));
    };
    let ipam = Ipam::optional(&request.config, &cni::CniArgs::default())?;
    let name = request.config.name.as_str();
    let mut problems = Vec::new();
    // The valid attachments, then those whose endpoint could not be deleted.
    let mut keep = valid.clone();
    match client.find_network_by_name(name) {
        Ok(network) if !kind.accepts(&network.properties().network_type) => {
            return Err(Error::invalid_config(format!(
                "HNS network {name:?} is of type {}, not {}: GC leaves it alone",
                network.properties().network_type,
                kind.network_types().join(" or ")
            )));
        }
        Ok(network) => {
            kind.check_network(&config, network.properties())?;
            let id = network.id();
            drop(network);
            sweep(client, name, id, &mut keep, &mut problems)?;
        }
        Err(e) if e.is_not_found() => {
            log::info!("HNS network {name:?} does not exist: no endpoint to collect")
        }
        Err(e) => return Err(to_cni(&e, &format!("find HNS network {name:?}"))),
    }
    if let Some(ipam) = ipam
        && let Err(e) = ipam.gc(request, &keep)
    {
        problems.push(format!("IPAM: {}", e.msg()));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::new(
            GC_INCOMPLETE,
            format!("GC of {name:?} incomplete: {}", problems.join("; ")),
        ))
    }
}

/// Deletes the stale endpoints of network `id`; `keep` (the valid attachments on entry) gains
/// every attachment whose endpoint is still there after a failed delete.
fn sweep(
    client: &Client,
    network: &str,
    id: hns::Guid,
    keep: &mut Vec<GcAttachment>,
    problems: &mut Vec<String>,
) -> Result<(), Error> {
    let endpoints = client
        .list_endpoints(Some(id))
        .map_err(|e| to_cni(&e, &format!("list the endpoints of {network:?}")))?;
    for endpoint in endpoints {
        let remote = endpoint.flags.contains(EndpointFlags::REMOTE_ENDPOINT);
        let Some((container_id, ifname)) = parse_endpoint_name(network, &endpoint.name) else {
            continue;
        };
        let in_use = keep
            .iter()
            .any(|a| a.container_id == container_id && a.ifname == ifname);
        if remote || endpoint.host_compute_network != id || in_use {
            continue;
        }
        if !endpoint.host_compute_namespace.is_zero()
            && let Err(e) = client.detach_endpoint(endpoint.host_compute_namespace, endpoint.id)
            && !e.is_not_found()
        {
            log::warn!(
                "GC: detaching {} failed ({e}); deleting it anyway",
                endpoint.name
            );
        }
        match client.delete_endpoint(endpoint.id) {
            Ok(()) => log::info!("GC: deleted endpoint {} ({})", endpoint.name, endpoint.id),
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                problems.push(format!("endpoint {} ({}): {e}", endpoint.name, endpoint.id));
                keep.push(GcAttachment {
                    container_id: container_id.to_owned(),
                    ifname: ifname.to_owned(),
                });
            }
        }
    }
    Ok(())
}
