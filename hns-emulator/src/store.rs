//! The emulator's on-disk state: one JSON file per object, small index files,
//! an exclusive lock held for the duration of each call, atomic writes.
//!
//! ```text
//! <root>/lock                                   flock'ed by every call
//! <root>/host.json                              version, build, counters, policy writes, faults, ...
//! <root>/networks/<GUID>.json                   one file per object, as HNS reports it
//! <root>/endpoints/<GUID>.json
//! <root>/namespaces/<GUID>.json
//! <root>/loadbalancers/<GUID>.json
//! <root>/index/network-endpoints/<net>/<ep>     marker: endpoint belongs to network
//! <root>/index/namespace-endpoints/<ns>/<ep>    marker: endpoint attached to namespace
//! <root>/index/ips/<net>/<ip>                   content: endpoint GUID holding the IP
//! <root>/index/macs/<net>/<MAC>                 content: endpoint GUID holding the MAC
//! <root>/index/mac-cursor/<net>                 content: next MacPool offset to try
//! <root>/index/endpoint-names/<hash>.json       [[name, GUID], ...] bucket
//! ```
//!
//! Objects are the truth; indexes are hints. Writers put index entries in
//! place before the object (and remove them after deleting it), so a process
//! killed at any point leaves entries that point at missing or different
//! objects, never objects without entries. Readers check every entry against
//! the object it names and ignore stale ones.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::failure::HcnFailure;

/// Top-level object directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectDir {
    /// `networks/`
    Networks,
    /// `endpoints/`
    Endpoints,
    /// `namespaces/`
    Namespaces,
    /// `loadbalancers/`
    LoadBalancers,
}

impl ObjectDir {
    fn name(self) -> &'static str {
        match self {
            ObjectDir::Networks => "networks",
            ObjectDir::Endpoints => "endpoints",
            ObjectDir::Namespaces => "namespaces",
            ObjectDir::LoadBalancers => "loadbalancers",
        }
    }

    const ALL: [ObjectDir; 4] = [
        ObjectDir::Networks,
        ObjectDir::Endpoints,
        ObjectDir::Namespaces,
        ObjectDir::LoadBalancers,
    ];
}

/// A state root on disk.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

/// The store while this process holds the lock; dropping it releases the lock.
#[derive(Debug)]
pub struct Locked<'a> {
    store: &'a Store,
    _lock: File,
}

impl Store {
    /// Opens (creating if needed) a state root.
    pub fn open(root: &Path) -> Result<Store, HcnFailure> {
        for dir in ObjectDir::ALL {
            let path = root.join(dir.name());
            fs::create_dir_all(&path).map_err(|e| HcnFailure::io(path.display(), e))?;
        }
        let index = root.join("index");
        fs::create_dir_all(&index).map_err(|e| HcnFailure::io(index.display(), e))?;
        Ok(Store {
            root: root.to_path_buf(),
        })
    }

    /// The state root: every process pointed at it sees the same HNS.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Takes the exclusive lock (blocking until other processes release it).
    pub fn lock(&self) -> Result<Locked<'_>, HcnFailure> {
        let path = self.root.join("lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| HcnFailure::io(path.display(), e))?;
        file.lock().map_err(|e| HcnFailure::io(path.display(), e))?;
        Ok(Locked {
            store: self,
            _lock: file,
        })
    }
}

impl Locked<'_> {
    /// Path of a top-level object file.
    pub fn object_path(&self, dir: ObjectDir, id: &str) -> PathBuf {
        self.store.root.join(dir.name()).join(format!("{id}.json"))
    }

    /// Path under `index/`.
    pub fn index_path(&self, parts: &[&str]) -> PathBuf {
        parts
            .iter()
            .fold(self.store.root.join("index"), |path, part| path.join(part))
    }

    /// Path of `host.json`.
    pub fn host_path(&self) -> PathBuf {
        self.store.root.join("host.json")
    }

    /// IDs (file stems) of every object in a directory.
    pub fn list_objects(&self, dir: ObjectDir) -> Result<Vec<String>, HcnFailure> {
        let path = self.store.root.join(dir.name());
        Ok(list_dir(&path)?
            .into_iter()
            .filter_map(|name| name.strip_suffix(".json").map(str::to_owned))
            .collect())
    }

    /// True when the path exists.
    pub fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
}

/// Reads and decodes a JSON file; `None` when it does not exist.
pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>, HcnFailure> {
    match fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| HcnFailure::io(path.display(), e)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(HcnFailure::io(path.display(), error)),
    }
}

/// Reads a small text file; `None` when it does not exist.
pub fn read_text(path: &Path) -> Result<Option<String>, HcnFailure> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(HcnFailure::io(path.display(), error)),
    }
}

/// Serialises `value` and writes it atomically.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), HcnFailure> {
    let bytes = serde_json::to_vec(value).map_err(|e| HcnFailure::io(path.display(), e))?;
    write_atomic(path, &bytes)
}

/// Writes a file atomically: temp file in the same directory, fsync, rename.
/// A reader (or a process that dies mid-write) sees the old or the new
/// content, never a mix. Parent directories are created as needed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), HcnFailure> {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let parent = path
        .parent()
        .ok_or_else(|| HcnFailure::io(path.display(), "no parent directory"))?;
    fs::create_dir_all(parent).map_err(|e| HcnFailure::io(parent.display(), e))?;
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy())
        .unwrap_or_default();
    let temp = parent.join(format!(
        ".{file_name}.{}.{}.tmp",
        std::process::id(),
        SEQUENCE.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut file = File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&temp, path)
    })();
    result.map_err(|e| {
        let _ = fs::remove_file(&temp);
        HcnFailure::io(path.display(), e)
    })
}

/// Removes a file; a missing file is fine.
pub fn remove_file(path: &Path) -> Result<(), HcnFailure> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(HcnFailure::io(path.display(), error)),
    }
}

/// Removes a directory tree; a missing one is fine.
pub fn remove_dir(path: &Path) -> Result<(), HcnFailure> {
    match fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(HcnFailure::io(path.display(), error)),
    }
}

/// Names of the entries of a directory, without temp files; empty when missing.
pub fn list_dir(path: &Path) -> Result<Vec<String>, HcnFailure> {
    let entries = match fs::read_dir(path) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(HcnFailure::io(path.display(), error)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| HcnFailure::io(path.display(), e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}
