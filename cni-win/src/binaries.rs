//! Putting a binary in the CNI bin directory while containerd may be running it.
//!
//! A plugin exec'd at any moment must find either the old or the new file, whole. So the new
//! copy is written beside the destination, checked against its expected hash, and renamed over
//! it (an atomic replace). Windows refuses to replace an `.exe` that a process is running, but
//! lets it be renamed: then the running file is moved aside to `<name>.cni-win-old-<n>` and the
//! new one renamed into place; files moved aside are removed on the next run, once their
//! processes have exited.
//!
//! A file install did not write (the reference plugins of the same name, typically) is kept as
//! `<name>.pre-cni-win` so that uninstall can put it back.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::checksums::file_sha256;
use crate::error::Error;
use crate::fsutil::{self, Existing};
use crate::shipped;

/// Marks a running binary moved aside; what follows is unique per move.
const ASIDE_TAG: &str = ".cni-win-old-";
/// Suffix of the file install found in place and kept for uninstall.
const BACKUP_SUFFIX: &str = ".pre-cni-win";

/// Where a foreign file at `dest` is kept.
pub fn backup_path(dest: &Path) -> PathBuf {
    let mut name = dest.file_name().unwrap_or_default().to_owned();
    name.push(BACKUP_SUFFIX);
    dest.with_file_name(name)
}

/// How one binary was put in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Swap {
    /// Renamed over the old file (or there was none).
    Replaced,
    /// The old file was running: it was moved to this path, removed on a later run.
    MovedAside(PathBuf),
}

/// Copies `source` to `dest` as described in the module docs. `expected` is the hash the copy
/// must have; `keep_existing` moves a file already at `dest` to [`backup_path`] first (by a
/// hard link, so `dest` never disappears).
pub fn put(source: &Path, dest: &Path, expected: &str, keep_existing: bool) -> Result<Swap, Error> {
    fsutil::existing(dest)?;
    let staging = fsutil::beside(dest, "cni-win-new");
    fsutil::write_new(&staging, |file| {
        let mut original = fs::File::open(source)?;
        io::copy(&mut original, file)?;
        // Keeps the executable bit where there is one (Linux builds, tests).
        file.set_permissions(original.metadata()?.permissions())
    })?;
    let written = file_sha256(&staging)?;
    if written != expected {
        let _ = fs::remove_file(&staging);
        return Err(Error::new(format!(
            "the copy of {} at {} has SHA-256 {written}, expected {expected}; nothing was replaced",
            source.display(),
            staging.display()
        )));
    }
    if keep_existing && fsutil::existing(dest)? == Existing::RegularFile {
        keep(dest)?;
    }
    match fs::rename(&staging, dest) {
        Ok(()) => Ok(Swap::Replaced),
        Err(replace_err) => swap_running(&staging, dest, &replace_err),
    }
}

/// Keeps the file at `dest` as its backup, unless an earlier install already kept one.
fn keep(dest: &Path) -> Result<(), Error> {
    let backup = backup_path(dest);
    if fsutil::existing(&backup)? == Existing::RegularFile {
        return Ok(());
    }
    fs::hard_link(dest, &backup)
        .or_else(|_| fs::copy(dest, &backup).map(drop))
        .map_err(|e| Error::io("keep a copy of", dest, &e))
}

/// The replace failed, as it does on Windows for a running `.exe`: rename the old file aside,
/// then the new one into place (restoring the old one if that fails).
fn swap_running(staging: &Path, dest: &Path, replace_err: &io::Error) -> Result<Swap, Error> {
    let aside = aside_path(dest);
    if let Err(err) = fs::rename(dest, &aside) {
        let _ = fs::remove_file(staging);
        return Err(Error::new(format!(
            "cannot replace {} ({replace_err}) nor move it aside ({err})",
            dest.display()
        )));
    }
    if let Err(err) = fs::rename(staging, dest) {
        let _ = fs::rename(&aside, dest);
        let _ = fs::remove_file(staging);
        return Err(Error::io("move the new copy to", dest, &err));
    }
    // Gone at once if nothing runs it any more; otherwise the next run removes it.
    match fs::remove_file(&aside) {
        Ok(()) => Ok(Swap::Replaced),
        Err(_) => Ok(Swap::MovedAside(aside)),
    }
}

fn aside_path(dest: &Path) -> PathBuf {
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut name = dest.file_name().unwrap_or_default().to_owned();
    name.push(format!("{ASIDE_TAG}{stamp}"));
    dest.with_file_name(name)
}

/// The files earlier runs moved aside in `bin_dir` (regular files only), for the shipped
/// binaries' names.
pub fn moved_aside(bin_dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let entries = match fs::read_dir(bin_dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(Error::io("list", bin_dir, &err)),
    };
    let prefixes: Vec<String> = shipped::binaries()
        .iter()
        .map(|binary| format!("{}{ASIDE_TAG}", binary.file_name()))
        .collect();
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("list", bin_dir, &e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if is_file && prefixes.iter().any(|prefix| name.starts_with(prefix)) {
            found.push(entry.path());
        }
    }
    found.sort();
    Ok(found)
}

/// Removes what earlier runs moved aside; returns those still in use (kept for a later run).
pub fn clean_moved_aside(bin_dir: &Path) -> Result<Vec<PathBuf>, Error> {
    Ok(moved_aside(bin_dir)?
        .into_iter()
        .filter(|path| fs::remove_file(path).is_err())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksums::bytes_sha256;

    #[test]
    fn replaces_and_keeps_a_foreign_file_once() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("new");
        fs::write(&source, b"new").unwrap();
        let dest = dir.path().join("win-bridge");
        fs::write(&dest, b"reference").unwrap();

        let swap = put(&source, &dest, &bytes_sha256(b"new"), true).unwrap();
        assert_eq!(swap, Swap::Replaced);
        assert_eq!(fs::read(&dest).unwrap(), b"new");
        assert_eq!(fs::read(backup_path(&dest)).unwrap(), b"reference");

        fs::write(&source, b"newer").unwrap();
        put(&source, &dest, &bytes_sha256(b"newer"), true).unwrap();
        assert_eq!(fs::read(backup_path(&dest)).unwrap(), b"reference");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 3, "no staging file left: {names:?}");
    }

    #[test]
    fn a_copy_with_the_wrong_hash_replaces_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("new");
        fs::write(&source, b"tampered").unwrap();
        let dest = dir.path().join("host-local");
        fs::write(&dest, b"old").unwrap();
        let err = put(&source, &dest, &bytes_sha256(b"new"), false).unwrap_err();
        assert!(err.to_string().contains("nothing was replaced"), "{err}");
        assert_eq!(fs::read(&dest).unwrap(), b"old");
        assert!(!fsutil::beside(&dest, "cni-win-new").exists());
    }

    #[cfg(unix)]
    #[test]
    fn never_writes_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        fs::write(&target, b"keep").unwrap();
        let dest = dir.path().join("win-overlay");
        std::os::unix::fs::symlink(&target, &dest).unwrap();
        let source = dir.path().join("new");
        fs::write(&source, b"new").unwrap();
        assert!(put(&source, &dest, &bytes_sha256(b"new"), true).is_err());
        assert_eq!(fs::read(&target).unwrap(), b"keep");
    }

    #[test]
    fn cleans_only_files_it_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join(format!(
            "win-bridge{}{ASIDE_TAG}1",
            std::env::consts::EXE_SUFFIX
        ));
        let other = dir.path().join(format!("other{ASIDE_TAG}1"));
        let plugin = dir
            .path()
            .join(format!("win-bridge{}", std::env::consts::EXE_SUFFIX));
        for path in [&ours, &other, &plugin] {
            fs::write(path, b"x").unwrap();
        }
        assert_eq!(moved_aside(dir.path()).unwrap(), vec![ours.clone()]);
        assert!(clean_moved_aside(dir.path()).unwrap().is_empty());
        assert!(!ours.exists() && other.exists() && plugin.exists());
    }
}
