//! Filesystem primitives of the store: errors that name the path, and opens, creates and removes
//! that never follow a link or block on a special file.
//!
//! Everything under `<dataDir>/<network>` may have been replaced by anyone with write access to
//! it (an operator's mistake, a hostile container runtime, a restored backup). The store runs as
//! root/SYSTEM, so it opens nothing there through a symlink (Unix `O_NOFOLLOW`; Windows
//! `FILE_FLAG_OPEN_REPARSE_POINT`, which opens a reparse point itself: symlinks, junctions and
//! every other kind), never waits on a FIFO (`O_NONBLOCK`), and uses what it opened only when
//! it is a regular file.

use cni::{Error, ErrorCode};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

/// Code 5 naming what failed on which path.
pub fn io_error(action: &str, path: &Path, err: &io::Error) -> Error {
    Error::new(
        ErrorCode::Io,
        format!("cannot {action} {}: {err}", path.display()),
    )
}

/// Why a path in the store could not be used as a regular file.
#[derive(Debug)]
pub enum OpenError {
    /// Nothing there.
    Missing,
    /// A link, reparse point, directory, FIFO, device or socket: never followed or read.
    NotRegular(&'static str),
    Io(io::Error),
}

impl OpenError {
    /// Code 5 naming the path; a non-regular file's message says what to do about it.
    pub fn into_error(self, action: &str, path: &Path) -> Error {
        match self {
            OpenError::Missing => io_error(action, path, &io::ErrorKind::NotFound.into()),
            OpenError::NotRegular(what) => Error::new(
                ErrorCode::Io,
                format!(
                    "cannot {action} {}: it is {what}, not a regular file; remove it (the \
                     store never follows links or opens special files it finds)",
                    path.display()
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
        owner_only(&mut options);
    }
    no_follow(&mut options);
    let file = match options.open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(OpenError::Missing),
        Err(e) => {
            return Err(match describe_non_regular(path) {
                Some(what) => OpenError::NotRegular(what),
                None => OpenError::Io(e),
            });
        }
    };
    let metadata = file.metadata().map_err(OpenError::Io)?;
    match non_regular_kind(&metadata) {
        Some(what) => Err(OpenError::NotRegular(what)),
        None => Ok(file),
    }
}

/// Reads at most `cap` bytes of a regular file; longer files are an error (code 5).
pub fn read_capped(file: &mut File, cap: u64, path: &Path, what: &str) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(&format!("read {what}"), path, &e))?;
    if bytes.len() as u64 > cap {
        return Err(Error::new(
            ErrorCode::Io,
            format!(
                "cannot read {what} {}: it is larger than {cap} bytes",
                path.display()
            ),
        ));
    }
    Ok(bytes)
}

/// Adds the flags that make an open refuse to go through a link or wait on a special file.
#[cfg(unix)]
pub fn no_follow(options: &mut OpenOptions) {
    use std::os::unix::fs::OpenOptionsExt;
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC);
}

/// Adds the flags that make an open refuse to go through a link or wait on a special file.
#[cfg(windows)]
pub fn no_follow(options: &mut OpenOptions) {
    use std::os::windows::fs::OpenOptionsExt;
    /// `FILE_FLAG_OPEN_REPARSE_POINT`: open the reparse point itself, never its target.
    const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
    options.custom_flags(FILE_FLAG_OPEN_REPARSE_POINT);
}

/// What a non-regular file is, from metadata taken without following links; `None` for a
/// regular file.
pub fn non_regular_kind(metadata: &fs::Metadata) -> Option<&'static str> {
    let file_type = metadata.file_type();
    if is_reparse_point(metadata) || file_type.is_symlink() {
        Some("a link (symlink, junction or other reparse point)")
    } else if file_type.is_dir() {
        Some("a directory")
    } else if file_type.is_file() {
        None
    } else {
        Some("a special file (FIFO, device or socket)")
    }
}

/// Windows: any reparse point (symlink, junction, mount point, cloud placeholder...), not only
/// the kinds std reports as symlinks.
#[cfg(windows)]
fn is_reparse_point(metadata: &fs::Metadata) -> bool {
    use std::os::windows::fs::MetadataExt;
    const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x400;
    metadata.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0
}

#[cfg(not(windows))]
fn is_reparse_point(_: &fs::Metadata) -> bool {
    false
}

/// What is at `path` when it is not a regular file (without following it).
fn describe_non_regular(path: &Path) -> Option<&'static str> {
    fs::symlink_metadata(path)
        .ok()
        .and_then(|m| non_regular_kind(&m))
}

/// Whether `path` is a real directory (not a link to one).
pub fn is_real_dir(path: &Path) -> io::Result<bool> {
    let metadata = fs::symlink_metadata(path)?;
    Ok(metadata.is_dir() && !metadata.file_type().is_symlink() && !is_reparse_point(&metadata))
}

/// Removes whatever is at `path` without following it: a link is unlinked (its target is left
/// alone), a real directory removed with its contents (std's `remove_dir_all` does not follow
/// links inside), anything else unlinked. Absent is fine.
pub fn remove_any(path: &Path) -> Result<(), Error> {
    let metadata = match fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_error("inspect", path, &e)),
    };
    let link = metadata.file_type().is_symlink() || is_reparse_point(&metadata);
    let removed = if link {
        // A directory link (Windows junction or directory symlink) goes with remove_dir,
        // which removes the link, never the target's contents.
        fs::remove_file(path).or_else(|_| fs::remove_dir(path))
    } else if metadata.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    match removed {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_error("remove", path, &e)),
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
    match private_dir_builder().create(path) {
        Ok(()) => Ok(repaired),
        Err(e)
            if e.kind() == io::ErrorKind::AlreadyExists && is_real_dir(path).unwrap_or(false) =>
        {
            Ok(repaired)
        }
        Err(e) => Err(io_error("create directory", path, &e)),
    }
}

/// A directory builder for the index: owner-only on Unix (the reference's files are 0600).
#[cfg(unix)]
fn private_dir_builder() -> fs::DirBuilder {
    use std::os::unix::fs::DirBuilderExt;
    let mut builder = fs::DirBuilder::new();
    builder.mode(0o700);
    builder
}

/// A directory builder for the index: on Windows it inherits the data directory's ACL, as the
/// reference's files do.
#[cfg(not(unix))]
fn private_dir_builder() -> fs::DirBuilder {
    fs::DirBuilder::new()
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
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    owner_only(&mut options);
    no_follow(&mut options);
    let mut file = options
        .open(path)
        .map_err(|e| io_error("create", path, &e))?;
    let written = file.write_all(bytes);
    if let Err(e) = written {
        let _ = fs::remove_file(path);
        return Err(io_error("write", path, &e));
    }
    Ok(())
}

/// Files the store creates are readable by their owner only, as the reference's (0600). On
/// Windows the reference sets no ACL of its own (Go maps 0600 to "not read-only"), so the
/// files inherit the data directory's.
pub fn owner_only(options: &mut OpenOptions) {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(options, 0o600);
    #[cfg(not(unix))]
    let _ = options;
}

/// Rewrites an open file in place: cheaper than a new file (no inode to allocate), for hints
/// whose torn write costs nothing but a rebuild or a different starting point.
pub fn overwrite(file: &mut File, bytes: &[u8], path: &Path) -> Result<(), Error> {
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.write_all(bytes))
        .and_then(|()| file.set_len(bytes.len() as u64))
        .map_err(|e| io_error("write", path, &e))
}

/// Makes directory entry changes (links, unlinks) durable. Windows has no directory handle to
/// flush; NTFS journals metadata in order, which is what the callers rely on.
pub fn sync_dir(dir: &Path) -> Result<(), Error> {
    #[cfg(unix)]
    fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| io_error("sync directory", dir, &e))?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
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
