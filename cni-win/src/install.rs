//! `cni-win install`: the binaries into the CNI bin directory, a linted conflist into the conf
//! directory, a record of both, and containerd's config printed. Safe to run on a live node at
//! any time and idempotent: a second run changes nothing and says so.

use std::fs;
use std::path::{Path, PathBuf};

use crate::binaries::{self, Swap};
use crate::checksums::{self, Sha256Sums};
use crate::containerd;
use crate::defaults;
use crate::error::Error;
use crate::fsutil::{self, Existing};
use crate::lint;
use crate::record::{Record, Written};
use crate::templates::{self, Template};

/// Installs the plugins and a conflist (what a HostProcess init container runs).
#[derive(Debug, clap::Args)]
#[command(after_help = format!("Settings for --set:\n{}", templates::settings_help()))]
pub struct Args {
    /// Where the release's binaries (and optionally its SHA256SUMS) are [default: the directory
    /// holding cni-win itself]
    #[arg(long, value_name = "DIR")]
    source: Option<PathBuf>,
    /// The CNI bin directory containerd runs plugins from
    #[arg(long, value_name = "DIR", default_value = defaults::BIN_DIR)]
    bin_dir: PathBuf,
    /// The CNI config directory containerd reads
    #[arg(long, value_name = "DIR", default_value = defaults::CONF_DIR)]
    conf_dir: PathBuf,
    /// The conflist to write
    #[arg(long, value_name = "TEMPLATE")]
    conflist: Template,
    /// Changes a template setting (repeatable); see the list below
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = templates::parse_set)]
    sets: Vec<(String, String)>,
    /// The conflist's file name (containerd uses the first config file in name order)
    #[arg(long, value_name = "FILE", default_value = "10-cni-win.conflist", value_parser = conflist_file_name)]
    conflist_name: String,
    /// Shows what install would do and changes nothing
    #[arg(long)]
    dry_run: bool,
}

/// A file name in the conf directory (never a path out of it) that containerd reads as a
/// conflist.
fn conflist_file_name(text: &str) -> Result<String, String> {
    let plain = Path::new(text).file_name().is_some_and(|name| name == text)
        && !text.contains(['/', '\\', ':'])
        && !text.starts_with('.');
    if plain && text.ends_with(".conflist") {
        Ok(text.to_owned())
    } else {
        Err("expected a file name ending in .conflist, without a directory".to_owned())
    }
}

/// One file to put in place.
#[derive(Debug)]
struct Step {
    dest: PathBuf,
    sha256: String,
    content: Content,
    change: Change,
}

#[derive(Debug)]
enum Content {
    Binary(PathBuf),
    Conflist(Vec<u8>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// Already there with these contents.
    None,
    /// Nothing there yet.
    Create,
    /// Replacing what an earlier install wrote.
    Update,
    /// Replacing a file install did not write (kept for uninstall).
    ReplaceForeign,
}

pub fn run(args: &Args) -> Result<(), Error> {
    let source = match &args.source {
        Some(dir) => dir.clone(),
        None => own_dir()?,
    };
    let record = Record::load(&args.bin_dir)?.unwrap_or_default();
    let conflist = render(args)?;
    let sums = Sha256Sums::read(&source)?;
    if sums.is_none() {
        println!(
            "note: no {} in {}: copies are checked against the source files only",
            checksums::FILE_NAME,
            source.display()
        );
    }
    let mut steps = Vec::new();
    for binary in binaries::SHIPPED {
        steps.push(binary_step(
            &source,
            sums.as_ref(),
            &args.bin_dir,
            binary,
            &record,
        )?);
    }
    let conflist_path = args.conf_dir.join(&args.conflist_name);
    let conflist_sha256 = checksums::bytes_sha256(&conflist);
    steps.push(step(
        conflist_path,
        Content::Conflist(conflist),
        conflist_sha256,
        &record,
    )?);
    let aside = binaries::moved_aside(&args.bin_dir)?;

    let verb = if args.dry_run { "would " } else { "" };
    if args.dry_run {
        for path in &aside {
            println!(
                "would remove {} (moved aside by an earlier run)",
                path.display()
            );
        }
        for step in &steps {
            println!("{}", describe(step, verb));
        }
    } else {
        for path in binaries::clean_moved_aside(&args.bin_dir)? {
            println!(
                "{} is still running; it is removed on a later run",
                path.display()
            );
        }
        fs::create_dir_all(&args.bin_dir).map_err(|e| Error::io("create", &args.bin_dir, &e))?;
        fs::create_dir_all(&args.conf_dir).map_err(|e| Error::io("create", &args.conf_dir, &e))?;
        let mut written = Vec::new();
        for step in &steps {
            written.push(apply(step, &record)?);
        }
        let updated = updated_record(&record, written);
        if updated != record {
            updated.save(&args.bin_dir)?;
        }
    }
    let changed = steps.iter().any(|s| s.change != Change::None);
    if !changed && aside.is_empty() {
        println!(
            "nothing to do: cni-win {} is installed already",
            cni::build!().version
        );
    }
    warn_about_other_configs(&args.conf_dir, &args.conflist_name);
    println!("\ncontainerd's CRI config for these directories:\n");
    print!("{}", containerd::snippets(&args.bin_dir, &args.conf_dir));
    Ok(())
}

/// The directory holding this executable: the release's files sit beside it.
fn own_dir() -> Result<PathBuf, Error> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::new(format!("cannot locate cni-win itself ({e}); pass --source")))?;
    exe.parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| Error::new("cannot locate cni-win's directory; pass --source"))
}

/// The conflist's bytes, after the plugins' config code accepted it.
fn render(args: &Args) -> Result<Vec<u8>, Error> {
    let conflist = args.conflist.render(&args.sets)?;
    lint::check(&conflist).map_err(|e| {
        Error::new(format!(
            "the {} template with these settings is not a config the plugins accept: {e}",
            args.conflist
        ))
    })?;
    let mut bytes = serde_json::to_vec_pretty(&conflist).expect("a JSON value always serializes");
    bytes.push(b'\n');
    Ok(bytes)
}

fn binary_step(
    source_dir: &Path,
    sums: Option<&Sha256Sums>,
    bin_dir: &Path,
    binary: &str,
    record: &Record,
) -> Result<Step, Error> {
    let name = binaries::file_name(binary);
    let source = source_dir.join(&name);
    if fsutil::existing(&source)? != Existing::RegularFile {
        return Err(Error::new(format!(
            "{} is missing: --source must hold the release's binaries",
            source.display()
        )));
    }
    let sha256 = checksums::file_sha256(&source)?;
    if let Some(sums) = sums {
        let expected = sums.expected(&name).ok_or_else(|| {
            Error::new(format!(
                "{} does not list {name}; use the SHA256SUMS of the same release",
                source_dir.join(checksums::FILE_NAME).display()
            ))
        })?;
        if expected != sha256 {
            return Err(Error::new(format!(
                "{} has SHA-256 {sha256} but {} says {expected}: the file is damaged or from another release",
                source.display(),
                checksums::FILE_NAME
            )));
        }
    }
    step(bin_dir.join(&name), Content::Binary(source), sha256, record)
}

fn step(dest: PathBuf, content: Content, sha256: String, record: &Record) -> Result<Step, Error> {
    let change = change(&dest, &sha256, record)?;
    Ok(Step {
        dest,
        sha256,
        content,
        change,
    })
}

/// What putting contents with hash `sha256` at `dest` changes.
fn change(dest: &Path, sha256: &str, record: &Record) -> Result<Change, Error> {
    if fsutil::existing(dest)? == Existing::Nothing {
        return Ok(Change::Create);
    }
    let current = checksums::file_sha256(dest)?;
    Ok(if current == sha256 {
        Change::None
    } else if record.find(dest).is_some_and(|w| w.sha256 == current) {
        Change::Update
    } else {
        Change::ReplaceForeign
    })
}

fn describe(step: &Step, verb: &str) -> String {
    let dest = step.dest.display();
    match step.change {
        Change::None => format!("{dest}: unchanged"),
        Change::Create => format!("{dest}: {verb}install"),
        Change::Update => format!("{dest}: {verb}replace the earlier install's copy"),
        Change::ReplaceForeign => format!(
            "{dest}: {verb}replace a file install did not write, kept as {}",
            binaries::backup_path(&step.dest).display()
        ),
    }
}

/// Puts one file in place; returns its record entry.
fn apply(step: &Step, record: &Record) -> Result<Written, Error> {
    let kept_before = record.find(&step.dest).and_then(|w| w.kept.clone());
    let foreign = step.change == Change::ReplaceForeign;
    if step.change != Change::None {
        match &step.content {
            Content::Binary(source) => {
                if let Swap::MovedAside(aside) =
                    binaries::put(source, &step.dest, &step.sha256, foreign)?
                {
                    println!(
                        "{} was running: moved to {} (removed on a later run)",
                        step.dest.display(),
                        aside.display()
                    );
                }
            }
            Content::Conflist(bytes) => {
                if foreign {
                    keep_foreign_conflist(&step.dest)?;
                }
                fsutil::write_atomically(&step.dest, bytes)?;
            }
        }
    }
    println!("{}", describe(step, ""));
    let kept = kept_before.or_else(|| foreign.then(|| binaries::backup_path(&step.dest)));
    Ok(Written {
        path: step.dest.clone(),
        sha256: step.sha256.clone(),
        kept,
    })
}

/// A conflist install did not write is kept (under a name containerd does not read).
fn keep_foreign_conflist(dest: &Path) -> Result<(), Error> {
    let backup = binaries::backup_path(dest);
    if fsutil::existing(&backup)? == Existing::Nothing {
        fs::copy(dest, &backup).map_err(|e| Error::io("keep a copy of", dest, &e))?;
    }
    Ok(())
}

/// The record after this run: this run's files, and earlier entries for files it did not
/// touch (a conflist written under another name, say), which uninstall still removes.
fn updated_record(before: &Record, written: Vec<Written>) -> Record {
    let mut files = written;
    for earlier in &before.files {
        if !files.iter().any(|w| w.path == earlier.path) {
            files.push(earlier.clone());
        }
    }
    Record {
        written_by: cni::build!().version.to_owned(),
        files,
    }
}

/// containerd reads only the first config file in name order: say which others are there.
fn warn_about_other_configs(conf_dir: &Path, ours: &str) {
    let Ok(entries) = fs::read_dir(conf_dir) else {
        return;
    };
    let mut others: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| {
            name != ours
                && [".conf", ".conflist", ".json"]
                    .iter()
                    .any(|ext| name.ends_with(ext))
        })
        .collect();
    others.sort();
    for other in others {
        let order = if other.as_str() < ours {
            "before"
        } else {
            "after"
        };
        println!(
            "warning: {} sorts {order} {ours}; containerd uses only the first config file: remove the one you are replacing",
            conf_dir.join(&other).display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_conflist_name_cannot_leave_the_conf_dir() {
        assert!(conflist_file_name("05-cni-win.conflist").is_ok());
        for bad in [
            "../x.conflist",
            r"..\x.conflist",
            "C:x.conflist",
            "a/b.conflist",
            "x.conf",
            ".x.conflist",
            "",
        ] {
            assert!(conflist_file_name(bad).is_err(), "{bad}");
        }
    }
}
