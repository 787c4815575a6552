//! A read of one network's store that writes nothing: what STATUS, the pool's usage and the
//! node tools (`cni-win sweep`, `doctor`, the support bundle, the node daemon) read.
//!
//! A writer's session ([`Store::lock`]) makes the network directory, `lock` and the index, and
//! may rebuild the index; a command that only reads must do none of that. A read of a store
//! that does not exist would otherwise leave one behind, wherever `dataDir` points: in the
//! working directory, for a path the platform takes as relative. So a [`Reading`] is another
//! type, with no way to write: it never opens the index (a writer's cache, whose stamp a reader
//! could not repair) and reads the reservation files themselves, the truth.
//!
//! # Why reading without creating is safe while an ADD creates the store
//!
//! Every writer, ours and the reference, makes `lock` before its first reservation and holds
//! it while it writes one; nothing ever removes `lock`. So:
//!
//! - **No network directory**: nothing was ever reserved (an ADD making it at this moment has
//!   reserved nothing yet). "No reservations" is what the store holds at the read's moment.
//! - **A directory without `lock`**: the same, a writer between making the directory and
//!   making `lock`. (An operator who deleted `lock` by hand leaves reservations without it:
//!   they are read without the lock. Ours become visible only complete, by a hard link; a
//!   reference ADD writes its file after creating it, so such a file can read as empty, which
//!   no reader takes for a pod's reservation, let alone removes.)
//! - **`lock` exists**: it is taken, as every writer takes it (with the store's deadline), so
//!   the read sees no writer's half-done work: the reservation files are one consistent state.
//!
//! Nothing decides to remove anything from the absence of a reservation: the sweep removes
//! a reservation only when it *is* there and the rule finds it dead, and it reads the node
//! again under the attachment's claim before removing.

use std::fs::File;
use std::net::IpAddr;

use cni::Error;

use super::Store;
use crate::fsutil::{Access, OpenError, OpenErrorExt, open_regular};
use crate::layout::{Content, LOCK_FILE};
use crate::lock;

/// The store as it is, read under its lock when it has one (see the module docs).
#[derive(Debug)]
pub struct Reading<'a> {
    store: &'a Store,
    /// The network's lock, held until the reading drops; `None` when there is no `lock`.
    _lock: Option<File>,
}

impl Store {
    /// Reads the store without creating or writing anything: `None` when the network
    /// directory does not exist (nothing is reserved). A network directory or `lock` that is
    /// a link or a special file refuses, as for a writer.
    pub fn read(&self) -> Result<Option<Reading<'_>>, Error> {
        if self.is_missing() {
            return Ok(None);
        }
        self.ensure_real_net_dir()?;
        let lock_path = self.net_dir.join(LOCK_FILE);
        let lock = match open_regular(&lock_path, Access::Read) {
            Ok(file) => {
                lock::acquire(&file, &lock_path, self.lock_timeout)?;
                Some(file)
            }
            Err(OpenError::Missing) => None,
            Err(e) => return Err(e.into_error("open lock file", &lock_path)),
        };
        Ok(Some(Reading {
            store: self,
            _lock: lock,
        }))
    }
}

impl Reading<'_> {
    /// The addresses that have a reservation file, whatever the file holds (a file that is
    /// empty or damaged still keeps its address from being handed out).
    pub fn reserved_ips(&self) -> Result<Vec<IpAddr>, Error> {
        self.store.reservation_ips()
    }

    /// Every reservation file and what it holds, by address.
    pub fn reservations(&self) -> Result<Vec<(IpAddr, Content)>, Error> {
        let mut reservations = Vec::new();
        for ip in self.store.reservation_ips()? {
            if let Some(content) = self.store.read_reservation(ip)? {
                reservations.push((ip, content));
            }
        }
        reservations.sort_by_key(|(ip, _)| *ip);
        Ok(reservations)
    }

    /// The content of `ip`'s reservation file, if it exists.
    pub fn holder(&self, ip: IpAddr) -> Result<Option<Content>, Error> {
        self.store.read_reservation(ip)
    }
}
