//! GC: the only enumeration the plugins do. Every endpoint of this network that is provably
//! an attachment's (cni-win's under its deterministic GUID, or the reference plugin's
//! `<containerID>_<network>`: the one rule of [`crate::ownership`]) and whose attachment is not listed in
//! `cni.dev/valid-attachments` is removed (all of them when the config has no list, as libcni
//! means it); remote endpoints, endpoints named otherwise
//! (Flannel's `cbr0_ep`, kube-proxy's) and other networks are never touched. Then IPAM's GC,
//! which keeps the addresses of the valid attachments, of node components (kube-proxy's
//! source VIP) and every address an endpoint left on the network holds (kube-proxy's
//! nameless endpoint, remote endpoints, what the sweep could not delete): an address is never
//! freed while an endpoint holds it. An endpoint whose
//! attachment has a command in flight (its attachment lock is held: an ADD that has not
//! returned yet is not in the runtime's list) is left, with its addresses, for the next GC.
//! Errors do not stop the sweep; all are reported (code 114).

use std::net::IpAddr;

use cni::{Error, GcAttachment, NetworkRequest};
use hns::Client;

use crate::attachment_lock;
use crate::codes::GC_INCOMPLETE;
use crate::hns_error::to_cni;
use crate::kind::NetworkKind;
use crate::ownership::{self, Liveness, Retention, Verdict};
use crate::prepare::{Prepared, Unusable};

pub(crate) fn gc<K: NetworkKind>(client: &Client, request: &NetworkRequest) -> Result<(), Error> {
    let mut prepared = Prepared::<K>::load_for_teardown(&request.config, &cni::CniArgs::default())?;
    let valid = request.config.valid_attachments()?;
    let name = prepared.conf.network.clone();
    let name = name.as_str();
    let mut problems = Vec::new();
    // The valid attachments, then those whose endpoint could not be deleted.
    let mut keep = valid.as_slice().to_vec();
    let mut held = Vec::new();
    match prepared.network(client) {
        Ok(network) => {
            let id = network.open.id();
            drop(network);
            let removed = sweep(client, name, id, &mut keep, &mut held, &mut problems)?;
            log::info!(
                "GC removed {removed} endpoint(s) of {name}: {}",
                valid.reason()
            );
        }
        Err(Unusable::Missing(_)) => {
            log::info!("HNS network {name:?} does not exist: no endpoint to collect")
        }
        Err(unusable) => return Err(unusable.into_error(name)),
    }
    if let Some(ipam) = &prepared.ipam {
        match ipam.gc(request, &Retention::attachments(&keep).holding(held)) {
            Ok(()) => {}
            // The config's fault (a delegation loop, a bad range), not an incomplete GC.
            Err(e) if e.code() == cni::ErrorCode::InvalidConfig => return Err(e),
            Err(e) => problems.push(format!("IPAM: {}", e.msg())),
        }
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

/// Deletes the stale endpoints of network `id` and returns how many it deleted; `keep` (the
/// valid attachments on entry) gains every attachment whose endpoint is still there after a
/// failed delete, and `held` every address of an endpoint left on the network.
fn sweep(
    client: &Client,
    network: &str,
    id: hns::Guid,
    keep: &mut Vec<GcAttachment>,
    held: &mut Vec<IpAddr>,
    problems: &mut Vec<String>,
) -> Result<usize, Error> {
    let mut removed = 0;
    let endpoints = client
        .list_endpoints(Some(id))
        .map_err(|e| to_cni(&e, &format!("list the endpoints of {network:?}")))?;
    let valid = keep.clone();
    for endpoint in endpoints {
        let addresses = endpoint.ip_configurations.iter().map(|c| c.ip_address);
        let attachment = match ownership::judge(network, id, &endpoint, Liveness::Listed(&valid)) {
            Verdict::Dead(attachment, _) => attachment,
            Verdict::NotOurs | Verdict::Alive(_) => {
                held.extend(addresses);
                continue;
            }
        };
        let _lock = match attachment_lock::try_lock(
            network,
            &attachment.container_id,
            &attachment.ifname,
        ) {
            Ok(Some(lock)) => lock,
            Ok(None) => {
                log::info!(
                    "GC: {} has a command in flight: left for the next GC",
                    endpoint.name
                );
                keep.push(attachment);
                held.extend(addresses);
                continue;
            }
            Err(e) => {
                problems.push(format!(
                    "endpoint {}: its attachment lock: {e}",
                    endpoint.name
                ));
                keep.push(attachment);
                held.extend(addresses);
                continue;
            }
        };
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
            Ok(()) => {
                log::info!("GC: deleted endpoint {} ({})", endpoint.name, endpoint.id);
                removed += 1;
            }
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                problems.push(format!("endpoint {} ({}): {e}", endpoint.name, endpoint.id));
                keep.push(attachment);
                held.extend(addresses);
            }
        }
    }
    Ok(removed)
}
