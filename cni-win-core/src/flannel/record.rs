//! The record Flannel's meta plugin keeps for DEL: `<dataDir>/<sandboxID>` holding the
//! delegate config it rendered. A Flannel-native ADD writes the same record (the effective
//! config without the Flannel-native keys), so a node can switch back to `type: flannel` with
//! pods running: Flannel's DEL finds the record and delegates to this plugin. A DEL removes
//! the record, whichever of the two wrote it.
//!
//! With containerd, `CNI_NETNS` is an HCN namespace GUID and Flannel's sandbox ID is
//! `CNI_CONTAINERID`.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use cni::{Error, ErrorCode, NetConf};
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
        Ok(Record {
            dir: data_dir.to_owned(),
            path: data_dir.join(container_id),
            temporary: data_dir.join(format!(".{container_id}.tmp")),
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
        create_private_dir(&self.dir)?;
        remove_if_file(&self.temporary)?;
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&self.temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&self.temporary, &self.path)
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
    match fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_file() => fs::remove_file(path),
        Ok(_) => {
            log::warn!("{} is not a regular file: left alone", path.display());
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(windows)]
fn create_private_dir(dir: &Path) -> io::Result<()> {
    fs::create_dir_all(dir)
}
