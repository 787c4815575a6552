//! STATUS: ready when HNS answers, the network exists with a type and settings this plugin
//! uses and what ADD reads from it (the overlay's ProviderAddress), and IPAM can hand out an
//! address; otherwise code 50 with the reason.

use cni::{Error, ErrorCode, NetworkRequest};
use hns::Client;

use crate::hns_error::details;
use crate::ipam::Ipam;
use crate::kind::NetworkKind;

pub fn status<K: NetworkKind>(
    kind: &K,
    client: &Client,
    request: &NetworkRequest,
) -> Result<(), Error> {
    let not_available = |msg: String| Error::new(ErrorCode::NotAvailable, msg);
    let config: K::Config = request.config.plugin_config()?;
    let name = request.config.name.as_str();
    let network = client.find_network_by_name(name).map_err(|e| {
        let reason = if e.is_not_found() {
            format!(
                "HNS network {name:?} does not exist (yet); flanneld or the node's setup creates it"
            )
        } else {
            format!("HNS cannot be queried: {e}")
        };
        not_available(reason).with_details(details(&e))
    })?;
    let network_type = &network.properties().network_type;
    if !kind.accepts(network_type) {
        return Err(not_available(format!(
            "HNS network {name:?} is of type {network_type}, but {} needs {}",
            K::PLUGIN,
            kind.network_types().join(" or ")
        )));
    }
    kind.check_network(&config, network.properties())
        .map_err(|e| not_available(e.msg().to_owned()))?;
    // What ADD takes from the network (the overlay's ProviderAddress) must be there already.
    kind.extra_policies(&config, network.properties(), &[])
        .map_err(|e| not_available(e.msg().to_owned()))?;
    drop(network);
    match Ipam::optional(&request.config, &cni::CniArgs::default())? {
        Some(ipam) => ipam.status(request),
        None => Ok(()),
    }
}
