//! The store's files through [`rootsafe::file`], with errors that name the path: opens, creates
//! and removes that never follow a link or block on a special file.
//!
//! Everything under `<dataDir>/<network>` may have been replaced by anyone with write access to
//! it (an operator's mistake, a hostile container runtime, a restored backup). The store runs as
//! root/SYSTEM, so it opens nothing there through a link or reparse point, never waits on a
//! FIFO, and uses what it opened only when it is a regular file.

use cni::{Error, ErrorCode};
use rootsafe::file::{self, Kind, Mode};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

pub use rootsafe::file::OpenError;

/// Code 5 naming what failed on which path.
pub fn io_error(action: &str, path: &Path, err: &io::Error) -> Error {
    Error::new(
        ErrorCode::Io,
        format!("cannot {action} {}: {err}", path.display()),
    )
}

/// What a non-regular file is, for messages.
pub fn describe(kind: Kind) -> &'static str {
    match kind {
        Kind::Link => "a link (symlink, junction or other reparse point)",
        Kind::Directory => "a directory",
        Kind::Regular => "a regular file",
        Kind::Fifo | Kind::Device | Kind::Socket => "a special file (FIFO, device or socket)",
    }
}

/// An [`OpenError`] as the store reports it.
pub trait OpenErrorExt {
    /// Code 5 naming the path; a non-regular file's message says what to do about it.
    fn into_error(self, action: &str, path: &Path) -> Error;
}

impl OpenErrorExt for OpenError {
    fn into_error(self, action: &str, path: &Path) -> Error {
        match self {
            OpenError::Missing => io_error(action, path, &io::ErrorKind::NotFound.into()),
            OpenError::NotRegular(kind) => Error::new(
                ErrorCode::Io,
                format!(
                    "cannot {action} {}: it is {}, not a regular file; remove it (the \
                     store never follows links or opens special files it finds)",
                    path.display(),
                    describe(kind)
                ),
            ),
            OpenError::Io(e) => io_error(action, path, &e),
        }
    }
}

/// How to open a store file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    /// Read and write, creating the file (owner-only) when missing.
    ReadWriteCreate,
}

/// Opens a regular file of the store, never through a link, never blocking.
pub fn open_regular(path: &Path, access: Access) -> Result<File, OpenError> {
    let mut options = OpenOptions::new();
    options.read(true);
    if access == Access::ReadWriteCreate {
        options.write(true).create(true).truncate(false);
        Mode::OwnerOnly.apply(&mut options);
    }
    file::open(path, &options)
}

/// Reads at most `cap` bytes of a regular file; longer files are an error (code 5).
pub fn read_capped(file: &mut File, cap: u64, path: &Path, what: &str) -> Result<Vec<u8>, Error> {
    file::read_capped(file, cap).map_err(|e| {
        if e.kind() == io::ErrorKind::FileTooLarge {
            Error::new(
                ErrorCode::Io,
                format!(
                    "cannot read {what} {}: it is larger than {cap} bytes",
                    path.display()
                ),
            )
        } else {
            io_error(&format!("read {what}"), path, &e)
        }
    })
}

/// Whether `path` is a real directory (not a link to one); an error when nothing is there.
pub fn is_real_dir(path: &Path) -> io::Result<bool> {
    fs::symlink_metadata(path).map(|metadata| Kind::of(&metadata) == Kind::Directory)
}

/// Removes whatever is at `path` without following it: a link is unlinked (its target is left
/// alone), a real directory removed with its contents, anything else unlinked. Absent is fine.
pub fn remove_any(path: &Path) -> Result<(), Error> {
    match Kind::at(path) {
        Ok(None) => Ok(()),
        Ok(Some(kind)) => file::remove(path, kind).map_err(|e| io_error("remove", path, &e)),
        Err(e) => Err(io_error("inspect", path, &e)),
    }
}

/// Makes `path` a real directory: creates it when missing (owner-only on Unix), replaces a
/// link or file found in its place. Returns whether it had to repair something.
pub fn ensure_private_dir(path: &Path) -> Result<bool, Error> {
    let repaired = match is_real_dir(path) {
        Ok(true) => return Ok(false),
        Ok(false) => {
            log::warn!(
                "{} is not a directory (a link or a file): removing it and creating the directory",
                path.display()
            );
            remove_any(path)?;
            true
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => false,
        Err(e) => return Err(io_error("inspect", path, &e)),
    };
    // Owner-only on Unix (the reference's files are 0600); on Windows the directory inherits
    // the data directory's ACL, as the reference's files do.
    match Mode::OwnerOnly.dir_builder().create(path) {
        Ok(()) => Ok(repaired),
        Err(e)
            if e.kind() == io::ErrorKind::AlreadyExists && is_real_dir(path).unwrap_or(false) =>
        {
            Ok(repaired)
        }
        Err(e) => Err(io_error("create directory", path, &e)),
    }
}

/// Removes a file that may already be gone (a link is unlinked, never followed).
pub fn remove_optional(path: &Path) -> Result<(), Error> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_error("remove", path, &e)),
    }
}

/// Creates `path` holding `bytes`, owner-only (0600, as the reference's reservation files);
/// fails if anything, a link included, exists there.
///
/// There is deliberately no fsync. Every process sees the content as soon as `write` returns,
/// so a name linked to the file afterwards never shows it incomplete to anyone while the node
/// runs. Only a power loss can tear it, leaving an empty or short reservation that rebuilds and
/// GC reclaim; and a power loss also ends every pod on the node, so the reservation it held
/// was stale anyway. The reference host-local does not fsync either, and an fsync would cost
/// more than the rest of an ADD (0.4-2.4 ms measured here against ~1.1 ms).
pub fn write_new(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let mut file =
        file::create_new(path, Mode::OwnerOnly).map_err(|e| io_error("create", path, &e))?;
    let written = file.write_all(bytes);
    if let Err(e) = written {
        let _ = fs::remove_file(path);
        return Err(io_error("write", path, &e));
    }
    Ok(())
}

/// Rewrites an open file in place: cheaper than a new file (no inode to allocate), for hints
/// whose torn write costs nothing but a rebuild or a different starting point.
pub fn overwrite(file: &mut File, bytes: &[u8], path: &Path) -> Result<(), Error> {
    use std::io::{Seek, SeekFrom};
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.write_all(bytes))
        .and_then(|()| file.set_len(bytes.len() as u64))
        .map_err(|e| io_error("write", path, &e))
}

/// Makes directory entry changes (links, unlinks) durable (see [`file::sync_dir`]).
pub fn sync_dir(dir: &Path) -> Result<(), Error> {
    file::sync_dir(dir).map_err(|e| io_error("sync directory", dir, &e))
}

/// Creates a hard link; in unit tests, fails when a fault is armed (see [`faults`]).
pub fn hard_link(original: &Path, link: &Path) -> io::Result<()> {
    #[cfg(test)]
    faults::take()?;
    fs::hard_link(original, link)
}

/// Injected I/O faults for unit tests: the next `n` calls of [`hard_link`] on this thread fail.
#[cfg(test)]
pub mod faults {
    use std::cell::Cell;
    use std::io;

    thread_local! {
        static LINK_FAILURES: Cell<u32> = const { Cell::new(0) };
    }

    /// Makes the next `n` hard links on this thread fail with "no space left on device".
    pub fn fail_links(n: u32) {
        LINK_FAILURES.with(|c| c.set(n));
    }

    pub(super) fn take() -> io::Result<()> {
        LINK_FAILURES.with(|c| match c.get() {
            0 => Ok(()),
            n => {
                c.set(n - 1);
                Err(io::Error::from_raw_os_error(28))
            }
        })
    }
}
