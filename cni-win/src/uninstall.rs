//! `cni-win uninstall`: removes what install recorded writing and nothing else. A file changed
//! since install wrote it is left in place (someone else owns it now); a file install found in
//! place and kept is put back.

use std::fs;
use std::path::{Path, PathBuf};

use crate::binaries::{self, Swap};
use crate::checksums;
use crate::error::Error;
use crate::fsutil::{self, Existing};
use crate::record::{InstallRecord, Written};

/// What an uninstall is asked to do.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The CNI bin directory install wrote to (its record is there).
    pub bin_dir: PathBuf,
    /// Say what would change and change nothing.
    pub dry_run: bool,
}

/// What uninstall did (or, in a dry run, would do) to one file install wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Not there any more.
    Gone,
    /// Changed since install wrote it: someone else owns it now, so it stays.
    Changed,
    /// Removed.
    Removed,
    /// The file install found there and kept is back.
    Restored(PathBuf),
}

/// What an uninstall did, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// No install record in the bin directory: cni-win is not installed there.
    NotInstalled {
        /// Where the record would be.
        bin_dir: PathBuf,
    },
    /// One file install wrote.
    File {
        /// The file.
        path: PathBuf,
        /// What happened (or would) to it.
        outcome: Outcome,
        /// Whether it was only planned.
        dry_run: bool,
    },
    /// A running binary was moved aside to make room for the restored one.
    MovedAside {
        /// The binary's place.
        path: PathBuf,
        /// Where the running file went.
        aside: PathBuf,
    },
    /// A file install moved aside would be removed (dry run).
    WouldRemoveMovedAside(PathBuf),
    /// A file (moved aside, or just removed) is still running: delete it once it exits.
    StillRunning(PathBuf),
}

/// Removes what `cni-win install` wrote, restoring what it replaced, reporting each step.
pub fn uninstall(settings: &Settings, report: &mut dyn FnMut(Event)) -> Result<(), Error> {
    let Some(record) = InstallRecord::load(&settings.bin_dir)? else {
        report(Event::NotInstalled {
            bin_dir: settings.bin_dir.clone(),
        });
        return Ok(());
    };
    for written in &record.files {
        let outcome = if settings.dry_run {
            plan(written)?
        } else {
            remove(written, report)?
        };
        report(Event::File {
            path: written.path.clone(),
            outcome,
            dry_run: settings.dry_run,
        });
    }
    for path in binaries::moved_aside(&settings.bin_dir)? {
        if settings.dry_run {
            report(Event::WouldRemoveMovedAside(path));
        } else if fs::remove_file(&path).is_err() {
            report(Event::StillRunning(path));
        }
    }
    if !settings.dry_run {
        fsutil::remove_if_present(&InstallRecord::path(&settings.bin_dir))?;
    }
    Ok(())
}

/// What removing `written` would do.
fn plan(written: &Written) -> Result<Outcome, Error> {
    Ok(match state(&written.path, &written.sha256)? {
        State::Gone => Outcome::Gone,
        State::Changed => Outcome::Changed,
        State::AsWritten => match usable_backup(written)? {
            Some(kept) => Outcome::Restored(kept),
            None => Outcome::Removed,
        },
    })
}

fn remove(written: &Written, report: &mut dyn FnMut(Event)) -> Result<Outcome, Error> {
    let outcome = plan(written)?;
    if state(&written.path, &written.sha256)? != State::AsWritten {
        return Ok(outcome);
    }
    match usable_backup(written)? {
        Some(kept) => {
            let sha256 = checksums::file_sha256(&kept)?;
            if let Swap::MovedAside(aside) = binaries::put(&kept, &written.path, &sha256, false)? {
                report(Event::MovedAside {
                    path: written.path.clone(),
                    aside,
                });
            }
            fsutil::remove_if_present(&kept)?;
        }
        None => remove_file(&written.path, report)?,
    }
    Ok(outcome)
}

/// Removes a file; a running `.exe`, which Windows will not delete, is renamed aside first.
fn remove_file(path: &Path, report: &mut dyn FnMut(Event)) -> Result<(), Error> {
    if fs::remove_file(path).is_ok() {
        return Ok(());
    }
    let aside = fsutil::beside(path, "cni-win-removed");
    fs::rename(path, &aside).map_err(|e| Error::io("remove", path, &e))?;
    if fs::remove_file(&aside).is_err() {
        report(Event::StillRunning(aside));
    }
    Ok(())
}

fn usable_backup(written: &Written) -> Result<Option<PathBuf>, Error> {
    match &written.kept {
        Some(kept) if fsutil::existing(kept)? == Existing::RegularFile => Ok(Some(kept.clone())),
        _ => Ok(None),
    }
}

#[derive(Debug, PartialEq, Eq)]
enum State {
    Gone,
    AsWritten,
    Changed,
}

fn state(path: &Path, sha256: &str) -> Result<State, Error> {
    Ok(match fsutil::existing(path)? {
        Existing::Nothing => State::Gone,
        Existing::RegularFile if checksums::file_sha256(path)? == sha256 => State::AsWritten,
        Existing::RegularFile => State::Changed,
    })
}
