//! The network cache: the HNS network a config's name found last time, so ADD and CHECK open it
//! by ID instead of enumerating networks by name, and never act on a network that changed.
//!
//! # Where it lives
//!
//! `<dataDir>/<network>/.cni-win/hns-network`, beside host-local's own index: a directory the
//! config names (the plugin writes nowhere else), already made owner-only by host-local, and
//! outside the network directory's listing that host-local stamps (writing there would make
//! host-local rebuild its index). With a delegated IPAM the config names no directory, so
//! there is no cache and every command finds the network by name.
//!
//! The file follows the store's rules: it is read and replaced without following a link
//! ([`rootsafe::file`]), written atomically (a new file renamed over the old one), 0600, and
//! anything wrong with it (missing, a link, a directory, garbage, another network's name) is a
//! miss that the next ADD heals by replacing it. Only ADD writes it, and only after a lookup by
//! name; CHECK only reads it.
//!
//! # Why it is never wrong
//!
//! The cache names a network ID; HNS is asked whether that ID exists on every command
//! (`HcnOpenNetwork`). What the plugin reads from the network, and how each is revalidated:
//!
//! - **ID**: opened every time. A network deleted (flanneld's re-creation, a reboot that drops
//!   a non-persistent network, an operator) fails to open: the lookup by name runs once and
//!   the cache is rewritten. HNS gives every network created without an ID a fresh GUID
//!   (flanneld and hcsshim create so), so a re-created network, a network of another type
//!   under the name, or two networks swapped all have IDs the cache does not hold.
//! - **Name, type, subnets** (prefixes, default routes, subnet policies such as the VSID):
//!   HCN has no modify request for them (`HcnModifyNetwork` takes only `Policy`, `DNS` and
//!   `Extension`), so they are what they were when the ID was looked up. The cached copy is
//!   fitted as a fresh one would be (type, kind checks, gateways); should it not fit, the
//!   lookup runs. HNS also refuses an endpoint address outside the network's subnets, so an
//!   endpoint is never placed by stale subnets.
//! - **Network policies** (ProviderAddress, VxlanPort, routes flanneld adds): these change
//!   under an unchanged ID. A kind that reads them ([`NetworkKind::READS_NETWORK_POLICIES`],
//!   the overlay) queries the network after opening it and uses only what HNS answers; the
//!   cache then saves the enumeration only.
//!
//! The one assumption: a network ID is not reused. HNS never reuses one, but `HcnCreateNetwork`
//! takes a caller's ID, so a network deleted and created again *under the same ID* on purpose
//! (`hnsctl network create --id`) is a new network the open cannot tell from the old. Its
//! name and type cannot differ unless its creator chose that too; other subnets are caught:
//! HNS refuses the endpoint's address outside them, and any refusal ADD cannot explain (not
//! an address another endpoint holds, a host port, a timeout) on a network opened by its
//! cached ID makes ADD roll back, forget the cache and run again with the lookup by name, once.
//! The same covers a network deleted between the open and the create ("not found").

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use hns::schema::HostComputeNetwork;
use rootsafe::file::{self, Kind, Mode, OpenError};
use serde::{Deserialize, Serialize};

#[cfg(doc)]
use crate::kind::NetworkKind;

/// The cache file's name inside host-local's index directory.
const FILE_NAME: &str = "hns-network";

/// The largest cache file read: a network document is a few kilobytes; more is damage.
const MAX_SIZE: u64 = 1024 * 1024;

/// The file's layout version: a file of another version is a miss.
const VERSION: u32 = 1;

/// One config's network cache file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NetworkCache {
    path: PathBuf,
}

/// The file's content.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Entry {
    version: u32,
    network: HostComputeNetwork,
}

impl NetworkCache {
    /// The cache of the network whose host-local store is `network_dir` (`<dataDir>/<network>`).
    pub fn in_store(network_dir: &Path) -> NetworkCache {
        NetworkCache {
            path: network_dir.join(ipam_host_local::INDEX_DIR).join(FILE_NAME),
        }
    }

    /// The network last found under `name`, if the file holds one: anything else is a miss
    /// (logged), never an error.
    pub fn read(&self, name: &str) -> Option<HostComputeNetwork> {
        let path = &self.path;
        let file = match file::open(path, OpenOptions::new().read(true)) {
            Ok(file) => file,
            Err(OpenError::Missing) => return None,
            Err(e) => {
                log::warn!(
                    "network cache {}: {e:?}; looking the network up",
                    path.display()
                );
                return None;
            }
        };
        let entry = file::read_capped(file, MAX_SIZE)
            .map_err(|e| e.to_string())
            .and_then(|bytes| serde_json::from_slice::<Entry>(&bytes).map_err(|e| e.to_string()));
        match entry {
            Ok(entry) if entry.version == VERSION && entry.network.name == name => {
                Some(entry.network)
            }
            Ok(_) => None,
            Err(e) => {
                log::warn!(
                    "network cache {} is damaged ({e}); looking the network up",
                    path.display()
                );
                None
            }
        }
    }

    /// Records `network` (best effort: a failure is logged and the next ADD looks the network
    /// up again). Written only when host-local's index directory exists as a real directory,
    /// so this never creates a directory of its own.
    pub fn write(&self, network: &HostComputeNetwork) {
        if let Err(e) = self.try_write(network) {
            log::warn!("cannot write network cache {}: {e}", self.path.display());
        }
    }

    /// Forgets the cached network (best effort), so the next command looks it up by name.
    pub fn forget(&self) {
        if let Ok(Some(kind)) = Kind::at(&self.path)
            && let Err(e) = file::remove(&self.path, kind)
        {
            log::warn!("cannot remove network cache {}: {e}", self.path.display());
        }
    }

    fn try_write(&self, network: &HostComputeNetwork) -> Result<(), String> {
        let Some(dir) = self.path.parent() else {
            return Err("no directory".to_owned());
        };
        match Kind::at(dir) {
            Ok(Some(Kind::Directory)) => {}
            other => return Err(format!("{} is not a directory ({other:?})", dir.display())),
        }
        // A directory (or anything but a file or a link) in the way cannot be renamed over.
        match Kind::at(&self.path) {
            Ok(None | Some(Kind::Regular | Kind::Link)) => {}
            Ok(Some(kind)) => file::remove(&self.path, kind).map_err(|e| e.to_string())?,
            Err(e) => return Err(e.to_string()),
        }
        let json = serde_json::to_vec(&Entry {
            version: VERSION,
            network: network.clone(),
        })
        .map_err(|e| e.to_string())?;
        // One staging name per process: concurrent ADDs never share one.
        let staging = file::beside(&self.path, &format!("{}.new", std::process::id()));
        if let Ok(Some(kind)) = Kind::at(&staging) {
            file::remove(&staging, kind).map_err(|e| e.to_string())?;
        }
        file::replace(&self.path, &staging, Mode::OwnerOnly, |f| {
            f.write_all(&json)
        })
        .map_err(|e| format!("{:?}: {}", e.step, e.source))
    }
}
