//! Flannel-native mode: a config carrying Flannel's `subnetFile` key makes the plugin do what
//! Flannel's meta plugin does for its Windows delegate, so a conflist can list `win-bridge` or
//! `win-overlay` directly and CHECK, GC and STATUS reach them (Flannel answers those itself).
//!
//! - ADD, CHECK and STATUS read subnet.env ([`subnet_env`]) and run on the effective config
//!   ([`derive`]); a subnet.env that is absent or still incomplete after the retries is code 11
//!   (50 for STATUS, naming what is missing).
//! - DEL and GC never read subnet.env (node teardown removes it first): host-local releases
//!   by attachment ([`release`], [`teardown_ipam`]); DEL removes Flannel's record
//!   ([`record`]).
//! - The same network name (the conflist's `name`), host-local store (its default `dataDir`)
//!   and Flannel record ([`record`], under the top-level `dataDir`) as Flannel's delegate
//!   path, so a node can switch between `type: flannel` and the direct conflist with pods
//!   running, both ways.
//! - CHECK reports a pod whose address is outside the node's current subnet.
//!
//! Each command's entry point is a wrapper around the core's command, which it hands the
//! effective request.

mod derive;
mod file;
mod record;
mod subnet_env;

use std::path::Path;

use cni::path::RootedPath;
use cni::{CniArgs, Error, ErrorCode, NetConf, NetworkRequest, Request, Success, case_insensitive};
use hns::{Client, Feature, HnsError, SupportedFeatures};
use ipam_host_local::{HostLocal, IpamConfig, StoreLocation, Teardown};
use ipnetwork::IpNetwork;
use serde_json::Value;

use crate::codes::CHECK_MISMATCH;
use crate::decodes::Decodes;
use crate::hns_error::to_cni;
use crate::ipam::{Ipam, Release};
use crate::path_keys::{FLANNEL_DATA_DIR, SUBNET_FILE};
pub use record::Record;
use subnet_env::{Problem, SubnetEnv};

/// The Flannel-native keys of a config, decoded once per command: a config is Flannel-native
/// when it carries `subnetFile`. Each key keeps its own verdict, because the commands need
/// different ones: ADD both, CHECK and STATUS both (they judge the config ADD runs on), DEL
/// only `dataDir` (it never reads subnet.env), GC neither.
#[derive(Debug)]
pub(crate) struct Native {
    /// `subnetFile` ([`SUBNET_FILE`]), or why it is not a path.
    subnet_file: Result<RootedPath, Error>,
    /// `dataDir` ([`FLANNEL_DATA_DIR`]), where Flannel's record is, or why it is not a path.
    data_dir: Result<RootedPath, Error>,
}

impl Native {
    /// `None` unless the config carries `subnetFile` (null and empty mean the default, as in
    /// Flannel's plugin).
    pub(crate) fn of(conf: &NetConf) -> Option<Native> {
        let subnet_file = case_insensitive::get(conf.raw(), "subnetFile")?;
        Some(Native {
            subnet_file: SUBNET_FILE.decode(Some(subnet_file)),
            data_dir: FLANNEL_DATA_DIR.decode(case_insensitive::get(conf.raw(), "dataDir")),
        })
    }

    /// subnet.env's path, for ADD, CHECK and STATUS, which refuse (code 7 naming the key) a
    /// config whose `subnetFile` or `dataDir` is not a path: ADD could not run on it.
    fn subnet_file(&self) -> Result<&Path, Error> {
        self.data_dir.as_ref().map_err(Clone::clone)?;
        self.subnet_file.as_deref().map_err(Clone::clone)
    }

    /// Flannel's record of `container_id` (code 7 when `dataDir` is not a path: it cannot
    /// locate the record).
    fn record(&self, container_id: &str) -> Result<Record, Error> {
        let data_dir = self.data_dir.as_ref().map_err(Clone::clone)?;
        Record::new(data_dir, container_id)
    }
}

/// This node's pod subnets as flanneld leased them (subnet.env's `FLANNEL_SUBNET` and
/// `FLANNEL_IPV6_SUBNET`), for a Flannel-native config: what its HNS network must hold. `None`
/// for any other config, and while subnet.env cannot be read or is incomplete: what cannot
/// be read says nothing of what the network should be (STATUS reports why).
pub fn leased_subnets(conf: &NetConf) -> Option<Vec<IpNetwork>> {
    let native = Native::of(conf)?;
    let env = subnet_env::load(native.subnet_file().ok()?).ok()?;
    Some(
        [env.subnet, env.ipv6_subnet]
            .into_iter()
            .flatten()
            .collect(),
    )
}

/// subnet.env for ADD and CHECK: what is wrong is transient (flanneld writes it), code 11,
/// except a path that is not a regular file, which only the operator can fix (code 7).
fn subnet_env_for_pod(subnet_file: &Path) -> Result<SubnetEnv, Error> {
    subnet_env::load(subnet_file).map_err(|problem| {
        let code = match problem {
            Problem::Unreadable(_, ref e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                ErrorCode::InvalidConfig
            }
            _ => ErrorCode::TryAgainLater,
        };
        Error::new(code, problem.to_string())
    })
}

/// Whether the IPv6 subnet may become a range set: only asked of HNS when there is one.
fn dual_stack(client: &Client, env: &SubnetEnv) -> Result<bool, Error> {
    dual_stack_with(env, || client.supported_features())
}

/// [`dual_stack`] with the HNS features from wherever the caller has them (a node snapshot
/// read them already); asked only when subnet.env has an IPv6 subnet.
fn dual_stack_with(
    env: &SubnetEnv,
    features: impl FnOnce() -> Result<SupportedFeatures, HnsError>,
) -> Result<bool, Error> {
    if env.ipv6_subnet.is_none() {
        return Ok(false);
    }
    let features = features().map_err(|e| to_cni(&e, "read the HNS version"))?;
    Ok(features.supports(Feature::Ipv6DualStack))
}

/// `request` on the effective config.
fn effective_request(request: &Request, env: &SubnetEnv, dual: bool) -> Result<Request, Error> {
    let (config, stdin) = derive::effective(&request.config, env, dual)?;
    Ok(Request {
        config,
        stdin,
        ..request.clone()
    })
}

/// ADD: on the effective config, after saving Flannel's record (as Flannel does before it
/// delegates).
pub fn add(
    request: &Request,
    client: &Client,
    add: impl FnOnce(&Request) -> Result<Success, Error>,
) -> Result<Success, Error> {
    let Some(native) = Native::of(&request.config) else {
        return add(request);
    };
    let env = subnet_env_for_pod(native.subnet_file()?)?;
    let effective = effective_request(request, &env, dual_stack(client, &env)?)?;
    native
        .record(&request.container_id)?
        .save(&effective.config)?;
    add(&effective)
}

/// Flannel's record of `container_id`, which a DEL removes, in Flannel-native mode (`native`
/// decoded from a config with `subnetFile`). Only where the record is must be right (the
/// top-level `dataDir`, code 7 when it is not a path): a DEL never reads subnet.env, so a
/// `subnetFile` that is not a path is only a warning.
pub(crate) fn record(native: Option<&Native>, container_id: &str) -> Result<Option<Record>, Error> {
    let Some(native) = native else {
        return Ok(None);
    };
    if let Err(ignored) = &native.subnet_file {
        log::warn!("DEL does not read subnetFile ({})", ignored.msg());
    }
    native.record(container_id).map(Some)
}

/// The IPAM a DEL releases from. In Flannel-native mode (`native`) without ranges in the
/// config, host-local's store (the config's `ipam.dataDir` or the default, as Flannel's
/// delegate uses), whatever the ranges were: DEL never reads subnet.env. Otherwise the
/// config's IPAM as a DEL reads it.
pub(crate) fn release(
    native: Option<&Native>,
    conf: &NetConf,
    args: &CniArgs,
) -> Result<Option<Release>, Error> {
    match store_of_derived_ranges(native, conf)? {
        Some(location) => Ok(Some(Release::HostLocal(Teardown::at(
            location, &conf.name,
        )?))),
        None => Release::of(conf, args),
    }
}

/// The IPAM of GC, which only gives addresses back: as for DEL, host-local over its store
/// with no ranges in Flannel-native mode without ranges in the config (it releases by
/// attachment and never needs subnet.env), otherwise the config's IPAM.
pub fn teardown_ipam(conf: &NetConf, args: &CniArgs) -> Result<Option<Ipam>, Error> {
    match store_of_derived_ranges(Native::of(conf).as_ref(), conf)? {
        Some(location) => {
            let config = IpamConfig::release_only(location);
            Ok(Some(Ipam::HostLocal(HostLocal::new(config, &conf.name)?)))
        }
        None => Ipam::from_conf(conf, args),
    }
}

/// host-local's store when the config is Flannel-native (`native`) and leaves the ranges to
/// subnet.env; `None` otherwise.
fn store_of_derived_ranges(
    native: Option<&Native>,
    conf: &NetConf,
) -> Result<Option<StoreLocation>, Error> {
    if native.is_none() || !derive::ranges_from_subnet_env(conf.raw()) {
        return Ok(None);
    }
    Decodes::count_ipam();
    let ipam = case_insensitive::get(conf.raw(), "ipam").and_then(Value::as_object);
    StoreLocation::from_ipam(ipam).map(Some)
}

/// CHECK: first whether the pod's addresses are still in the node's subnet, then the core's
/// CHECK on the effective config.
pub fn check(
    request: &Request,
    client: &Client,
    check: impl FnOnce(&Request) -> Result<(), Error>,
) -> Result<(), Error> {
    let Some(native) = Native::of(&request.config) else {
        return check(request);
    };
    let subnet_file = native.subnet_file()?;
    let env = subnet_env_for_pod(subnet_file)?;
    if let Some(prev) = request.config.prev_result()? {
        let moved: Vec<String> = prev
            .ips
            .iter()
            .map(|ip| ip.address.ip())
            .filter(|ip| !env.holds(*ip))
            .map(|ip| ip.to_string())
            .collect();
        if !moved.is_empty() {
            let now: Vec<String> = [env.subnet, env.ipv6_subnet]
                .into_iter()
                .flatten()
                .map(|s| s.to_string())
                .collect();
            return Err(Error::new(
                CHECK_MISMATCH,
                format!(
                    "the node's subnet changed since the pod was added: its address {} is \
                     outside {} from {}; recreate the pod",
                    moved.join(", "),
                    now.join(" and "),
                    subnet_file.display()
                ),
            ));
        }
    }
    check(&effective_request(
        request,
        &env,
        dual_stack(client, &env)?,
    )?)
}

/// STATUS: subnet.env must be complete (code 50 naming what is missing), then the core's
/// STATUS on the effective config (network, its type and settings, IPAM with a free address).
pub fn status<T>(
    request: &NetworkRequest,
    features: impl FnOnce() -> Result<SupportedFeatures, HnsError>,
    status: impl FnOnce(&NetworkRequest) -> Result<T, Error>,
) -> Result<T, Error> {
    match effective_network(request, features)? {
        Some(effective) => status(&effective),
        None => status(request),
    }
}

/// The config STATUS (and what the node tools ask as STATUS would) runs on in Flannel-native
/// mode: what subnet.env makes of `request`; `None` when the config is not Flannel-native
/// (it runs as it is). Code 50 naming what is missing when subnet.env is incomplete.
pub fn effective_network(
    request: &NetworkRequest,
    features: impl FnOnce() -> Result<SupportedFeatures, HnsError>,
) -> Result<Option<NetworkRequest>, Error> {
    let Some(native) = Native::of(&request.config) else {
        return Ok(None);
    };
    let not_available = |msg: String| Error::new(ErrorCode::NotAvailable, msg);
    let env = subnet_env::load(native.subnet_file()?)
        .map_err(|problem| not_available(problem.to_string()))?;
    let dual = dual_stack_with(&env, features).map_err(|e| not_available(e.msg().to_owned()))?;
    let (config, stdin) = derive::effective(&request.config, &env, dual)
        .map_err(|e| not_available(e.msg().to_owned()))?;
    Ok(Some(NetworkRequest {
        config,
        stdin,
        ..request.clone()
    }))
}
