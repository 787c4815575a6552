//! The snapshot new pods start from ([`cni_win_core::network_policy`]): rendered from the
//! cluster state the agent programs from, written atomically to each path the node's configs
//! name when it changed, and stamped (its modification time, on the node's clock) whenever
//! the agent confirms it is current.
//!
//! Each path gets the rules of the networks that name it, kept clear of those configs' own
//! ACLs (the same priorities ADD checks against), and names the HNS network each of them is
//! for. Its size grows with the node's pods and the policies, never with the cluster's pods:
//! a namespace without policies has no posture of its own (it gets the default), and where
//! HNS has IP sets a rule names the network's sets instead of listing its peers
//! ([`NewPodPeers::Sets`]): the pass adds those sets to each network of the path before the
//! file is written and keeps them while a file on disk names them. Should a rendering still
//! exceed [`MAX_SIZE`], the narrower form that leaves pod peers out is written instead
//! ([`Form::Narrowed`]), and said.
//!
//! Only a regular file (or nothing) at the path is ever replaced, in a real directory:
//! anything else there (a directory, a link, a special file) is refused and left as it is,
//! never removed, since the agent runs as SYSTEM and the path is a config's to name.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use cni_win_core::configured::PolicySettings;
use cni_win_core::network_policy::{
    self as format, Form, MAX_SIZE, NodePolicy, PodPolicy, PolicySnapshot,
};
use cni_win_core::snapshot::NodeSnapshot;
use cni_win_netpol::{
    IpSet, Mode, NewPodPeers, NewPodSets, PodKey, PriorityConflict, SetCollision, Translation,
};
use hns::Guid;
use hns::schema::policy::AclPolicy;
use rootsafe::file::{self, Kind, Mode as FileMode, Step};
use rootsafe::writers::{self, Writers};

use super::feed::ClusterState;
use crate::metrics::network_policy::SnapshotCounts;

/// The snapshots one state renders, by path.
#[derive(Debug, Default)]
pub(crate) struct Rendered {
    pub files: BTreeMap<PathBuf, RenderedFile>,
    /// The paths that could not be rendered (logged): their files stay as they are, and are
    /// no longer stamped.
    pub failed: BTreeSet<PathBuf>,
}

/// One path's snapshot.
#[derive(Debug)]
pub(crate) struct RenderedFile {
    pub bytes: Vec<u8>,
    /// What `bytes` encode, to mark the pods the agent could not program ([`Files::write`]).
    pub snapshot: PolicySnapshot,
    /// The most bytes ADD reads.
    pub limit: u64,
    pub form: Form,
    /// The networks (by config name) whose configs name the path.
    pub networks: BTreeSet<String>,
    /// The IP sets its rules name: each of `networks` must hold them before the file is
    /// written, and keep them while it names them.
    pub sets: BTreeMap<String, IpSet>,
}

impl RenderedFile {
    /// The file as written: each pod whose endpoint is in `failing` marked with why the agent
    /// could not program it (HNS's answer); as rendered when none is, or when the marks would
    /// take it past what ADD reads.
    fn marked(&self, failing: &BTreeMap<Guid, String>) -> Vec<u8> {
        let pods = |snapshot: &PolicySnapshot| -> Vec<Option<Guid>> {
            (snapshot.policy.iter().flat_map(|p| p.pods.values()))
                .map(|pod| pod.endpoint)
                .collect()
        };
        let any = pods(&self.snapshot)
            .into_iter()
            .flatten()
            .any(|endpoint| failing.contains_key(&endpoint));
        if !any {
            return self.bytes.clone();
        }
        let mut snapshot = self.snapshot.clone();
        for pod in snapshot.policy.iter_mut().flat_map(|p| p.pods.values_mut()) {
            pod.failing = pod.endpoint.and_then(|e| failing.get(&e)).cloned();
        }
        let bytes = encode(&snapshot);
        if bytes.len() as u64 <= self.limit {
            bytes
        } else {
            self.bytes.clone()
        }
    }
}

/// What the snapshots are rendered with besides the cluster state.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rendering {
    /// How the agent programs HNS on this host.
    pub mode: Mode,
    /// How long a file may be used after its last stamp.
    pub max_age: Duration,
}

/// The name a namespace without policies is rendered under: no namespace is named so (a
/// name is a DNS label).
const NO_POLICIES: &str = "";

/// What the pass knows of the networks besides their configs: each local pod the agent
/// matched to an endpoint, with that endpoint and the `Id`s of the rules it should hold; and
/// the IP sets each network holds or its endpoints' rules name, with the network's name (a
/// set of the snapshot's at one of their `Id`s for another group is a collision, left out).
#[derive(Debug, Default)]
pub(crate) struct Programmed<'p> {
    pub mapped: BTreeMap<PodKey, (Guid, Vec<String>)>,
    pub sets: Vec<(&'p str, &'p BTreeMap<String, IpSet>)>,
}

/// Renders the snapshot of every path `networks` name, for the HNS networks of `hns` of the
/// same names, no larger than `limit` bytes ([`MAX_SIZE`] but in tests).
pub(crate) fn render(
    rendering: Rendering,
    networks: &[PolicySettings],
    hns: &NodeSnapshot,
    translation: &mut Translation<'_>,
    programmed: &Programmed<'_>,
    state: &ClusterState,
    limit: u64,
) -> Rendered {
    let mut rendered = Rendered::default();
    for (path, of_path) in by_path(networks) {
        let others: Vec<AclPolicy> = of_path
            .iter()
            .flat_map(|network| network.acls.iter().cloned())
            .collect();
        let mut snapshot = without_policy(&state.node_name, rendering.max_age, &of_path, hns);
        let full = match rendering.mode {
            Mode::IpSets => PeersOf::Sets,
            Mode::Inline => PeersOf::Inline,
        };
        let mut fitted = None;
        let on_networks: Vec<&BTreeMap<String, IpSet>> = programmed
            .sets
            .iter()
            .filter(|(name, _)| of_path.iter().any(|network| network.network == *name))
            .map(|(_, sets)| *sets)
            .collect();
        for (form, peers) in [(Form::Full, full), (Form::Narrowed, PeersOf::Omitted)] {
            let mut gathered = NewPodSets::default();
            let mut new_pod_peers = match peers {
                PeersOf::Inline => NewPodPeers::Inline,
                PeersOf::Sets => NewPodPeers::Sets(&mut gathered),
                PeersOf::Omitted => NewPodPeers::Omitted,
            };
            let policy = node_policy(
                rendering.mode,
                form,
                &mut new_pod_peers,
                translation,
                &programmed.mapped,
                state,
                &others,
            );
            let (sets, collisions) = gathered.finish(&on_networks);
            let policy = match policy {
                Ok(mut policy) => {
                    for collision in &collisions {
                        log::error!("network policy: snapshot {}: {collision}", path.display());
                    }
                    leave_out(&mut policy, &collisions);
                    policy
                }
                Err(conflict) => {
                    log::error!(
                        "network policy: snapshot {}: {conflict}: left as it is",
                        path.display()
                    );
                    break;
                }
            };
            snapshot.policy = Some(policy);
            let bytes = encode(&snapshot);
            if bytes.len() as u64 <= limit {
                fitted = Some(RenderedFile {
                    bytes,
                    snapshot: snapshot.clone(),
                    limit,
                    form,
                    networks: of_path.iter().map(|n| n.network.clone()).collect(),
                    sets,
                });
                break;
            }
            log::error!(
                "network policy: snapshot {}: its {form:?} form is {} bytes, more than the {limit} \
                 ADD reads{}",
                path.display(),
                bytes.len(),
                match form {
                    Form::Full =>
                        ": writing the narrower form, which leaves pod peers out (new \
                                   pods are allowed less until the agent sees them)",
                    Form::Narrowed => ": left as it is (it goes stale, and ADD then fails closed)",
                }
            );
        }
        match fitted {
            Some(file) => {
                rendered.files.insert(path.to_owned(), file);
            }
            None => {
                rendered.failed.insert(path.to_owned());
            }
        }
    }
    rendered
}

/// Leaves out of `policy` every rule naming a set two groups met at, so what it would allow
/// is refused (fail closed).
fn leave_out(policy: &mut NodePolicy, collisions: &[SetCollision]) {
    if collisions.is_empty() {
        return;
    }
    policy
        .rules
        .retain(|_, acl| !collisions.iter().any(|c| c.is_named_by(acl)));
    let rules = &policy.rules;
    let kept = |ids: &mut Vec<String>| ids.retain(|id| rules.contains_key(id));
    for pod in policy.pods.values_mut() {
        kept(&mut pod.add);
    }
    policy.namespaces.values_mut().for_each(kept);
    kept(&mut policy.default);
}

/// How a form's rules name pod peers (what [`NewPodPeers`] borrows, before it does).
#[derive(Debug, Clone, Copy)]
enum PeersOf {
    Inline,
    Sets,
    Omitted,
}

/// The snapshot paths `networks` name, each with the networks that name it.
fn by_path(networks: &[PolicySettings]) -> BTreeMap<&Path, Vec<&PolicySettings>> {
    let mut by_path: BTreeMap<&Path, Vec<&PolicySettings>> = BTreeMap::new();
    for network in networks {
        if let Some(path) = &network.snapshot {
            by_path.entry(path).or_default().push(network);
        }
    }
    by_path
}

/// The paths `networks` name.
fn paths(networks: &[PolicySettings]) -> BTreeSet<PathBuf> {
    by_path(networks).into_keys().map(Path::to_owned).collect()
}

fn encode(snapshot: &PolicySnapshot) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(snapshot).expect("a snapshot always serialises");
    bytes.push(b'\n');
    bytes
}

fn node_policy(
    mode: Mode,
    form: Form,
    peers: &mut NewPodPeers<'_>,
    translation: &mut Translation<'_>,
    mapped: &BTreeMap<PodKey, (Guid, Vec<String>)>,
    state: &ClusterState,
    others: &[AclPolicy],
) -> Result<NodePolicy, PriorityConflict> {
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
    let default = ids(translation.namespace_posture(NO_POLICIES, others, peers)?);
    // Every namespace a policy is in, whether or not its Namespace object has arrived: only
    // its policies isolate its pods, and any other namespace's posture is the default.
    let with_policies: BTreeSet<&str> = cluster
        .policies()
        .map(|policy| policy.key.namespace.as_str())
        .collect();
    let mut namespaces = BTreeMap::new();
    for namespace in with_policies {
        let posture = translation.namespace_posture(namespace, others, peers)?;
        namespaces.insert(namespace.to_owned(), ids(posture));
    }
    let mut pods = BTreeMap::new();
    for key in &state.local {
        let add = ids(translation.pending_pod_acls(key, others, peers)?);
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
                failing: None,
            },
        );
    }
    Ok(NodePolicy {
        mode: mode.as_str().to_owned(),
        form,
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

/// Before the first sync, at each path of `networks`: where nothing is, a snapshot without
/// policy stamped now, so ADD knows the agent runs and since when (new pods start without
/// rules for at most `max_age`, then ADD refuses them until the agent syncs); where such a
/// snapshot names other HNS networks than `hns` has now (a network created since), the same
/// with the networks of now, keeping its stamp. A snapshot with policy (a previous
/// process's), or anything else, is left as it is.
pub(crate) fn announce(
    node: &str,
    max_age: Duration,
    networks: &[PolicySettings],
    hns: &NodeSnapshot,
) {
    for (path, of_path) in by_path(networks) {
        let snapshot = without_policy(node, max_age, &of_path, hns);
        let stamp = match format::read(path) {
            Ok(None) => SystemTime::now(),
            Ok(Some(found))
                if found.snapshot.policy.is_none()
                    && found.snapshot.networks != snapshot.networks =>
            {
                found.stamped
            }
            _ => continue,
        };
        match write(path, &encode(&snapshot), stamp) {
            Ok(()) => log::info!(
                "network policy: snapshot {}: not synced yet; new pods start without rules for \
                 at most {} s after the agent started, then wait for its first sync",
                path.display(),
                max_age.as_secs()
            ),
            Err(e) => log::error!(
                "network policy: cannot write the snapshot {}: {e}",
                path.display()
            ),
        }
    }
}

/// A snapshot of `node` for the HNS networks of `hns` that `of_path` name, as yet without
/// policy.
fn without_policy(
    node: &str,
    max_age: Duration,
    of_path: &[&PolicySettings],
    hns: &NodeSnapshot,
) -> PolicySnapshot {
    PolicySnapshot {
        version: format::VERSION,
        node: node.to_owned(),
        networks: of_path
            .iter()
            .filter_map(|network| {
                let held = hns.networks.iter().find(|n| n.name == network.network)?;
                Some((network.network.clone(), held.id))
            })
            .collect(),
        max_age_seconds: max_age.as_secs(),
        policy: None,
    }
}

/// The IP sets the snapshot at `path` names, as the file is now (none when it cannot be
/// read): the agent keeps them on the network while it does.
fn named_sets(path: &Path) -> BTreeSet<String> {
    let Ok(Some(found)) = format::read(path) else {
        return BTreeSet::new();
    };
    found
        .snapshot
        .policy
        .iter()
        .flat_map(|policy| policy.rules.values())
        .flat_map(addresses)
        .filter(|entry| entry.starts_with(cni_win_netpol::SET_ID_PREFIX))
        .map(str::to_owned)
        .collect()
}

/// Every entry of a rule's address fields (`LocalAddresses` holds an ingress peer set,
/// `RemoteAddresses` the rest).
fn addresses(acl: &AclPolicy) -> impl Iterator<Item = &str> {
    [&acl.local_addresses, &acl.remote_addresses]
        .into_iter()
        .flat_map(|field| field.as_deref().unwrap_or_default().split(','))
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
}

/// What the programmer knows of the snapshot files between passes.
#[derive(Debug, Default)]
pub(crate) struct Files {
    /// The IP sets each file on disk names, by path (read from the file the first time).
    named: BTreeMap<PathBuf, BTreeSet<String>>,
    /// What the last pass rendered and wrote, by path: what the heartbeat stamps (and
    /// writes again over a file that no longer holds it).
    current: BTreeMap<PathBuf, Vec<u8>>,
    /// The generation of the cluster state `current` was rendered from.
    generation: Option<u64>,
    /// When the files were last written or stamped, or the heartbeat last ran.
    ticked: Option<Instant>,
}

impl Files {
    /// The IP sets the files of `networks`' paths name as they are on disk now: the passes
    /// keep them on the networks.
    pub(crate) fn on_disk(&mut self, networks: &[PolicySettings]) -> BTreeSet<String> {
        let paths = paths(networks);
        self.named.retain(|path, _| paths.contains(path));
        paths
            .into_iter()
            .flat_map(|path| {
                self.named
                    .entry(path)
                    .or_insert_with_key(|path| named_sets(path))
                    .clone()
            })
            .collect()
    }

    /// Writes what a pass rendered from the state of `generation`, stamped `as_of`, each pod
    /// whose endpoint is `failing` marked with why, and says how the files came out (each
    /// failure logged). A file naming an IP set of `absent` (HNS refused to create it, or its
    /// creation waits for its retry) is left as it is: ADD would write rules naming a set the
    /// network lacks. A set HNS refused to update is still there: the file is written.
    pub(crate) fn write(
        &mut self,
        rendered: &Rendered,
        generation: u64,
        as_of: SystemTime,
        failing: &BTreeMap<Guid, String>,
        absent: &BTreeSet<String>,
    ) -> SnapshotCounts {
        let mut counts = SnapshotCounts {
            failed: rendered.failed.len(),
            ..SnapshotCounts::default()
        };
        self.current.clear();
        self.generation = Some(generation);
        for (path, file) in &rendered.files {
            if let Some(set) = file.sets.keys().find(|id| absent.contains(*id)) {
                counts.failed += 1;
                log::error!(
                    "network policy: snapshot {}: left as it is: it names IP set {set}, which \
                     HNS has not taken yet; ADD refuses the one there once it is older than its \
                     bound",
                    path.display()
                );
                continue;
            }
            let bytes = file.marked(failing);
            match write(path, &bytes, as_of) {
                Ok(()) => {
                    self.named
                        .insert(path.clone(), file.sets.keys().cloned().collect());
                    self.current.insert(path.clone(), bytes);
                    match file.form {
                        Form::Full => counts.full += 1,
                        Form::Narrowed => counts.narrowed += 1,
                    }
                }
                Err(e) => {
                    if e.is_refusal() {
                        counts.refused += 1;
                    } else {
                        counts.failed += 1;
                    }
                    log::error!(
                        "network policy: cannot write the snapshot {}: {e}; ADD refuses the one \
                         there once it is older than its bound",
                        path.display()
                    );
                }
            }
        }
        self.ticked();
        counts
    }

    /// The generation of the state the files were last rendered from.
    pub(crate) fn rendered_from(&self) -> Option<u64> {
        self.generation
    }

    /// Stamps the files the last pass wrote `as_of` (writing one again that no longer holds
    /// what it wrote); a failure is logged: ADD refuses the file once it is `max_age` old.
    pub(crate) fn stamp(&self, as_of: SystemTime, max_age: Duration) {
        for (path, bytes) in &self.current {
            if let Err(e) = write(path, bytes, as_of) {
                log::warn!(
                    "network policy: cannot stamp the snapshot {}: {e}; ADD refuses it once it \
                     is older than {} s",
                    path.display(),
                    max_age.as_secs()
                );
            }
        }
    }

    /// Notes that the heartbeat ran.
    pub(crate) fn ticked(&mut self) {
        self.ticked = Some(Instant::now());
    }

    /// Whether the heartbeat is due: every tenth of the files' bound.
    pub(crate) fn tick_due(&self, max_age: Duration) -> bool {
        self.ticked
            .is_none_or(|ticked| ticked.elapsed() >= max_age / 10)
    }
}

/// Why a snapshot could not be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteError {
    /// `networkPolicySnapshot` names a file with no directory.
    #[error("the path names no directory")]
    NoDirectory,
    /// Something the agent never replaces or writes through is where the file, its scratch
    /// copy or its directory should be: left as it is.
    #[error("{} is a {kind:?}, not a {wanted} (left as it is, never removed)", path.display())]
    Refused {
        /// What is there.
        path: PathBuf,
        /// Its kind.
        kind: Kind,
        /// What should be there.
        wanted: &'static str,
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

impl WriteError {
    /// Whether the path holds something the agent refuses to replace (a metric's state).
    pub(crate) fn is_refusal(&self) -> bool {
        matches!(self, WriteError::Refused { .. } | WriteError::NoDirectory)
    }
}

/// Writes `bytes` to `path`, stamped `as_of` (the file's modification time: up to when its
/// content is known current): atomically (a new file renamed over the old), owner-only,
/// never through a link, and only over a regular file or nothing, in a real directory
/// (made when missing). A file that already holds `bytes` is only stamped.
pub(crate) fn write(path: &Path, bytes: &[u8], as_of: SystemTime) -> Result<(), WriteError> {
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
        Some(kind) => return Err(refused(dir, kind, "directory")),
    }
    // Only the node's administrators may write where ADD takes new pods' rules from,
    // whatever the directory would inherit (on Windows, a directory under C:\ lets every
    // authenticated user modify it): ADD refuses the snapshot otherwise.
    if writers::of(dir).map_err(failed("inspect who may write", dir))? != Writers::Administrators {
        writers::restrict(dir).map_err(failed("restrict who may write", dir))?;
        log::info!(
            "network policy: only the node's administrators may write {} now",
            dir.display()
        );
    }
    match Kind::at(path).map_err(failed("inspect", path))? {
        None => {}
        Some(Kind::Regular) if read_bytes(path).as_deref() == Some(bytes) => {
            if writers::of(path).map_err(failed("inspect who may write", path))?
                != Writers::Administrators
            {
                writers::restrict(path).map_err(failed("restrict who may write", path))?;
            }
            return stamp(path, as_of);
        }
        Some(Kind::Regular) => {}
        Some(kind) => return Err(refused(path, kind, "regular file")),
    }
    let staging = file::beside(path, &format!("{}.new", std::process::id()));
    match Kind::at(&staging).map_err(failed("inspect", &staging))? {
        None => {}
        // A leftover of this process's earlier write (a crash cannot leave a link; one
        // found is unlinked, never followed).
        Some(kind @ (Kind::Regular | Kind::Link)) => {
            file::remove(&staging, kind).map_err(failed("remove the leftover", &staging))?
        }
        Some(kind) => return Err(refused(&staging, kind, "regular file")),
    }
    file::replace(path, &staging, FileMode::OwnerOnly, |f| {
        f.write_all(bytes)?;
        f.set_modified(as_of)
    })
    .map_err(|e| WriteError::Io {
        what: match e.step {
            Step::Create => "create the new copy of",
            Step::Write => "write the new copy of",
            Step::Rename => "rename the new copy over",
        },
        path: path.to_owned(),
        source: e.source,
    })
}

/// Sets the modification time of the regular file at `path` (never through a link) to
/// `as_of`: the agent confirms its content is current up to then.
fn stamp(path: &Path, as_of: SystemTime) -> Result<(), WriteError> {
    let opened = match file::open(path, std::fs::OpenOptions::new().write(true)) {
        Ok(opened) => opened,
        Err(file::OpenError::NotRegular(kind)) => return Err(refused(path, kind, "regular file")),
        Err(file::OpenError::Missing) => {
            return Err(WriteError::Io {
                what: "stamp",
                path: path.to_owned(),
                source: io::ErrorKind::NotFound.into(),
            });
        }
        Err(file::OpenError::Io(source)) => {
            return Err(WriteError::Io {
                what: "open to stamp",
                path: path.to_owned(),
                source,
            });
        }
    };
    opened.set_modified(as_of).map_err(failed("stamp", path))
}

fn failed(what: &'static str, at: &Path) -> impl FnOnce(io::Error) -> WriteError {
    let path = at.to_owned();
    move |source| WriteError::Io { what, path, source }
}

fn refused(path: &Path, kind: Kind, wanted: &'static str) -> WriteError {
    WriteError::Refused {
        path: path.to_owned(),
        kind,
        wanted,
    }
}

/// What the regular file at `path` holds (never through a link), if it can be read.
fn read_bytes(path: &Path) -> Option<Vec<u8>> {
    let opened = file::open(path, std::fs::OpenOptions::new().read(true)).ok()?;
    file::read_capped(opened, MAX_SIZE).ok()
}

#[cfg(test)]
mod tests {
    use cni_win_netpol::{NodeAddresses, PodInfo, Policy};
    use hns::SupportedFeatures;
    use hns::schema::HostComputeNetwork;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::api::networking::v1::NetworkPolicy;

    use super::*;

    const NETWORK: Guid = Guid::from_u128(0xcb0);

    fn modified(path: &Path) -> SystemTime {
        std::fs::metadata(path).unwrap().modified().unwrap()
    }

    /// The file carries the time it is current as of; an unchanged one is only stamped.
    #[test]
    fn a_write_is_stamped_as_of_and_an_unchanged_file_only_restamped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("netpol").join("snapshot.json");
        let hour_ago = SystemTime::now() - Duration::from_secs(3600);
        write(&path, b"one", hour_ago).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"one");
        assert_eq!(modified(&path), hour_ago);
        let now = SystemTime::now();
        write(&path, b"one", now).unwrap();
        assert_eq!(modified(&path), now);
        write(&path, b"two", hour_ago).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(modified(&path), hour_ago);
    }

    /// A directory others may write (on Windows, one under C:\ that every authenticated user
    /// may modify) is restricted to the node's administrators before the snapshot goes in,
    /// and an unchanged file others may write is restricted when it is stamped: ADD refuses a
    /// snapshot anyone else may write.
    #[cfg(unix)]
    #[test]
    fn where_the_snapshot_is_only_administrators_may_write() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let netpol = dir.path().join("netpol");
        std::fs::create_dir(&netpol).unwrap();
        std::fs::set_permissions(&netpol, std::fs::Permissions::from_mode(0o777)).unwrap();
        let path = netpol.join("snapshot.json");
        write(&path, b"one", SystemTime::now()).unwrap();
        assert_eq!(writers::of(&netpol).unwrap(), Writers::Administrators);
        assert_eq!(writers::of(&path).unwrap(), Writers::Administrators);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        write(&path, b"one", SystemTime::now()).unwrap();
        assert_eq!(writers::of(&path).unwrap(), Writers::Administrators);
    }

    /// Anything but a regular file (or nothing) where the file, its scratch copy or its
    /// directory should be is refused and left as it is: the agent runs as SYSTEM, and a
    /// config may name a directory that holds others' data (it once removed it, recursively).
    #[cfg(unix)]
    #[test]
    fn only_a_regular_file_or_nothing_is_ever_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let path = dir.path().join("snapshot.json");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("ipam-store"), b"10.244.1.5").unwrap();
        let refusal = write(&path, b"{}", now).unwrap_err();
        assert!(refusal.is_refusal(), "{refusal}");
        assert!(
            refusal
                .to_string()
                .contains("is a Directory, not a regular file")
        );
        assert_eq!(
            std::fs::read(path.join("ipam-store")).unwrap(),
            b"10.244.1.5"
        );

        let target = dir.path().join("target.json");
        std::fs::write(&target, b"theirs").unwrap();
        let link = dir.path().join("linked.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(write(&link, b"{}", now).unwrap_err().is_refusal());
        assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"theirs");

        let linked_dir = dir.path().join("linked-dir");
        std::os::unix::fs::symlink(dir.path(), &linked_dir).unwrap();
        let through = linked_dir.join("snapshot.json");
        let refusal = write(&through, b"{}", now).unwrap_err();
        assert!(refusal.to_string().contains("not a directory"), "{refusal}");

        let file = dir.path().join("plain.json");
        let staging = file::beside(&file, &format!("{}.new", std::process::id()));
        std::fs::create_dir(&staging).unwrap();
        assert!(write(&file, b"{}", now).unwrap_err().is_refusal());
        assert!(staging.is_dir() && !file.exists());
    }

    /// A pod of namespace x with a policy admitting pods `b`, and `remote` pods `b`
    /// elsewhere: the full form lists them all inline.
    fn state(remote: usize) -> ClusterState {
        let mut state = ClusterState::new("node-1".to_owned());
        let pod = |name: &str, labels: serde_json::Value, ip: &str| -> PodInfo {
            let pod: Pod = serde_json::from_value(serde_json::json!({
                "metadata": {"namespace": "x", "name": name, "labels": labels},
                "spec": {"containers": []},
                "status": {"phase": "Running", "podIP": ip}
            }))
            .unwrap();
            PodInfo::from_api(&pod).unwrap()
        };
        state
            .cluster
            .set_namespace("x", [("ns".to_owned(), "x".to_owned())].into());
        let a = pod("a", serde_json::json!({"pod": "a"}), "10.244.1.2");
        state.local.insert(a.key.clone());
        state.cluster.set_pod(a);
        for index in 0..remote {
            let ip = format!("10.244.{}.{}", 2 + index / 250, 2 + index % 250);
            state.cluster.set_pod(pod(
                &format!("b-{index}"),
                serde_json::json!({"pod": "b"}),
                &ip,
            ));
        }
        let policy: NetworkPolicy = serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": "x", "name": "b-to-a"},
            "spec": {"podSelector": {"matchLabels": {"pod": "a"}},
                     "ingress": [{"from": [{"podSelector": {"matchLabels": {"pod": "b"}}}]}]}
        }))
        .unwrap();
        state.cluster.set_policy(Policy::from_api(&policy).unwrap());
        state
    }

    fn rendered(mode: Mode, state: &ClusterState, limit: u64) -> Rendered {
        rendered_beside(mode, state, limit, &Programmed::default())
    }

    fn rendered_beside(
        mode: Mode,
        state: &ClusterState,
        limit: u64,
        programmed: &Programmed<'_>,
    ) -> Rendered {
        let path = PathBuf::from("/var/lib/cni-win/network-policy.json");
        let networks = [PolicySettings {
            network: "cbr0".to_owned(),
            snapshot: Some(path),
            acls: Vec::new(),
        }];
        let hns = NodeSnapshot {
            read_at: Instant::now(),
            features: SupportedFeatures::of(hns::HnsVersion::new(13, 2)),
            networks: vec![HostComputeNetwork {
                id: NETWORK,
                name: "cbr0".to_owned(),
                ..HostComputeNetwork::default()
            }],
            endpoints: Vec::new(),
            namespaces: Default::default(),
            load_balancers: Vec::new(),
        };
        let node = NodeAddresses::default();
        let mut translation = Translation::new(&state.cluster, &node);
        let rendering = Rendering {
            mode,
            max_age: Duration::from_secs(300),
        };
        render(
            rendering,
            &networks,
            &hns,
            &mut translation,
            programmed,
            state,
            limit,
        )
    }

    fn decoded(file: &RenderedFile) -> PolicySnapshot {
        PolicySnapshot::from_bytes(&file.bytes).unwrap()
    }

    /// With IP sets the snapshot grows with policies, not with the cluster's pods: a rule
    /// names the set of its peers, which the file lists for the pass to put on the network.
    #[test]
    fn with_ip_sets_a_snapshot_names_the_sets_not_their_members() {
        let small = rendered(Mode::IpSets, &state(10), MAX_SIZE);
        let large = rendered(Mode::IpSets, &state(1000), MAX_SIZE);
        let (small, large) = (
            small.files.values().next().unwrap(),
            large.files.values().next().unwrap(),
        );
        assert_eq!(small.bytes.len(), large.bytes.len());
        assert_eq!(large.sets.len(), 1);
        assert_eq!(large.sets.values().next().unwrap().addresses.len(), 1000);
        assert_eq!(large.networks, BTreeSet::from(["cbr0".to_owned()]));
        let snapshot = decoded(large);
        assert_eq!(
            snapshot.networks,
            BTreeMap::from([("cbr0".to_owned(), NETWORK)])
        );
        let rules = snapshot.policy.unwrap().rules_for_new_pod("x", "a");
        let set = large.sets.keys().next().unwrap();
        assert!(
            rules
                .iter()
                .any(|acl| addresses(acl).any(|entry| entry == set)),
            "{rules:?}"
        );
    }

    /// A set of the snapshot's at an `Id` the network holds (or its endpoints' rules name)
    /// for another group is a collision: no rule of the snapshot names it, so what it would
    /// allow new pods is refused rather than given on the other group's behalf.
    #[test]
    fn a_set_at_a_networks_id_for_another_group_is_left_out() {
        let state = state(3);
        let first = rendered(Mode::IpSets, &state, MAX_SIZE);
        let (id, set) = first
            .files
            .values()
            .next()
            .unwrap()
            .sets
            .iter()
            .next()
            .unwrap();
        let other = BTreeMap::from([(
            id.clone(),
            IpSet {
                name: "ns/y pod:pod=evil v4".to_owned(),
                ..set.clone()
            },
        )]);
        let programmed = Programmed {
            sets: vec![("cbr0", &other)],
            ..Programmed::default()
        };
        let beside = rendered_beside(Mode::IpSets, &state, MAX_SIZE, &programmed);
        let file = beside.files.values().next().unwrap();
        assert!(file.sets.is_empty(), "{:?}", file.sets);
        let rules = decoded(file).policy.unwrap().rules_for_new_pod("x", "a");
        assert!(
            !rules
                .iter()
                .any(|acl| addresses(acl).any(|entry| entry == id)),
            "{rules:?}"
        );
        assert!(
            rules
                .iter()
                .any(|acl| acl.action == hns::schema::policy::AclAction::Block),
            "still isolated: {rules:?}"
        );
    }

    /// A rendering larger than ADD reads is replaced by the narrower form that leaves pod
    /// peers out (still isolated, never wider), and one that does not fit even so is not
    /// written at all (the file goes stale, and ADD then fails closed).
    #[test]
    fn a_snapshot_too_large_is_narrowed_and_else_not_written() {
        let state = state(1000);
        let full = rendered(Mode::Inline, &state, MAX_SIZE);
        let full = full.files.values().next().unwrap();
        assert_eq!(full.form, Form::Full);
        let limit = full.bytes.len() as u64 - 1;
        let narrowed = rendered(Mode::Inline, &state, limit);
        let file = narrowed
            .files
            .values()
            .next()
            .expect("the narrowed form fits");
        assert_eq!(file.form, Form::Narrowed);
        assert!(file.sets.is_empty());
        let policy = decoded(file).policy.unwrap();
        assert_eq!(policy.form, Form::Narrowed);
        let rules = policy.rules_for_new_pod("x", "a");
        assert!(
            rules
                .iter()
                .all(|acl| addresses(acl).all(|entry| !entry.starts_with("10.244.2."))),
            "no pod peer: {rules:?}"
        );
        assert!(
            rules
                .iter()
                .any(|acl| acl.action == hns::schema::policy::AclAction::Block
                    && acl.direction == hns::schema::policy::AclDirection::In),
            "still isolated: {rules:?}"
        );

        let neither = rendered(Mode::Inline, &state, 100);
        assert!(neither.files.is_empty());
        assert_eq!(neither.failed.len(), 1);
    }
}
