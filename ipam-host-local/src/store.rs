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
//!
//! Everything under `.cni-win` and `last_reserved_ip.*` is a cache: damage to it (a link, a
//! directory, garbage) is repaired by replacing it, never reported as a failure. Only damage to
//! the truth itself (or to `lock`) refuses, naming the path.

use std::fs::{self, File};
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use cni::Error;

use crate::fsutil::{
    Access, OpenError, OpenErrorExt, describe, ensure_private_dir, hard_link, io_error,
    is_real_dir, open_regular, overwrite, read_capped, remove_any, remove_optional, sync_dir,
    write_new,
};
use crate::layout::{
    Content, ESCAPES_COLONS, LAST_RESERVED_PREFIX, LOCK_FILE, Owner, ip_file_name, parse_content,
    parse_ip_file_name,
};
use crate::lock;
use crate::occupancy::Occupancy;
use crate::range::RangeSet;

mod reading;

pub use reading::Reading;

/// Our directory inside the network directory. The leading dot keeps it out of anything that
/// globs the directory (`rm <dir>/*`), and nothing in it can pass for a reservation.
pub const INDEX_DIR: &str = ".cni-win";

/// The stamp's first line; the version names the index layout (v2: entries keyed by hash), so
/// an index written by another layout is rebuilt.
const STAMP_HEADER: &str = "cni-win host-local index v2";

/// How many bucket directories the index spreads its entries over.
const BUCKETS: u32 = 64;

/// The largest reservation file read: an ID and an ifname (libcni sets no length on IDs, but
/// nothing real comes near this). Larger files are corrupt.
const MAX_RESERVATION_SIZE: u64 = 64 * 1024;

/// The largest `last_reserved_ip.<n>` read (an address is at most 39 bytes).
const MAX_LAST_RESERVED_SIZE: u64 = 256;

/// The largest stamp read (a few lines per range set).
const MAX_STAMP_SIZE: u64 = 64 * 1024;

/// Paths of one network's store.
#[derive(Debug, Clone)]
pub struct Store {
    net_dir: PathBuf,
    lock_timeout: Duration,
}

/// What a rebuild should do with the reservations it reads.
pub enum Sweep<'a> {
    /// Keep every reservation (the index was stale).
    KeepAll,
    /// GC: keep the reservations this says are still valid; also reclaim corrupt files.
    Retain(&'a dyn Fn(&Owner) -> bool),
}

impl Store {
    pub fn new(data_dir: &Path, network: &str, lock_timeout: Duration) -> Store {
        Store {
            net_dir: data_dir.join(network),
            lock_timeout,
        }
    }

    pub fn net_dir(&self) -> &Path {
        &self.net_dir
    }

    /// Whether `<dataDir>/<network>` does not exist at all: nothing is reserved there, so a
    /// command that only gives addresses back has nothing to do (and creates nothing). A
    /// network name the file system refuses as a name (too long) cannot have a directory, so
    /// nothing was ever reserved under it: its DEL, which the runtime retries until it
    /// succeeds, has nothing to release.
    pub fn is_missing(&self) -> bool {
        fs::symlink_metadata(&self.net_dir).is_err_and(|e| {
            matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::InvalidFilename
            )
        })
    }

    /// The addresses the network directory has reservation files for (other entries, the
    /// lock and the index among them, are not reservations).
    fn reservation_ips(&self) -> Result<Vec<IpAddr>, Error> {
        let dir = &self.net_dir;
        let listing = fs::read_dir(dir).map_err(|e| io_error("list", dir, &e))?;
        let mut ips = Vec::new();
        for entry in listing {
            let entry = entry.map_err(|e| io_error("list", dir, &e))?;
            if let Some(ip) = entry
                .file_name()
                .to_str()
                .and_then(|n| parse_ip_file_name(n, ESCAPES_COLONS))
            {
                ips.push(ip);
            }
        }
        Ok(ips)
    }

    pub fn reservation_path(&self, ip: IpAddr) -> PathBuf {
        self.net_dir.join(ip_file_name(ip, ESCAPES_COLONS))
    }

    fn last_reserved_path(&self, set: usize) -> PathBuf {
        self.net_dir.join(format!("{LAST_RESERVED_PREFIX}{set}"))
    }

    /// `<net>/.cni-win`, computed rather than stored to keep `HostLocal` small (the plugins
    /// hold it in an enum beside a bare plugin name).
    fn index_dir(&self) -> PathBuf {
        self.net_dir.join(INDEX_DIR)
    }

    fn attachments_dir(&self) -> PathBuf {
        self.index_dir().join("attachments")
    }

    /// The bucket holding `owner`'s entries: one of 64, by its key, so no directory grows with
    /// the number of reservations the way one flat directory would (5,000 reservations make
    /// buckets of about 80 names) and no directory is made per attachment.
    fn bucket(&self, owner: &Owner) -> PathBuf {
        let key = owner.key();
        let index = u32::from_str_radix(&key[key.len() - 8..], 16).unwrap_or(0) % BUCKETS;
        self.attachments_dir().join(format!("{index:02x}"))
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
        self.index_dir().join("stamp")
    }

    fn occupancy_path(&self, set: usize) -> PathBuf {
        self.index_dir().join(format!("occupancy.{set}"))
    }

    /// Locks the network directory (creating it if needed) and returns a session whose index is
    /// known to match the reservation files, or, if a rebuild could not read every one of
    /// them, a session that reads the reservation files themselves.
    pub fn open<'a>(&'a self, sets: &'a [RangeSet]) -> Result<Session<'a>, Error> {
        let mut session = self.lock(sets)?;
        if session.index.recorded_stamp != session.stamp()? {
            log::info!(
                "index of {} is missing, damaged or stale (the directory changed since this \
                 plugin last used it); rebuilding it from the reservation files",
                self.net_dir.display()
            );
            session.rebuild(Sweep::KeepAll)?;
        }
        Ok(session)
    }

    /// Locks the network directory without checking the index (for callers that rebuild it).
    pub fn lock<'a>(&'a self, sets: &'a [RangeSet]) -> Result<Session<'a>, Error> {
        self.create_net_dir()?;
        let lock_path = self.net_dir.join(LOCK_FILE);
        let lock = open_regular(&lock_path, Access::ReadWriteCreate)
            .map_err(|e| e.into_error("open lock file", &lock_path))?;
        lock::acquire(&lock, &lock_path, self.lock_timeout)?;

        let last_reserved = (0..sets.len())
            .map(|i| self.read_last_reserved(i))
            .collect();
        let index = match Index::open(self, sets) {
            Ok(index) => index,
            Err(err) => {
                log::warn!(
                    "the index in {} is damaged ({}); replacing it",
                    self.index_dir().display(),
                    err.msg()
                );
                remove_any(&self.index_dir())?;
                Index::open(self, sets)?
            }
        };
        Ok(Session {
            store: self,
            sets,
            _lock: lock,
            last_reserved,
            index,
            rebuilt: false,
            trusted: true,
            changed: false,
            prepared: None,
            unreadable: Vec::new(),
        })
    }

    /// Creates `<dataDir>/<network>`; refuses when it is a link or a file (everything the store
    /// writes must stay inside the real directory).
    fn create_net_dir(&self) -> Result<(), Error> {
        if self.is_missing() {
            return fs::create_dir_all(&self.net_dir)
                .map_err(|e| io_error("create directory", &self.net_dir, &e));
        }
        self.ensure_real_net_dir()
    }

    /// Refuses a network directory that is a link or a file: the store never follows links,
    /// whether it writes or only reads.
    fn ensure_real_net_dir(&self) -> Result<(), Error> {
        match is_real_dir(&self.net_dir) {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::new(
                cni::ErrorCode::Io,
                format!(
                    "{} is not a directory (a link or a file); the store never follows links: \
                     replace it with a directory",
                    self.net_dir.display()
                ),
            )),
            Err(e) => Err(io_error("inspect", &self.net_dir, &e)),
        }
    }

    /// `last_reserved_ip.<set>`'s content: a hint, so anything unreadable reads as empty.
    fn read_last_reserved(&self, set: usize) -> String {
        let path = self.last_reserved_path(set);
        let read = match open_regular(&path, Access::Read) {
            Err(OpenError::Missing) => return String::new(),
            Err(e) => Err(e.into_error("read", &path)),
            Ok(mut file) => read_capped(&mut file, MAX_LAST_RESERVED_SIZE, &path, "hint"),
        };
        match read {
            Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
            Err(err) => {
                log::warn!(
                    "{}; allocation starts from the range's beginning",
                    err.msg()
                );
                String::new()
            }
        }
    }

    /// The content of `ip`'s reservation file, read without following a link: a link or special
    /// file there is nobody's reservation (and its target is never read).
    fn read_reservation(&self, ip: IpAddr) -> Result<Option<Content>, Error> {
        let path = self.reservation_path(ip);
        let mut file = match open_regular(&path, Access::Read) {
            Ok(file) => file,
            Err(OpenError::Missing) => return Ok(None),
            Err(OpenError::NotRegular(kind)) => {
                return Ok(Some(Content::Corrupt(format!("it is {}", describe(kind)))));
            }
            Err(e) => return Err(e.into_error("read reservation", &path)),
        };
        Ok(Some(
            match read_capped(&mut file, MAX_RESERVATION_SIZE, &path, "reservation") {
                Ok(bytes) => parse_content(&bytes),
                Err(_) => Content::Corrupt(format!("larger than {MAX_RESERVATION_SIZE} bytes")),
            },
        ))
    }
}

/// The index's open files: the stamp and each set's occupancy map.
#[derive(Debug)]
struct Index {
    stamp_file: File,
    /// The stamp as the last session left it; empty when the index must be rebuilt.
    recorded_stamp: String,
    occupancy: Vec<Occupancy>,
}

impl Index {
    /// Opens the index, repairing its directories. Anything that makes it untrustworthy (a
    /// repaired directory, a map that is not one) empties the recorded stamp, so the caller
    /// rebuilds; a link or special file in place of a file is an error (the caller replaces the
    /// whole index).
    fn open(store: &Store, sets: &[RangeSet]) -> Result<Index, Error> {
        let mut repaired = ensure_private_dir(&store.index_dir())?;
        repaired |= ensure_private_dir(&store.attachments_dir())?;
        let stamp_path = store.stamp_path();
        let mut stamp_file = open_regular(&stamp_path, Access::ReadWriteCreate)
            .map_err(|e| e.into_error("open", &stamp_path))?;
        // An unreadable or oversized stamp reads as empty, which forces a rebuild.
        let recorded = read_capped(&mut stamp_file, MAX_STAMP_SIZE, &stamp_path, "stamp")
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default();
        let mut occupancy = Vec::with_capacity(sets.len());
        for (i, set) in sets.iter().enumerate() {
            let (map, valid) = Occupancy::open(&store.occupancy_path(i), set.size())?;
            repaired |= !valid;
            occupancy.push(map);
        }
        Ok(Index {
            stamp_file,
            recorded_stamp: if repaired { String::new() } else { recorded },
            occupancy,
        })
    }

    /// Empties the index for a rebuild: no stamp (a crash part-way through makes the next
    /// session rebuild again), no entries, every bucket made, every map all-free. The stamp and
    /// map files stay open and are rewritten in place: Windows cannot remove a directory while
    /// a file in it is open.
    fn clear(&mut self, store: &Store) -> Result<(), Error> {
        overwrite(&mut self.stamp_file, b"", &store.stamp_path())?;
        self.recorded_stamp.clear();
        let attachments = store.attachments_dir();
        remove_any(&attachments)?;
        ensure_private_dir(&attachments)?;
        for bucket in 0..BUCKETS {
            ensure_private_dir(&attachments.join(format!("{bucket:02x}")))?;
        }
        for occupancy in &mut self.occupancy {
            occupancy.clear();
        }
        Ok(())
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
    index: Index,
    /// Whether this session already rebuilt the index (a second rebuild would find the same).
    rebuilt: bool,
    /// Whether the index holds every reservation. False after a rebuild that could not read or
    /// index some reservation file, or when the index turned out damaged: lookups then read
    /// the reservation files, and the stamp stays empty so the next session rebuilds.
    trusted: bool,
    /// Whether the network directory changed, so the stamp must be rewritten.
    changed: bool,
    /// The complete reservation file of this session's new reservations.
    prepared: Option<Prepared>,
    /// Reservation files a lookup in the reservation files could not read: one of them may be
    /// the attachment's, so DEL cannot claim to have released everything.
    unreadable: Vec<Error>,
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
    /// (rewritten by every reference ADD, even when the time stamp is too coarse to move). The
    /// layout is the ranges alone, never a caller's exclusions, so every command and caller
    /// of one network config agrees on it.
    ///
    /// The attachments directory's time is in it too: it moves only when buckets are made or
    /// removed, which we do only in a rebuild, so a bucket replaced behind our back is seen.
    fn stamp(&self) -> Result<String, Error> {
        let modified = |dir: &Path| -> Result<String, Error> {
            let time = fs::symlink_metadata(dir)
                .and_then(|m| m.modified())
                .map_err(|e| io_error("read metadata of", dir, &e))?;
            let since_epoch = time.duration_since(UNIX_EPOCH).unwrap_or_default();
            Ok(format!(
                "{}.{:09}",
                since_epoch.as_secs(),
                since_epoch.subsec_nanos()
            ))
        };
        let mut stamp = format!(
            "{STAMP_HEADER}\nmodified {}\nindex {}\n",
            modified(&self.store.net_dir)?,
            modified(&self.store.attachments_dir())?
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
    /// session changed nothing; an index that is not complete gets an empty stamp (the next
    /// session rebuilds); a session that fails before this leaves the old stamp, which no
    /// longer matches the directory if it changed anything.
    pub fn finish(mut self) -> Result<(), Error> {
        let path = self.store.stamp_path();
        if !self.trusted {
            overwrite(&mut self.index.stamp_file, b"", &path)?;
        } else if self.changed {
            let stamp = self.stamp()?;
            overwrite(&mut self.index.stamp_file, stamp.as_bytes(), &path)?;
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
                self.index.occupancy[i].mark(position, reserved, &self.store.occupancy_path(i))?;
            }
        }
        Ok(())
    }

    /// The content of `ip`'s reservation file, if it exists.
    pub fn holder(&self, ip: IpAddr) -> Result<Option<Content>, Error> {
        self.store.read_reservation(ip)
    }

    /// The addresses `owner` holds, verified against the reservation files. With a trusted
    /// index this is one bucket listing; a damaged bucket costs a rebuild; an index that is
    /// not complete is bypassed for the reservation files themselves.
    pub fn held(&mut self, owner: &Owner) -> Result<Vec<IpAddr>, Error> {
        if self.trusted {
            match self.held_by_index(owner) {
                Ok(held) => return Ok(held),
                Err(err) if !self.rebuilt => {
                    log::warn!("{}; rebuilding the index", err.msg());
                    self.rebuild(Sweep::KeepAll)?;
                    return self.held(owner);
                }
                Err(err) => {
                    log::warn!("{}; reading the reservation files instead", err.msg());
                    self.trusted = false;
                }
            }
        }
        self.held_by_reservations(owner)
    }

    fn held_by_index(&mut self, owner: &Owner) -> Result<Vec<IpAddr>, Error> {
        let dir = self.store.bucket(owner);
        if !is_real_dir(&dir).unwrap_or(false) {
            return Err(Error::new(
                cni::ErrorCode::Io,
                format!(
                    "index bucket {} is missing or not a directory",
                    dir.display()
                ),
            ));
        }
        let key = owner.key();
        let prefix = format!("{key}@");
        let entries = fs::read_dir(&dir).map_err(|e| io_error("list", &dir, &e))?;
        let mut held = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io_error("list", &dir, &e))?;
            let name = entry.file_name();
            let Some(ip_name) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
                continue;
            };
            let ip = parse_ip_file_name(ip_name, ESCAPES_COLONS);
            let holder = match ip {
                Some(ip) => self.holder(ip)?,
                None => None,
            };
            match (ip, holder) {
                (Some(ip), Some(Content::Owned(holder))) if holder == *owner => held.push(ip),
                // Another attachment whose key collides: its entry, not a stale one of ours.
                (Some(_), Some(Content::Owned(holder))) if holder.key() == key => {}
                // Left by a crash, or damaged: never believed, removed without following it.
                _ => {
                    if let Err(err) = remove_any(&entry.path()) {
                        log::warn!("stale index entry: {}", err.msg());
                    }
                }
            }
        }
        held.sort();
        Ok(held)
    }

    /// The reference's way: every reservation file whose content is `owner`'s. Files that
    /// cannot be read are remembered (see [`Session::release_attachment`]).
    fn held_by_reservations(&mut self, owner: &Owner) -> Result<Vec<IpAddr>, Error> {
        let mut held = Vec::new();
        for ip in self.store.reservation_ips()? {
            match self.holder(ip) {
                Ok(Some(Content::Owned(holder))) if holder == *owner => held.push(ip),
                Ok(_) => {}
                Err(err) => {
                    log::warn!("{}", err.msg());
                    self.unreadable.push(err);
                }
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
                hard_link(&prepared.entry, entry).map_err(|e| io_error("create", entry, &e))
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
        // The bucket must be a real directory: a link there would put the entry elsewhere.
        ensure_private_dir(&self.store.bucket(owner))?;
        let entry = self.store.entry_path(owner, ip);
        // An entry left by a crashed ADD is stale (`held` would have reported a live one).
        remove_any(&entry)?;
        self.name_reservation_file(owner, &entry)?;
        // Whether `entry` is the spare file itself rather than one more link to a committed one.
        let spare = self.prepared.as_mut().filter(|p| p.entry == entry);

        let target = self.store.reservation_path(ip);
        match hard_link(&entry, &target) {
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

    /// The next free candidate of `set` from its start position. Gateways and excluded
    /// addresses are skipped here, never recorded in the map: the map holds only what the
    /// reservation files say, so it is the same for every caller.
    fn search(&mut self, set: usize, owner: &Owner) -> Result<Option<IpAddr>, Error> {
        let sets = self.sets;
        let range_set = &sets[set];
        let mut from = self.start_position(set);
        for _ in 0..self.index.occupancy[set].search_limit() {
            let Some(position) = self.index.occupancy[set].next_free(from) else {
                return Ok(None);
            };
            let ip = range_set.address_at(position);
            from = position + 1;
            if range_set.is_reserved(ip) {
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
    /// write only moves where the next search starts). A link or special file in its place is
    /// replaced, never written through.
    fn record_last_reserved(&mut self, set: usize, ip: IpAddr) -> Result<(), Error> {
        let text = ip.to_string();
        let path = self.store.last_reserved_path(set);
        let mut file = match open_regular(&path, Access::ReadWriteCreate) {
            Ok(file) => file,
            Err(OpenError::NotRegular(kind)) => {
                log::warn!("{} is {}; replacing it", path.display(), describe(kind));
                remove_any(&path)?;
                open_regular(&path, Access::ReadWriteCreate)
                    .map_err(|e| e.into_error("open", &path))?
            }
            Err(e) => return Err(e.into_error("open", &path)),
        };
        overwrite(&mut file, text.as_bytes(), &path)?;
        self.last_reserved[set] = text;
        Ok(())
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
            // A stale entry left behind is dropped by the next lookup or rebuild.
            if let Err(err) = remove_any(&self.store.entry_path(owner, ip)) {
                log::warn!("{}", err.msg());
            }
        }
        Ok(())
    }

    /// DEL: releases everything `container_id`/`ifname` holds; when it holds nothing, the
    /// container's legacy ID-only reservations instead (the reference's fallback). Fails (after
    /// releasing what it found) when some reservation file could not be read: it may be the
    /// attachment's, and a DEL that returns success must leave none behind.
    pub fn release_attachment(&mut self, container_id: &str, ifname: &str) -> Result<(), Error> {
        let exact = Owner::attachment(container_id, ifname);
        let held = self.held(&exact)?;
        if held.is_empty() {
            let legacy = Owner::Legacy {
                container_id: container_id.to_owned(),
            };
            let held = self.held(&legacy)?;
            self.release(&legacy, &held)?;
        } else {
            self.release(&exact, &held)?;
        }
        match self.unreadable.first() {
            None => Ok(()),
            Some(first) => Err(Error::new(
                cni::ErrorCode::Io,
                format!(
                    "released what {exact} provably held, but {} reservation file(s) could not \
                     be read and may be its own: {}",
                    self.unreadable.len(),
                    first.msg()
                ),
            )),
        }
    }

    /// Rebuilds the whole index from the reservation files. Empty reservation files are crash
    /// leftovers (every writer holds the lock while a file is empty) and are reclaimed; corrupt
    /// ones are reported and reclaimed by GC. Returns the per-file errors it stepped over; with
    /// any, the index is not complete and never gets a stamp (see `trusted`).
    pub fn rebuild(&mut self, sweep: Sweep<'_>) -> Result<Vec<Error>, Error> {
        let store = self.store;
        // The session's file goes with the old index; if a reservation uses it, it is
        // re-indexed below like any other.
        self.prepared = None;
        self.index.clear(store)?;
        self.rebuilt = true;
        self.trusted = false;
        self.changed = true;

        let mut problems = Vec::new();
        let listing =
            fs::read_dir(&store.net_dir).map_err(|e| io_error("list", &store.net_dir, &e))?;
        for entry in listing {
            let entry = entry.map_err(|e| io_error("list", &store.net_dir, &e))?;
            let name = entry.file_name();
            let Some(ip) = name
                .to_str()
                .and_then(|n| parse_ip_file_name(n, ESCAPES_COLONS))
            else {
                continue;
            };
            if let Err(err) = self.index_file(ip, &entry.path(), &sweep) {
                log::warn!("{}", err.msg());
                problems.push(err);
            }
        }
        for (i, occupancy) in self.index.occupancy.iter_mut().enumerate() {
            occupancy.save(&store.occupancy_path(i))?;
        }
        self.trusted = problems.is_empty();
        Ok(problems)
    }

    /// Indexes (or, as the sweep says, removes) one reservation file during a rebuild. An
    /// address whose file cannot be indexed stays marked taken.
    fn index_file(&mut self, ip: IpAddr, path: &Path, sweep: &Sweep<'_>) -> Result<(), Error> {
        let gc = matches!(sweep, Sweep::Retain(_));
        let content = match self.holder(ip) {
            Ok(Some(content)) => content,
            Ok(None) => return Ok(()),
            Err(err) => {
                self.mark_in_memory(ip);
                return Err(err);
            }
        };
        match content {
            Content::Empty => {
                log::warn!(
                    "reservation {} is empty (a writer crashed before writing it); reclaiming {ip}",
                    path.display()
                );
                remove_optional(path)
            }
            Content::Corrupt(why) if gc => {
                log::warn!(
                    "reservation {} is corrupt ({why}); GC reclaims {ip}",
                    path.display()
                );
                // A link or special file is unlinked (never followed); a directory may be an
                // operator's, so it only stays blocked.
                if is_real_dir(path).unwrap_or(false) {
                    self.mark_in_memory(ip);
                    Ok(())
                } else {
                    remove_any(path)
                }
            }
            Content::Corrupt(why) => {
                log::warn!(
                    "reservation {} is corrupt ({why}); {ip} stays blocked until GC reclaims it",
                    path.display()
                );
                self.mark_in_memory(ip);
                Ok(())
            }
            Content::Owned(owner) => {
                if let Sweep::Retain(valid) = sweep
                    && !valid(&owner)
                {
                    log::info!("GC releases {ip}, held by {owner}");
                    return remove_optional(path);
                }
                self.mark_in_memory(ip);
                let entry = self.store.entry_path(&owner, ip);
                hard_link(path, &entry).map_err(|e| io_error("index", path, &e))
            }
        }
    }

    fn mark_in_memory(&mut self, ip: IpAddr) {
        for (set, occupancy) in self.sets.iter().zip(&mut self.index.occupancy) {
            if let Some(position) = set.position_of(ip) {
                occupancy.note_reserved(position);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::HostLocal;
    use crate::fsutil::faults;
    use cni::{CniArgs, NetConf};
    use std::fs;
    use std::path::PathBuf;

    fn scratch(label: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ipam-store-{label}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn host_local(data_dir: &std::path::Path) -> HostLocal {
        let conf = serde_json::json!({"cniVersion": "1.1.0", "name": "net", "type": "host-local",
            "ipam": {"type": "host-local", "subnet": "10.0.0.0/24", "dataDir": data_dir}});
        let conf = NetConf::parse(conf.to_string().as_bytes()).unwrap();
        HostLocal::from_conf(&conf, &CniArgs::default()).unwrap()
    }

    /// A store holding a's reservation (10.0.0.2), changed behind the index's back so that the
    /// next operation rebuilds.
    fn holding_a_and_stale(label: &str) -> (PathBuf, HostLocal, PathBuf) {
        let dir = scratch(label);
        let ipam = host_local(&dir);
        ipam.allocate("a", "eth0").unwrap();
        let net = ipam.network_dir().to_path_buf();
        fs::write(net.join("other"), "").unwrap();
        fs::remove_file(net.join("other")).unwrap();
        (dir, ipam, net)
    }

    /// Class 1: a rebuild that could not index a reservation (ENOSPC on its link) never marks
    /// the index valid, so a later DEL of that attachment still finds and frees it.
    #[test]
    fn an_incomplete_rebuild_never_makes_del_leak() {
        let (dir, ipam, net) = holding_a_and_stale("incomplete-rebuild");
        faults::fail_links(1);
        ipam.allocate("b", "eth0").unwrap();
        faults::fail_links(0);
        ipam.release("a", "eth0").unwrap();
        assert!(
            !net.join("10.0.0.2").exists(),
            "DEL returned success and left a's reservation"
        );
        ipam.release("a", "eth0").unwrap();
        ipam.release("b", "eth0").unwrap();
        assert!(!net.join("10.0.0.3").exists());
        let _ = fs::remove_dir_all(&dir);
    }

    /// Class 1, the same with the index still incomplete when DEL runs: DEL reads the
    /// reservation files themselves.
    #[test]
    fn del_reads_the_reservation_files_while_the_index_is_incomplete() {
        let (dir, ipam, net) = holding_a_and_stale("untrusted-del");
        // Every link of this DEL's rebuild fails: the index stays incomplete.
        faults::fail_links(u32::MAX);
        let released = ipam.release("a", "eth0");
        faults::fail_links(0);
        released.unwrap();
        assert!(!net.join("10.0.0.2").exists());
        let _ = fs::remove_dir_all(&dir);
    }
}
