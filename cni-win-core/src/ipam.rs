//! Addresses for the endpoint: `host-local` in-process (no exec, and a failed ADD gives back
//! exactly what it reserved), any other IPAM plugin executed from `CNI_PATH` as libcni does.

use std::net::IpAddr;

use cni::{
    CniArgs, Command, Error, GcAttachment, NetConf, NetworkRequest, Request, Success, delegate,
};
use ipam_host_local::{Allocation, HostLocal};
use ipnetwork::IpNetwork;

/// The config's IPAM.
#[derive(Debug)]
pub enum Ipam {
    /// `"type": "host-local"`: the `ipam-host-local` library, in this process.
    HostLocal(HostLocal),
    /// Any other type: the plugin of that name in `CNI_PATH`.
    Delegated(String),
}

/// What one ADD got from IPAM, and what undoing it means.
#[derive(Debug)]
pub struct Lease {
    pub result: Success,
    /// host-local's record of which addresses this ADD reserved (`None` when delegated).
    allocation: Option<Allocation>,
}

impl Lease {
    /// Whether this ADD reserved anything that a rollback must give back.
    pub fn reserved_here(&self) -> bool {
        self.allocation.as_ref().is_none_or(|a| !a.already_held())
    }
}

/// host-local's type name, matched as the reference matches plugin types (exactly).
const HOST_LOCAL: &str = "host-local";

impl Ipam {
    /// The config's IPAM; a config without `ipam` is code 7 (the reference's "HNS provides the
    /// IP" path produces an endpoint without address or gateway, so it is not offered).
    pub fn from_conf(conf: &NetConf, args: &CniArgs) -> Result<Ipam, Error> {
        Ipam::optional(conf, args)?.ok_or_else(|| {
            Error::invalid_config(
                "ipam is missing; add an \"ipam\" section, e.g. {\"type\": \"host-local\", \"subnet\": \"10.244.1.0/24\"}",
            )
        })
    }

    /// As [`Ipam::from_conf`], but `None` without an `ipam` section (DEL, GC and STATUS of such
    /// a config still clean up HNS).
    pub fn optional(conf: &NetConf, args: &CniArgs) -> Result<Option<Ipam>, Error> {
        Ok(match conf.ipam_type.as_deref() {
            None => None,
            Some(HOST_LOCAL) => Some(Ipam::HostLocal(HostLocal::from_conf(conf, args)?)),
            Some(other) => Some(Ipam::Delegated(other.to_owned())),
        })
    }

    pub fn is_delegated(&self) -> bool {
        matches!(self, Ipam::Delegated(_))
    }

    /// The subnets of host-local's ranges (empty when delegated: they are unknown before ADD).
    pub fn subnets(&self) -> Vec<IpNetwork> {
        match self {
            Ipam::HostLocal(host_local) => host_local
                .config()
                .range_sets
                .iter()
                .flat_map(|set| set.ranges().iter().map(|range| range.subnet))
                .collect(),
            Ipam::Delegated(_) => Vec::new(),
        }
    }

    /// Keeps `addresses` (the pod gateway, the HNS subnet's gateway) out of host-local's
    /// allocations. A delegated plugin has its own config for that.
    pub fn exclude(&mut self, addresses: &[IpAddr]) {
        if let Ipam::HostLocal(host_local) = self {
            host_local.exclude(addresses);
        }
    }

    /// ADD: the attachment's addresses (host-local returns the ones it already holds).
    pub fn allocate(&self, request: &Request) -> Result<Lease, Error> {
        match self {
            Ipam::HostLocal(host_local) => {
                let allocation = host_local.allocate(&request.container_id, &request.ifname)?;
                Ok(Lease {
                    result: allocation.result().clone(),
                    allocation: Some(allocation),
                })
            }
            Ipam::Delegated(plugin) => {
                let result = delegate::add(
                    plugin,
                    &request.stdin,
                    &request.cni_path,
                    request.config.cni_version,
                )
                .map_err(|e| e.context(format!("IPAM plugin {plugin}")))?;
                Ok(Lease {
                    result,
                    allocation: None,
                })
            }
        }
    }

    /// Rollback of a failed ADD: gives back what this ADD reserved, and nothing else.
    pub fn undo(&self, request: &Request, lease: &Lease) -> Result<(), Error> {
        match (self, &lease.allocation) {
            (Ipam::HostLocal(host_local), Some(allocation)) => host_local.undo(allocation),
            (Ipam::Delegated(plugin), _) => {
                delegate::run(plugin, Command::Del, &request.stdin, &request.cni_path)
            }
            (Ipam::HostLocal(_), None) => Ok(()),
        }
    }

    /// DEL: releases the attachment's addresses (success when it holds none).
    pub fn release(&self, request: &Request) -> Result<(), Error> {
        match self {
            Ipam::HostLocal(host_local) => {
                host_local.release(&request.container_id, &request.ifname)
            }
            Ipam::Delegated(plugin) => {
                delegate::run(plugin, Command::Del, &request.stdin, &request.cni_path)
            }
        }
    }

    /// CHECK: the reservations match `expected`.
    pub fn check(&self, request: &Request, expected: &Success) -> Result<(), Error> {
        match self {
            Ipam::HostLocal(host_local) => {
                host_local.check(&request.container_id, &request.ifname, expected)
            }
            Ipam::Delegated(plugin) => {
                delegate::run(plugin, Command::Check, &request.stdin, &request.cni_path)
            }
        }
    }

    /// GC: releases what no valid attachment holds (host-local keeps kube-proxy's source VIP).
    pub fn gc(&self, request: &NetworkRequest, valid: &[GcAttachment]) -> Result<(), Error> {
        match self {
            Ipam::HostLocal(host_local) => host_local.gc(valid),
            Ipam::Delegated(plugin) => {
                delegate::run(plugin, Command::Gc, &request.stdin, &request.cni_path)
            }
        }
    }

    /// STATUS: IPAM can hand out an address.
    pub fn status(&self, request: &NetworkRequest) -> Result<(), Error> {
        match self {
            Ipam::HostLocal(host_local) => host_local.status(),
            Ipam::Delegated(plugin) => {
                delegate::run(plugin, Command::Status, &request.stdin, &request.cni_path)
            }
        }
    }
}
