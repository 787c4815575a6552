//! Addresses for the endpoint: `host-local` in-process (no exec, and a failed ADD gives back
//! exactly what it reserved), any other IPAM plugin executed from `CNI_PATH` as libcni does.

use std::net::IpAddr;

use cni::{
    CniArgs, Command, DelRequest, Error, NetConf, NetworkRequest, Request, Success,
    case_insensitive, delegate,
};
use ipam_host_local::range::Range;
use ipam_host_local::{Allocation, Exhausted, HostLocal, Retention, Teardown};
use serde_json::Value;

use crate::decodes::Decodes;
use crate::delegation::Delegate;
use crate::network_cache::NetworkCache;

/// The config's IPAM.
#[derive(Debug, Clone)]
pub(crate) enum Ipam {
    /// `"type": "host-local"`: the `ipam-host-local` library, in this process.
    HostLocal(HostLocal),
    /// Any other type: the plugin of that name in `CNI_PATH`.
    Delegated(Delegate),
}

/// What one ADD got from IPAM, tied to the IPAM that gave it, so undoing it can only go to
/// the IPAM that reserved it.
#[derive(Debug)]
pub(crate) enum Lease<'a> {
    /// host-local's record of what this ADD reserved.
    HostLocal(&'a HostLocal, Allocation),
    /// A delegated plugin's result; undoing it is the plugin's DEL.
    Delegated(&'a Delegate, Success),
}

impl Lease<'_> {
    /// The addresses, routes and DNS IPAM gave.
    pub fn result(&self) -> &Success {
        match self {
            Lease::HostLocal(_, allocation) => allocation.result(),
            Lease::Delegated(_, result) => result,
        }
    }

    /// Whether this ADD reserved the addresses (rather than finding them the attachment's).
    /// A delegated plugin's always are: ADD asks it only after finding no endpoint, under the
    /// attachment lock.
    pub fn is_new(&self) -> bool {
        match self {
            Lease::HostLocal(_, allocation) => !allocation.already_held(),
            Lease::Delegated(..) => true,
        }
    }

    /// Rollback of a failed ADD: gives back what this ADD reserved, and nothing else (a
    /// repeated ADD's addresses were the attachment's before it and stay).
    pub fn undo(&self, request: &Request) -> Result<(), Error> {
        match self {
            Lease::HostLocal(_, allocation) if allocation.already_held() => Ok(()),
            Lease::HostLocal(host_local, allocation) => host_local.undo(allocation),
            Lease::Delegated(plugin, _) => delegate::run(
                plugin.as_str(),
                Command::Del,
                &request.stdin,
                &request.cni_path,
            ),
        }
    }
}

/// host-local's type name, matched as the reference matches plugin types (exactly).
const HOST_LOCAL: &str = "host-local";

/// The config's `ipam.type`, `None` without an `ipam` section: the IPAM that holds the
/// attachment's addresses. Code 7 naming the key when the section is not an object or its
/// type is missing or not text: an HNS plugin could not tell which IPAM to ask.
pub(crate) fn ipam_type(conf: &NetConf) -> Result<Option<&str>, Error> {
    let ipam = match case_insensitive::get(conf.raw(), "ipam") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(ipam)) => ipam,
        Some(_) => {
            return Err(Error::invalid_config(
                "ipam is not an object; give the IPAM plugin's section, e.g. \
                 {\"type\": \"host-local\", \"subnet\": \"10.244.1.0/24\"}",
            ));
        }
    };
    match case_insensitive::get(ipam, "type") {
        Some(Value::String(name)) if !name.is_empty() => Ok(Some(name)),
        None | Some(Value::Null | Value::String(_)) => Err(Error::invalid_config(
            "ipam.type is missing; set it to the IPAM plugin's name (e.g. \"host-local\")",
        )),
        Some(_) => Err(Error::invalid_config(
            "ipam.type is not text; set it to the IPAM plugin's name (e.g. \"host-local\")",
        )),
    }
}

impl Ipam {
    /// The config's IPAM, `None` without an `ipam` section (whether that is allowed is the
    /// command's call: see `Prepared::required_ipam`).
    pub fn from_conf(conf: &NetConf, args: &CniArgs) -> Result<Option<Ipam>, Error> {
        let Some(ipam_type) = ipam_type(conf)? else {
            return Ok(None);
        };
        Decodes::count_ipam();
        Ok(Some(match ipam_type {
            HOST_LOCAL => Ipam::HostLocal(HostLocal::from_conf(conf, args)?),
            other => Ipam::Delegated(Delegate::new(other, conf)?),
        }))
    }

    /// Where this config's network cache lives: beside host-local's store; a delegated IPAM
    /// names no directory the plugin may write in, so it has none.
    pub fn network_cache(&self) -> Option<NetworkCache> {
        match self {
            Ipam::HostLocal(host_local) => Some(NetworkCache::in_store(host_local.network_dir())),
            Ipam::Delegated(_) => None,
        }
    }

    pub fn is_delegated(&self) -> bool {
        matches!(self, Ipam::Delegated(_))
    }

    /// host-local's ranges, as host-local itself parsed them (empty when delegated: they are
    /// unknown before ADD).
    pub fn ranges(&self) -> impl Iterator<Item = &Range> {
        let sets = match self {
            Ipam::HostLocal(host_local) => host_local.config().range_sets.as_slice(),
            Ipam::Delegated(_) => &[],
        };
        sets.iter().flat_map(|set| set.ranges())
    }

    /// Keeps `addresses` (the pod gateways, the HNS subnets' gateways) out of host-local's
    /// allocations. A delegated plugin has its own config for that.
    pub fn exclude(&mut self, addresses: &[IpAddr]) {
        if let Ipam::HostLocal(host_local) = self {
            host_local.exclude(addresses);
        }
    }

    /// ADD: the attachment's addresses (host-local returns the ones it already holds).
    pub fn allocate(&self, request: &Request) -> Result<Lease<'_>, Error> {
        match self {
            Ipam::HostLocal(host_local) => {
                let allocation = host_local.allocate(&request.container_id, &request.ifname)?;
                Ok(Lease::HostLocal(host_local, allocation))
            }
            Ipam::Delegated(plugin) => {
                let result = delegate::add(
                    plugin.as_str(),
                    &request.stdin,
                    &request.cni_path,
                    request.config.cni_version,
                )
                .map_err(|e| e.context(format!("IPAM plugin {}", plugin.as_str())))?;
                Ok(Lease::Delegated(plugin, result))
            }
        }
    }

    /// Releases the addresses of another attachment whose endpoint was found stale (see
    /// `stale`). A delegated IPAM is left alone: it just gave one of that attachment's
    /// addresses to the new pod, so it no longer counts it as held, and it is run only for
    /// the attachment of this command.
    pub fn release_other(&self, container_id: &str, ifname: &str) -> Result<(), Error> {
        match self {
            Ipam::HostLocal(host_local) => host_local.release(container_id, ifname),
            Ipam::Delegated(plugin) => {
                log::info!(
                    "not asking {} to release {container_id}/{ifname}: it runs only for this attachment",
                    plugin.as_str()
                );
                Ok(())
            }
        }
    }

    /// CHECK: the reservations match `expected`.
    pub fn check(&self, request: &Request, expected: &Success) -> Result<(), Error> {
        match self {
            Ipam::HostLocal(host_local) => {
                host_local.check(&request.container_id, &request.ifname, expected)
            }
            Ipam::Delegated(plugin) => delegate::run(
                plugin.as_str(),
                Command::Check,
                &request.stdin,
                &request.cni_path,
            ),
        }
    }

    /// GC: releases what `retention` does not keep (host-local's one rule: never a node
    /// component's reservation, nor an address an endpoint holds). A delegated plugin reads
    /// the valid attachments from its config.
    pub fn gc(&self, request: &NetworkRequest, retention: &Retention) -> Result<(), Error> {
        match self {
            Ipam::HostLocal(host_local) => host_local.gc(retention),
            Ipam::Delegated(plugin) => delegate::run(
                plugin.as_str(),
                Command::Gc,
                &request.stdin,
                &request.cni_path,
            ),
        }
    }

    /// STATUS: IPAM is usable; ready with the range sets that are full (host-local fails on
    /// those only with `notReadyWhenFull`). A delegated plugin's STATUS is its own answer.
    pub fn status(&self, request: &NetworkRequest) -> Result<Vec<Exhausted>, Error> {
        match self {
            Ipam::HostLocal(host_local) => host_local.status(),
            Ipam::Delegated(plugin) => delegate::run(
                plugin.as_str(),
                Command::Status,
                &request.stdin,
                &request.cni_path,
            )
            .map(|()| Vec::new()),
        }
    }
}

/// The IPAM a DEL gives the attachment's addresses back to, found from what identifies it
/// (`ipam.type`; for host-local, its store) whatever else in the config changed since ADD.
#[derive(Debug)]
pub(crate) enum Release {
    /// host-local's store, in this process (see [`Teardown`]).
    HostLocal(Teardown),
    /// Any other type: that plugin's DEL, with the config as it is (the plugin decides what
    /// it needs of it).
    Delegated(Delegate),
}

impl Release {
    /// The config's IPAM as a DEL reads it; `None` without an `ipam` section (nothing to
    /// release). Code 7 when `ipam.type` or host-local's store cannot be told.
    pub fn of(conf: &NetConf, args: &CniArgs) -> Result<Option<Release>, Error> {
        let Some(ipam_type) = ipam_type(conf)? else {
            return Ok(None);
        };
        Decodes::count_ipam();
        Ok(Some(match ipam_type {
            HOST_LOCAL => Release::HostLocal(Teardown::from_conf(conf, args)?),
            other => Release::Delegated(Delegate::new(other, conf)?),
        }))
    }

    /// DEL: releases the attachment's addresses (success when it holds none).
    pub fn release(&self, request: &DelRequest) -> Result<(), Error> {
        match self {
            Release::HostLocal(teardown) => {
                teardown.release(&request.container_id, &request.ifname)
            }
            // Named by the key, since a DEL's config may no longer be the one ADD ran with.
            Release::Delegated(plugin) => delegate::run(
                plugin.as_str(),
                Command::Del,
                &request.stdin,
                &request.cni_path,
            )
            .map_err(|e| e.context(format!("ipam.type {}", cni::quoted(plugin.as_str())))),
        }
    }
}
