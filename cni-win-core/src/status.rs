//! STATUS: ready when HNS answers, the network exists and passes every check ADD makes (type,
//! the kind's rules, each range's pod gateway, what ADD reads from it such as the overlay's
//! ProviderAddress), and IPAM is usable; otherwise code 50 with the reason.
//!
//! STATUS is the node's readiness gate for what makes *every* ADD fail. containerd 2.x runs it
//! each time kubelet polls, and a failure takes the node NotReady, whose `NoExecute` taint
//! evicts its pods: so a full range (a leak, or a small pod CIDR), which only fails *new*
//! pods, is logged and returned for `doctor` to report, and fails STATUS only when the config
//! opts in with `ipam.notReadyWhenFull`.

use cni::{Error, ErrorCode, NetworkRequest};
use hns::Client;
use ipam_host_local::Exhausted;

use crate::hns_error::details;
use crate::kind::NetworkKind;
use crate::prepare::{Prepared, Unusable};

/// Ready, with the IPAM range sets that have no free address (after the same exclusions ADD
/// makes); code 50 when not ready.
pub(crate) fn status<K: NetworkKind>(
    client: &Client,
    request: &NetworkRequest,
) -> Result<Vec<Exhausted>, Error> {
    let not_available = |msg: String| Error::new(ErrorCode::NotAvailable, msg);
    let mut prepared = Prepared::<K>::load(&request.config, &cni::CniArgs::default())?;
    let network = prepared.network(client).map_err(|unusable| {
        let name = &request.config.name;
        match unusable {
            Unusable::Missing(e) => not_available(format!(
                "HNS network {name:?} does not exist (yet); flanneld or the node's setup creates it"
            ))
            .with_details(details(&e)),
            Unusable::Hns(e) => {
                not_available(format!("HNS cannot be queried: {e}")).with_details(details(&e))
            }
            Unusable::Unfit(e) => not_available(e.msg().to_owned()),
        }
    })?;
    // What ADD takes from the network (the overlay's ProviderAddress) must be there already.
    prepared
        .conf
        .kind
        .extra_policies(network.open.properties(), &[])
        .map_err(|e| not_available(e.msg().to_owned()))?;
    drop(network);
    match &prepared.ipam {
        Some(ipam) => ipam.status(request),
        None => Ok(Vec::new()),
    }
}
