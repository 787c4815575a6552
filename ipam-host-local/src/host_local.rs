//! The host-local operations the plugins call in-process and the binary exposes as CNI commands.

use cni::{CniArgs, Dns, Error, ErrorCode, IpConfig, NetConf, Success};
use ipnetwork::IpNetwork;
use std::collections::HashSet;
use std::fmt;
use std::net::IpAddr;
use std::path::Path;

use crate::config::{IpamConfig, RequestedIp};
use crate::layout::{Content, Owner};
use crate::range::RangeSet;
use crate::retention::Retention;
use crate::store::{Reading, Session, Store, Sweep};
use crate::{ADDRESS_UNAVAILABLE, RESERVATION_MISMATCH, resolv};

/// host-local IPAM for one network: its validated config and its reservation store.
#[derive(Debug, Clone)]
pub struct HostLocal {
    config: IpamConfig,
    store: Store,
}

/// What [`HostLocal::allocate`] did: the IPAM result, and which addresses this call reserved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    container_id: String,
    ifname: String,
    result: Success,
    created: Vec<IpAddr>,
}

impl Allocation {
    /// The IPAM result: one address per range set (with its subnet's prefix and gateway),
    /// the config's routes and `resolvConf`'s DNS.
    pub fn result(&self) -> &Success {
        &self.result
    }

    /// The IPAM result, for a plugin that delegates nothing and prints it as is.
    pub fn into_result(self) -> Success {
        self.result
    }

    /// The addresses this call reserved. A plugin whose ADD fails after allocating must give
    /// back exactly these ([`HostLocal::undo`]), never the attachment's earlier addresses.
    pub fn created(&self) -> &[IpAddr] {
        &self.created
    }

    /// Whether the attachment already held every address (a repeated ADD).
    pub fn already_held(&self) -> bool {
        self.created.is_empty()
    }
}

/// Where each range set's address comes from in one ADD.
enum Plan {
    /// The attachment already holds this address.
    Keep(IpAddr),
    /// A requested address, reserved exactly or not at all.
    Exact(IpAddr),
    /// The next free address round-robin.
    Next,
}

impl HostLocal {
    /// Reads the `ipam` section and the requested addresses (`runtimeConfig.ips`,
    /// `args.cni.ips`, `CNI_ARGS` `IP`); invalid config is code 7 naming the field.
    pub fn from_conf(conf: &NetConf, args: &CniArgs) -> Result<HostLocal, Error> {
        HostLocal::new(IpamConfig::from_conf(conf, args)?, &conf.name)
    }

    /// host-local for network `network` (its store is `<dataDir>/<network>`).
    pub fn new(config: IpamConfig, network: &str) -> Result<HostLocal, Error> {
        cni::validate::network_name(network)?;
        let store = Store::new(&config.data_dir, network, config.lock_timeout);
        Ok(HostLocal { config, store })
    }

    /// The parsed `ipam` section, for callers that need its ranges or routes.
    pub fn config(&self) -> &IpamConfig {
        &self.config
    }

    /// Never hands out `addresses` (see [`IpamConfig::exclude`]): the plugins keep their pod
    /// gateway and the HNS subnet's gateway out of the pool.
    pub fn exclude(&mut self, addresses: &[IpAddr]) {
        self.config.exclude(addresses);
    }

    /// `<dataDir>/<network>`, where the reservation files live.
    pub fn network_dir(&self) -> &Path {
        self.store.net_dir()
    }

    /// Reserves one address per range set for the attachment, or returns the ones it already
    /// holds. Requested addresses are reserved exactly or the call fails with
    /// [`ADDRESS_UNAVAILABLE`]; an exhausted set fails with [`crate::POOL_EXHAUSTED`]. On
    /// failure nothing this call reserved stays reserved.
    pub fn allocate(&self, container_id: &str, ifname: &str) -> Result<Allocation, Error> {
        validate_attachment(container_id, ifname)?;
        let requested = self.config.requested.clone().map_err(|e| *e)?;
        let dns = match &self.config.resolv_conf {
            Some(path) => resolv::read(path)?,
            None => Dns::default(),
        };
        let owner = Owner::attachment(container_id, ifname);
        let sets = &self.config.range_sets;
        let mut session = self.store.open(sets)?;
        let held = session.held(&owner)?;
        let mut addresses = Vec::with_capacity(sets.len());
        let mut created = Vec::new();
        for (index, set) in sets.iter().enumerate() {
            let outcome = self
                .plan(index, set, &owner, &held, &requested)
                .and_then(|plan| execute(&mut session, index, &owner, plan));
            match outcome {
                Ok((ip, new)) => {
                    addresses.push(ip);
                    if new {
                        created.push(ip);
                    }
                }
                Err(err) => {
                    if let Err(undo) = session.release(&owner, &created) {
                        log::error!("cannot release {created:?} after a failed ADD: {undo}");
                    }
                    session.finish()?;
                    return Err(err);
                }
            }
        }
        session.finish()?;
        Ok(Allocation {
            container_id: container_id.to_owned(),
            ifname: ifname.to_owned(),
            result: self.result(&addresses, dns)?,
            created,
        })
    }

    fn plan(
        &self,
        index: usize,
        set: &RangeSet,
        owner: &Owner,
        held: &[IpAddr],
        requested: &[RequestedIp],
    ) -> Result<Plan, Error> {
        let requested = requested.iter().find(|r| r.set == index).map(|r| r.ip);
        let current = held.iter().copied().find(|ip| set.contains(*ip));
        match (requested, current) {
            (Some(wanted), Some(have)) if wanted != have => Err(Error::new(
                ADDRESS_UNAVAILABLE,
                format!(
                    "{owner} already holds {have} in range set {index}, so it cannot get the \
                     requested {wanted}; DEL the attachment first"
                ),
            )),
            (_, Some(have)) => Ok(Plan::Keep(have)),
            (Some(wanted), None) if set.is_reserved(wanted) => Err(Error::new(
                ADDRESS_UNAVAILABLE,
                format!(
                    "requested address {wanted} is reserved in range set {index} (a gateway, \
                     never handed out to a pod); request another address"
                ),
            )),
            (Some(wanted), None) => Ok(Plan::Exact(wanted)),
            (None, None) => Ok(Plan::Next),
        }
    }

    fn result(&self, addresses: &[IpAddr], dns: Dns) -> Result<Success, Error> {
        let mut ips = Vec::with_capacity(addresses.len());
        for (&ip, set) in addresses.iter().zip(&self.config.range_sets) {
            let range = set
                .range_for(ip)
                .ok_or_else(|| Error::internal(format!("{ip} is outside range set {set}")))?;
            let address = IpNetwork::new(ip, range.subnet.prefix())
                .map_err(|e| Error::internal(format!("{ip}/{}: {e}", range.subnet.prefix())))?;
            ips.push(IpConfig {
                address,
                gateway: Some(range.gateway),
                interface: None,
            });
        }
        Ok(Success {
            interfaces: Vec::new(),
            ips,
            routes: self.config.routes.clone(),
            dns,
        })
    }

    /// Gives back what `allocation` reserved (and only that): the rollback of a failed ADD.
    pub fn undo(&self, allocation: &Allocation) -> Result<(), Error> {
        if allocation.created.is_empty() {
            return Ok(());
        }
        let owner = Owner::attachment(&allocation.container_id, &allocation.ifname);
        let mut session = self.store.open(&self.config.range_sets)?;
        session.release(&owner, &allocation.created)?;
        session.finish()
    }

    /// Releases every address the attachment holds (or, when it holds none, the container's
    /// legacy ID-only reservations). Succeeds when there is nothing to release. Requested
    /// addresses an ADD would refuse are ignored: this releases by attachment. A DEL, whose
    /// config may have changed in any way since ADD, uses [`Teardown`](crate::Teardown).
    pub fn release(&self, container_id: &str, ifname: &str) -> Result<(), Error> {
        if let Err(ignored) = &self.config.requested {
            log::info!(
                "release ignores the requested addresses ({}); it releases by attachment",
                ignored.msg()
            );
        }
        release_attachment(&self.store, &self.config.range_sets, container_id, ifname)
    }

    /// CHECK: the attachment's reservations exist and are exactly `expected`'s addresses.
    /// Fails with [`RESERVATION_MISMATCH`], naming every difference.
    pub fn check(&self, container_id: &str, ifname: &str, expected: &Success) -> Result<(), Error> {
        validate_attachment(container_id, ifname)?;
        let owner = Owner::attachment(container_id, ifname);
        let mut session = self.store.open(&self.config.range_sets)?;
        let held = session.held(&owner)?;
        let mut problems = Vec::new();
        if held.is_empty() {
            problems.push(format!("host-local holds no reservation for {owner}"));
        }
        for config in &expected.ips {
            let ip = config.address.ip();
            if held.contains(&ip) {
                let range = self.config.range_sets.iter().find_map(|s| s.range_for(ip));
                if let Some(range) = range
                    && range.subnet.prefix() != config.address.prefix()
                {
                    problems.push(format!(
                        "prevResult gives {} but {ip}'s range is {}",
                        config.address, range.subnet
                    ));
                }
                continue;
            }
            let holder = match session.holder(ip)? {
                Some(Content::Owned(other)) => format!(" (it is reserved by {other})"),
                Some(_) => " (its reservation file is empty or corrupt)".to_owned(),
                None => String::new(),
            };
            problems.push(format!(
                "prevResult lists {ip}, but {owner} holds no reservation for it{holder}"
            ));
        }
        for ip in &held {
            if !expected.ips.iter().any(|c| c.address.ip() == *ip) {
                problems.push(format!(
                    "{owner} holds {ip}, which prevResult does not list"
                ));
            }
        }
        session.finish()?;
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::new(RESERVATION_MISMATCH, problems.join("; ")))
        }
    }

    /// CHECK without the ADD result, as the reference host-local checks every time: the
    /// attachment holds a reservation (or, the reference's fallback, its container holds a
    /// legacy ID-only one). Fails with [`RESERVATION_MISMATCH`] naming the attachment.
    pub fn check_held(&self, container_id: &str, ifname: &str) -> Result<(), Error> {
        validate_attachment(container_id, ifname)?;
        let owner = Owner::attachment(container_id, ifname);
        let legacy = Owner::Legacy {
            container_id: container_id.to_owned(),
        };
        let mut session = self.store.open(&self.config.range_sets)?;
        let held = !session.held(&owner)?.is_empty() || !session.held(&legacy)?.is_empty();
        session.finish()?;
        if held {
            Ok(())
        } else {
            Err(Error::new(
                RESERVATION_MISMATCH,
                format!("host-local holds no reservation for {owner}"),
            ))
        }
    }

    /// GC: releases every reservation `retention` does not keep (see [`Retention`]: the one
    /// rule every collector applies), reclaims empty and corrupt reservation files and
    /// rebuilds the index. `lock` and `last_reserved_ip.*` stay.
    pub fn gc(&self, retention: &Retention) -> Result<(), Error> {
        let mut session = self.store.lock(&self.config.range_sets)?;
        let holding = owners_holding(&session, retention)?;
        let released = std::cell::Cell::new(0_usize);
        let retain = |owner: &Owner| {
            let kept = retention.keeps_owner(owner) || holding.contains(owner);
            released.set(released.get() + usize::from(!kept));
            kept
        };
        let problems = session.rebuild(Sweep::Retain(&retain))?;
        session.finish()?;
        log::info!(
            "GC released {} address(es) of attachments not kept",
            released.get()
        );
        match problems.len() {
            0 => Ok(()),
            n => Err(Error::new(
                ErrorCode::Io,
                format!(
                    "GC finished with {n} reservation(s) it could not process: {}",
                    problems
                        .iter()
                        .map(Error::msg)
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            )),
        }
    }

    /// Every reservation of the network with who holds it, read from the reservation files
    /// without writing to the store (the crate docs' "Reads write nothing"): what `cni-win
    /// sweep` and `doctor` compare with the endpoints HNS has, and judge with
    /// [`Retention::releasable`], GC's own rule. A store that does not exist holds none, and
    /// is not created.
    pub fn reservations(&self) -> Result<Vec<(IpAddr, Content)>, Error> {
        match self.store.read()? {
            Some(reading) => reading.reservations(),
            None => Ok(Vec::new()),
        }
    }

    /// How full each range set is, from the reservation files (not the index), read without
    /// writing to the store: what the node daemon's metrics report, so an operator sees a
    /// pool filling up (a leak, or a node with more pods than addresses) before ADD fails with
    /// [`crate::POOL_EXHAUSTED`].
    pub fn usage(&self) -> Result<Vec<PoolUsage>, Error> {
        let reading = self.store.read()?;
        self.usage_in(reading.as_ref())
    }

    /// [`HostLocal::usage`] of what `reading` shows (`None`: there is no store).
    fn usage_in(&self, reading: Option<&Reading<'_>>) -> Result<Vec<PoolUsage>, Error> {
        let reserved = match reading {
            Some(reading) => reading.reserved_ips()?,
            None => Vec::new(),
        };
        Ok(self
            .config
            .range_sets
            .iter()
            .enumerate()
            .map(|(index, set)| PoolUsage::of(index, set, &reserved))
            .collect())
    }

    /// STATUS: ready (`Ok`) when the store can be read, otherwise code 50. A range set with no
    /// free address is returned (and logged) rather than failed on: runtimes poll STATUS and
    /// take the node NotReady on a failure, which evicts its pods, so only a config that set
    /// `notReadyWhenFull` gets code 50 for a full range.
    ///
    /// STATUS only reads (the crate docs' "Reads write nothing"): it creates no store (the
    /// node tools ask it of every network, and a store they made would be one where no pod
    /// ever was), and writes nothing to one. An empty reservation file, a writer's leftover
    /// that ADD reclaims before it says a set is exhausted, counts as free.
    pub fn status(&self) -> Result<Vec<Exhausted>, Error> {
        let not_available = |e: Error| {
            Error::new(
                ErrorCode::NotAvailable,
                format!("the reservation store is unusable: {}", e.msg()),
            )
        };
        let sets = &self.config.range_sets;
        let reading = self.store.read().map_err(not_available)?;
        let mut exhausted = Vec::new();
        for usage in self.usage_in(reading.as_ref()).map_err(not_available)? {
            let set = &sets[usage.set];
            let free = match &reading {
                Some(reading) if usage.free() == 0 => {
                    leftovers(reading, set).map_err(not_available)?
                }
                _ => usage.free(),
            };
            if free == 0 {
                exhausted.push(Exhausted {
                    set: usage.set,
                    ranges: set.to_string(),
                    usable: usage.usable,
                });
            }
        }
        if self.config.not_ready_when_full
            && let Some(full) = exhausted.first()
        {
            return Err(Error::new(
                ErrorCode::NotAvailable,
                format!("{full} (ipam.notReadyWhenFull is set)"),
            ));
        }
        for full in &exhausted {
            log::warn!(
                "{full}: every new pod's ADD fails until addresses are released; STATUS stays \
                 ready (set ipam.notReadyWhenFull to fail it)"
            );
        }
        Ok(exhausted)
    }
}

/// A range set with no free address, as STATUS found it: every new attachment's ADD fails
/// with [`crate::POOL_EXHAUSTED`] until an address is released.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exhausted {
    /// The range set's index in the config.
    pub set: usize,
    /// Its ranges, as the config gives them.
    pub ranges: String,
    /// How many addresses it can hand out (all of them reserved).
    pub usable: u128,
}

impl fmt::Display for Exhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.usable {
            0 => write!(
                f,
                "range set {} ({}) has no address to hand out: its only addresses are gateways \
                 or excluded",
                self.set, self.ranges
            ),
            usable => write!(
                f,
                "range set {} ({}) has no free address: all {usable} are reserved",
                self.set, self.ranges
            ),
        }
    }
}

/// How full one range set is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolUsage {
    /// The range set's index in the config.
    pub set: usize,
    /// The subnets of its ranges, in config order (what a dashboard labels the pool with).
    pub subnets: Vec<IpNetwork>,
    /// How many addresses it can hand out (gateways and excluded addresses left out).
    pub usable: u128,
    /// How many of those have a reservation, a pod's or a node component's (kube-proxy's
    /// source VIP).
    pub reserved: u128,
}

impl PoolUsage {
    fn of(index: usize, set: &RangeSet, reserved: &[IpAddr]) -> PoolUsage {
        let taken = reserved
            .iter()
            .filter(|ip| set.contains(**ip) && !set.is_reserved(**ip))
            .count();
        PoolUsage {
            set: index,
            subnets: set.ranges().iter().map(|range| range.subnet).collect(),
            usable: set.usable(),
            reserved: taken as u128,
        }
    }

    /// How many addresses ADD can still hand out.
    pub fn free(&self) -> u128 {
        self.usable.saturating_sub(self.reserved)
    }
}

/// How many of `set`'s addresses hold an empty reservation file: under the lock, a writer's
/// leftover (it died between creating the file and writing it), which ADD reclaims.
fn leftovers(reading: &Reading<'_>, set: &RangeSet) -> Result<u128, Error> {
    let mut count = 0;
    for ip in reading.reserved_ips()? {
        if set.contains(ip) && !set.is_reserved(ip) && reading.holder(ip)? == Some(Content::Empty) {
            count += 1;
        }
    }
    Ok(count)
}

/// The owners of the reservations of the addresses `retention` says endpoints hold: every
/// address of such an owner stays.
fn owners_holding(session: &Session<'_>, retention: &Retention) -> Result<HashSet<Owner>, Error> {
    let mut owners = HashSet::new();
    for ip in retention.held() {
        if let Some(Content::Owned(owner)) = session.holder(ip)? {
            owners.insert(owner);
        }
    }
    Ok(owners)
}

/// Reserves the planned address of one range set; returns it and whether this call reserved it.
fn execute(
    session: &mut Session<'_>,
    set: usize,
    owner: &Owner,
    plan: Plan,
) -> Result<(IpAddr, bool), Error> {
    match plan {
        Plan::Keep(ip) => Ok((ip, false)),
        Plan::Next => session.allocate(set, owner).map(|ip| (ip, true)),
        Plan::Exact(ip) => {
            if session.reserve_exact(set, ip, owner)? {
                return Ok((ip, true));
            }
            let holder = match session.holder(ip)? {
                Some(Content::Owned(other)) => other.to_string(),
                _ => "an empty or corrupt reservation file (GC reclaims it)".to_owned(),
            };
            Err(Error::new(
                ADDRESS_UNAVAILABLE,
                format!("requested address {ip} is already reserved by {holder}"),
            ))
        }
    }
}

/// Releases what attachment `container_id`/`ifname` holds in `store` (see
/// [`HostLocal::release`]); `sets` only lay out the index. A store that does not exist holds
/// nothing and is not created.
pub(crate) fn release_attachment(
    store: &Store,
    sets: &[RangeSet],
    container_id: &str,
    ifname: &str,
) -> Result<(), Error> {
    validate_attachment(container_id, ifname)?;
    if store.is_missing() {
        log::info!(
            "{} does not exist: no address to release",
            store.net_dir().display()
        );
        return Ok(());
    }
    let mut session = store.open(sets)?;
    session.release_attachment(container_id, ifname)?;
    session.finish()
}

/// The attachment's IDs become file names, so they are checked even when a plugin (not the
/// skeleton) passes them in.
fn validate_attachment(container_id: &str, ifname: &str) -> Result<(), Error> {
    cni::validate::container_id(container_id)?;
    cni::validate::ifname(ifname)
}
