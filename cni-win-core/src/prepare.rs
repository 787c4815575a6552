//! The prepared attachment: what every command reads from the config and from HNS, built once
//! per command by the same code, so ADD, CHECK, GC and STATUS cannot disagree about the
//! network, the validation, the gateways or the addresses host-local may hand out (a STATUS
//! that skipped the pod gateway once said "ready" on a range ADD found exhausted).
//!
//! Preparation has two steps: [`Prepared::load`] decodes and validates the config and parses
//! IPAM (no HNS call), [`Prepared::network`] finds the HNS network by name, checks it as the
//! plugin's kind requires, computes each IPAM range's pod gateway once and keeps the gateways
//! out of host-local's pool; ADD and CHECK take both, with the attachment, as a
//! [`PreparedAttachment`], and open the network by the ID the network cache holds when it
//! holds one ([`crate::network_cache`]), so they skip the lookup by name. DEL takes only what
//! it needs ([`Identity`], `teardown`), so a config or network that changed since ADD never
//! stops it from cleaning up.

use std::net::IpAddr;

use cni::{CniArgs, Error, NetConf, Request};
use hns::schema::{HostComputeNetwork, Subnet};
use hns::{Client, Guid, HnsError, OpenNetwork, RawHcn};
use ipnetwork::IpNetwork;

use crate::config::{Conf, namespace_guid};
use crate::hns_error::to_cni;
use crate::identity::Identity;
use crate::ipam::Ipam;
use crate::kind::NetworkKind;
use crate::network_cache::NetworkCache;

/// The validated config and the IPAM it names.
#[derive(Debug)]
pub(crate) struct Prepared<K> {
    pub conf: Conf<K>,
    /// `None` when the config has no `ipam` section (ADD and CHECK refuse that; DEL, GC and
    /// STATUS still clean up or report HNS).
    pub ipam: Option<Ipam>,
}

/// The HNS network a prepared config names, checked, with the pod gateway of each IPAM range.
#[derive(Debug)]
pub(crate) struct Network<'c> {
    pub open: OpenNetwork<'c, dyn RawHcn>,
    /// How the network was found, which decides whether ADD records it in the cache or may
    /// retry with a lookup by name.
    pub found: Found,
    /// Each host-local range's subnet and the pod gateway the kind chose for it.
    gateways: Vec<(IpNetwork, IpAddr)>,
}

/// A config fitted to a network: each host-local range's subnet with its pod gateway, and
/// every address host-local must never hand out there (those gateways and the HNS subnets'
/// own).
#[derive(Debug)]
struct Fitted {
    gateways: Vec<(IpNetwork, IpAddr)>,
    excluded: Vec<IpAddr>,
}

/// How a command found its network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// By the ID the network cache held.
    ByCachedId,
    /// By name (no cache, a miss, or a cached ID that no longer fits).
    ByName,
}

/// How a command may find its network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lookup {
    /// By the cached ID when the cache holds one, else by name.
    CacheFirst,
    /// By name only: the cached network just proved stale.
    ByName,
}

/// Why a prepared config cannot use its network. Each command answers differently: ADD and
/// CHECK fail, STATUS reports not ready, GC has nothing to sweep when it is missing.
#[derive(Debug)]
pub(crate) enum Unusable {
    /// No network of that name: flanneld or the node's setup may not have created it yet.
    Missing(HnsError),
    /// HNS could not be asked.
    Hns(HnsError),
    /// The network exists but this plugin cannot use it (type, the kind's checks, gateways).
    Unfit(Error),
}

/// What ADD and CHECK act on: the prepared config with the IPAM they require, the attachment
/// and its network.
#[derive(Debug)]
pub(crate) struct PreparedAttachment<'c, 'r, K> {
    pub prepared: Prepared<K>,
    pub attachment: Attachment<'r>,
    pub network: Network<'c>,
}

/// One attachment: the request, the pod's namespace and the endpoint's identity.
#[derive(Debug)]
pub(crate) struct Attachment<'r> {
    pub request: &'r Request,
    pub namespace: Guid,
    pub endpoint: Identity,
}

impl<'c, 'r, K: NetworkKind> PreparedAttachment<'c, 'r, K> {
    /// Prepares ADD and CHECK, failing in this order: config (7), `CNI_NETNS` (4), no IPAM
    /// (7), then the network (11 when missing, 7 when unfit), before anything is allocated.
    pub fn new(
        client: &'c Client,
        request: &'r Request,
        lookup: Lookup,
    ) -> Result<PreparedAttachment<'c, 'r, K>, Error> {
        let mut prepared = Prepared::<K>::load(&request.config, &request.args)?;
        let attachment = Attachment {
            request,
            namespace: namespace_guid(&request.netns)?,
            endpoint: Identity::of(
                &prepared.conf.network,
                &request.container_id,
                &request.ifname,
            ),
        };
        let ipam = prepared.required_ipam()?;
        let cache = match lookup {
            Lookup::CacheFirst => ipam.network_cache(),
            Lookup::ByName => None,
        };
        let network = match cache {
            Some(cache) => prepared.cached_network(client, &cache),
            None => prepared.network(client),
        }
        .map_err(|e| e.into_error(&prepared.conf.network))?;
        Ok(PreparedAttachment {
            prepared,
            attachment,
            network,
        })
    }
}

impl<K: NetworkKind> Prepared<K> {
    /// Decodes and validates the config (code 7 naming the key) and parses its IPAM.
    pub fn load(config: &NetConf, args: &CniArgs) -> Result<Prepared<K>, Error> {
        Ok(Prepared {
            conf: Conf::load(config)?,
            ipam: Ipam::from_conf(config, args)?,
        })
    }

    /// As [`Prepared::load`], with the IPAM of a command that only gives addresses back (GC):
    /// in Flannel-native mode it needs no subnet.env (see `flannel::teardown_ipam`).
    pub fn load_for_teardown(config: &NetConf, args: &CniArgs) -> Result<Prepared<K>, Error> {
        Ok(Prepared {
            conf: Conf::load(config)?,
            ipam: crate::flannel::teardown_ipam(config, args)?,
        })
    }

    /// The IPAM, required by ADD and CHECK: a config without `ipam` is code 7 (the
    /// reference's "HNS provides the IP" path produces an endpoint without address or
    /// gateway, so it is not offered).
    pub fn required_ipam(&self) -> Result<&Ipam, Error> {
        self.ipam.as_ref().ok_or_else(|| {
            Error::invalid_config(
                "ipam is missing; add an \"ipam\" section, e.g. {\"type\": \"host-local\", \"subnet\": \"10.244.1.0/24\"}",
            )
        })
    }

    /// Opens the network (3 raw calls) and fits the config to it ([`Prepared::fit`]).
    pub fn network<'c>(&mut self, client: &'c Client) -> Result<Network<'c>, Unusable> {
        let open = client
            .find_network_by_name(&self.conf.network)
            .map_err(|e| {
                if e.is_not_found() {
                    Unusable::Missing(e)
                } else {
                    Unusable::Hns(e)
                }
            })?;
        let gateways = self.fit(open.properties())?;
        Ok(Network {
            open,
            gateways,
            found: Found::ByName,
        })
    }

    /// Opens the network by the ID `cache` holds and fits the config to it, or, on a miss or
    /// when that network is gone or no longer fits, finds it by name ([`Prepared::network`]).
    /// Raw calls on a hit: 1 (`HcnOpenNetwork`; the cached properties cannot change under the
    /// ID), or 2 for a kind that reads the network's policies (open + query, and the name
    /// checked); a stale ID costs one call more than the lookup by name.
    pub fn cached_network<'c>(
        &mut self,
        client: &'c Client,
        cache: &NetworkCache,
    ) -> Result<Network<'c>, Unusable> {
        let name = self.conf.network.clone();
        if let Some(known) = cache.read(&name) {
            let id = known.id;
            let opened = if K::READS_NETWORK_POLICIES {
                client.open_network(id)
            } else {
                client.open_network_known(known)
            };
            match opened {
                Ok(open) if open.properties().name != name => {
                    log::info!("network {id} is no longer named {name:?}: looking it up by name");
                }
                Ok(open) => match self.fit(open.properties()) {
                    Ok(gateways) => {
                        return Ok(Network {
                            open,
                            gateways,
                            found: Found::ByCachedId,
                        });
                    }
                    Err(_) => log::info!(
                        "cached network {id} no longer fits {name:?}: looking it up by name"
                    ),
                },
                Err(e) => log::info!("cached network {id} of {name:?}: {e}; looking it up by name"),
            }
        }
        self.network(client)
    }

    /// Checks the network's type and the kind's rules, computes the pod gateway of every
    /// host-local range and keeps those gateways and the HNS subnets' own gateways out of
    /// host-local's pool; returns each range's subnet with its pod gateway. No HCN call: the
    /// node tools fit a config to the network a snapshot read.
    pub fn fit(
        &mut self,
        properties: &HostComputeNetwork,
    ) -> Result<Vec<(IpNetwork, IpAddr)>, Unusable> {
        let fitted = self.fitted(properties)?;
        if let Some(ipam) = &mut self.ipam {
            ipam.exclude(&fitted.excluded);
        }
        Ok(fitted.gateways)
    }

    /// The IPAM ADD allocates from on the network `properties` describes: the config's, after
    /// the checks [`Prepared::fit`] makes, with the same addresses kept out. Leaves `self` as
    /// it is, so one decoded config answers for every read of the network.
    pub fn fitted_ipam(&self, properties: &HostComputeNetwork) -> Result<Option<Ipam>, Unusable> {
        let excluded = self.fitted(properties)?.excluded;
        let mut ipam = self.ipam.clone();
        if let Some(ipam) = &mut ipam {
            ipam.exclude(&excluded);
        }
        Ok(ipam)
    }

    /// What [`Prepared::fit`] checks and computes.
    fn fitted(&self, properties: &HostComputeNetwork) -> Result<Fitted, Unusable> {
        let name = &self.conf.network;
        let network_type = &properties.network_type;
        if !K::NETWORK_TYPES.contains(&network_type.as_str()) {
            return Err(Unusable::Unfit(Error::invalid_config(format!(
                "HNS network {name:?} is of type {network_type}, but {} needs {}",
                K::PLUGIN,
                K::NETWORK_TYPES.join(" or ")
            ))));
        }
        self.conf
            .kind
            .check_network(properties)
            .map_err(Unusable::Unfit)?;
        let mut gateways = Vec::new();
        if let Some(ipam) = &self.ipam {
            for range in ipam.ranges() {
                let gateway = holding_subnet(properties, range.subnet)
                    .and_then(|holding| {
                        self.conf
                            .kind
                            .gateway(holding, range.subnet, range.configured_gateway())
                    })
                    .map_err(Unusable::Unfit)?;
                gateways.push((range.subnet, gateway));
            }
        }
        let mut excluded: Vec<IpAddr> = gateways.iter().map(|(_, gateway)| *gateway).collect();
        excluded.extend(properties.subnets().filter_map(Subnet::gateway));
        Ok(Fitted { gateways, excluded })
    }

    /// The pod gateway of an address IPAM gave: its range's, computed by
    /// [`Prepared::network`]; for a delegated IPAM (whose ranges are unknown) the kind's
    /// default for the address's subnet.
    pub fn gateway_for(&self, network: &Network<'_>, address: IpNetwork) -> Result<IpAddr, Error> {
        let in_range = network.gateways.iter().find(|(subnet, _)| {
            subnet.prefix() == address.prefix() && subnet.contains(address.ip())
        });
        match in_range {
            Some((_, gateway)) => Ok(*gateway),
            None => {
                let subnet = IpNetwork::new(address.network(), address.prefix())
                    .map_err(|e| Error::internal(format!("IPAM address {address}: {e}")))?;
                let holding = holding_subnet(network.open.properties(), subnet)?;
                self.conf.kind.gateway(holding, subnet, None)
            }
        }
    }
}

/// The HNS subnet that contains the IPAM subnet `subnet`. HNS refuses an endpoint address
/// outside the network's subnets, so a range there could never give a pod an address: it is
/// refused before anything is allocated, and STATUS says so.
fn holding_subnet(network: &HostComputeNetwork, subnet: IpNetwork) -> Result<&Subnet, Error> {
    network
        .subnets()
        .find(|candidate| {
            let prefix = candidate.ip_address_prefix.network();
            prefix.prefix() <= subnet.prefix() && prefix.contains(subnet.network())
        })
        .ok_or_else(|| {
            let prefixes: Vec<String> = network
                .subnets()
                .map(|s| s.ip_address_prefix.to_string())
                .collect();
            Error::invalid_config(format!(
                "ipam subnet {subnet} is not inside HNS network {:?} (subnets {prefixes:?}), and \
                 HNS refuses endpoint addresses outside them; the ipam subnet must be this node's \
                 part of the network (with Flannel, its FLANNEL_SUBNET)",
                network.name
            ))
        })
}

impl Unusable {
    /// The error of a command that needs the network (ADD, CHECK): missing is code 11, since
    /// the network may simply not exist yet; the others as HNS or the check said.
    pub fn into_error(self, name: &str) -> Error {
        match self {
            Unusable::Missing(e) => Error::try_again_later(format!(
                "HNS network {name:?} does not exist (yet): it is created by flanneld or the node's \
                 network setup, which may not have run yet; the config's \"name\" must be the HNS network's name"
            ))
            .with_details(crate::hns_error::details(&e)),
            Unusable::Hns(e) => to_cni(&e, &format!("find HNS network {name:?}")),
            Unusable::Unfit(e) => e,
        }
    }
}
