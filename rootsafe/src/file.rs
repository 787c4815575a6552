//! Regular files, used as a root/SYSTEM process must use what others may have put in its way.
//!
//! Every path here may have been replaced by anyone with write access to its directory (an
//! operator's mistake, a hostile container runtime, a restored backup). So nothing here:
//!
//! - **follows a link**: Unix `O_NOFOLLOW`; Windows `FILE_FLAG_OPEN_REPARSE_POINT`, which opens a
//!   reparse point itself (symlinks, junctions and every other kind) instead of its target;
//! - **blocks on a special file**: Unix `O_NONBLOCK`, so a FIFO without a writer (or reader)
//!   cannot stall the open;
//! - **opens what is not a regular file when it can tell beforehand** (opening some devices acts,
//!   and a directory or FIFO is never data), and checks the open handle again, since the path may
//!   have been swapped between the look and the open.
//!
//! On Windows any reparse point counts as a link ([`Kind::Link`]), not only the symlinks and
//! junctions std reports as such: a file opened with `FILE_FLAG_OPEN_REPARSE_POINT` is the
//! reparse point itself, so a deduplicated or cloud-placeholder file opened that way would not
//! give its data.

use std::fs::{self, DirBuilder, File, FileType, Metadata, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// What is at a path, seen without following it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file: the only kind this module reads, writes or replaces.
    Regular,
    /// A real directory (a link to one is a [`Kind::Link`]).
    Directory,
    /// A symlink; on Windows any reparse point (symlink, junction, mount point, placeholder...).
    Link,
    /// A FIFO (named pipe): opening it blocks until the other end opens, unless non-blocking.
    Fifo,
    /// A character or block device.
    Device,
    /// A Unix socket.
    Socket,
}

impl Kind {
    /// The kind of what `metadata` describes; `metadata` must come from `symlink_metadata` or
    /// an open handle, never from a lookup that followed a link.
    pub fn of(metadata: &Metadata) -> Kind {
        let file_type = metadata.file_type();
        if file_type.is_symlink() || is_reparse_point(metadata) {
            Kind::Link
        } else if file_type.is_dir() {
            Kind::Directory
        } else if file_type.is_file() {
            Kind::Regular
        } else {
            special(file_type)
        }
    }

    /// The kind of what is at `path`, without following it; `None` when nothing is there.
    pub fn at(path: &Path) -> io::Result<Option<Kind>> {
        match fs::symlink_metadata(path) {
            Ok(metadata) => Ok(Some(Kind::of(&metadata))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[cfg(unix)]
fn special(file_type: FileType) -> Kind {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_fifo() {
        Kind::Fifo
    } else if file_type.is_socket() {
        Kind::Socket
    } else {
        Kind::Device
    }
}

/// Windows: std reports every entry that is neither a directory nor a link as a file, so this is
/// never reached; a device is the nearest kind.
#[cfg(not(unix))]
fn special(_: FileType) -> Kind {
    Kind::Device
}

/// Windows: any reparse point, not only the name surrogates std reports as symlinks.
#[cfg(windows)]
fn is_reparse_point(metadata: &Metadata) -> bool {
    use std::os::windows::fs::MetadataExt;
    /// `FILE_ATTRIBUTE_REPARSE_POINT` (winnt.h).
    const FILE_ATTRIBUTE_REPARSE_POINT: u32 = 0x400;
    metadata.file_attributes() & FILE_ATTRIBUTE_REPARSE_POINT != 0
}

#[cfg(not(windows))]
fn is_reparse_point(_: &Metadata) -> bool {
    false
}

/// Sets the flags that make an open refuse to go through a link and never wait on a special
/// file (see the module docs). They replace any custom flags set before.
fn no_follow(options: &mut OpenOptions) {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(options, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    #[cfg(windows)]
    {
        /// `FILE_FLAG_OPEN_REPARSE_POINT` (winbase.h): open the reparse point itself, never its
        /// target.
        const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
        std::os::windows::fs::OpenOptionsExt::custom_flags(options, FILE_FLAG_OPEN_REPARSE_POINT);
    }
}

/// Sets the flag that makes an open never wait on a FIFO, for a path whose links are followed on
/// purpose (a config may name `/etc/resolv.conf`, often a link). Windows has no blocking open of
/// a path in the file system: nothing to set.
pub fn non_blocking(options: &mut OpenOptions) {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(options, libc::O_NONBLOCK);
    #[cfg(not(unix))]
    let _ = options;
}

/// Who may read what this module creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Files 0600 and directories 0700 on Unix. On Windows what is created inherits its
    /// directory's ACL, as the reference plugins' files do (Go maps 0600 to "not read-only").
    OwnerOnly,
    /// The process's defaults: its umask on Unix, the directory's ACL on Windows.
    Default,
}

impl Mode {
    /// Sets the mode a file `options` creates gets.
    pub fn apply(self, options: &mut OpenOptions) {
        #[cfg(unix)]
        if self == Mode::OwnerOnly {
            std::os::unix::fs::OpenOptionsExt::mode(options, 0o600);
        }
        #[cfg(not(unix))]
        let _ = options;
    }

    /// A builder for directories with this mode.
    pub fn dir_builder(self) -> DirBuilder {
        #[cfg_attr(not(unix), allow(unused_mut))]
        let mut builder = DirBuilder::new();
        #[cfg(unix)]
        if self == Mode::OwnerOnly {
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        }
        builder
    }
}

/// Why a path could not be opened as a regular file.
#[derive(Debug)]
pub enum OpenError {
    /// Nothing is there (and `options` did not create it).
    Missing,
    /// Something that is not a regular file is there: it was not followed, and not read or
    /// written.
    NotRegular(Kind),
    /// Any other failure.
    Io(io::Error),
}

/// Opens the regular file at `path` with `options` (their custom flags replaced by this
/// module's): never through a link, never blocking, never anything but a regular file (see the
/// module docs).
pub fn open(path: &Path, options: &OpenOptions) -> Result<File, OpenError> {
    match Kind::at(path) {
        Ok(None | Some(Kind::Regular)) => {}
        Ok(Some(kind)) => return Err(OpenError::NotRegular(kind)),
        Err(e) => return Err(OpenError::Io(e)),
    }
    let mut options = options.clone();
    no_follow(&mut options);
    let file = match options.open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(OpenError::Missing),
        // Swapped since the look: say what is there now, when it is not a regular file.
        Err(e) => {
            return Err(match Kind::at(path) {
                Ok(Some(kind)) if kind != Kind::Regular => OpenError::NotRegular(kind),
                _ => OpenError::Io(e),
            });
        }
    };
    match Kind::of(&file.metadata().map_err(OpenError::Io)?) {
        Kind::Regular => Ok(file),
        kind => Err(OpenError::NotRegular(kind)),
    }
}

/// Reads all of `reader` when it holds at most `cap` bytes; more is an error of kind
/// [`io::ErrorKind::FileTooLarge`], after reading no more than `cap + 1` bytes (a file that
/// grows without end, or a device, cannot exhaust memory).
pub fn read_capped(reader: impl Read, cap: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("larger than {cap} bytes"),
        ));
    }
    Ok(bytes)
}

/// Creates a regular file at `path` for writing, failing when anything at all (a link
/// included, even a dangling one) is already there.
pub fn create_new(path: &Path, mode: Mode) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    mode.apply(&mut options);
    no_follow(&mut options);
    options.open(path)
}

/// A step of [`write_new`] or [`replace`], so a caller can name the path and action that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Creating the new file.
    Create,
    /// Writing it or flushing it to disk.
    Write,
    /// Renaming it over the destination.
    Rename,
}

/// A [`Step`] that failed and why.
#[derive(Debug)]
pub struct WriteError {
    /// What was being done.
    pub step: Step,
    /// The failure.
    pub source: io::Error,
}

impl WriteError {
    fn at(step: Step) -> impl FnOnce(io::Error) -> WriteError {
        move |source| WriteError { step, source }
    }
}

/// Creates `path` (see [`create_new`]), writes what `fill` writes and flushes it to disk. On a
/// failure after creating it, the file is removed.
pub fn write_new(
    path: &Path,
    mode: Mode,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<(), WriteError> {
    let mut file = create_new(path, mode).map_err(WriteError::at(Step::Create))?;
    let written = fill(&mut file).and_then(|()| file.sync_all());
    drop(file);
    written.map_err(|source| {
        let _ = fs::remove_file(path);
        WriteError::at(Step::Write)(source)
    })
}

/// Replaces `path` with what `fill` writes, atomically: written to a new file at `staging`
/// ([`write_new`]), then renamed over `path`. Readers see the old content or the new, never a
/// part, and a crash leaves at most `staging` behind. A link at `path` is replaced, never
/// written through; `staging` must not exist (see [`beside`] for a name).
pub fn replace(
    path: &Path,
    staging: &Path,
    mode: Mode,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<(), WriteError> {
    write_new(staging, mode, fill)?;
    fs::rename(staging, path).map_err(|source| {
        let _ = fs::remove_file(staging);
        WriteError::at(Step::Rename)(source)
    })
}

/// `dir/.<name>.<tag>`: a scratch name beside `path`, for a file about to replace it. The leading
/// dot and the suffix keep it out of config scans (`.conf`, `.conflist`, `.json`) and plugin
/// lookups in `CNI_PATH`.
pub fn beside(path: &Path, tag: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{tag}"))
}

/// Removes what [`Kind::at`] found at `path` without following it: a link is unlinked (its
/// target is left alone), a real directory removed with its contents (std's `remove_dir_all`
/// does not follow links inside), anything else unlinked. Already gone is fine.
pub fn remove(path: &Path, kind: Kind) -> io::Result<()> {
    let removed = match kind {
        // A directory link (a Windows junction or directory symlink) goes with remove_dir, which
        // removes the link, never the target's contents.
        Kind::Link => fs::remove_file(path).or_else(|_| fs::remove_dir(path)),
        Kind::Directory => fs::remove_dir_all(path),
        Kind::Regular | Kind::Fifo | Kind::Device | Kind::Socket => fs::remove_file(path),
    };
    match removed {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// Makes the directory entry changes in `dir` (creates, links, unlinks, renames) durable. Windows
/// has no directory handle to flush; NTFS journals metadata in order, which is what callers
/// rely on there.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}
