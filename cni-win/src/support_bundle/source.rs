//! Reading only what the bundle names, the way a SYSTEM process must: never through a link,
//! never a FIFO or device, never more than a cap. Everything else met on the way is skipped
//! and said why, so the manifest accounts for every path looked at.

use std::fs;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use rootsafe::file::{self, Kind, OpenError};
use serde::Serialize;

/// A path the bundle looked at and did not read, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// The path (or, for an entry dropped at the size cap, the entry's name).
    pub path: String,
    /// Why it is not in the bundle.
    pub why: String,
}

impl Skipped {
    pub(crate) fn new(path: &Path, why: impl Into<String>) -> Skipped {
        Skipped {
            path: path.display().to_string(),
            why: why.into(),
        }
    }
}

/// Why a file was not read.
pub(crate) fn not_read(error: OpenError) -> String {
    match error {
        OpenError::Missing => "does not exist".to_owned(),
        OpenError::NotRegular(kind) => format!(
            "not a regular file ({}): not followed or read",
            kind_name(kind)
        ),
        OpenError::Io(e) => format!("cannot open it: {e}"),
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Regular => "regular file",
        Kind::Directory => "directory",
        Kind::Link => "link",
        Kind::Fifo => "FIFO",
        Kind::Device => "device",
        Kind::Socket => "socket",
    }
}

/// The whole of the regular file at `path` when it holds at most `cap` bytes.
pub(crate) fn read(path: &Path, cap: u64) -> Result<Vec<u8>, String> {
    let file = file::open(path, fs::OpenOptions::new().read(true)).map_err(not_read)?;
    file::read_capped(file, cap).map_err(|e| match e.kind() {
        io::ErrorKind::FileTooLarge => format!("larger than {cap} bytes: not collected"),
        _ => format!("cannot read it: {e}"),
    })
}

/// The end of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tail {
    /// Its last whole lines within the bytes asked for.
    pub bytes: Vec<u8>,
    /// Whether that is the whole file.
    pub whole: bool,
}

/// The last `bytes` bytes of the regular file at `path` (all of it when shorter), from the
/// first whole line in them: a line cut at its start could hold a secret whose key was cut
/// off, which redaction would not recognize.
pub(crate) fn tail(path: &Path, bytes: u64) -> Result<Tail, String> {
    let mut file = file::open(path, fs::OpenOptions::new().read(true)).map_err(not_read)?;
    let mut read = || -> io::Result<Tail> {
        let len = file.metadata()?.len();
        let start = len.saturating_sub(bytes);
        // One byte more, to tell whether `start` begins a line.
        let from = start.saturating_sub(1);
        file.seek(SeekFrom::Start(from))?;
        let mut tail = Vec::new();
        // A log still being appended to may have grown since: read no more than asked.
        (&mut file)
            .take(bytes + (start - from))
            .read_to_end(&mut tail)?;
        if start > 0 {
            let first_line_end = tail.iter().position(|b| *b == b'\n');
            tail.drain(..first_line_end.map_or(tail.len(), |end| end + 1));
        }
        Ok(Tail {
            bytes: tail,
            whole: start == 0,
        })
    };
    read().map_err(|e| format!("cannot read it: {e}"))
}

/// The regular files under `dir`, down to `depth` levels of subdirectories, in order; every
/// other entry (a link, a FIFO, a directory deeper than `depth`) is skipped with the reason.
pub(crate) fn regular_files(dir: &Path, depth: usize) -> io::Result<(Vec<PathBuf>, Vec<Skipped>)> {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<io::Result<_>>()?;
    entries.sort();
    for path in entries {
        match Kind::at(&path) {
            Ok(Some(Kind::Regular)) => files.push(path),
            Ok(Some(Kind::Directory)) if depth > 0 => match regular_files(&path, depth - 1) {
                Ok((more, more_skipped)) => {
                    files.extend(more);
                    skipped.extend(more_skipped);
                }
                Err(e) => skipped.push(Skipped::new(&path, format!("cannot list it: {e}"))),
            },
            Ok(Some(Kind::Directory)) => {
                skipped.push(Skipped::new(&path, "a subdirectory: not collected"));
            }
            Ok(Some(kind)) => skipped.push(Skipped::new(
                &path,
                format!(
                    "not a regular file ({}): not followed or read",
                    kind_name(kind)
                ),
            )),
            Ok(None) => {}
            Err(e) => skipped.push(Skipped::new(&path, format!("cannot inspect it: {e}"))),
        }
    }
    Ok((files, skipped))
}

/// `prefix/` and `path`'s components joined by `/` (a drive `C:` as `C`): where a file from
/// anywhere on the node goes in the zip, unambiguous and the same on every platform.
pub(crate) fn mirrored(prefix: &str, path: &Path) -> String {
    use std::path::Component;
    let mut name = prefix.to_owned();
    for component in path.components() {
        let part = match component {
            Component::Prefix(prefix) => prefix
                .as_os_str()
                .to_string_lossy()
                .trim_end_matches(':')
                .replace(['\\', '?', '.'], ""),
            Component::Normal(part) => part.to_string_lossy().into_owned(),
            Component::RootDir | Component::CurDir | Component::ParentDir => continue,
        };
        if !part.is_empty() {
            name.push('/');
            name.push_str(&part);
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_mirrored_under_a_prefix() {
        assert_eq!(
            mirrored("logs", Path::new("/var/log/cni.log")),
            "logs/var/log/cni.log"
        );
        assert_eq!(mirrored("logs", Path::new("../x")), "logs/x");
    }

    #[test]
    fn a_tail_is_the_whole_lines_at_the_end_of_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        fs::write(&path, b"0123\n56789\n").unwrap();
        let tail_of = |bytes| {
            let tail = tail(&path, bytes).unwrap();
            (String::from_utf8(tail.bytes).unwrap(), tail.whole)
        };
        assert_eq!(tail_of(40), ("0123\n56789\n".to_owned(), true));
        assert_eq!(
            tail_of(8),
            ("56789\n".to_owned(), false),
            "a cut line is dropped"
        );
        assert_eq!(
            tail_of(6),
            ("56789\n".to_owned(), false),
            "a line starting at the cut is kept"
        );
        assert_eq!(tail_of(3), (String::new(), false));
    }
}
