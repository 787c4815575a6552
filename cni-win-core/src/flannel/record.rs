//! The record Flannel's meta plugin keeps for DEL: `<dataDir>/<sandboxID>` holding the
//! delegate config it rendered. A Flannel-native ADD writes the same record (the effective
//! config without the Flannel-native keys), so a node can switch back to `type: flannel` with
//! pods running: Flannel's DEL finds the record and delegates to this plugin. A DEL removes
//! the record, whichever of the two wrote it.
//!
//! With containerd, `CNI_NETNS` is an HCN namespace GUID and Flannel's sandbox ID is
//! `CNI_CONTAINERID`.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use cni::{Error, ErrorCode, NetConf};
use rootsafe::file::{self, Kind, Mode};
use serde_json::Value;

/// The Flannel-native keys, which Flannel's delegate config never carries.
const NATIVE_KEYS: [&str; 2] = ["subnetFile", "dataDir"];

/// One attachment's record.
#[derive(Debug)]
pub struct Record {
    dir: PathBuf,
    path: PathBuf,
    temporary: PathBuf,
}

impl Record {
    pub fn new(data_dir: &Path, container_id: &str) -> Result<Record, Error> {
        // Validated by the CNI layer already; checked again because it becomes a file name.
        cni::validate::container_id(container_id)?;
        let path = data_dir.join(container_id);
        Ok(Record {
            dir: data_dir.to_owned(),
            temporary: file::beside(&path, "tmp"),
            path,
        })
    }

    /// Writes the record atomically (temporary file, flush, rename; 0600 in a 0700 directory
    /// as Flannel does), as Flannel's delegate config: `conf` without the Flannel-native keys.
    pub fn save(&self, conf: &NetConf) -> Result<(), Error> {
        let mut delegate = conf.raw().clone();
        delegate.retain(|key, _| !NATIVE_KEYS.iter().any(|k| k.eq_ignore_ascii_case(key)));
        let bytes = serde_json::to_vec(&Value::Object(delegate))
            .map_err(|e| Error::internal(format!("encode Flannel's record: {e}")))?;
        self.write(&bytes).map_err(|e| {
            Error::new(
                ErrorCode::Io,
                format!(
                    "cannot write Flannel's record {} (dataDir): {e}",
                    self.path.display()
                ),
            )
        })
    }

    fn write(&self, bytes: &[u8]) -> io::Result<()> {
        Mode::OwnerOnly
            .dir_builder()
            .recursive(true)
            .create(&self.dir)?;
        remove_if_file(&self.temporary)?;
        file::replace(&self.path, &self.temporary, Mode::OwnerOnly, |f| {
            f.write_all(bytes)
        })
        .map_err(|e| e.source)
    }

    /// Removes the record; a missing one is fine, anything but a regular file is left alone.
    pub fn remove(&self) -> Result<(), Error> {
        remove_if_file(&self.path).map_err(|e| {
            Error::new(
                ErrorCode::Io,
                format!(
                    "cannot remove Flannel's record {}: {e}",
                    self.path.display()
                ),
            )
        })
    }
}

/// Removes `path` if it is a regular file (never through a link).
fn remove_if_file(path: &Path) -> io::Result<()> {
    match Kind::at(path)? {
        Some(Kind::Regular) => fs::remove_file(path),
        Some(_) => {
            log::warn!("{} is not a regular file: left alone", path.display());
            Ok(())
        }
        None => Ok(()),
    }
}
