//! CHECK: the endpoint still is what ADD made: on this network, attached to CNI_NETNS, with
//! prevResult's addresses and MAC and every policy the config implies; then IPAM's CHECK.
//! Each difference is named (code 113). A pod the reference plugin attached has no endpoint
//! under this attachment's ID: its `<containerID>_<network>` endpoint is checked instead.

use std::net::IpAddr;

use cni::{Error, Request, Success};
use hns::Client;
use hns::schema::MacAddress;

use crate::codes::CHECK_MISMATCH;
use crate::endpoint::addresses_of;
use crate::hns_error::to_cni;
use crate::identity::Identity;
use crate::kind::NetworkKind;
use crate::prepare::{Lookup, PreparedAttachment};
use crate::{policy, reference};

pub(crate) fn check<K: NetworkKind>(client: &Client, request: &Request) -> Result<(), Error> {
    let Some(prev) = request.config.prev_result()? else {
        return Err(Error::invalid_config(
            "CHECK needs prevResult: the runtime passes the ADD result there",
        ));
    };
    let PreparedAttachment {
        prepared,
        attachment,
        network,
    } = PreparedAttachment::<K>::new(client, request, Lookup::CacheFirst)?;
    let open = &network.open;
    let conf = &prepared.conf;
    let namespace = attachment.namespace;
    let Identity { guid, name } = attachment.endpoint;
    let endpoint = match client.open_endpoint(guid) {
        Err(e) if e.is_not_found() => reference::find(client, open, &request.container_id, guid)?
            .ok_or_else(|| {
            Error::new(
                CHECK_MISMATCH,
                format!("endpoint {name} ({guid}) does not exist"),
            )
        })?,
        opened => opened.map_err(|e| to_cni(&e, &format!("open endpoint {name}")))?,
    };
    let (name, guid) = (&endpoint.properties().name, endpoint.id());
    let endpoint = endpoint.properties();

    let mut problems = Vec::new();
    if endpoint.host_compute_network != open.id() {
        problems.push(format!(
            "it is on network {}, not {:?} ({})",
            endpoint.host_compute_network,
            conf.network,
            open.id()
        ));
    }
    if endpoint.host_compute_namespace != namespace {
        problems.push(format!(
            "it is attached to namespace {}, not CNI_NETNS {namespace}",
            if endpoint.host_compute_namespace.is_zero() {
                "(none)".to_owned()
            } else {
                endpoint.host_compute_namespace.to_string()
            }
        ));
    }
    let addresses = addresses_of(endpoint)?;
    let mut have: Vec<IpAddr> = addresses.iter().map(|a| a.ip()).collect();
    let mut want: Vec<IpAddr> = prev.ips.iter().map(|ip| ip.address.ip()).collect();
    have.sort_unstable();
    want.sort_unstable();
    if have != want {
        problems.push(format!("it holds {have:?} but prevResult lists {want:?}"));
    }
    if let Some(mac) = expected_mac(&prev, &request.ifname)
        && mac.parse::<MacAddress>().ok() != endpoint.mac_address
    {
        let actual = endpoint
            .mac_address
            .map_or_else(|| "unset".to_owned(), |mac| mac.to_string());
        problems.push(format!("its MAC is {actual} but prevResult says {mac}"));
    }
    let mut expected = policy::compose(conf, open.properties(), &addresses)?;
    policy::drop_host_layer(&mut expected);
    for missing in reference::missing_policies(&endpoint.policies, &expected) {
        let value = serde_json::to_value(&missing).unwrap_or_default();
        problems.push(format!("policy {value} is missing"));
    }
    if !problems.is_empty() {
        return Err(Error::new(
            CHECK_MISMATCH,
            format!("endpoint {name} ({guid}): {}", problems.join("; ")),
        ));
    }
    prepared.required_ipam()?.check(request, &prev)
}

/// The MAC prevResult gives the attachment's interface (by name, else the only one).
fn expected_mac<'a>(prev: &'a Success, ifname: &str) -> Option<&'a str> {
    let by_name = prev.interfaces.iter().find(|i| i.name == ifname);
    let only = (prev.interfaces.len() == 1).then(|| &prev.interfaces[0]);
    by_name.or(only)?.mac.as_deref()
}
