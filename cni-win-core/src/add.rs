//! ADD: network by name → IPAM → create the endpoint under its deterministic ID → attach it to
//! the pod's namespace. A new pod costs 7 raw HCN calls (10 with handle closes), whatever the
//! number of endpoints on the node; no enumeration.
//!
//! A failure after IPAM removes what this ADD created (the endpoint if it created it, the
//! addresses if it reserved them) and nothing else: an endpoint that already existed, and its
//! addresses, survive a failed repeated ADD.

use cni::{Error, Request, Success};
use hns::schema::HostComputeEndpoint;
use hns::{Client, CreateEndpointError, ErrorKind, Feature, Guid, HnsError, OpenNetwork, RawHcn};
use ipnetwork::IpNetwork;

use crate::codes::ENDPOINT_CONFLICT;
use crate::config::{Conf, UserPolicy, namespace_guid};
use crate::endpoint::{self, Address, Blueprint};
use crate::hns_error::{details, to_cni};
use crate::identity::{endpoint_guid, endpoint_name};
use crate::ipam::{Ipam, Lease};
use crate::kind::{NetworkKind, Requirement};
use crate::network;
use crate::policy;

/// One ADD's fixed inputs.
struct Attachment<'a> {
    request: &'a Request,
    netns: &'a str,
    namespace: Guid,
    guid: Guid,
    name: String,
}

pub fn add<K: NetworkKind>(kind: &K, client: &Client, request: &Request) -> Result<Success, Error> {
    let conf = Conf::load(kind, &request.config)?;
    let netns = request.netns.as_deref().unwrap_or_default();
    let attachment = Attachment {
        request,
        netns,
        namespace: namespace_guid(netns)?,
        guid: endpoint_guid(&conf.network, &request.container_id, &request.ifname),
        name: endpoint_name(&conf.network, &request.container_id, &request.ifname),
    };
    let mut ipam = Ipam::from_conf(&request.config, &request.args)?;
    let network = network::find(kind, &conf.kind, client, &conf.network)?;

    if ipam.is_delegated() {
        // A delegated plugin allocates again on a repeated ADD, so look before asking it.
        match client.open_endpoint(attachment.guid) {
            Ok(existing) => {
                return adopt(client, &network, &attachment, existing.properties(), None);
            }
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(to_cni(&e, &format!("open endpoint {}", attachment.name))),
        }
    }
    ipam.exclude(&reserved_addresses(kind, &conf, &network, &ipam)?);
    let lease = ipam.allocate(request)?;
    match place(kind, client, &conf, &network, &attachment, &lease) {
        Ok(result) => Ok(result),
        Err(failure) => {
            roll_back(client, &ipam, &attachment, &lease, failure.created_endpoint);
            Err(failure.error)
        }
    }
}

/// Addresses host-local must never hand out: each range's pod gateway (win-bridge's x.2,
/// which is Flannel's `cbr0_ep`) and the gateways of the HNS network's subnets.
fn reserved_addresses<K: NetworkKind>(
    kind: &K,
    conf: &Conf<K>,
    network: &OpenNetwork<'_, dyn RawHcn>,
    ipam: &Ipam,
) -> Result<Vec<std::net::IpAddr>, Error> {
    let mut reserved = Vec::new();
    for subnet in ipam.subnets() {
        reserved.push(kind.gateway(
            &conf.kind,
            network.properties(),
            subnet,
            conf.ipam_gateway(subnet),
        )?);
    }
    reserved.extend(
        network
            .properties()
            .subnets()
            .filter_map(|subnet| subnet.gateway()?.parse::<std::net::IpAddr>().ok()),
    );
    Ok(reserved)
}

/// A failed ADD and whether it left an endpoint of its own behind.
struct Failure {
    error: Error,
    created_endpoint: bool,
}

impl Failure {
    fn before_create(error: Error) -> Failure {
        Failure {
            error,
            created_endpoint: false,
        }
    }

    fn after_create(error: Error) -> Failure {
        Failure {
            error,
            created_endpoint: true,
        }
    }
}

/// Everything after IPAM: features, settings, create (or adopt) and attach.
fn place<K: NetworkKind>(
    kind: &K,
    client: &Client,
    conf: &Conf<K>,
    network: &OpenNetwork<'_, dyn RawHcn>,
    attachment: &Attachment<'_>,
    lease: &Lease,
) -> Result<Success, Failure> {
    let blueprint = blueprint(kind, client, conf, network, attachment, lease)
        .map_err(Failure::before_create)?;
    let settings = blueprint.settings();
    match network.create_endpoint(attachment.guid, &settings) {
        Ok(created) => {
            let properties = created.properties().clone();
            drop(created);
            attach(client, attachment)
                .and_then(|()| {
                    endpoint::result(&properties, &attachment.request.ifname, attachment.netns)
                })
                .map_err(Failure::after_create)
        }
        Err(CreateEndpointError::NotCreated(e)) if e.kind() == ErrorKind::AlreadyExists => {
            let existing = client.open_endpoint(attachment.guid).map_err(|e| {
                Failure::before_create(to_cni(&e, &format!("open endpoint {}", attachment.name)))
            })?;
            let ips: Vec<IpNetwork> = blueprint.addresses.iter().map(|a| a.ip).collect();
            adopt(
                client,
                network,
                attachment,
                existing.properties(),
                Some(&ips),
            )
            .map_err(Failure::before_create)
        }
        // HcnCreateEndpoint succeeded and only reading it back failed: the endpoint is ours.
        Err(CreateEndpointError::Unread(e)) => Err(Failure::after_create(create_error(
            &e,
            attachment,
            &conf.policies,
        ))),
        Err(CreateEndpointError::NotCreated(e)) => Err(Failure::before_create(create_error(
            &e,
            attachment,
            &conf.policies,
        ))),
    }
}

/// The endpoint this attachment should have: addresses with their gateways, routes, DNS,
/// policies, MAC; checks the host features they need first.
fn blueprint<K: NetworkKind>(
    kind: &K,
    client: &Client,
    conf: &Conf<K>,
    network: &OpenNetwork<'_, dyn RawHcn>,
    attachment: &Attachment<'_>,
    lease: &Lease,
) -> Result<Blueprint, Error> {
    if lease.result.ips.is_empty() {
        return Err(Error::invalid_config(
            "the IPAM plugin returned no IP address; check the ipam section",
        ));
    }
    let mut addresses = Vec::with_capacity(lease.result.ips.len());
    for ip in &lease.result.ips {
        let subnet = IpNetwork::new(ip.address.network(), ip.address.prefix())
            .map_err(|e| Error::internal(format!("IPAM address {}: {e}", ip.address)))?;
        let gateway = kind.gateway(
            &conf.kind,
            network.properties(),
            subnet,
            conf.ipam_gateway(subnet),
        )?;
        addresses.push(Address {
            ip: ip.address,
            gateway,
        });
    }
    let ips: Vec<IpNetwork> = addresses.iter().map(|a| a.ip).collect();
    let mut requirements = kind.required_features(&conf.kind, &ips);
    if conf.loopback_dsr {
        requirements.insert(
            0,
            Requirement {
                feature: Feature::Dsr,
                needed_for: "loopbackDSR".to_owned(),
            },
        );
    }
    network::require_features(client, &requirements)?;
    Ok(Blueprint {
        name: attachment.name.clone(),
        policies: policy::compose(kind, conf, network.properties(), &ips)?,
        mac: kind.mac_address(&conf.kind, &ips)?,
        addresses,
        routes: lease.result.routes.clone(),
        dns: conf.dns.clone(),
    })
}

/// Attaches the endpoint to the pod's namespace (2 raw calls + close).
fn attach(client: &Client, attachment: &Attachment<'_>) -> Result<(), Error> {
    client
        .attach_endpoint(attachment.namespace, attachment.guid)
        .map_err(|e| {
            if e.is_not_found() {
                Error::invalid_env(
                    "CNI_NETNS",
                    format!("HCN namespace {} does not exist: {e}", attachment.namespace),
                )
                .with_details(details(&e))
            } else {
                to_cni(
                    &e,
                    &format!(
                        "attach endpoint {} to namespace {}",
                        attachment.name, attachment.namespace
                    ),
                )
            }
        })
}

/// A repeated ADD: the endpoint with this attachment's ID exists. It must be on this network
/// (and hold the addresses IPAM says the attachment has, when IPAM was asked); it is attached
/// to the namespace if it is not yet, and its result returned.
fn adopt(
    client: &Client,
    network: &OpenNetwork<'_, dyn RawHcn>,
    attachment: &Attachment<'_>,
    existing: &HostComputeEndpoint,
    expected_ips: Option<&[IpNetwork]>,
) -> Result<Success, Error> {
    let conflict = |why: String| {
        Error::new(
            ENDPOINT_CONFLICT,
            format!(
                "endpoint {} ({}) already exists but {why}; DEL the attachment first",
                attachment.guid, existing.name
            ),
        )
    };
    if existing.host_compute_network != network.id() {
        return Err(conflict(format!(
            "is on network {}, not {:?} ({})",
            existing.host_compute_network,
            network.properties().name,
            network.id()
        )));
    }
    if let Some(expected) = expected_ips {
        let mut have: Vec<_> = endpoint::addresses_of(existing)?
            .iter()
            .map(|n| n.ip())
            .collect();
        let mut want: Vec<_> = expected.iter().map(|n| n.ip()).collect();
        have.sort_unstable();
        want.sort_unstable();
        if have != want {
            return Err(conflict(format!(
                "holds {have:?} while IPAM holds {want:?} for this attachment"
            )));
        }
    }
    let attached_to = existing.host_compute_namespace;
    if attached_to.is_zero() {
        attach(client, attachment)?;
    } else if attached_to != attachment.namespace {
        return Err(conflict(format!("is attached to namespace {attached_to}")));
    }
    endpoint::result(existing, &attachment.request.ifname, attachment.netns)
}

/// The error for a failed create; HNS refusing the document is usually a user policy, so the
/// message names the config entries whose type HNS mentions.
fn create_error(error: &HnsError, attachment: &Attachment<'_>, policies: &[UserPolicy]) -> Error {
    let mut cni = to_cni(error, &format!("create endpoint {}", attachment.name));
    if error.kind() == ErrorKind::InvalidInput {
        let text = format!("{error}");
        let suspects: Vec<&str> = policies
            .iter()
            .filter(|p| text.contains(p.policy.type_name()))
            .map(|p| p.source.as_str())
            .collect();
        if !suspects.is_empty() {
            cni = cni.context(format!(
                "HNS rejected the endpoint because of {}",
                suspects.join(", ")
            ));
        }
    }
    cni
}

/// Undoes what this ADD created. Failures are logged: the ADD's own error is what the runtime
/// must see, and a later DEL removes whatever is left. An endpoint that cannot be deleted keeps
/// its addresses reserved, so no other pod is given an address it still holds.
fn roll_back(
    client: &Client,
    ipam: &Ipam,
    attachment: &Attachment<'_>,
    lease: &Lease,
    endpoint: bool,
) {
    if endpoint {
        match client.delete_endpoint(attachment.guid) {
            Ok(()) => log::info!("rolled back endpoint {}", attachment.name),
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                log::error!(
                    "cannot roll back endpoint {}: {e}; its addresses stay reserved until DEL",
                    attachment.name
                );
                return;
            }
        }
    }
    if lease.reserved_here()
        && let Err(e) = ipam.undo(attachment.request, lease)
    {
        log::error!("cannot give back the addresses of {}: {e}", attachment.name);
    }
}
