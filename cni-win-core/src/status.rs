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
use hns::schema::HostComputeNetwork;
use ipam_host_local::Exhausted;

use crate::hns_error::details;
use crate::ipam::Ipam;
use crate::kind::NetworkKind;
use crate::prepare::{Prepared, Unusable};

/// Ready, with the IPAM range sets that have no free address (after the same exclusions ADD
/// makes); code 50 when not ready. Opens the network by name: 3 raw calls (+1 close).
pub(crate) fn status<K: NetworkKind>(
    client: &Client,
    request: &NetworkRequest,
) -> Result<Vec<Exhausted>, Error> {
    let mut prepared = Prepared::<K>::load(&request.config, &cni::CniArgs::default())?;
    let network = prepared
        .network(client)
        .map_err(|unusable| not_ready(&request.config.name, unusable))?;
    ready(
        &prepared.conf.kind,
        prepared.ipam.as_ref(),
        network.open.properties(),
        request,
    )
}

/// STATUS of an already decoded config over a network already read (`None`: there is none
/// of that name), as the node tools judge it from a snapshot: the same checks, no HCN call,
/// no second decode.
pub(crate) fn status_of<K: NetworkKind>(
    prepared: &Prepared<K>,
    network: Option<&HostComputeNetwork>,
    request: &NetworkRequest,
) -> Result<Vec<Exhausted>, Error> {
    let name = &request.config.name;
    let Some(network) = network else {
        return Err(missing(name));
    };
    let ipam = prepared
        .fitted_ipam(network)
        .map_err(|unusable| not_ready(name, unusable))?;
    ready(&prepared.conf.kind, ipam.as_ref(), network, request)
}

/// What STATUS checks once the config fits the network: what ADD takes from it (the
/// overlay's ProviderAddress) is there, and IPAM (with the fit's exclusions) is usable.
fn ready<K: NetworkKind>(
    kind: &K,
    ipam: Option<&Ipam>,
    network: &HostComputeNetwork,
    request: &NetworkRequest,
) -> Result<Vec<Exhausted>, Error> {
    kind.extra_policies(network, &[])
        .map_err(|e| Error::new(ErrorCode::NotAvailable, e.msg().to_owned()))?;
    match ipam {
        Some(ipam) => ipam.status(request),
        None => Ok(Vec::new()),
    }
}

fn missing(name: &str) -> Error {
    Error::new(
        ErrorCode::NotAvailable,
        format!(
            "HNS network {name:?} does not exist (yet); flanneld or the node's setup creates it"
        ),
    )
}

fn not_ready(name: &str, unusable: Unusable) -> Error {
    let not_available = |msg: String| Error::new(ErrorCode::NotAvailable, msg);
    match unusable {
        Unusable::Missing(e) => missing(name).with_details(details(&e)),
        Unusable::Hns(e) => {
            not_available(format!("HNS cannot be queried: {e}")).with_details(details(&e))
        }
        Unusable::Unfit(e) => not_available(e.msg().to_owned()),
    }
}
