//! What the bundle collects, one step per source, each naming exactly the paths or HNS
//! objects it reads (so `--dry-run` can list them without reading them). The paths come from
//! the operator's flags and from the configs in the CNI config directory: the plugins' log
//! files, Flannel's subnet.env, host-local's stores and the NetworkPolicy snapshot are
//! wherever the configs put them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use cni::case_insensitive;
use cni_win_core::path_keys;
use cni_win_core::platform::ConnectError;
use hns::client::ObjectKind;
use hns::client::{EndpointKind, LoadBalancerKind, NamespaceKind, NetworkKind};
use hns::schema::HostComputeQuery;
use hns::{Client, Guid, RawError, RawHcn};
use ipam_host_local::StoreLocation;
use rootsafe::child::{self, Ended, Stderr};
use rootsafe::file::Kind;
use serde_json::{Value, json};

use super::Settings;
use super::archive::Entry;
use super::source::{self, Skipped};
use crate::checksums::file_sha256;
use crate::confdir::{self, Network};
use crate::doctor;
use crate::drift;
use crate::node::Node;
use crate::record::InstallRecord;
use crate::shipped;

/// The node's HNS, or why it could not be reached.
pub(crate) type Hns = Result<Client, ConnectError>;

/// The node's HNS for a step that needs it; unreachable fails the step with the whole cause.
fn reached(hns: &Hns) -> Result<&Client, StepError> {
    hns.as_ref()
        .map_err(|error| StepError::Failed(crate::chain(error)))
}

/// A step's work: given HNS and its deadline, what it collected so far is kept even when it
/// fails.
type Work = Box<dyn FnOnce(&Hns, &mut Collected, Instant) -> Result<(), StepError> + Send>;

/// A config file, a reservation or a subnet.env larger than this is not one: it is skipped.
const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// How deep under the config directory files are collected (`multus.d/` holds multus'
/// kubeconfig).
const CONF_DIR_DEPTH: usize = 2;
/// How much of a binary's `--version` answer is kept.
const MAX_VERSION_BYTES: usize = 4096;

/// One source of the bundle.
pub struct Step {
    /// What it collects (`HNS networks`).
    pub name: String,
    /// Where from (paths, HNS calls) and within what limit.
    pub source: String,
    pub(crate) work: Work,
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Step")
            .field("name", &self.name)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// What a step collected: its entries and the paths it skipped.
#[derive(Debug, Default)]
pub(crate) struct Collected {
    pub entries: Vec<Entry>,
    pub skipped: Vec<Skipped>,
}

impl Collected {
    fn add(&mut self, name: impl Into<String>, bytes: Vec<u8>) {
        self.entries.push(Entry {
            name: name.into(),
            bytes,
        });
    }

    fn add_json(&mut self, name: &str, value: &impl serde::Serialize) {
        let mut bytes = serde_json::to_vec_pretty(value).expect("a document always serializes");
        bytes.push(b'\n');
        self.add(name, bytes);
    }

    /// Adds the regular file at `path` as `name`; a file that cannot be read is skipped.
    fn add_file(&mut self, name: String, path: &Path) {
        match source::read(path, MAX_FILE_BYTES) {
            Ok(bytes) => self.add(name, bytes),
            Err(why) => self.skipped.push(Skipped::new(path, why)),
        }
    }
}

/// Why a step did not finish.
#[derive(Debug)]
pub(crate) enum StepError {
    Failed(String),
    TimedOut(String),
}

impl From<String> for StepError {
    fn from(message: String) -> StepError {
        StepError::Failed(message)
    }
}

/// Every step for `settings`, in the bundle's order. A config directory that cannot be read
/// names no logs, subnet.env or stores here; its own step reports why.
pub(crate) fn plan(settings: &Settings) -> Vec<Step> {
    let paths = &settings.paths;
    let networks = confdir::read(&paths.conf_dir, paths.cni_path())
        .map(|found| found.networks)
        .unwrap_or_default();
    let mut steps: Vec<Step> = shipped::binaries()
        .iter()
        .map(|binary| {
            let file = binary.file_name();
            let path = paths
                .find_binary(&file)
                .unwrap_or_else(|| paths.bin_dir().join(&file));
            binary_step(path, &file)
        })
        .collect();
    steps.push(host_step());
    steps.push(doctor_step(settings));
    steps.extend([
        hns_step::<NetworkKind>(
            "networks",
            |raw, q| raw.enumerate_networks(q),
            |raw, id| raw.open_network(id),
        ),
        hns_step::<EndpointKind>(
            "endpoints",
            |raw, q| raw.enumerate_endpoints(q),
            |raw, id| raw.open_endpoint(id),
        ),
        hns_step::<NamespaceKind>(
            "namespaces",
            |raw, q| raw.enumerate_namespaces(q),
            |raw, id| raw.open_namespace(id),
        ),
        hns_step::<LoadBalancerKind>(
            "load-balancers",
            |raw, q| raw.enumerate_load_balancers(q),
            |raw, id| raw.open_load_balancer(id),
        ),
    ]);
    steps.push(conf_dir_step(&paths.conf_dir));
    for subnet_file in unique(
        std::iter::once(settings.subnet_file.clone())
            .chain(networks.iter().filter_map(subnet_file)),
    ) {
        steps.push(file_step("Flannel subnet.env", "flannel", subnet_file));
    }
    for store in unique(networks.iter().filter_map(store_dir)) {
        steps.push(store_step(store));
    }
    for snapshot in unique(networks.iter().filter_map(network_policy_snapshot)) {
        steps.push(capped_file_step(
            "NetworkPolicy snapshot (the policy agent's view of this node)",
            "network-policy",
            snapshot,
            cni_win_core::network_policy::MAX_SIZE,
        ));
    }
    let logs = networks
        .iter()
        .filter_map(|n| n.request.config.log_file.clone().map(PathBuf::from));
    for log in unique(logs) {
        steps.push(log_step(log, settings.log_tail_bytes));
    }
    steps.push(file_step(
        "install record",
        "install-record",
        InstallRecord::path(paths.bin_dir()),
    ));
    steps
}

/// Each path once, in first-seen order.
fn unique(paths: impl Iterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut seen = Vec::new();
    for path in paths {
        if !seen.contains(&path) {
            seen.push(path);
        }
    }
    seen
}

/// The subnet.env a Flannel-native config reads (`subnetFile`, read as the plugins read it).
/// Flannel's default is named as `--subnet-file`'s default names it, so that the file is
/// collected once. A value the plugins refuse names no file: doctor's report in the bundle
/// says why the config is refused.
fn subnet_file(network: &Network) -> Option<PathBuf> {
    let value = case_insensitive::get(network.request.config.raw(), "subnetFile")?;
    let path = path_keys::SUBNET_FILE.decode(Some(value)).ok()?;
    Some(
        if path.as_path() == Path::new(path_keys::SUBNET_FILE.default) {
            PathBuf::from(crate::defaults::SUBNET_FILE)
        } else {
            path.into()
        },
    )
}

/// The NetworkPolicy snapshot a config names (`networkPolicySnapshot`), read as the plugins
/// read it (one they refuse names no file).
fn network_policy_snapshot(network: &Network) -> Option<PathBuf> {
    let value = case_insensitive::get(network.request.config.raw(), "networkPolicySnapshot");
    let path = path_keys::NETWORK_POLICY_SNAPSHOT
        .decode(value)
        .ok()
        .flatten()?;
    Some(path.into())
}

/// host-local's `<dataDir>/<network>` when the network's addresses are host-local's: its
/// `ipam` is host-local, or a Flannel-native config leaves the ranges to subnet.env.
fn store_dir(network: &Network) -> Option<PathBuf> {
    let raw = network.request.config.raw();
    let ipam = case_insensitive::get(raw, "ipam").and_then(Value::as_object);
    let ipam_type = ipam
        .and_then(|ipam| case_insensitive::get(ipam, "type"))
        .and_then(Value::as_str);
    let flannel_native = case_insensitive::get(raw, "subnetFile").is_some();
    let host_local = ipam_type == Some("host-local") || (flannel_native && ipam_type.is_none());
    if !host_local {
        return None;
    }
    let location = StoreLocation::from_ipam(ipam).ok()?;
    Some(location.data_dir.join(network.name()))
}

/// A shipped binary where the runtime finds it (`path`): its size, SHA-256 and answer to
/// `--version`, run with the step's deadline. Only a plugin directory's own regular file runs.
fn binary_step(path: PathBuf, file: &str) -> Step {
    let entry = format!("binaries/{file}.json");
    Step {
        name: format!("binary {file}"),
        source: format!("{} (size, SHA-256, `--version`)", path.display()),
        work: Box::new(move |_, collected, deadline| {
            let size = regular_size(&path)?;
            let sha256 = file_sha256(&path).map_err(|e| e.to_string())?;
            let (version, problem) = version(&path, deadline);
            collected.add_json(
                &entry,
                &json!({"path": path, "size": size, "sha256": sha256, "version": version}),
            );
            problem.map_or(Ok(()), Err)
        }),
    }
}

/// The size of the regular file at `path`; anything else is not run.
fn regular_size(path: &Path) -> Result<u64, String> {
    match Kind::at(path) {
        Ok(Some(Kind::Regular)) => std::fs::symlink_metadata(path)
            .map(|metadata| metadata.len())
            .map_err(|e| format!("cannot inspect {}: {e}", path.display())),
        Ok(None) => Err(format!("{} does not exist", path.display())),
        Ok(Some(_)) => Err(format!("{} is not a regular file: not run", path.display())),
        Err(e) => Err(format!("cannot inspect {}: {e}", path.display())),
    }
}

/// What `binary --version` printed by `deadline` (killed then), and the step's problem if it
/// did not answer.
fn version(binary: &Path, deadline: Instant) -> (Value, Option<StepError>) {
    let mut command = Command::new(binary);
    command.arg("--version").env_remove("CNI_COMMAND");
    let timeout = deadline.saturating_duration_since(Instant::now());
    let text = |bytes: &[u8]| {
        String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_VERSION_BYTES)])
            .trim()
            .to_owned()
    };
    match child::run(&mut command, None, Stderr::Capture, timeout) {
        Ok(finished) => match finished.ended {
            Ended::Exited(status) => (
                json!({"stdout": text(&finished.stdout), "stderr": text(&finished.stderr),
                       "exit_code": status.code()}),
                None,
            ),
            Ended::TimedOut => (
                json!({"timed_out_after_ms": finished.elapsed.as_millis() as u64}),
                Some(StepError::TimedOut(format!(
                    "{} --version did not answer within {timeout:?}: killed",
                    binary.display()
                ))),
            ),
        },
        Err(e) => {
            let message = format!(
                "cannot run {}: {}",
                binary.display(),
                std::io::Error::from(e)
            );
            (json!({"error": message}), Some(StepError::Failed(message)))
        }
    }
}

/// The Windows build, the HNS version and the features it enables.
fn host_step() -> Step {
    Step {
        name: "Windows build and HNS version".to_owned(),
        source: "HNS: GET /globals/version, RtlGetVersion".to_owned(),
        work: Box::new(|hns, collected, _| {
            let client = reached(hns)?;
            let features = client.supported_features().map_err(|e| e.to_string())?;
            let table: serde_json::Map<String, Value> = features
                .table()
                .into_iter()
                .map(|(feature, on)| (feature.name().to_owned(), Value::from(on)))
                .collect();
            let build = client
                .windows_build()
                .map(|build| json!(build.0))
                .unwrap_or_else(|e| json!({"error": e.to_string()}));
            collected.add_json(
                "node/hns.json",
                &json!({"windows_build": build, "hns_version": features.version(), "features": table}),
            );
            Ok(())
        }),
    }
}

/// doctor's report, as `cni-win doctor --json` prints it, and the HNS drift of the same read
/// of the node (`hns-drift.json`: each with whose it is, what to do, and whether the daemon's
/// `--apply` repairs it), the sweep's own stale objects among them.
fn doctor_step(settings: &Settings) -> Step {
    let doctor = settings.paths.clone();
    let bin_dirs: String = doctor
        .cni_path()
        .iter()
        .map(|dir| format!(" --bin-dir {}", dir.display()))
        .collect();
    Step {
        name: "doctor".to_owned(),
        source: format!(
            "cni-win doctor --json --conf-dir {}{bin_dirs}",
            doctor.conf_dir.display()
        ),
        work: Box::new(move |hns, collected, _| {
            let node = Node::read(hns.as_ref(), &doctor, None);
            let report = doctor::Doctor::new(doctor.clone()).examine(hns.as_ref().ok(), &node);
            collected.add_json("doctor.json", &report);
            let found: Vec<Value> = drift::find(&node)
                .iter()
                .map(|drift| {
                    json!({
                        "reason": drift.reason.as_str(),
                        "network": drift.network,
                        "object": drift.object,
                        "whose": drift.reason.whose(),
                        "remedy": drift.reason.remedy(),
                        "repairedWithApply": drift.repair.is_some(),
                    })
                })
                .collect();
            collected.add_json("hns-drift.json", &found);
            Ok(())
        }),
    }
}

/// Every HNS object of a kind as the JSON document HNS returns (nothing dropped or renamed by
/// a typed schema), as an array in `hns/<what>.json`.
fn hns_step<K: ObjectKind + 'static>(
    what: &'static str,
    enumerate: fn(&dyn RawHcn, &str) -> Result<String, RawError>,
    open: fn(&dyn RawHcn, &Guid) -> Result<K::Handle, RawError>,
) -> Step {
    Step {
        name: format!("HNS {what}"),
        source: format!("HNS: all {what}, each queried for its whole document"),
        work: Box::new(move |hns, collected, _| {
            let client = reached(hns)?;
            let raw = client.raw();
            let query = HostComputeQuery::all().to_json();
            let ids = enumerate(raw, &query).map_err(|e| e.to_string())?;
            let ids: Vec<Guid> = serde_json::from_str::<Option<Vec<Guid>>>(&ids)
                .map_err(|e| format!("HNS listed {what} as {ids:?}: {e}"))?
                .unwrap_or_default();
            let mut documents = Vec::with_capacity(ids.len());
            for id in ids {
                let handle = match open(raw, &id) {
                    Ok(handle) => handle,
                    // Gone since the listing, or not openable: say so in its place.
                    Err(e) => {
                        documents.push(json!({"Id": id, "error": e.to_string()}));
                        continue;
                    }
                };
                let properties = K::query(raw, &handle, &query);
                let _ = K::close(raw, handle);
                documents.push(match properties {
                    Ok(text) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
                    Err(e) => json!({"Id": id, "error": e.to_string()}),
                });
            }
            collected.add_json(&format!("hns/{what}.json"), &documents);
            Ok(())
        }),
    }
}

/// Every regular file in the config directory (and its subdirectories, for multus'
/// kubeconfig), as `conf/<relative path>`.
fn conf_dir_step(conf_dir: &Path) -> Step {
    let dir = conf_dir.to_owned();
    Step {
        name: "CNI config directory".to_owned(),
        source: format!(
            "regular files under {} ({CONF_DIR_DEPTH} levels deep, at most {} each)",
            dir.display(),
            super::in_units(MAX_FILE_BYTES)
        ),
        work: Box::new(move |_, collected, _| {
            let (files, skipped) = source::regular_files(&dir, CONF_DIR_DEPTH)
                .map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
            collected.skipped.extend(skipped);
            for file in files {
                let relative = file.strip_prefix(&dir).unwrap_or(&file);
                collected.add_file(source::mirrored("conf", relative), &file);
            }
            Ok(())
        }),
    }
}

/// One named file, as `<prefix>/<its path>`.
fn file_step(what: &str, prefix: &'static str, path: PathBuf) -> Step {
    capped_file_step(what, prefix, path, MAX_FILE_BYTES)
}

/// [`file_step`] for a file that may be larger than a config: at most `cap` bytes.
fn capped_file_step(what: &str, prefix: &'static str, path: PathBuf, cap: u64) -> Step {
    Step {
        name: what.to_owned(),
        source: format!("{} (at most {})", path.display(), super::in_units(cap)),
        work: Box::new(move |_, collected, _| {
            let bytes =
                source::read(&path, cap).map_err(|why| format!("{}: {why}", path.display()))?;
            collected.add(source::mirrored(prefix, &path), bytes);
            Ok(())
        }),
    }
}

/// host-local's reservations for one network: the regular files of `<dataDir>/<network>`
/// (one per address, the last reserved address, the lock), not cni-win's index beside them.
fn store_step(dir: PathBuf) -> Step {
    Step {
        name: format!("reservations in {}", dir.display()),
        source: format!(
            "regular files in {} (not its subdirectories)",
            dir.display()
        ),
        work: Box::new(move |_, collected, _| {
            let (files, skipped) = source::regular_files(&dir, 0)
                .map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
            collected.skipped.extend(skipped);
            for file in files {
                collected.add_file(source::mirrored("stores", &file), &file);
            }
            Ok(())
        }),
    }
}

/// The last `tail` bytes of a plugin log: from the current file and, when it is shorter,
/// from the file it was last rotated to.
fn log_step(log: PathBuf, tail: u64) -> Step {
    let rotated = cni::logging::file::rotated_name(&log, 1);
    Step {
        name: format!("plugin log {}", log.display()),
        source: format!(
            "the last {} of {}, continued into {} when shorter",
            super::in_units(tail),
            log.display(),
            rotated.display()
        ),
        work: Box::new(move |_, collected, _| {
            let current =
                source::tail(&log, tail).map_err(|why| format!("{}: {why}", log.display()))?;
            // The current file is all in: the rest of the tail comes from the rotated one.
            let missing = if current.whole {
                tail.saturating_sub(current.bytes.len() as u64)
            } else {
                0
            };
            collected.add(source::mirrored("logs", &log), current.bytes);
            // Never rotated (yet): nothing more to read.
            let rotated_exists = !matches!(Kind::at(&rotated), Ok(None));
            if missing > 0 && rotated_exists {
                match source::tail(&rotated, missing) {
                    Ok(older) => collected.add(source::mirrored("logs", &rotated), older.bytes),
                    Err(why) => collected.skipped.push(Skipped::new(&rotated, why)),
                }
            }
            Ok(())
        }),
    }
}
