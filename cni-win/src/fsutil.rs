//! File operations install needs to be safe on a live node: never following a link or special
//! file found where it writes, and writing a file others read (a conflist, the record) so that
//! a reader sees the old or the new contents, never a part.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::error::Error;

/// What is at a path install may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    Nothing,
    RegularFile,
}

/// Whether `path` is free or a regular file; a link, directory or special file is an error:
/// install never writes through or over one.
pub fn existing(path: &Path) -> Result<Existing, Error> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_file() => Ok(Existing::RegularFile),
        Ok(_) => Err(Error::new(format!(
            "{} is not a regular file (a link, directory or device); remove it and run again",
            path.display()
        ))),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(Existing::Nothing),
        Err(err) => Err(Error::io("inspect", path, &err)),
    }
}

/// `dir/.<name>.<tag>`: a scratch name beside `path`. The leading dot and the suffix keep it
/// out of containerd's config scan (`.conf`, `.conflist`, `.json`) and `CNI_PATH` lookups.
pub fn beside(path: &Path, tag: &str) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{tag}"))
}

/// Creates `path` afresh (removing a regular file left there by an interrupted run), writes
/// `fill`'s output and flushes it to disk.
pub fn write_new(
    path: &Path,
    fill: impl FnOnce(&mut fs::File) -> io::Result<()>,
) -> Result<(), Error> {
    if existing(path)? == Existing::RegularFile {
        fs::remove_file(path).map_err(|e| Error::io("remove the leftover", path, &e))?;
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| Error::io("create", path, &e))?;
    fill(&mut file)
        .and_then(|()| file.sync_all())
        .map_err(|e| Error::io("write", path, &e))
}

/// Replaces `path` with `bytes` atomically: written beside, flushed, then renamed over it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    existing(path)?;
    let staging = beside(path, "cni-win-tmp");
    write_new(&staging, |file| file.write_all(bytes))?;
    fs::rename(&staging, path).map_err(|err| {
        let _ = fs::remove_file(&staging);
        Error::io("replace", path, &err)
    })
}

/// Removes a regular file; already gone is fine.
pub fn remove_if_present(path: &Path) -> Result<(), Error> {
    match existing(path)? {
        Existing::Nothing => Ok(()),
        Existing::RegularFile => fs::remove_file(path).map_err(|e| Error::io("remove", path, &e)),
    }
}
