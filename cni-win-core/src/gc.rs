//! GC: the only enumeration the plugins do. Every endpoint of this network that is provably
//! an attachment's (cni-win's under its deterministic GUID, or the reference plugin's
//! `<containerID>_<network>`: the one rule of [`crate::ownership`]) and whose attachment is not listed in
//! `cni.dev/valid-attachments` is removed with its attachment as DEL removes it (all of them
//! when the config has no list, as libcni means it; [`crate::removal`], which `cni-win sweep`
//! removes through too); remote endpoints, endpoints named otherwise
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
use crate::removal::remove_attachment;

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
            let removed = remove_unlisted_attachments(
                client,
                request,
                id,
                &mut keep,
                &mut held,
                &mut problems,
            )?;
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

/// Removes, as their DEL would ([`remove_attachment`]), the attachments of network `id` whose
/// endpoints the runtime no longer lists, and returns how many it removed; `keep` (the valid
/// attachments on entry) gains every attachment that is still there after a failed removal,
/// and `held` every address of an endpoint left on the network.
fn remove_unlisted_attachments(
    client: &Client,
    request: &NetworkRequest,
    id: hns::Guid,
    keep: &mut Vec<GcAttachment>,
    held: &mut Vec<IpAddr>,
    problems: &mut Vec<String>,
) -> Result<usize, Error> {
    let network = request.config.name.as_str();
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
        let _claim = match attachment_lock::try_lock(
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
        let namespace = endpoint.host_compute_namespace;
        let namespace = (!namespace.is_zero()).then_some(namespace);
        match remove_attachment(client, request, &attachment, namespace) {
            Ok(()) => {
                log::info!("GC: removed endpoint {} ({})", endpoint.name, endpoint.id);
                removed += 1;
            }
            Err(e) => {
                problems.push(format!(
                    "endpoint {} ({}): {}",
                    endpoint.name,
                    endpoint.id,
                    e.msg()
                ));
                keep.push(attachment);
                held.extend(addresses);
            }
        }
    }
    Ok(removed)
}
