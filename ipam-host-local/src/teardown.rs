//! host-local as a DEL sees a config: only what finds the attachment's reservations.
//!
//! An operator may edit a config into one ADD refuses while pods run; the runtime then calls
//! DEL with it for every pod it tears down, and retries a failed DEL for ever. DEL needs only
//! the network's `name` and the store's `ipam.dataDir`, which say where the reservations are,
//! and releases by attachment (container ID and ifname): anything else ADD would refuse (the
//! ranges, routes, `resolvConf`, requested addresses, the lock deadline, `CNI_ARGS`) is
//! logged and ignored. Only a store that cannot be located or read fails DEL.

use cni::{CniArgs, Error, NetConf, case_insensitive};
use serde_json::Value;
use std::path::Path;

use crate::config::{IpamConfig, StoreLocation};
use crate::host_local::release_attachment;
use crate::range::RangeSet;
use crate::store::Store;

/// host-local for a DEL: the store, and the config's range sets when they are still valid.
/// It can only give addresses back.
#[derive(Debug, Clone)]
pub struct Teardown {
    store: Store,
    /// The ranges lay out the index, so with them the next ADD trusts the index DEL leaves;
    /// without them (a config whose ranges ADD would refuse) it rebuilds it once.
    sets: Vec<RangeSet>,
}

impl Teardown {
    /// DEL's view of `conf`: the whole `ipam` section when ADD would accept it (the store as
    /// ADD sees it), otherwise only where the store is, with a warning naming what ADD would
    /// refuse. Code 7 when the store cannot be located: `name` or `ipam.dataDir` wrong, or
    /// no `ipam` section at all.
    pub fn from_conf(conf: &NetConf, args: &CniArgs) -> Result<Teardown, Error> {
        let refused = match IpamConfig::from_conf(conf, args) {
            Ok(config) => {
                if let Err(ignored) = &config.requested {
                    log::warn!(
                        "DEL ignores the requested addresses ({}): it releases by attachment",
                        ignored.msg()
                    );
                }
                let location = StoreLocation {
                    data_dir: config.data_dir,
                    lock_timeout: config.lock_timeout,
                };
                return Teardown::new(location, &conf.name, config.range_sets);
            }
            Err(refused) => refused,
        };
        let Some(Value::Object(ipam)) = case_insensitive::get(conf.raw(), "ipam") else {
            return Err(refused);
        };
        let teardown = Teardown::at(StoreLocation::from_ipam(Some(ipam))?, &conf.name)?;
        log::warn!(
            "DEL ignores what ADD would refuse in this config ({}): it releases by attachment",
            refused.msg()
        );
        Ok(teardown)
    }

    /// The store of network `network` at `location`, whatever the ranges are (Flannel-native
    /// mode: they come from subnet.env, which a DEL never reads).
    pub fn at(location: StoreLocation, network: &str) -> Result<Teardown, Error> {
        Teardown::new(location, network, Vec::new())
    }

    fn new(location: StoreLocation, network: &str, sets: Vec<RangeSet>) -> Result<Teardown, Error> {
        cni::validate::network_name(network)?;
        Ok(Teardown {
            store: Store::new(&location.data_dir, network, location.lock_timeout),
            sets,
        })
    }

    /// `<dataDir>/<network>`, where the reservation files live.
    pub fn network_dir(&self) -> &Path {
        self.store.net_dir()
    }

    /// DEL: releases every address the attachment holds (or, when it holds none, the
    /// container's legacy ID-only reservations). Succeeds when there is nothing to release,
    /// the store included; fails only when the store cannot be read or written (code 5, 11
    /// when its lock is held past the deadline).
    pub fn release(&self, container_id: &str, ifname: &str) -> Result<(), Error> {
        release_attachment(&self.store, &self.sets, container_id, ifname)
    }
}
