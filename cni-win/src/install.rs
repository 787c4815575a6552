//! `cni-win install`: the binaries into the CNI bin directory, a linted conflist into the conf
//! directory, a record of both, and containerd's config printed. Safe to run on a live node at
//! any time and idempotent: a second run changes nothing and says so.

use std::fs;
use std::path::{Path, PathBuf};

use crate::binaries::{self, Swap};
use crate::checksums::{self, Sha256Sums};
use crate::error::Error;
use crate::fsutil::{self, Existing};
use crate::lint;
use crate::record::{InstallRecord, Written};
use crate::shipped::{self, Binary};
use crate::templates::Template;

/// What an install is asked to do.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Where the release's binaries (and its SHA256SUMS) are.
    pub source: PathBuf,
    /// The CNI bin directory containerd runs plugins from.
    pub bin_dir: PathBuf,
    /// The CNI config directory containerd reads.
    pub conf_dir: PathBuf,
    /// The conflist to write.
    pub conflist: Template,
    /// Template settings changed with `--set KEY=VALUE`.
    pub sets: Vec<(String, String)>,
    /// The conflist's file name (see [`conflist_file_name`]).
    pub conflist_name: String,
    /// Say what would change and change nothing.
    pub dry_run: bool,
}

/// What an install did (or, in a dry run, would do), in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The source has no `SHA256SUMS`: copies are checked against the source files only.
    NoChecksums {
        /// The source directory.
        source: PathBuf,
    },
    /// A file an earlier run moved aside would be removed (dry run).
    WouldRemoveMovedAside(PathBuf),
    /// A file an earlier run moved aside is still running; a later run removes it.
    StillRunning(PathBuf),
    /// A running binary was moved aside to make room for the new one.
    MovedAside {
        /// The binary's place.
        dest: PathBuf,
        /// Where the running file went.
        aside: PathBuf,
    },
    /// One file was put in place (or, in a dry run, would be).
    File {
        /// The file's place.
        dest: PathBuf,
        /// What changes there.
        change: Change,
        /// Whether it was only planned.
        dry_run: bool,
    },
    /// Everything was in place already.
    NothingToDo {
        /// The release installed.
        version: &'static str,
    },
    /// Another config file in the conf directory, which containerd may read instead.
    OtherConfig {
        /// The other file.
        path: PathBuf,
        /// Whether it sorts before ours (then containerd reads it, not ours).
        before: bool,
        /// Our conflist's name.
        ours: String,
    },
}

/// A file name in the conf directory (never a path out of it) that containerd reads as a
/// conflist.
pub fn conflist_file_name(text: &str) -> Result<String, String> {
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

/// What putting one file in place changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Already there with these contents.
    None,
    /// Nothing there yet.
    Create,
    /// Replacing what an earlier install wrote.
    Update,
    /// Replacing a file install did not write (kept for uninstall, as
    /// [`binaries::backup_path`] names it).
    ReplaceForeign,
}

/// Installs the release in `settings.source`, reporting each step to `report`.
pub fn install(settings: &Settings, report: &mut dyn FnMut(Event)) -> Result<(), Error> {
    let source = &settings.source;
    let record = InstallRecord::load(&settings.bin_dir)?.unwrap_or_default();
    let conflist = render(settings)?;
    let sums = Sha256Sums::read(source)?;
    if sums.is_none() {
        report(Event::NoChecksums {
            source: source.clone(),
        });
    }
    let mut steps = Vec::new();
    for binary in shipped::binaries() {
        steps.push(binary_step(
            source,
            sums.as_ref(),
            &settings.bin_dir,
            binary,
            &record,
        )?);
    }
    let conflist_path = settings.conf_dir.join(&settings.conflist_name);
    let conflist_sha256 = checksums::bytes_sha256(&conflist);
    steps.push(step(
        conflist_path,
        Content::Conflist(conflist),
        conflist_sha256,
        &record,
    )?);
    let aside = binaries::moved_aside(&settings.bin_dir)?;

    if settings.dry_run {
        for path in &aside {
            report(Event::WouldRemoveMovedAside(path.clone()));
        }
        for step in &steps {
            report(step.event(true));
        }
    } else {
        for path in binaries::clean_moved_aside(&settings.bin_dir)? {
            report(Event::StillRunning(path));
        }
        fs::create_dir_all(&settings.bin_dir)
            .map_err(|e| Error::io("create", &settings.bin_dir, &e))?;
        fs::create_dir_all(&settings.conf_dir)
            .map_err(|e| Error::io("create", &settings.conf_dir, &e))?;
        let mut written = Vec::new();
        for step in &steps {
            written.push(apply(step, &record, report)?);
        }
        let updated = updated_record(&record, written);
        if updated != record {
            updated.save(&settings.bin_dir)?;
        }
    }
    let changed = steps.iter().any(|s| s.change != Change::None);
    if !changed && aside.is_empty() {
        report(Event::NothingToDo {
            version: cni::build!().version,
        });
    }
    other_configs(&settings.conf_dir, &settings.conflist_name, report);
    Ok(())
}

/// The directory holding this executable: a release's files sit beside it, so it is where
/// install looks when it is not told.
pub fn own_dir() -> Result<PathBuf, Error> {
    let exe = std::env::current_exe()
        .map_err(|e| Error::new(format!("cannot locate cni-win itself ({e}); pass --source")))?;
    exe.parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| Error::new("cannot locate cni-win's directory; pass --source"))
}

/// The conflist's bytes, after the plugins' config code accepted it.
fn render(settings: &Settings) -> Result<Vec<u8>, Error> {
    let conflist = settings.conflist.render(&settings.sets)?;
    lint::check(&conflist).map_err(|e| {
        Error::new(format!(
            "the {} template with these settings is not a config the plugins accept: {e}",
            settings.conflist
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
    binary: &Binary,
    record: &InstallRecord,
) -> Result<Step, Error> {
    let name = binary.file_name();
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

fn step(
    dest: PathBuf,
    content: Content,
    sha256: String,
    record: &InstallRecord,
) -> Result<Step, Error> {
    let change = change(&dest, &sha256, record)?;
    Ok(Step {
        dest,
        sha256,
        content,
        change,
    })
}

/// What putting contents with hash `sha256` at `dest` changes.
fn change(dest: &Path, sha256: &str, record: &InstallRecord) -> Result<Change, Error> {
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

impl Step {
    fn event(&self, dry_run: bool) -> Event {
        Event::File {
            dest: self.dest.clone(),
            change: self.change,
            dry_run,
        }
    }
}

/// Puts one file in place; returns its record entry.
fn apply(
    step: &Step,
    record: &InstallRecord,
    report: &mut dyn FnMut(Event),
) -> Result<Written, Error> {
    let kept_before = record.find(&step.dest).and_then(|w| w.kept.clone());
    let foreign = step.change == Change::ReplaceForeign;
    if step.change != Change::None {
        match &step.content {
            Content::Binary(source) => {
                if let Swap::MovedAside(aside) =
                    binaries::put(source, &step.dest, &step.sha256, foreign)?
                {
                    report(Event::MovedAside {
                        dest: step.dest.clone(),
                        aside,
                    });
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
    report(step.event(false));
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
fn updated_record(before: &InstallRecord, written: Vec<Written>) -> InstallRecord {
    let mut files = written;
    for earlier in &before.files {
        if !files.iter().any(|w| w.path == earlier.path) {
            files.push(earlier.clone());
        }
    }
    InstallRecord {
        written_by: cni::build!().version.to_owned(),
        files,
    }
}

/// containerd reads only the first config file in name order: say which others are there.
fn other_configs(conf_dir: &Path, ours: &str, report: &mut dyn FnMut(Event)) {
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
        report(Event::OtherConfig {
            before: other.as_str() < ours,
            path: conf_dir.join(&other),
            ours: ours.to_owned(),
        });
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
