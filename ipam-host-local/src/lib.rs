//! host-local IPAM for cni-win: a library the win-bridge and win-overlay plugins call in-process,
//! and the same code as a standalone `host-local` CNI plugin.
//!
//! # Use
//!
//! ```no_run
//! # fn demo(conf: &cni::NetConf, args: &cni::CniArgs) -> Result<(), cni::Error> {
//! use ipam_host_local::HostLocal;
//!
//! let ipam = HostLocal::from_conf(conf, args)?;
//! let allocation = ipam.allocate("3f2a9c", "eth0")?;
//! // ... create the endpoint; if that fails, give back only what this ADD reserved:
//! ipam.undo(&allocation)?;
//! // DEL, with whatever config the runtime has then (see `Teardown`):
//! ipam_host_local::Teardown::from_conf(conf, args)?.release("3f2a9c", "eth0")?;
//! # Ok(())
//! # }
//! ```
//!
//! # Store: the reference's files, so both binaries can share it
//!
//! `<dataDir>/<network>/` (default dataDir `/var/lib/cni/networks`, as the reference on every
//! OS) holds, exactly as containernetworking/plugins' host-local writes them:
//!
//! - one file per reserved address, named by the address (IPv6 `:` written as `_` on Windows),
//!   holding `containerID\r\nifname` without a trailing newline (legacy files hold the ID only);
//! - `last_reserved_ip.<set>`: the last address reserved from range set `<set>`;
//! - `lock`: held with an exclusive `File::lock` (flock / LockFileEx, as the reference's
//!   go-filemutex) for the whole of every operation, so the reference binary is excluded too.
//!
//! Reservations written by the reference are honoured (never handed out twice) and released by
//! our DEL; ours are released by the reference's DEL.
//!
//! # Index: O(1) per operation at any pool size
//!
//! The reference reads every reservation file on every ADD and DEL. We keep an index in
//! `<network>/.cni-win/`, a dot-directory nothing in which can pass for a reservation (the
//! reference walks subdirectories, parses file names as addresses and deletes files whose
//! content is `id\r\nifname`):
//!
//! - `attachments/<bucket>/<key>@<ip>`, where `<key>` is 32 hex digits of a hash of the
//!   reservation content (`containerID\r\nifname`) and `<bucket>` one of 64 directories
//!   chosen by it: **the reservation file's first name**. A hash, so every attachment name
//!   the `cni` crate accepts (IDs of any length, ifnames with control characters) makes a
//!   short file name on every filesystem; entries are verified against the reservation file
//!   before they are believed, so a collision costs a read. Finding what an attachment holds
//!   (idempotent ADD, DEL, CHECK) is one listing of a bucket (about 80 names at 5,000
//!   reservations). Because the entry *is* the
//!   reservation file (same inode, content `id\r\nifname`), the reference's DEL deletes it
//!   along with the reservation, keeping the index right even when the reference releases
//!   our reservations; and an ADD creates one new file, as the reference's does (on slow
//!   filesystems creating an inode is what an ADD costs).
//! - `occupancy.<set>`: a bitmap of reserved positions of each range set (sets up to 2^20
//!   addresses), so round-robin allocation jumps to the next free address without trying
//!   taken ones. It is a hint (see below); larger sets probe from the last reserved address.
//! - `stamp`: the network directory's modification time, the attachments directory's, and
//!   each set's range layout and `last_reserved_ip` content, as we left them. The layout is
//!   the ranges alone: exclusions a caller adds ([`HostLocal::exclude`], win-bridge's pod
//!   gateway at ADD) are skipped during the search and never stored, so every command of
//!   every caller (both plugins and the `host-local` binary) agrees on the stamp. The
//!   reference's ADD always rewrites `last_reserved_ip`, and anyone's create or delete moves
//!   the directory's time, so a stamp that does not match means someone else (the reference,
//!   an operator's `rm`) changed the directory: the index is rebuilt from the reservation
//!   files (one O(n) pass).
//!
//! # The truth and the cache
//!
//! The reservation files are the truth; everything under `.cni-win/` and `last_reserved_ip.*`
//! is a cache that heals. Damage to a hint (empty, garbage, truncated, a directory, a link)
//! costs a rebuild or a replaced file, never a failed command. A rebuild that could not read or
//! index every reservation file leaves the stamp empty, and until a complete rebuild the
//! session reads the reservation files themselves (as the reference does): **a DEL that
//! returns success leaves no reservation of the attachment**, and fails (code 5, after
//! releasing what it found) when a file it could not read might be one. Only damage to the
//! truth or to `lock` refuses, naming the path.
//!
//! # Links and special files
//!
//! The plugin runs as root/SYSTEM, so nothing under `<dataDir>/<network>` is opened through a
//! link (Unix `O_NOFOLLOW`, Windows `FILE_FLAG_OPEN_REPARSE_POINT` and the reparse-point
//! attribute), nothing there is used unless it is a regular file or a real directory, and
//! nothing is opened blocking (`O_NONBLOCK`: a FIFO cannot stall a command). A link or special
//! file in place of a hint or index directory is removed (the link itself, never its target)
//! and replaced; one named like a reservation blocks its address and GC removes it; one in
//! place of `lock` or of the network directory refuses every command. Corrupt content is never
//! quoted in a message. Every file the store creates is owner-only (0600, directories 0700),
//! as the reference's reservation files.
//!
//! # Lock deadline
//!
//! The lock is polled, never waited on without end: after `ipam.lockTimeoutSeconds` (else the
//! `CNI_WIN_HOST_LOCAL_LOCK_TIMEOUT_SECONDS` environment variable, else 60 s: half kubelet's
//! default 2-minute CRI `runtimeRequestTimeout`, so a stuck holder costs one retried sandbox,
//! not an abandoned one) ADD, DEL and GC fail with code 11 naming the lock and, on Linux, the
//! holding process; STATUS with 50. The variable without its unit,
//! `CNI_WIN_HOST_LOCAL_LOCK_TIMEOUT`, is read when the other is not set, with a warning.
//!
//! # Crash safety
//!
//! - **A reservation becomes visible only once complete**: its content is written under its
//!   index name, then hard-linked to the address's name. The link fails if the name
//!   exists (O_EXCL semantics on Unix and Windows), so two writers can never both win an
//!   address, whatever the index says. A taken address costs a rename of the file to the next
//!   candidate's entry name; dual-stack links the same file under both addresses.
//! - **The index entry exists before the reservation**. A crash in between leaves an entry
//!   without reservation, which DEL, CHECK and ADD verify against the reservation file and
//!   drop, and which the next rebuild or GC removes. The reverse, a reservation DEL cannot
//!   find, cannot happen. DEL removes reservations first, syncs the directory, then the
//!   entries.
//! - **Every index entry is verified** against the reservation file before it is believed, so
//!   a stale entry never frees or returns an address that is not the attachment's.
//! - **The occupancy map is a hint**: a bit wrongly clear costs one failed link (then the bit is
//!   set); a bit wrongly set hides an address until the next rebuild, which always runs before
//!   ADD reports a set exhausted. (STATUS does not use the map: see below.)
//! - **Rebuilds** start from a fresh, empty index without a stamp, so a crash mid-rebuild
//!   makes the next operation rebuild again. They reclaim empty reservation files
//!   (a writer crashed between create and write: every writer holds the lock while a file is
//!   empty, so an empty file seen under the lock is always a leftover) and report corrupt ones,
//!   which GC reclaims. No file can block an address forever.
//! - Nothing on the ADD path is fsynced (the reference does not fsync either). A process crash
//!   cannot tear a file whose write returned; only a power loss can, and it also ends every pod
//!   on the node: an empty or short reservation it leaves is reclaimed like any dead writer's
//!   leftover. The stamp, `last_reserved_ip` and the map are rewritten in place: a torn write
//!   costs a rebuild or a hint, never a reservation. DEL does sync the directory between
//!   removing reservations and their entries, so no reservation outlives the entry DEL needs.
//!
//! GC rebuilds the index while deleting every reservation whose attachment is not valid, so
//! whatever a crash left behind, GC leaves a consistent store.
//!
//! # Reads write nothing
//!
//! ADD, DEL, CHECK and GC work in a session under the lock, which makes the network directory,
//! `lock` and the index when they are missing (DEL and a release make nothing when the
//! directory does not exist). What only reads, STATUS ([`HostLocal::status`]),
//! [`HostLocal::usage`] and [`HostLocal::reservations`] (the node tools' view of the store),
//! creates nothing and writes nothing: it reads the reservation files themselves, under the
//! lock when `lock` exists, and a store that does not exist holds no reservation. Why that is
//! safe while an ADD is creating the store is in the `store::reading` module.
//!
//! # Error codes
//!
//! Besides the spec's codes (7 for invalid config naming the field, 5 for I/O, 11 when the
//! lock deadline passed, 50 from STATUS), host-local returns:
//!
//! | code | constant | meaning |
//! | --- | --- | --- |
//! | 100 | [`POOL_EXHAUSTED`] | a range set has no free address; the message names the set, its ranges and how many addresses it holds |
//! | 101 | [`ADDRESS_UNAVAILABLE`] | a requested address is reserved by someone else, or the attachment already holds another one in that set |
//! | 102 | [`RESERVATION_MISMATCH`] | CHECK: the reservations differ from prevResult (the message lists each difference), or, without prevResult, the attachment holds none |
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod config;
mod fsutil;
mod host_local;
pub mod layout;
mod lock;
mod occupancy;
pub mod range;
mod resolv;
pub mod retention;
mod store;
mod teardown;

pub use config::{
    DEFAULT_DATA_DIR, DEFAULT_LOCK_TIMEOUT, IpamConfig, LOCK_TIMEOUT_ENV,
    LOCK_TIMEOUT_ENV_WITHOUT_UNIT, RequestedIp, StoreLocation,
};
pub use host_local::{Allocation, Exhausted, HostLocal, PoolUsage};
pub use retention::Retention;
pub use store::INDEX_DIR;
pub use teardown::Teardown;

use cni::ErrorCode;

/// Code 100: a range set has no free address.
pub const POOL_EXHAUSTED: ErrorCode = ErrorCode::Plugin(100);

/// Code 101: a requested address cannot be reserved for this attachment.
pub const ADDRESS_UNAVAILABLE: ErrorCode = ErrorCode::Plugin(101);

/// Code 102: CHECK found the reservations different from prevResult.
pub const RESERVATION_MISMATCH: ErrorCode = ErrorCode::Plugin(102);
