//! `cni-win uninstall`: removes what install recorded writing and nothing else. A file changed
//! since install wrote it is left in place (someone else owns it now); a file install found in
//! place and kept is put back.

use std::fs;
use std::path::{Path, PathBuf};

use crate::binaries::{self, Swap};
use crate::checksums;
use crate::defaults;
use crate::error::Error;
use crate::fsutil::{self, Existing};
use crate::record::{Record, Written};

/// Removes what `cni-win install` wrote, restoring what it replaced.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The CNI bin directory install wrote to (its record is there)
    #[arg(long, value_name = "DIR", default_value = defaults::BIN_DIR)]
    bin_dir: PathBuf,
    /// Shows what uninstall would do and changes nothing
    #[arg(long)]
    dry_run: bool,
}

pub fn run(args: &Args) -> Result<(), Error> {
    let Some(record) = Record::load(&args.bin_dir)? else {
        println!(
            "nothing to do: no {} in {} (cni-win is not installed there)",
            crate::record::FILE_NAME,
            args.bin_dir.display()
        );
        return Ok(());
    };
    let verb = if args.dry_run { "would " } else { "" };
    for written in &record.files {
        let outcome = if args.dry_run {
            plan(written)?
        } else {
            remove(written)?
        };
        println!("{}: {verb}{outcome}", written.path.display());
    }
    for path in binaries::moved_aside(&args.bin_dir)? {
        if args.dry_run {
            println!("{}: would remove (moved aside by install)", path.display());
        } else if fs::remove_file(&path).is_err() {
            println!(
                "{}: still running, left in place; delete it once it exits",
                path.display()
            );
        }
    }
    if !args.dry_run {
        fsutil::remove_if_present(&Record::path(&args.bin_dir))?;
    }
    Ok(())
}

/// What removing `written` would do.
fn plan(written: &Written) -> Result<String, Error> {
    Ok(match state(&written.path, &written.sha256)? {
        State::Gone => "already gone".to_owned(),
        State::Changed => "changed since install: left in place".to_owned(),
        State::AsWritten => match usable_backup(written)? {
            Some(kept) => format!("restore {}", kept.display()),
            None => "remove".to_owned(),
        },
    })
}

fn remove(written: &Written) -> Result<String, Error> {
    let outcome = plan(written)?;
    if state(&written.path, &written.sha256)? != State::AsWritten {
        return Ok(outcome);
    }
    match usable_backup(written)? {
        Some(kept) => {
            let sha256 = checksums::file_sha256(&kept)?;
            if let Swap::MovedAside(aside) = binaries::put(&kept, &written.path, &sha256, false)? {
                println!(
                    "{} was running: moved to {}",
                    written.path.display(),
                    aside.display()
                );
            }
            fsutil::remove_if_present(&kept)?;
        }
        None => remove_file(&written.path)?,
    }
    Ok(outcome
        .replacen("remove", "removed", 1)
        .replacen("restore", "restored", 1))
}

/// Removes a file; a running `.exe`, which Windows will not delete, is renamed aside first.
fn remove_file(path: &Path) -> Result<(), Error> {
    if fs::remove_file(path).is_ok() {
        return Ok(());
    }
    let aside = fsutil::beside(path, "cni-win-removed");
    fs::rename(path, &aside).map_err(|e| Error::io("remove", path, &e))?;
    if fs::remove_file(&aside).is_err() {
        println!(
            "{} is running: moved to {}; delete it once it exits",
            path.display(),
            aside.display()
        );
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
