//! File operations install needs to be safe on a live node: never following a link or special
//! file found where it writes, and writing a file others read (a conflist, the record) so that
//! a reader sees the old or the new contents, never a part. The operations are
//! [`rootsafe::file`]'s; this module words their errors.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use rootsafe::file::{self, Kind, Mode, Step, WriteError};

pub use rootsafe::file::beside;

use crate::error::Error;

/// What is at a path install may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Nothing is there: install creates the file.
    Nothing,
    /// A regular file is there: install may replace it (atomically).
    RegularFile,
}

/// Whether `path` is free or a regular file; a link, directory or special file is an error:
/// install never writes through or over one.
pub fn existing(path: &Path) -> Result<Existing, Error> {
    match Kind::at(path) {
        Ok(None) => Ok(Existing::Nothing),
        Ok(Some(Kind::Regular)) => Ok(Existing::RegularFile),
        Ok(Some(_)) => Err(Error::new(format!(
            "{} is not a regular file (a link, directory or device); remove it and run again",
            path.display()
        ))),
        Err(err) => Err(Error::io("inspect", path, &err)),
    }
}

/// Creates `path` afresh (removing a regular file left there by an interrupted run), writes
/// `fill`'s output and flushes it to disk.
pub fn write_new(
    path: &Path,
    fill: impl FnOnce(&mut fs::File) -> io::Result<()>,
) -> Result<(), Error> {
    remove_leftover(path)?;
    file::write_new(path, Mode::Default, fill).map_err(|e| write_error(e, path, path))
}

/// Replaces `path` with `bytes` atomically: written beside, flushed, then renamed over it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    existing(path)?;
    let staging = beside(path, "cni-win-tmp");
    remove_leftover(&staging)?;
    file::replace(path, &staging, Mode::Default, |file| file.write_all(bytes))
        .map_err(|e| write_error(e, &staging, path))
}

/// Removes a regular file an interrupted run left at `path`.
fn remove_leftover(path: &Path) -> Result<(), Error> {
    if existing(path)? == Existing::RegularFile {
        fs::remove_file(path).map_err(|e| Error::io("remove the leftover", path, &e))?;
    }
    Ok(())
}

/// A failed write of `written`, renamed over `dest` when that is the step that failed.
fn write_error(error: WriteError, written: &Path, dest: &Path) -> Error {
    match error.step {
        Step::Create => Error::io("create", written, &error.source),
        Step::Write => Error::io("write", written, &error.source),
        Step::Rename => Error::io("replace", dest, &error.source),
    }
}

/// Removes a regular file; already gone is fine.
pub fn remove_if_present(path: &Path) -> Result<(), Error> {
    match existing(path)? {
        Existing::Nothing => Ok(()),
        Existing::RegularFile => fs::remove_file(path).map_err(|e| Error::io("remove", path, &e)),
    }
}
