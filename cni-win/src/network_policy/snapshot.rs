//! The snapshot new pods start from ([`cni_win_core::network_policy`]): rendered from the
//! cluster state the agent programs from, and written atomically to each path the node's
//! configs name, only when it changed.
//!
//! Each path gets the rules of the networks that name it, kept clear of those configs' own
//! ACLs (the same priorities ADD checks against). The rules a new pod gets list its peers
//! inline ([`Translation::pending_pod_acls`]): they need no IP set to exist, and the
//! agent converges the endpoint to its usual form without a window once it sees the pod.

use std::collections::BTreeMap;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use cni_win_core::configured::PolicySettings;
use cni_win_core::network_policy::{self as format, PodPolicy, PolicySnapshot};
use cni_win_netpol::{Mode, NewPodPeers, PodKey, Translation};
use hns::Guid;
use hns::schema::policy::AclPolicy;
use rootsafe::file::{self, Kind, Mode as FileMode, Step};

use super::feed::ClusterState;

/// The snapshots one state renders, by path, encoded.
#[derive(Debug, Default)]
pub(crate) struct Rendered {
    pub files: BTreeMap<PathBuf, Vec<u8>>,
}

/// The name a namespace the agent does not know is rendered under: no namespace is named
/// so (a name is a DNS label).
const UNKNOWN_NAMESPACE: &str = "";

/// Renders the snapshot of every path `networks` name. `mapped` gives each local pod the
/// agent matched to an endpoint that endpoint and the `Id`s of the rules it should hold.
pub(crate) fn render(
    mode: Mode,
    networks: &[PolicySettings],
    translation: &mut Translation<'_>,
    mapped: &BTreeMap<PodKey, (Guid, Vec<String>)>,
    state: &ClusterState,
) -> Rendered {
    let mut by_path: BTreeMap<&Path, Vec<AclPolicy>> = BTreeMap::new();
    for network in networks {
        if let Some(path) = &network.snapshot {
            by_path
                .entry(path)
                .or_default()
                .extend(network.acls.iter().cloned());
        }
    }
    let mut rendered = Rendered::default();
    for (path, others) in by_path {
        match snapshot(mode, translation, mapped, state, &others) {
            Ok(snapshot) => {
                let mut bytes =
                    serde_json::to_vec_pretty(&snapshot).expect("a snapshot always serialises");
                bytes.push(b'\n');
                rendered.files.insert(path.to_owned(), bytes);
            }
            Err(conflict) => log::error!(
                "network policy: snapshot {}: {conflict}: left as it is",
                path.display()
            ),
        }
    }
    rendered
}

fn snapshot(
    mode: Mode,
    translation: &mut Translation<'_>,
    mapped: &BTreeMap<PodKey, (Guid, Vec<String>)>,
    state: &ClusterState,
    others: &[AclPolicy],
) -> Result<PolicySnapshot, cni_win_netpol::PriorityConflict> {
    let cluster = &state.cluster;
    let mut rules = BTreeMap::new();
    let mut ids = |acls: Vec<AclPolicy>| -> Vec<String> {
        acls.into_iter()
            .filter_map(|acl| {
                let id = acl.id.clone()?;
                rules.entry(id.clone()).or_insert(acl);
                Some(id)
            })
            .collect()
    };
    let default =
        ids(translation.namespace_posture(UNKNOWN_NAMESPACE, others, &mut NewPodPeers::Inline)?);
    let mut namespaces = BTreeMap::new();
    for namespace in cluster.namespaces() {
        let posture = translation.namespace_posture(namespace, others, &mut NewPodPeers::Inline)?;
        namespaces.insert(namespace.to_owned(), ids(posture));
    }
    let mut pods = BTreeMap::new();
    for key in &state.local {
        let add = ids(translation.pending_pod_acls(key, others, &mut NewPodPeers::Inline)?);
        let (endpoint, expected) = match mapped.get(key) {
            Some((endpoint, expected)) => (Some(*endpoint), expected.clone()),
            None => (None, Vec::new()),
        };
        let policies = cluster
            .policies_selecting(key)
            .map(|policy| format::object_key(&policy.key.namespace, &policy.key.name))
            .collect();
        pods.insert(
            format::object_key(&key.namespace, &key.name),
            PodPolicy {
                add,
                policies,
                endpoint,
                expected,
            },
        );
    }
    Ok(PolicySnapshot {
        version: format::VERSION,
        node: state.node_name.clone(),
        mode: mode.as_str().to_owned(),
        rules,
        pods,
        namespaces,
        default,
        refused: state
            .refused
            .iter()
            .map(|(key, reason)| {
                (
                    format::object_key(&key.namespace, &key.name),
                    reason.clone(),
                )
            })
            .collect(),
    })
}

/// Why a snapshot could not be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteError {
    /// `networkPolicySnapshot` names a file with no directory.
    #[error("the path names no directory")]
    NoDirectory,
    /// Something other than a directory is where the directory should be.
    #[error("{} is a {kind:?}, not a directory", dir.display())]
    NotADirectory {
        /// The directory's path.
        dir: PathBuf,
        /// What is there.
        kind: Kind,
    },
    /// A file operation failed.
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// To what.
        path: PathBuf,
        /// Why it failed.
        #[source]
        source: io::Error,
    },
}

/// Writes `bytes` to `path` unless it already holds them: atomically (a new file renamed
/// over the old), owner-only, never through a link; the directory is made when missing.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    if read_bytes(path).as_deref() == Some(bytes) {
        return Ok(());
    }
    let failed = |what, at: &Path| {
        let path = at.to_owned();
        move |source| WriteError::Io { what, path, source }
    };
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .ok_or(WriteError::NoDirectory)?;
    match Kind::at(dir).map_err(failed("inspect", dir))? {
        Some(Kind::Directory) => {}
        None => FileMode::OwnerOnly
            .dir_builder()
            .recursive(true)
            .create(dir)
            .map_err(failed("create", dir))?,
        Some(kind) => {
            return Err(WriteError::NotADirectory {
                dir: dir.to_owned(),
                kind,
            });
        }
    }
    // A directory in the way cannot be renamed over; a link is replaced, never followed.
    if let Ok(Some(kind @ (Kind::Directory | Kind::Fifo | Kind::Device | Kind::Socket))) =
        Kind::at(path)
    {
        file::remove(path, kind).map_err(failed("remove what is in the way at", path))?;
    }
    let staging = file::beside(path, &format!("{}.new", std::process::id()));
    if let Ok(Some(kind)) = Kind::at(&staging) {
        file::remove(&staging, kind).map_err(failed("remove the leftover", &staging))?;
    }
    file::replace(path, &staging, FileMode::OwnerOnly, |f| f.write_all(bytes)).map_err(|e| {
        WriteError::Io {
            what: match e.step {
                Step::Create => "create the new copy of",
                Step::Write => "write the new copy of",
                Step::Rename => "rename the new copy over",
            },
            path: path.to_owned(),
            source: e.source,
        }
    })
}

/// What the regular file at `path` holds (never through a link), if it can be read.
fn read_bytes(path: &Path) -> Option<Vec<u8>> {
    let opened = file::open(path, std::fs::OpenOptions::new().read(true)).ok()?;
    file::read_capped(opened, format::MAX_SIZE).ok()
}
