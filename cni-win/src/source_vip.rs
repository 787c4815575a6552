//! `cni-win source-vip`: kube-proxy's source VIP on an overlay network, reserved where only
//! cni-win can keep pods off it.
//!
//! kube-proxy's winkernel proxier needs, on an `Overlay` network, an address of the node's pod
//! subnet that is its own (`--source-vip`): the source of service traffic it load-balances,
//! held by a local endpoint it creates on its first sync when no endpoint on the network has
//! that address. No pod may ever get it, so it must be reserved in the pods' own host-local
//! store, from the ranges ADD allocates from, under an owner no collector releases
//! (`ipam_host_local::layout::NODE_COMPONENTS`). Start scripts did this by running host-local
//! by hand under the network's name; this does it from the config the runtime reads, with the
//! plugins' own code ([`NetworkView::pod_pool`]): the same store, ranges and exclusions (the
//! pod gateway and the HNS subnet's gateway are never the VIP), Flannel-native configs
//! included.
//!
//! Idempotent: a reservation a node component already holds (any owner in
//! `NODE_COMPONENTS`, inside the current ranges) is adopted, so a node set up by an older
//! start script keeps its VIP; otherwise a new one is made as [`OWNER`]. A reservation
//! [`OWNER`] holds outside the current ranges (the node rejoined with another subnet) is given
//! back first. An L2Bridge network needs no VIP (kube-proxy uses the node IP): refused, as is
//! a store or network that ADD could not use, before anything changes.

use std::net::IpAddr;

use cni_win_core::snapshot::{NetworkView, NodeSnapshot};
use hns::schema::{EndpointFlags, HostComputeEndpoint, IpConfig, MacAddress};
use hns::{Client, Feature, Guid};
use ipam_host_local::HostLocal;
use ipam_host_local::layout::{Content, Owner};
use serde::Serialize;

use crate::confdir;
use crate::error::Error;
use crate::paths::NodePaths;
use crate::shipped::Plugin;

/// The (container ID, ifname) a new reservation is written with: RKE2's spelling, which
/// says whose it is to anyone reading the store, and which RKE2's own start code adopts.
pub const OWNER: (&str, &str) = ("kube-proxy", "source-vip");

/// Which network, from which config directory.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The CNI config directory the runtime reads and the plugin directories (`CNI_PATH`
    /// the configs are read with).
    pub paths: NodePaths,
    /// The network (its config's `name`); `None`: the directory's one win-overlay network.
    pub network: Option<String>,
}

/// The reserved VIP and what was done for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceVip {
    /// The HNS network's name: kube-proxy's `--network-name`.
    pub network: String,
    /// The VIP: kube-proxy's `--source-vip`.
    pub ip: IpAddr,
    /// Who holds the reservation (`container/ifname`).
    pub owner: String,
    /// Whether this run made the reservation (rather than finding it).
    pub reserved_now: bool,
    /// The endpoint holding the VIP on the network, if any (after `--create-endpoint`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<Guid>,
    /// Whether this run created that endpoint.
    pub endpoint_created: bool,
    /// Whether HNS supports direct server return for load balancers, which kube-proxy then
    /// runs with ([`kube_proxy_flags`]).
    pub dsr_supported: bool,
}

/// What [`release`] gave back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Released {
    /// The HNS network's name.
    pub network: String,
    /// The addresses node components held, now free for pods.
    pub ips: Vec<IpAddr>,
    /// kube-proxy's source-VIP endpoints deleted.
    pub endpoints: Vec<Guid>,
}

/// Reserves (or finds) the VIP of the chosen network; with `host_mac`, also creates the
/// endpoint kube-proxy would create on its first sync, unless an endpoint on the network
/// already holds the VIP. Raw HCN calls: the snapshot's, plus 5 when it creates the endpoint.
pub fn reserve(
    client: &Client,
    settings: &Settings,
    host_mac: Option<MacAddress>,
) -> Result<SourceVip, Error> {
    let chosen = chosen(settings)?;
    let snapshot = NodeSnapshot::read(client).map_err(|e| Error::hns("read HNS", e))?;
    let network = chosen.decode(Some(snapshot.features));
    let view = snapshot.view(&network.config)?;
    let pool = view.pod_pool()?;
    let reservations = pool.reservations()?;
    let adopted = reservations
        .iter()
        .filter_map(|(ip, content)| match content {
            Content::Owned(owner) if owner.is_node_component() && in_ranges(&pool, *ip) => {
                Some((*ip, owner.clone()))
            }
            _ => None,
        })
        // One an endpoint already holds first: kube-proxy runs with that one.
        .min_by_key(|(ip, _)| (holder(&view, *ip).is_none(), *ip));
    let (ip, owner, reserved_now) = match adopted {
        Some((ip, owner)) => (ip, owner, false),
        None => {
            let (container_id, ifname) = OWNER;
            let outside = reservations.iter().any(|(ip, content)| {
                content == &Content::Owned(Owner::attachment(container_id, ifname))
                    && !in_ranges(&pool, *ip)
            });
            if outside {
                pool.release(container_id, ifname)?;
            }
            let allocation = pool.allocate(container_id, ifname)?;
            let ip = allocation
                .result()
                .ips
                .iter()
                .map(|config| config.address.ip())
                .find(IpAddr::is_ipv4)
                .ok_or_else(|| {
                    Error::new(format!(
                        "network {:?}: its ranges have no IPv4 address, and kube-proxy's overlay \
                         source VIP is IPv4 only; add an IPv4 range",
                        network.name()
                    ))
                })?;
            (ip, Owner::attachment(container_id, ifname), true)
        }
    };
    let mut vip = SourceVip {
        network: network.name().to_owned(),
        ip,
        owner: owner_text(&owner),
        reserved_now,
        endpoint: None,
        endpoint_created: false,
        dsr_supported: snapshot.features.supports(Feature::Dsr),
    };
    if let Some(holder) = holder(&view, ip) {
        if is_pod(&view, holder) {
            return Err(Error::new(format!(
                "the source VIP {ip} reserved as {} is held by pod endpoint {} ({}): a pod got \
                 the address before it was reserved; delete that pod, then run again",
                vip.owner, holder.id, holder.name
            )));
        }
        vip.endpoint = Some(holder.id);
    } else if let Some(mac) = host_mac {
        vip.endpoint = Some(create_endpoint(client, &view, ip, mac)?);
        vip.endpoint_created = true;
    }
    Ok(vip)
}

/// Gives the VIP back: deletes kube-proxy's source-VIP endpoint holding it (exactly that
/// shape: [`is_source_vip_endpoint`]), then releases every node component's reservation.
/// Refused, with nothing changed, while any other endpoint holds one of those addresses: a
/// pod would get an address HNS says is taken.
pub fn release(client: &Client, settings: &Settings) -> Result<Released, Error> {
    let chosen = chosen(settings)?;
    let snapshot = NodeSnapshot::read(client).map_err(|e| Error::hns("read HNS", e))?;
    let network = chosen.decode(Some(snapshot.features));
    let view = snapshot.view(&network.config)?;
    let pool = view.pod_pool()?;
    let held: Vec<(IpAddr, Owner)> = pool
        .reservations()?
        .into_iter()
        .filter_map(|(ip, content)| match content {
            Content::Owned(owner) if owner.is_node_component() => Some((ip, owner)),
            _ => None,
        })
        .collect();
    let mut endpoints = Vec::new();
    for (ip, _) in &held {
        match holder(&view, *ip) {
            Some(endpoint) if is_source_vip_endpoint(endpoint, *ip) => endpoints.push(endpoint.id),
            Some(endpoint) => {
                return Err(Error::new(format!(
                    "{ip} is held by endpoint {} ({:?}), which is not kube-proxy's source-VIP \
                     endpoint; remove it first (nothing was released)",
                    endpoint.id, endpoint.name
                )));
            }
            None => {}
        }
    }
    for id in &endpoints {
        client
            .delete_endpoint(*id)
            .map_err(|e| Error::hns("delete the source-VIP endpoint", e))?;
    }
    for (_, owner) in &held {
        // host-local releases a container's legacy ID-only reservation when the attachment
        // named holds none: the only legacy node component is `dummy`.
        let (container_id, ifname) = match owner {
            Owner::Attachment {
                container_id,
                ifname,
            } => (container_id.as_str(), ifname.as_str()),
            Owner::Legacy { .. } => ("dummy", "dummy"),
        };
        pool.release(container_id, ifname)?;
    }
    Ok(Released {
        network: network.name().to_owned(),
        ips: held.into_iter().map(|(ip, _)| ip).collect(),
        endpoints,
    })
}

/// kube-proxy's flags for `vip`: `--source-vip`, `--network-name`, `--enable-dsr` where HNS
/// supports DSR, and for a kube-proxy older than 1.33 the feature gates that were off by
/// default before (KEP-5100: `WinOverlay` and `WinDSR` beta and on in 1.33, stable in 1.34).
/// `kube_proxy_minor` is kube-proxy's 1.x minor version; `None` means 1.33 or later.
///
/// DSR keeps a Service client's address on the way to the backend pod: without it kube-proxy
/// SNATs ClusterIP traffic to this VIP, which no pod selector matches, so NetworkPolicy
/// ingress rules admitting client pods refuse their Service traffic. kube-proxy refuses to
/// start with `--enable-dsr` on an HNS without DSR, so it is left out there (and doctor
/// fails the node when policies select its pods).
pub fn kube_proxy_flags(vip: &SourceVip, kube_proxy_minor: Option<u32>) -> Vec<String> {
    let mut flags = vec![
        format!("--source-vip={}", vip.ip),
        format!("--network-name={}", vip.network),
    ];
    let mut gates = vec!["WinOverlay=true"];
    if vip.dsr_supported {
        flags.push("--enable-dsr".to_owned());
        gates.push("WinDSR=true");
    }
    if kube_proxy_minor.is_some_and(|minor| minor < 33) {
        flags.push(format!("--feature-gates={}", gates.join(",")));
    }
    flags
}

/// Whether `endpoint` is exactly what kube-proxy creates for its source VIP `ip`
/// (`newSourceVIP`): local, nameless, attached to nothing, no policies, that one address.
pub fn is_source_vip_endpoint(endpoint: &HostComputeEndpoint, ip: IpAddr) -> bool {
    endpoint.name.is_empty()
        && endpoint.flags == EndpointFlags::NONE
        && endpoint.host_compute_namespace.is_zero()
        && endpoint.policies.is_empty()
        && endpoint.ip_configurations.len() == 1
        && endpoint.ip_configurations[0].ip_address == ip
}

/// The network the settings name, or the directory's only win-overlay one. An L2Bridge
/// network is refused: kube-proxy uses the node IP as its source there.
fn chosen(settings: &Settings) -> Result<confdir::Network, Error> {
    let paths = &settings.paths;
    let found = confdir::read(&paths.conf_dir, paths.cni_path())?;
    let dir = paths.conf_dir.display();
    let network = match &settings.network {
        Some(name) => found
            .networks
            .into_iter()
            .find(|network| network.name() == name)
            .ok_or_else(|| {
                Error::new(format!(
                    "{dir} configures no win-bridge or win-overlay network named {name:?}; \
                     --network takes the config's \"name\", the HNS network's"
                ))
            })?,
        None => {
            let mut overlays = found
                .networks
                .into_iter()
                .filter(|network| network.plugin == Plugin::Overlay);
            match (overlays.next(), overlays.next()) {
                (Some(network), None) => network,
                (None, _) => {
                    return Err(Error::new(format!(
                        "{dir} configures no win-overlay network; kube-proxy needs a source VIP \
                         only on an Overlay network (on L2Bridge it uses the node IP)"
                    )));
                }
                (Some(_), Some(_)) => {
                    return Err(Error::new(format!(
                        "{dir} configures several win-overlay networks; name one with --network"
                    )));
                }
            }
        }
    };
    if network.plugin != Plugin::Overlay {
        return Err(Error::new(format!(
            "network {:?} is a win-bridge (L2Bridge) network: kube-proxy uses the node IP as \
             its source VIP there, so it needs none (start it without --source-vip)",
            network.name()
        )));
    }
    Ok(network)
}

fn in_ranges(pool: &HostLocal, ip: IpAddr) -> bool {
    pool.config()
        .range_sets
        .iter()
        .any(|set| set.range_for(ip).is_some())
}

/// The endpoint on the network holding `ip`, local or remote.
fn holder<'s>(view: &NetworkView<'s>, ip: IpAddr) -> Option<&'s HostComputeEndpoint> {
    view.endpoints().find(|endpoint| {
        endpoint
            .ip_configurations
            .iter()
            .any(|c| c.ip_address == ip)
    })
}

/// Whether the ownership rule says a pod's attachment (cni-win's or the reference plugin's)
/// holds `endpoint`.
fn is_pod(view: &NetworkView<'_>, endpoint: &HostComputeEndpoint) -> bool {
    view.verdicts().iter().any(|(candidate, verdict)| {
        candidate.id == endpoint.id && !matches!(verdict, cni_win_core::ownership::Verdict::NotOurs)
    })
}

/// Creates kube-proxy's endpoint for `ip` (its `hns.createEndpoint` document, with HNS
/// choosing the ID).
fn create_endpoint(
    client: &Client,
    view: &NetworkView<'_>,
    ip: IpAddr,
    mac: MacAddress,
) -> Result<Guid, Error> {
    let network = view
        .network
        .ok_or_else(|| Error::new("the HNS network disappeared"))?;
    let settings = HostComputeEndpoint {
        ip_configurations: vec![IpConfig {
            ip_address: ip,
            prefix_length: None,
        }],
        mac_address: Some(mac),
        flags: EndpointFlags::NONE,
        ..HostComputeEndpoint::default()
    };
    let open = client
        .open_network(network.id)
        .map_err(|e| Error::hns("open the HNS network", e))?;
    let created = open
        .create_endpoint(Guid::ZERO, &settings)
        .map_err(|e| Error::hns("create the source-VIP endpoint", e.error().clone()))?;
    Ok(created.id())
}

fn owner_text(owner: &Owner) -> String {
    match owner {
        Owner::Attachment {
            container_id,
            ifname,
        } => format!("{container_id}/{ifname}"),
        Owner::Legacy { container_id } => container_id.clone(),
    }
}
