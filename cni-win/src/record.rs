//! What install wrote, so that uninstall removes that and nothing else.
//!
//! Kept in the bin directory as `cni-win-install.json` (the conf directory would not do:
//! containerd reads every `.json` there as a network config). Each file is listed with the
//! hash install gave it: uninstall leaves a file that has changed since, and puts back the
//! file install found in its place, if it kept one.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::fsutil;

/// The record's file name in the bin directory.
pub const FILE_NAME: &str = "cni-win-install.json";

/// What install wrote (named apart from Flannel's record of a pod, which the plugins keep).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallRecord {
    /// The `cni-win` version that wrote the record.
    pub written_by: String,
    /// Every file install wrote, with its hash.
    pub files: Vec<Written>,
}

/// One file install wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Written {
    /// Where.
    pub path: PathBuf,
    /// Its SHA-256 as install wrote it.
    pub sha256: String,
    /// The file install found at `path` and kept, to be restored by uninstall.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<PathBuf>,
}

impl InstallRecord {
    /// The record's path in `bin_dir`.
    pub fn path(bin_dir: &Path) -> PathBuf {
        bin_dir.join(FILE_NAME)
    }

    /// The record in `bin_dir`; `None` when install never ran there.
    pub fn load(bin_dir: &Path) -> Result<Option<InstallRecord>, Error> {
        let path = InstallRecord::path(bin_dir);
        fsutil::existing(&path)?;
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                Error::new(format!(
                    "{} is not an install record ({e}); move it away to start afresh",
                    path.display()
                ))
            }),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(Error::io("read", &path, &err)),
        }
    }

    /// Writes the record atomically.
    pub fn save(&self, bin_dir: &Path) -> Result<(), Error> {
        let mut text = serde_json::to_string_pretty(self).expect("a record always serializes");
        text.push('\n');
        fsutil::write_atomically(&InstallRecord::path(bin_dir), text.as_bytes())
    }

    /// The entry for `path`, if install wrote it.
    pub fn find(&self, path: &Path) -> Option<&Written> {
        self.files.iter().find(|written| written.path == path)
    }
}
