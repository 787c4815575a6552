//! ADD: prepare (config, network by cached ID or by name, gateways kept out of IPAM) → IPAM →
//! create the endpoint under its deterministic ID → attach it to the pod's namespace. A new pod
//! costs 5 raw HCN calls on a warm network cache (open network, create endpoint, query it, open
//! namespace, modify it; 8 with handle closes; win-overlay queries the network too: 6), 7 when
//! the network is found by name (no cache, or the first ADD), whatever the number of endpoints
//! on the node. When HNS refuses the endpoint on a network opened by its cached ID for a reason
//! ADD cannot name (the network gone, or created again under the ID), the cache is forgotten
//! and ADD runs again once with the lookup by name (see [`crate::network_cache`]).
//!
//! With `networkPolicySnapshot`, the endpoint is created with the pod's NetworkPolicy rules
//! from the node's snapshot ([`crate::network_policy`]): no call more.
//!
//! A failure after IPAM removes what this ADD created (the endpoint if it created it, the
//! addresses if it reserved them) and nothing else: an endpoint that already existed, and its
//! addresses, survive a failed repeated ADD. A repeated ADD of a pod the reference plugin
//! attached meets its endpoint holding the address when it creates: that endpoint is adopted
//! when it is provably this attachment's ([`crate::reference::adopt_holder`]).

use cni::{Error, Request, Success};
use hns::schema::HostComputeEndpoint;
use hns::{Client, CreateEndpointError, ErrorKind, HResult, HnsError};
use ipnetwork::IpNetwork;

use crate::codes::ENDPOINT_CONFLICT;
use crate::config::UserPolicy;
use crate::endpoint::{self, Address, Blueprint};
use crate::hns_error::{details, to_cni};
use crate::ipam::Lease;
use crate::kind::NetworkKind;
use crate::network_policy;
use crate::policy;
use crate::port_conflict;
use crate::prepare::{Attachment, Found, Lookup, Network, Prepared, PreparedAttachment};
use crate::reference;
use crate::requirements;
use crate::stale_holder;

pub(crate) fn add<K: NetworkKind>(client: &Client, request: &Request) -> Result<Success, Error> {
    match add_once::<K>(client, request, Lookup::CacheFirst) {
        Err(Failed::StaleNetwork(error)) => {
            log::info!(
                "the cached network may be stale ({}): adding again with a lookup by name",
                error.msg()
            );
            add_once::<K>(client, request, Lookup::ByName).map_err(Failed::into_error)
        }
        other => other.map_err(Failed::into_error),
    }
}

/// Why one pass of ADD failed.
enum Failed {
    /// HNS refused the endpoint on the network opened by its cached ID for a reason ADD cannot
    /// explain (the network gone, or created again under the ID): this pass rolled back
    /// everything it created and forgot the cache.
    StaleNetwork(Error),
    /// Anything else: the ADD's answer.
    Error(Error),
}

impl Failed {
    fn into_error(self) -> Error {
        match self {
            Failed::StaleNetwork(error) | Failed::Error(error) => error,
        }
    }
}

impl From<Error> for Failed {
    fn from(error: Error) -> Failed {
        Failed::Error(error)
    }
}

/// One pass of ADD, finding the network as `lookup` allows.
fn add_once<K: NetworkKind>(
    client: &Client,
    request: &Request,
    lookup: Lookup,
) -> Result<Success, Failed> {
    let PreparedAttachment {
        prepared,
        attachment,
        network,
    } = PreparedAttachment::<K>::new(client, request, lookup)?;
    let ipam = prepared.required_ipam()?;

    if ipam.is_delegated() {
        // A delegated plugin allocates again on a repeated ADD, so look before asking it.
        match client.open_endpoint(attachment.endpoint.guid) {
            Ok(existing) => {
                return Ok(adopt(
                    client,
                    &network,
                    &attachment,
                    existing.properties(),
                    None,
                )?);
            }
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                return Err(
                    to_cni(&e, &format!("open endpoint {}", attachment.endpoint.name)).into(),
                );
            }
        }
    }
    let lease = ipam.allocate(request)?;
    let cache = ipam.network_cache();
    match place(client, &prepared, &network, &attachment, &lease) {
        Ok(result) => {
            if let (Some(cache), Found::ByName) = (&cache, network.found) {
                cache.write(network.open.properties());
            }
            Ok(result)
        }
        Err(failure) => {
            roll_back(client, &attachment, &lease, failure.endpoint);
            match (failure.stale_network, &cache) {
                (true, Some(cache)) => {
                    cache.forget();
                    Err(Failed::StaleNetwork(failure.error))
                }
                _ => Err(Failed::Error(failure.error)),
            }
        }
    }
}

/// A failed ADD and what it knows of the endpoint it tried to create.
struct Failure {
    error: Error,
    endpoint: Created,
    /// HNS refused the create on a network opened by its cached ID for a reason ADD cannot
    /// name: the cached network may be stale.
    stale_network: bool,
}

/// Whether a failed ADD made the endpoint, which decides what its rollback removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Created {
    /// It did not (or it was the attachment's before): give back only the new addresses.
    No,
    /// It did: delete it, then give back the new addresses.
    Yes,
    /// HNS cannot tell (a create that did not answer may still complete): remove nothing, so
    /// no address is released while an endpoint may hold it; DEL cleans up.
    Unknown,
}

impl Failure {
    fn before_create(error: Error) -> Failure {
        Failure {
            error,
            endpoint: Created::No,
            stale_network: false,
        }
    }

    fn after_create(error: Error) -> Failure {
        Failure {
            error,
            endpoint: Created::Yes,
            stale_network: false,
        }
    }
}

/// Whether a refused create may still remove a stale endpoint holding the address and retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Retry {
    Allowed,
    Spent,
}

/// Everything after IPAM: features, settings, create (or adopt) and attach.
fn place<K: NetworkKind>(
    client: &Client,
    prepared: &Prepared<K>,
    network: &Network<'_>,
    attachment: &Attachment<'_>,
    lease: &Lease<'_>,
) -> Result<Success, Failure> {
    let blueprint =
        blueprint(client, prepared, network, attachment, lease).map_err(Failure::before_create)?;
    Placement {
        client,
        prepared,
        network,
        attachment,
        lease,
        blueprint: &blueprint,
    }
    .create(Retry::Allowed)
}

/// What creating the endpoint needs: the command's context and the endpoint it should be.
struct Placement<'p, 'c, 'r, 'l, K> {
    client: &'p Client,
    prepared: &'p Prepared<K>,
    network: &'p Network<'c>,
    attachment: &'p Attachment<'r>,
    lease: &'p Lease<'l>,
    blueprint: &'p Blueprint,
}

impl<K: NetworkKind> Placement<'_, '_, '_, '_, K> {
    /// Creates the endpoint and attaches it, or adopts the attachment's endpoint.
    fn create(&self, retry: Retry) -> Result<Success, Failure> {
        let Placement {
            client,
            prepared,
            network,
            attachment,
            blueprint,
            ..
        } = *self;
        let settings = blueprint.settings();
        let adopt_reference = |e: &hns::HnsError| {
            reference::adopt_holder(client, &network.open, &claim(attachment, blueprint), e)
        };
        match network
            .open
            .create_endpoint(attachment.endpoint.guid, &settings)
        {
            Ok(created) => {
                let properties = created.properties().clone();
                drop(created);
                attach(client, attachment)
                    .and_then(|()| {
                        endpoint::result(
                            &properties,
                            &attachment.request.ifname,
                            &attachment.request.netns,
                        )
                    })
                    .map_err(Failure::after_create)
            }
            // HNS names one conflict, whichever it checks first: the address or a host port. When
            // the holder is the reference plugin's endpoint of this attachment, it is adopted.
            Err(CreateEndpointError::NotCreated(e)) if port_conflict::is_port_conflict(&e) => {
                match adopt_reference(&e) {
                    Ok(None) => Err(Failure::before_create(port_conflict::error(
                        client,
                        &e,
                        &attachment.endpoint.name,
                        attachment.endpoint.guid,
                        &settings.policies,
                    ))),
                    Ok(Some(adopted)) => Ok(adopted),
                    Err(error) => Err(Failure::before_create(error)),
                }
            }
            Err(CreateEndpointError::NotCreated(e)) if e.kind() == ErrorKind::AlreadyExists => {
                let existing = client
                    .open_endpoint(attachment.endpoint.guid)
                    .map_err(|e| {
                        Failure::before_create(to_cni(
                            &e,
                            &format!("open endpoint {}", attachment.endpoint.name),
                        ))
                    })?;
                adopt(
                    client,
                    network,
                    attachment,
                    existing.properties(),
                    Some(&blueprint.ips()),
                )
                .map_err(Failure::before_create)
            }
            // HcnCreateEndpoint succeeded and only reading it back failed: the endpoint is ours.
            Err(CreateEndpointError::Unread(e)) => Err(Failure::after_create(create_error(
                &e,
                attachment,
                blueprint,
                &prepared.conf.policies,
            ))),
            Err(CreateEndpointError::NotCreated(e)) => match adopt_reference(&e) {
                Ok(Some(adopted)) => Ok(adopted),
                Err(error) => Err(Failure::before_create(error)),
                Ok(None) => self.refused(&e, retry),
            },
        }
    }

    /// HNS refused the create with `error`. It may have made the endpoint all the same (HNS can
    /// commit and still report a failure, and a create that did not answer may yet complete), so
    /// the endpoint is looked up by its ID before anything is given back: under the attachment
    /// lock, an endpoint with this ID holding the addresses IPAM just gave is this ADD's. Then a
    /// stale endpoint holding the address is removed and the create retried once (see `stale`).
    /// A refusal left unexplained on a network opened by its cached ID (gone since, or created
    /// again under the ID with other subnets) is marked stale: ADD runs again by name.
    fn refused(&self, error: &HnsError, retry: Retry) -> Result<Success, Failure> {
        let Placement {
            client,
            prepared,
            network,
            attachment,
            lease,
            blueprint,
        } = *self;
        let failed = || create_error(error, attachment, blueprint, &prepared.conf.policies);
        let unexplained = || Failure {
            stale_network: network.found == Found::ByCachedId,
            ..Failure::before_create(failed())
        };
        if error.hresult() == Some(HResult::ERROR_TIMEOUT) {
            return Err(Failure {
                error: failed(),
                endpoint: Created::Unknown,
                stale_network: false,
            });
        }
        match client.open_endpoint(attachment.endpoint.guid) {
            Ok(existing) => {
                log::warn!(
                    "HNS refused to create endpoint {} ({error}) but it exists: adopting it",
                    attachment.endpoint.name
                );
                return adopt(
                    client,
                    network,
                    attachment,
                    existing.properties(),
                    Some(&blueprint.ips()),
                )
                .map_err(|error| Failure {
                    error,
                    endpoint: if lease.is_new() {
                        Created::Yes
                    } else {
                        Created::No
                    },
                    stale_network: false,
                });
            }
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                log::error!(
                    "cannot tell whether endpoint {} exists after a failed create: {e}",
                    attachment.endpoint.name
                );
                return Err(Failure {
                    error: failed(),
                    endpoint: Created::Unknown,
                    stale_network: false,
                });
            }
        }
        if retry == Retry::Allowed && stale_holder::is_address_held(error) {
            let ipam = prepared.required_ipam().map_err(Failure::before_create)?;
            let removed = stale_holder::remove_holder(
                client,
                &network.open,
                ipam,
                &blueprint.addresses,
                error,
            )
            .map_err(Failure::before_create)?;
            if !removed {
                return Err(unexplained());
            }
            return self.create(Retry::Spent);
        }
        Err(unexplained())
    }
}

/// What this ADD claims, for recognising the reference plugin's endpoint of the attachment.
fn claim<'a>(attachment: &'a Attachment<'_>, blueprint: &'a Blueprint) -> reference::Claim<'a> {
    reference::Claim {
        container_id: &attachment.request.container_id,
        ifname: &attachment.request.ifname,
        netns: &attachment.request.netns,
        namespace: attachment.namespace,
        ours: attachment.endpoint.guid,
        addresses: &blueprint.addresses,
    }
}

/// The endpoint this attachment should have: addresses with their gateways, routes, DNS,
/// policies, MAC; checks the host features they need first.
fn blueprint<K: NetworkKind>(
    client: &Client,
    prepared: &Prepared<K>,
    network: &Network<'_>,
    attachment: &Attachment<'_>,
    lease: &Lease<'_>,
) -> Result<Blueprint, Error> {
    let result = lease.result();
    if result.ips.is_empty() {
        return Err(Error::invalid_config(
            "the IPAM plugin returned no IP address; check the ipam section",
        ));
    }
    let addresses = result
        .ips
        .iter()
        .map(|ip| {
            Ok(Address {
                ip: ip.address,
                gateway: prepared.gateway_for(network, ip.address)?,
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let ips: Vec<IpNetwork> = addresses.iter().map(|a| a.ip).collect();
    let conf = &prepared.conf;
    let needed = requirements::requirements(conf.loopback_dsr, &ips, conf.kind.ipv6_caveat());
    requirements::require_features(client, &needed)?;
    let mut policies = policy::compose(conf, network.open.properties(), &ips)?;
    let mut policy_snapshot = None;
    if let Some(snapshot) = &conf.network_policy_snapshot {
        let on = network_policy::OnNetwork {
            name: &conf.network,
            id: network.open.id(),
        };
        let rules =
            network_policy::rules_at_add(snapshot, &attachment.request.args, on, &policies)?;
        if !rules.is_empty() {
            policy_snapshot = Some(snapshot.to_path_buf());
        }
        policies.extend(rules);
        policy::add_host_layer(&mut policies);
    }
    Ok(Blueprint {
        name: attachment.endpoint.name.clone(),
        policies,
        policy_snapshot,
        mac: conf.kind.mac_address(&ips)?,
        addresses,
        routes: result.routes.clone(),
        dns: conf.dns.clone(),
    })
}

/// Attaches the endpoint to the pod's namespace (2 raw calls + close).
fn attach(client: &Client, attachment: &Attachment<'_>) -> Result<(), Error> {
    client
        .attach_endpoint(attachment.namespace, attachment.endpoint.guid)
        .map_err(|e| {
            // The namespace, not the endpoint: an endpoint whose network was deleted since its
            // create is gone too, which is no fault of CNI_NETNS.
            if e.is_not_found() && e.hresult() != Some(HResult::HCN_E_ENDPOINT_NOT_FOUND) {
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
                        attachment.endpoint.name, attachment.namespace
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
    network: &Network<'_>,
    attachment: &Attachment<'_>,
    existing: &HostComputeEndpoint,
    expected_ips: Option<&[IpNetwork]>,
) -> Result<Success, Error> {
    let conflict = |why: String| {
        Error::new(
            ENDPOINT_CONFLICT,
            format!(
                "endpoint {} ({}) already exists but {why}; DEL the attachment first",
                attachment.endpoint.guid, existing.name
            ),
        )
    };
    if existing.host_compute_network != network.open.id() {
        return Err(conflict(format!(
            "is on network {}, not {:?} ({})",
            existing.host_compute_network,
            network.open.properties().name,
            network.open.id()
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
    endpoint::result(
        existing,
        &attachment.request.ifname,
        &attachment.request.netns,
    )
}

/// The error for a failed create; HNS refusing the document is usually a user policy, so the
/// message names the config entries whose type HNS mentions.
///
/// When the endpoint carries NetworkPolicy rules from the node's snapshot and HNS names an
/// ACL (or no config entry), the snapshot is named, with code 11: its rules change under ADD
/// (an IP set one names may have been removed by the agent since ADD read the file), and
/// the agent renders them again, so trying again is the fix, not the config.
fn create_error(
    error: &HnsError,
    attachment: &Attachment<'_>,
    blueprint: &Blueprint,
    policies: &[UserPolicy],
) -> Error {
    let doing = format!("create endpoint {}", attachment.endpoint.name);
    if error.kind() != ErrorKind::InvalidInput {
        return to_cni(error, &doing);
    }
    let text = format!("{error}");
    let suspects: Vec<&str> = policies
        .iter()
        .filter(|p| text.contains(p.policy.type_name()))
        .map(|p| p.source.as_str())
        .collect();
    match &blueprint.policy_snapshot {
        Some(snapshot) if suspects.is_empty() || text.contains("ACL") => {
            let or_config = if suspects.is_empty() {
                String::new()
            } else {
                format!(" (or the config's {})", suspects.join(", "))
            };
            Error::try_again_later(format!(
                "{doing}: {error}: HNS rejected the NetworkPolicy rules of networkPolicySnapshot                  {}{or_config}; the node's policy agent renders them again within a round",
                snapshot.display()
            ))
            .with_details(details(error))
        }
        _ if suspects.is_empty() => to_cni(error, &doing),
        _ => to_cni(error, &doing).context(format!(
            "HNS rejected the endpoint because of {}",
            suspects.join(", ")
        )),
    }
}

/// Undoes what this ADD created. Failures are logged: the ADD's own error is what the runtime
/// must see, and a later DEL removes whatever is left. An endpoint that cannot be deleted, or
/// may exist, keeps its addresses reserved, so no other pod is given an address it holds.
fn roll_back(client: &Client, attachment: &Attachment<'_>, lease: &Lease<'_>, endpoint: Created) {
    let name = &attachment.endpoint.name;
    match endpoint {
        Created::No => {}
        Created::Unknown => {
            log::error!(
                "endpoint {name} may exist: its addresses stay reserved until DEL removes both"
            );
            return;
        }
        Created::Yes => match client.delete_endpoint(attachment.endpoint.guid) {
            Ok(()) => log::info!("rolled back endpoint {name}"),
            Err(e) if e.is_not_found() => {}
            Err(e) => {
                log::error!(
                    "cannot roll back endpoint {name}: {e}; its addresses stay reserved until DEL"
                );
                return;
            }
        },
    }
    if let Err(e) = lease.undo(attachment.request) {
        log::error!("cannot give back the addresses of {name}: {e}");
    }
}
