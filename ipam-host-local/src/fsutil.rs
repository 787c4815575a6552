//! Small filesystem helpers: errors that name the path, unique temp files, atomic replacement.

use cni::{Error, ErrorCode};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Code 5 naming what failed on which path.
pub fn io_error(action: &str, path: &Path, err: &io::Error) -> Error {
    Error::new(
        ErrorCode::Io,
        format!("cannot {action} {}: {err}", path.display()),
    )
}

/// Reads a file that may legitimately be absent.
pub fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, Error> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("read", path, &e)),
    }
}

/// Removes a file that may already be gone.
pub fn remove_optional(path: &Path) -> Result<(), Error> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_error("remove", path, &e)),
    }
}

/// Temp file names start with this, then the creating process's ID and a dot.
pub const TEMP_PREFIX: &str = "tmp.";

/// A temp file that is removed when dropped (after it has been linked or renamed, or on error).
#[derive(Debug)]
pub struct TempFile {
    path: PathBuf,
}

impl TempFile {
    /// Creates a new, uniquely named file in `dir` holding `bytes`; `durable` fsyncs it, so a
    /// name linked to it later never shows an empty file after a power loss.
    pub fn create(dir: &Path, bytes: &[u8], durable: bool) -> Result<TempFile, Error> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!(
            "{TEMP_PREFIX}{}.{nanos}.{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let path = dir.join(name);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io_error("create", &path, &e))?;
        let temp = TempFile { path };
        file.write_all(bytes)
            .map_err(|e| io_error("write", &temp.path, &e))?;
        if durable {
            file.sync_all()
                .map_err(|e| io_error("sync", &temp.path, &e))?;
        }
        Ok(temp)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Err(e) = fs::remove_file(&self.path)
            && e.kind() != io::ErrorKind::NotFound
        {
            log::warn!("cannot remove temp file {}: {e}", self.path.display());
        }
    }
}

/// Replaces `target` with `bytes` atomically (temp file in `temp_dir`, same filesystem, then
/// rename): readers see the old or the new content, never a torn one.
pub fn replace(temp_dir: &Path, target: &Path, bytes: &[u8]) -> Result<(), Error> {
    let temp = TempFile::create(temp_dir, bytes, false)?;
    fs::rename(temp.path(), target).map_err(|e| io_error("replace", target, &e))
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
