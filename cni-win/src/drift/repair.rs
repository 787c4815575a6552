//! The one repair drift gets with `--apply`, besides what the sweep removes: a remote endpoint
//! on an address of this node's own pod subnet that a live pod of cni-win's holds. No other
//! node can own an address of this node's pod subnet, and the pod's own endpoint is there, so
//! the remote endpoint cannot be right; while it is there, traffic to the pod may go to it
//! (Windows-Containers#631, kubernetes#137381).
//!
//! Removing it takes nothing kube-proxy needs: its winkernel proxier, syncing a Service,
//! looks its endpoint up by the ID it recorded, then by address on the network, and creates a
//! remote endpoint only for a backend that is not local and that neither finds
//! (`syncProxyRules` in kubernetes' `pkg/proxy/winkernel/proxier.go`); a backend on this
//! node's address finds the pod's own endpoint. Its load balancers that named the removed
//! endpoint are then `load-balancer-backend-gone` until kube-proxy syncs that Service again;
//! they are its own to replace, and reported, never touched.
//!
//! Each repair holds the pod's attachment lock (no DEL or ADD of the pod meanwhile) and reads
//! both endpoints again first: the pod's must still be local, attached and holding the
//! address, the remote one still remote and holding it. A read that fails repairs nothing.
//! Raw HCN calls, only when there is one to repair: 2 per endpoint read (+1 close each), 1
//! delete.

use hns::schema::{EndpointFlags, HostComputeEndpoint};
use hns::{Client, ErrorKind, Guid};

use super::{Drift, RemoteOnPodAddress};
use crate::shutdown::Shutdown;
use crate::sweep::{Commands, Outcome};

/// Repairs what `found` says `--apply` may, in order, until `stop` is asked for: each repair
/// with what it came to.
pub fn apply<'d, C: Commands>(
    client: &Client,
    found: &'d [Drift],
    commands: &C,
    stop: &Shutdown,
) -> Vec<(&'d Drift, Outcome)> {
    found
        .iter()
        .filter_map(|drift| {
            let (repair, network) = (drift.repair.as_ref()?, drift.network.as_deref()?);
            let outcome = if stop.is_requested() {
                Outcome::Abandoned
            } else {
                match commands.try_claim(network, &repair.attachment) {
                    None => Outcome::Skipped,
                    Some(claim) => {
                        let outcome = remove_if_still_wrong(client, repair);
                        drop(claim);
                        outcome
                    }
                }
            };
            Some((drift, outcome))
        })
        .collect()
}

/// Reads both endpoints again and removes the remote one if the first read still holds.
fn remove_if_still_wrong(client: &Client, repair: &RemoteOnPodAddress) -> Outcome {
    let holds = |endpoint: &HostComputeEndpoint| {
        endpoint
            .ip_configurations
            .iter()
            .any(|config| config.ip_address == repair.ip)
    };
    let read = |id: Guid| match client.open_endpoint(id) {
        Ok(endpoint) => Ok(Some(endpoint.into_properties())),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Outcome::Failed(format!(
            "cannot read HNS again before removing: {e}"
        ))),
    };
    let pod = match read(repair.pod) {
        Ok(pod) => pod,
        Err(failed) => return failed,
    };
    let pod_holds = pod.is_some_and(|pod| {
        !pod.flags.contains(EndpointFlags::REMOTE_ENDPOINT)
            && !pod.host_compute_namespace.is_zero()
            && holds(&pod)
    });
    if !pod_holds {
        return Outcome::Alive;
    }
    let remote = match read(repair.remote) {
        Ok(remote) => remote,
        Err(failed) => return failed,
    };
    if !remote.is_some_and(|remote| {
        remote.flags.contains(EndpointFlags::REMOTE_ENDPOINT) && holds(&remote)
    }) {
        return Outcome::Alive;
    }
    match client.delete_endpoint(repair.remote) {
        Ok(()) => Outcome::Removed,
        Err(e) if e.kind() == ErrorKind::NotFound => Outcome::Alive,
        Err(e) => Outcome::Failed(e.to_string()),
    }
}
