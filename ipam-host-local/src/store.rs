//! The reservation store of one network: the reference's files plus our index, always worked
//! on under the network's `lock`.
//!
//! See the crate documentation for the design; in short:
//!
//! - `<net>/<ip>` (reference format) is the truth. A reservation is committed by hard-linking a
//!   complete file to that name; the link fails if the name exists.
//! - `<net>/.cni-win/attachments/<bucket>/<key>@<ip>` is that file's first name, written
//!   *before* the commit: finding an attachment's addresses is one listing of a small bucket.
//! - `<net>/.cni-win/occupancy.<set>` is a bitmap of reserved positions (a hint).
//! - `<net>/.cni-win/stamp` records what the directory looked like when we last left it; if
//!   anything else changed it since, the index is rebuilt from the reservation files.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use cni::Error;

use crate::fsutil::{io_error, overwrite, read_optional, remove_optional, sync_dir, write_new};
use crate::layout::{
    Content, ESCAPES_COLONS, LAST_RESERVED_PREFIX, LOCK_FILE, Owner, ip_file_name, parse_content,
    parse_ip_file_name,
};
use crate::occupancy::Occupancy;
use crate::range::RangeSet;

/// Our directory inside the network directory. The leading dot keeps it out of anything that
/// globs the directory (`rm <dir>/*`), and nothing in it can pass for a reservation.
pub const INDEX_DIR: &str = ".cni-win";

const STAMP_HEADER: &str = "cni-win host-local index v1";

/// How many bucket directories the index spreads its entries over.
const BUCKETS: u32 = 64;

/// Paths of one network's store.
#[derive(Debug, Clone)]
pub struct Store {
    net_dir: PathBuf,
    index_dir: PathBuf,
}

/// What a rebuild should do with the reservations it reads.
pub enum Sweep<'a> {
    /// Keep every reservation (the index was stale).
    KeepAll,
    /// GC: keep the reservations this says are still valid; also reclaim corrupt files.
    Retain(&'a dyn Fn(&Owner) -> bool),
}

impl Store {
    pub fn new(data_dir: &Path, network: &str) -> Store {
        let net_dir = data_dir.join(network);
        let index_dir = net_dir.join(INDEX_DIR);
        Store { net_dir, index_dir }
    }

    pub fn net_dir(&self) -> &Path {
        &self.net_dir
    }

    pub fn reservation_path(&self, ip: IpAddr) -> PathBuf {
        self.net_dir.join(ip_file_name(ip, ESCAPES_COLONS))
    }

    fn last_reserved_path(&self, set: usize) -> PathBuf {
        self.net_dir.join(format!("{LAST_RESERVED_PREFIX}{set}"))
    }

    fn attachments_dir(&self) -> PathBuf {
        self.index_dir.join("attachments")
    }

    /// The bucket holding `owner`'s entries: one of 64, by a hash of its key, so no directory
    /// grows with the number of reservations the way one flat directory would (5,000
    /// reservations make buckets of about 80 names) and no directory is made per attachment.
    fn bucket(&self, owner: &Owner) -> PathBuf {
        let hash = owner.key().bytes().fold(0x811c_9dc5u32, |h, b| {
            (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
        });
        self.attachments_dir()
            .join(format!("{:02x}", hash % BUCKETS))
    }

    /// `owner`'s index entry for `ip`: `<key>@<ip file name>`.
    fn entry_path(&self, owner: &Owner, ip: IpAddr) -> PathBuf {
        self.bucket(owner).join(format!(
            "{}@{}",
            owner.key(),
            ip_file_name(ip, ESCAPES_COLONS)
        ))
    }

    fn stamp_path(&self) -> PathBuf {
        self.index_dir.join("stamp")
    }

    fn occupancy_path(&self, set: usize) -> PathBuf {
        self.index_dir.join(format!("occupancy.{set}"))
    }

    /// Locks the network directory (creating it if needed) and returns a session whose index is
    /// known to match the reservation files.
    pub fn open<'a>(&'a self, sets: &'a [RangeSet]) -> Result<Session<'a>, Error> {
        let mut session = self.lock(sets)?;
        if session.recorded_stamp != session.stamp()? {
            log::info!(
                "index of {} is missing or stale (the directory changed since this plugin last \
                 used it); rebuilding it from the reservation files",
                self.net_dir.display()
            );
            session.rebuild(Sweep::KeepAll)?;
        }
        Ok(session)
    }

    /// Locks the network directory without checking the index (for callers that rebuild it).
    pub fn lock<'a>(&'a self, sets: &'a [RangeSet]) -> Result<Session<'a>, Error> {
        for dir in [&self.net_dir, &self.attachments_dir()] {
            fs::create_dir_all(dir).map_err(|e| io_error("create directory", dir, &e))?;
        }
        let lock_path = self.net_dir.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(|e| io_error("open lock file", &lock_path, &e))?;
        lock.lock().map_err(|e| io_error("lock", &lock_path, &e))?;

        let mut last_reserved = Vec::with_capacity(sets.len());
        let mut occupancy = Vec::with_capacity(sets.len());
        for (i, set) in sets.iter().enumerate() {
            let text = read_optional(&self.last_reserved_path(i))?
                .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
                .unwrap_or_default();
            last_reserved.push(text);
            occupancy.push(Occupancy::open(&self.occupancy_path(i), set.size())?);
        }
        let stamp_path = self.stamp_path();
        let mut stamp_file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&stamp_path)
            .map_err(|e| io_error("open", &stamp_path, &e))?;
        let mut recorded_stamp = String::new();
        // An unreadable stamp reads as empty, which forces a rebuild.
        let _ = stamp_file.read_to_string(&mut recorded_stamp);
        Ok(Session {
            store: self,
            sets,
            _lock: lock,
            last_reserved,
            occupancy,
            rebuilt: false,
            changed: false,
            prepared: None,
            stamp_file,
            recorded_stamp,
        })
    }
}

/// Work on one network's store under its lock (released on drop).
#[derive(Debug)]
pub struct Session<'a> {
    store: &'a Store,
    sets: &'a [RangeSet],
    _lock: File,
    /// Each set's `last_reserved_ip.<n>` content, as on disk.
    last_reserved: Vec<String>,
    occupancy: Vec<Occupancy>,
    /// Whether this session already rebuilt the index (a second rebuild would find the same).
    rebuilt: bool,
    /// Whether the network directory changed, so the stamp must be rewritten.
    changed: bool,
    /// The complete reservation file of this session's new reservations.
    prepared: Option<Prepared>,
    stamp_file: File,
    recorded_stamp: String,
}

/// A complete reservation file (content `containerID\r\nifname`), named by one index
/// entry. New addresses of the same owner share it: one new inode per ADD, as the reference.
#[derive(Debug)]
struct Prepared {
    owner: Owner,
    entry: PathBuf,
    /// Whether a reservation name links to it; an uncommitted one is removed when the session
    /// ends (a crash leaves it as an entry without reservation, which lookups drop).
    committed: bool,
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        if let Some(prepared) = &self.prepared
            && !prepared.committed
            && let Err(err) = remove_optional(&prepared.entry)
        {
            log::warn!("{}", err.msg());
        }
    }
}

impl Session<'_> {
    /// The stamp describing the directory as it is now: its modification time (changed by any
    /// reservation created or removed, by anyone), and each set's layout and last reservation
    /// (rewritten by every reference ADD, even when the time stamp is too coarse to move).
    fn stamp(&self) -> Result<String, Error> {
        let dir = &self.store.net_dir;
        let modified = fs::metadata(dir)
            .and_then(|m| m.modified())
            .map_err(|e| io_error("read metadata of", dir, &e))?;
        let since_epoch = modified.duration_since(UNIX_EPOCH).unwrap_or_default();
        let mut stamp = format!(
            "{STAMP_HEADER}\nmodified {}.{:09}\n",
            since_epoch.as_secs(),
            since_epoch.subsec_nanos()
        );
        for (i, set) in self.sets.iter().enumerate() {
            stamp.push_str(&format!(
                "set {i} {} last {:?}\n",
                set.fingerprint(),
                self.last_reserved[i]
            ));
        }
        Ok(stamp)
    }

    /// Records the directory's state so the next session can trust the index. Skipped when the
    /// session changed nothing; a session that fails before this leaves the old stamp, so the
    /// next one rebuilds.
    pub fn finish(mut self) -> Result<(), Error> {
        if self.changed {
            let stamp = self.stamp()?;
            let path = self.store.stamp_path();
            overwrite(&mut self.stamp_file, stamp.as_bytes(), &path)?;
        }
        Ok(())
    }

    /// Where allocation in `set` starts: after the last reserved address when it lies in the set.
    fn start_position(&self, set: usize) -> u128 {
        self.last_reserved[set]
            .parse::<IpAddr>()
            .ok()
            .and_then(|ip| self.sets[set].position_of(ip))
            .map_or(0, |p| p + 1)
    }

    fn mark(&mut self, ip: IpAddr, reserved: bool) -> Result<(), Error> {
        for (i, set) in self.sets.iter().enumerate() {
            if let Some(position) = set.position_of(ip) {
                self.occupancy[i].mark(position, reserved, &self.store.occupancy_path(i))?;
            }
        }
        Ok(())
    }

    /// The content of `ip`'s reservation file, if it exists.
    pub fn holder(&self, ip: IpAddr) -> Result<Option<Content>, Error> {
        Ok(read_optional(&self.store.reservation_path(ip))?.map(|b| parse_content(&b)))
    }

    /// The addresses `owner` holds, verified against the reservation files. Index entries whose
    /// reservation is gone or belongs to someone else (left by a crash) are dropped.
    pub fn held(&mut self, owner: &Owner) -> Result<Vec<IpAddr>, Error> {
        let dir = self.store.bucket(owner);
        let prefix = format!("{}@", owner.key());
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error("list", &dir, &e)),
        };
        let mut held = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error("list", &dir, &e))?;
            let name = entry.file_name();
            let Some(ip_name) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
                continue;
            };
            let ip = parse_ip_file_name(ip_name, ESCAPES_COLONS);
            let owned = match ip {
                Some(ip) => self.holder(ip)? == Some(Content::Owned(owner.clone())),
                None => false,
            };
            match ip {
                Some(ip) if owned => held.push(ip),
                _ => remove_optional(&entry.path())?,
            }
        }
        held.sort();
        Ok(held)
    }

    /// Makes `entry` a name of `owner`'s complete reservation file: a new link of the
    /// session's file once a reservation uses it, the spare file renamed while none does, or a
    /// new file.
    fn name_reservation_file(&mut self, owner: &Owner, entry: &Path) -> Result<(), Error> {
        match &mut self.prepared {
            Some(prepared) if prepared.owner == *owner && prepared.committed => {
                fs::hard_link(&prepared.entry, entry).map_err(|e| io_error("create", entry, &e))
            }
            Some(prepared) if prepared.owner == *owner => {
                fs::rename(&prepared.entry, entry).map_err(|e| io_error("create", entry, &e))?;
                prepared.entry = entry.to_path_buf();
                Ok(())
            }
            _ => {
                self.discard_spare()?;
                write_new(entry, owner.content().as_bytes())?;
                self.prepared = Some(Prepared {
                    owner: owner.clone(),
                    entry: entry.to_path_buf(),
                    committed: false,
                });
                Ok(())
            }
        }
    }

    /// Removes the session's reservation file if no reservation uses it.
    fn discard_spare(&mut self) -> Result<(), Error> {
        match self.prepared.take() {
            Some(prepared) if !prepared.committed => remove_optional(&prepared.entry),
            _ => Ok(()),
        }
    }

    /// Tries to reserve `ip` for `owner`: names the complete reservation file in the index,
    /// then commits by linking it to the address's name. `Ok(false)` when the address is
    /// already taken.
    fn reserve(&mut self, ip: IpAddr, owner: &Owner) -> Result<bool, Error> {
        let bucket = self.store.bucket(owner);
        fs::create_dir_all(&bucket).map_err(|e| io_error("create directory", &bucket, &e))?;
        let entry = self.store.entry_path(owner, ip);
        // An entry left by a crashed ADD is stale (`held` would have reported a live one).
        remove_optional(&entry)?;
        self.name_reservation_file(owner, &entry)?;
        // Whether `entry` is the spare file itself rather than one more link to a committed one.
        let spare = self.prepared.as_mut().filter(|p| p.entry == entry);

        let target = self.store.reservation_path(ip);
        match fs::hard_link(&entry, &target) {
            Ok(()) => {
                if let Some(prepared) = spare {
                    prepared.committed = true;
                }
                self.changed = true;
                self.mark(ip, true)?;
                Ok(true)
            }
            Err(e) => {
                // A spare stays for the next candidate; an extra link goes.
                if spare.is_none() {
                    remove_optional(&entry)?;
                }
                if e.kind() == io::ErrorKind::AlreadyExists {
                    self.mark(ip, true)?;
                    Ok(false)
                } else {
                    Err(io_error("create reservation", &target, &e))
                }
            }
        }
    }

    /// Reserves the next free address of `set` round-robin for `owner`. When the occupancy map
    /// says the set is full, the index is rebuilt once (it may be out of date) before giving up
    /// with [`crate::POOL_EXHAUSTED`].
    pub fn allocate(&mut self, set: usize, owner: &Owner) -> Result<IpAddr, Error> {
        loop {
            if let Some(ip) = self.search(set, owner)? {
                self.record_last_reserved(set, ip)?;
                return Ok(ip);
            }
            if self.rebuilt {
                let sets = self.sets;
                let range_set = &sets[set];
                return Err(Error::new(
                    crate::POOL_EXHAUSTED,
                    format!(
                        "no free address in range set {set} ({range_set}): all {} addresses it \
                         holds are reserved",
                        range_set.usable()
                    ),
                )
                .with_details(format!(
                    "release addresses (DEL, or GC with the still-valid attachments) or widen \
                     the range; reservations are files in {}",
                    self.store.net_dir.display()
                )));
            }
            self.rebuild(Sweep::KeepAll)?;
        }
    }

    fn search(&mut self, set: usize, owner: &Owner) -> Result<Option<IpAddr>, Error> {
        let sets = self.sets;
        let range_set = &sets[set];
        let mut from = self.start_position(set);
        for _ in 0..self.occupancy[set].search_limit() {
            let Some(position) = self.occupancy[set].next_free(from) else {
                return Ok(None);
            };
            let ip = range_set.address_at(position);
            from = position + 1;
            if range_set.is_reserved(ip) {
                self.mark(ip, true)?;
                continue;
            }
            if self.reserve(ip, owner)? {
                return Ok(Some(ip));
            }
        }
        Ok(None)
    }

    /// Reserves exactly `ip` in `set` (a requested address); `Ok(false)` when it is taken.
    pub fn reserve_exact(&mut self, set: usize, ip: IpAddr, owner: &Owner) -> Result<bool, Error> {
        let reserved = self.reserve(ip, owner)?;
        if reserved {
            self.record_last_reserved(set, ip)?;
        }
        Ok(reserved)
    }

    /// Rewrites `last_reserved_ip.<set>` in place, as the reference does (it is a hint: a torn
    /// write only moves where the next search starts).
    fn record_last_reserved(&mut self, set: usize, ip: IpAddr) -> Result<(), Error> {
        let text = ip.to_string();
        let path = self.store.last_reserved_path(set);
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io_error("open", &path, &e))?;
        overwrite(&mut file, text.as_bytes(), &path)?;
        self.last_reserved[set] = text;
        Ok(())
    }

    /// Whether `set` has an address believed free (rebuilding once before saying no).
    pub fn has_free(&mut self, set: usize) -> Result<bool, Error> {
        let sets = self.sets;
        let range_set = &sets[set];
        loop {
            let mut from = 0;
            let mut found = false;
            for _ in 0..self.occupancy[set].search_limit() {
                let Some(position) = self.occupancy[set].next_free(from) else {
                    break;
                };
                if !range_set.is_reserved(range_set.address_at(position)) {
                    found = true;
                    break;
                }
                from = position + 1;
            }
            if found || self.rebuilt {
                return Ok(found);
            }
            self.rebuild(Sweep::KeepAll)?;
        }
    }

    /// Releases `ips` of `owner`: each reservation file is removed only if it still holds
    /// `owner`'s content, then the index entries go. The directory is synced in between, so a
    /// power loss cannot leave a reservation without the entry that lets DEL find it.
    pub fn release(&mut self, owner: &Owner, ips: &[IpAddr]) -> Result<(), Error> {
        for &ip in ips {
            if self.holder(ip)? == Some(Content::Owned(owner.clone())) {
                // Clear the bit first: a crash in between leaves a clear bit on a taken
                // address, which the next link attempt corrects.
                self.mark(ip, false)?;
                remove_optional(&self.store.reservation_path(ip))?;
                self.changed = true;
            }
        }
        sync_dir(&self.store.net_dir)?;
        for &ip in ips {
            remove_optional(&self.store.entry_path(owner, ip))?;
        }
        Ok(())
    }

    /// DEL: releases everything `container_id`/`ifname` holds; when it holds nothing, the
    /// container's legacy ID-only reservations instead (the reference's fallback).
    pub fn release_attachment(&mut self, container_id: &str, ifname: &str) -> Result<(), Error> {
        let exact = Owner::attachment(container_id, ifname);
        let held = self.held(&exact)?;
        if !held.is_empty() {
            return self.release(&exact, &held);
        }
        let legacy = Owner::Legacy {
            container_id: container_id.to_owned(),
        };
        let held = self.held(&legacy)?;
        self.release(&legacy, &held)
    }

    /// Rebuilds the whole index from the reservation files. Empty reservation files are crash
    /// leftovers (every writer holds the lock while a file is empty) and are reclaimed; corrupt
    /// ones are reported and reclaimed by GC. Returns the per-file errors it stepped over.
    pub fn rebuild(&mut self, sweep: Sweep<'_>) -> Result<Vec<Error>, Error> {
        let store = self.store;
        // Without a stamp, a crash part-way through makes the next session rebuild again.
        overwrite(&mut self.stamp_file, b"", &store.stamp_path())?;
        clear_buckets(&store.attachments_dir())?;
        // The session's file went with the old index; if a reservation uses it, it is
        // re-indexed below like any other.
        self.prepared = None;
        for occupancy in &mut self.occupancy {
            occupancy.clear();
        }
        let reserved: HashSet<IpAddr> = self.sets.iter().flat_map(RangeSet::reserved).collect();
        for address in reserved {
            self.mark_in_memory(address);
        }

        let mut problems = Vec::new();
        let listing =
            fs::read_dir(&store.net_dir).map_err(|e| io_error("list", &store.net_dir, &e))?;
        for entry in listing {
            let entry = entry.map_err(|e| io_error("list", &store.net_dir, &e))?;
            let is_file = entry.file_type().is_ok_and(|t| t.is_file());
            let name = entry.file_name();
            let Some(ip) = name
                .to_str()
                .and_then(|n| parse_ip_file_name(n, ESCAPES_COLONS))
            else {
                continue;
            };
            if !is_file {
                continue;
            }
            if let Err(err) = self.index_file(ip, &entry.path(), &sweep) {
                log::warn!("{}", err.msg());
                problems.push(err);
            }
        }
        for (i, occupancy) in self.occupancy.iter_mut().enumerate() {
            occupancy.save(&store.occupancy_path(i))?;
        }
        self.rebuilt = true;
        self.changed = true;
        Ok(problems)
    }

    /// Indexes (or, as the sweep says, removes) one reservation file during a rebuild.
    fn index_file(&mut self, ip: IpAddr, path: &Path, sweep: &Sweep<'_>) -> Result<(), Error> {
        let bytes = fs::read(path).map_err(|e| io_error("read reservation", path, &e))?;
        match parse_content(&bytes) {
            Content::Empty => {
                log::warn!(
                    "reservation {} is empty (a writer crashed before writing it); reclaiming {ip}",
                    path.display()
                );
                remove_optional(path)
            }
            Content::Corrupt(why) => {
                if matches!(sweep, Sweep::Retain(_)) {
                    log::warn!(
                        "reservation {} is corrupt ({why}); GC reclaims {ip}",
                        path.display()
                    );
                    remove_optional(path)
                } else {
                    log::warn!(
                        "reservation {} is corrupt ({why}); {ip} stays blocked until GC reclaims it",
                        path.display()
                    );
                    self.mark_in_memory(ip);
                    Ok(())
                }
            }
            Content::Owned(owner) => {
                if let Sweep::Retain(valid) = sweep
                    && !valid(&owner)
                {
                    log::info!("GC releases {ip}, held by {owner}");
                    return remove_optional(path);
                }
                let bucket = self.store.bucket(&owner);
                fs::create_dir_all(&bucket)
                    .map_err(|e| io_error("create directory", &bucket, &e))?;
                let entry = self.store.entry_path(&owner, ip);
                fs::hard_link(path, &entry).map_err(|e| io_error("index", path, &e))?;
                self.mark_in_memory(ip);
                Ok(())
            }
        }
    }

    fn mark_in_memory(&mut self, ip: IpAddr) {
        for (set, occupancy) in self.sets.iter().zip(&mut self.occupancy) {
            if let Some(position) = set.position_of(ip) {
                occupancy.note_reserved(position);
            }
        }
    }
}

/// Empties every bucket and makes sure all of them exist. The directories are kept, so an ADD
/// never has to create one (creating an inode is the costliest step of an ADD on slow disks).
fn clear_buckets(attachments: &Path) -> Result<(), Error> {
    let listing = fs::read_dir(attachments).map_err(|e| io_error("list", attachments, &e))?;
    for bucket in listing {
        let bucket = bucket
            .map_err(|e| io_error("list", attachments, &e))?
            .path();
        let cleared = if bucket.is_dir() {
            fs::read_dir(&bucket).and_then(|mut entries| {
                entries.try_for_each(|entry| fs::remove_file(entry?.path()))
            })
        } else {
            fs::remove_file(&bucket)
        };
        cleared.map_err(|e| io_error("clear", &bucket, &e))?;
    }
    for index in 0..BUCKETS {
        let bucket = attachments.join(format!("{index:02x}"));
        match fs::create_dir(&bucket) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io_error("create directory", &bucket, &e)),
        }
    }
    Ok(())
}
