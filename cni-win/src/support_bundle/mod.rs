//! `cni-win support-bundle`: one zip an operator attaches to a bug report, with what a
//! maintainer would otherwise ask for one PowerShell command at a time: every installed
//! binary's version, the Windows build and HNS version, doctor's report, every HNS network,
//! endpoint, namespace and load balancer as HNS returns them, the CNI config directory,
//! Flannel's subnet.env, host-local's reservations, the end of the plugins' log and the
//! install record.
//!
//! Safe to run on a sick node, as SYSTEM: each step ([`steps`]) runs on its own thread with
//! a deadline, and one that fails or hangs is recorded in the manifest and abandoned, never
//! fatal; the entries together stay under a size cap; only the paths the steps name are read,
//! never through a link and never a special file ([`source`]); every entry is redacted before
//! it is kept ([`redact`]); and the zip is published atomically, never over a file
//! ([`archive`]). `manifest.json` in the zip says what each step did, what was skipped and
//! what was redacted (where, never the value).

pub mod archive;
pub mod redact;
pub mod source;
pub mod steps;

use std::path::PathBuf;
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use cni_win_core::platform::ConnectError;

use crate::paths::NodePaths;
use hns::Client;
use serde::Serialize;

pub use archive::{Entry, Utc};
pub use source::Skipped;
pub use steps::Step;

use crate::error::Error;
use steps::{Collected, Hns, StepError};

/// The default `--log-tail`: half a MiB holds a few thousand plugin runs, the last minutes
/// of a busy node.
pub const DEFAULT_LOG_TAIL_BYTES: u64 = 512 * 1024;
/// The default `--step-timeout`: far above what any step takes on a healthy node (HNS
/// answers in milliseconds), short enough that a hung HNS leaves the operator waiting minutes,
/// not forever.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(30);
/// The default `--timeout`: the whole bundle, however many steps hang; ten steps hung to
/// their own deadline would otherwise keep an operator waiting five minutes.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(180);
/// The default `--max-size`: room for thousands of endpoints and a full log tail, and still an
/// attachment an issue tracker takes.
pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;
/// The manifest's name in the zip.
pub const MANIFEST: &str = "manifest.json";

/// How long after its deadline a step's thread is waited for: a step that kills its child at
/// the deadline reports that itself, with what it had collected.
const GRACE: Duration = Duration::from_millis(500);

/// What to collect and within what limits.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The CNI config directory the runtime reads and where it finds the plugins: the only
    /// binaries run are the plugins found there.
    pub paths: NodePaths,
    /// Flannel's subnet.env, collected with any other a config names.
    pub subnet_file: PathBuf,
    /// How much of the end of each plugin log.
    pub log_tail_bytes: u64,
    /// How long one step may take.
    pub step_timeout: Duration,
    /// How long the whole collection may take: a step left when it has passed is recorded as
    /// not run, and a step is never given more than what is left.
    pub timeout: Duration,
    /// The most the entries may hold together, uncompressed (the manifest comes on top).
    pub max_bytes: u64,
}

/// The steps a bundle would run, for `--dry-run` or to run them.
#[derive(Debug)]
pub struct Plan {
    settings: Settings,
    /// Every step, in the bundle's order.
    pub steps: Vec<Step>,
}

/// How a step came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It collected what it names.
    Ok,
    /// It failed; the record says why, and keeps what it had collected.
    Failed,
    /// It passed its deadline (or the bundle's) and was abandoned.
    TimedOut,
}

/// One step in the manifest.
#[derive(Debug, Clone, Serialize)]
pub struct StepRecord {
    /// What it collects ([`Step::name`]).
    pub name: String,
    /// Where from ([`Step::source`]).
    pub source: String,
    /// How it came out.
    pub outcome: Outcome,
    /// Why it failed or timed out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The entries it added to the zip.
    pub entries: Vec<String>,
    /// Their size, uncompressed.
    pub bytes: u64,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
}

/// A value replaced by [`redact::REDACTED`]: in which entry and under which key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Redaction {
    /// The zip entry it was in.
    pub entry: String,
    /// Where in it: a JSON pointer, or `line N: key` in text.
    pub at: String,
}

/// The limits a bundle was collected within.
#[derive(Debug, Clone, Serialize)]
pub struct Limits {
    /// [`Settings::step_timeout`], in milliseconds.
    pub step_timeout_ms: u64,
    /// [`Settings::timeout`], in milliseconds.
    pub timeout_ms: u64,
    /// [`Settings::max_bytes`].
    pub max_bytes: u64,
    /// [`Settings::log_tail_bytes`].
    pub log_tail_bytes: u64,
}

/// `manifest.json`: what the bundle is and how each step went.
#[derive(Debug, Clone, Serialize)]
pub struct Manifest {
    /// `cni-win 0.1.0 (commit 0123456789ab)`.
    pub written_by: String,
    /// When, in UTC (RFC 3339).
    pub created: String,
    /// The node's host name.
    pub host: String,
    /// The limits it was collected within.
    pub limits: Limits,
    /// Every step, in the bundle's order.
    pub steps: Vec<StepRecord>,
    /// Paths looked at and not read (links, FIFOs, files too large), and entries dropped at
    /// the size cap.
    pub skipped: Vec<Skipped>,
    /// Every value redacted, by where it was (never the value).
    pub redacted: Vec<Redaction>,
}

/// A collected bundle: its entries, `manifest.json` last.
#[derive(Debug)]
pub struct Bundle {
    /// The zip's entries, redacted, `manifest.json` last.
    pub entries: Vec<Entry>,
    /// What the manifest says.
    pub manifest: Manifest,
    /// When the collection started: the bundle's default name and its entries' dates.
    pub created: Utc,
}

impl Plan {
    /// The steps for `settings` (reads the config directory to find the logs, subnet.env
    /// files and stores its configs name; reads nothing else).
    pub fn new(settings: &Settings) -> Plan {
        Plan {
            settings: settings.clone(),
            steps: steps::plan(settings),
        }
    }

    /// Runs every step against `hns` (the node's HNS or why it could not be reached).
    pub fn collect(self, hns: Result<Client, ConnectError>) -> Bundle {
        let created = Utc::now();
        let settings = self.settings;
        let hns = Arc::new(hns);
        let mut entries = Vec::new();
        let mut skipped = Vec::new();
        let mut redacted = Vec::new();
        let mut records = Vec::new();
        let mut total = 0u64;
        let overall = Instant::now() + settings.timeout;
        for step in self.steps {
            let (name, source) = (step.name.clone(), step.source.clone());
            let started = Instant::now();
            let left = overall.saturating_duration_since(started);
            let (collected, result) = if left.is_zero() {
                (
                    Collected::default(),
                    Err(StepError::TimedOut(format!(
                        "not run: the bundle's deadline of {:?} had passed",
                        settings.timeout
                    ))),
                )
            } else {
                run(step, Arc::clone(&hns), settings.step_timeout.min(left))
            };
            let mut record = StepRecord {
                name,
                source,
                outcome: Outcome::Ok,
                error: None,
                entries: Vec::new(),
                bytes: 0,
                duration_ms: started.elapsed().as_millis() as u64,
            };
            match result {
                Ok(()) => {}
                Err(StepError::Failed(error)) => {
                    (record.outcome, record.error) = (Outcome::Failed, Some(error))
                }
                Err(StepError::TimedOut(error)) => {
                    (record.outcome, record.error) = (Outcome::TimedOut, Some(error));
                }
            }
            skipped.extend(collected.skipped);
            for entry in collected.entries {
                // Two paths can mirror to one name (`C:\k\..\cni.log` and `C:\cni.log`): the
                // zip holds the first.
                if entry.name == MANIFEST
                    || entries.iter().any(|kept: &Entry| kept.name == entry.name)
                {
                    skipped.push(Skipped {
                        path: entry.name,
                        why: "an entry of that name is in the bundle already".to_owned(),
                    });
                    continue;
                }
                let (bytes, found) = redact::redact(&entry.bytes);
                let size = bytes.len() as u64;
                if total + size > settings.max_bytes {
                    skipped.push(Skipped {
                        path: entry.name,
                        why: format!(
                            "{size} bytes would take the bundle over its size cap of {} bytes",
                            settings.max_bytes
                        ),
                    });
                    continue;
                }
                total += size;
                record.bytes += size;
                record.entries.push(entry.name.clone());
                redacted.extend(found.into_iter().map(|at| Redaction {
                    entry: entry.name.clone(),
                    at,
                }));
                entries.push(Entry {
                    name: entry.name,
                    bytes,
                });
            }
            records.push(record);
        }
        let manifest = Manifest {
            written_by: written_by(),
            created: created.rfc3339(),
            host: host_name(),
            limits: Limits {
                step_timeout_ms: settings.step_timeout.as_millis() as u64,
                timeout_ms: settings.timeout.as_millis() as u64,
                max_bytes: settings.max_bytes,
                log_tail_bytes: settings.log_tail_bytes,
            },
            steps: records,
            skipped,
            redacted,
        };
        let mut text = serde_json::to_vec_pretty(&manifest).expect("a manifest always serializes");
        text.push(b'\n');
        entries.push(Entry {
            name: MANIFEST.to_owned(),
            bytes: text,
        });
        Bundle {
            entries,
            manifest,
            created,
        }
    }
}

impl std::fmt::Display for Plan {
    /// What `--dry-run` prints: each step, where it reads and the limits.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for step in &self.steps {
            writeln!(f, "{}: {}", step.name, step.source)?;
        }
        writeln!(
            f,
            "limits: each step {:?}, all steps {:?}, at most {} in all (uncompressed), log tails \
             {}; secrets redacted; links and special files skipped",
            self.settings.step_timeout,
            self.settings.timeout,
            in_units(self.settings.max_bytes),
            in_units(self.settings.log_tail_bytes)
        )
    }
}

impl Bundle {
    /// Writes the zip at `output`; refuses when anything is there.
    pub fn publish(&self, output: &std::path::Path) -> Result<(), Error> {
        archive::publish(output, &self.entries, self.created)
    }
}

/// The default output: `cni-win-support-<host>-<UTC time>.zip`.
pub fn default_file_name() -> String {
    format!(
        "cni-win-support-{}-{}.zip",
        host_name(),
        Utc::now().compact()
    )
}

/// Runs `step` on its own thread until its deadline (and a grace): a step still running then
/// is abandoned (its thread finishes or not on its own; nothing waits for it).
fn run(step: Step, hns: Arc<Hns>, timeout: Duration) -> (Collected, Result<(), StepError>) {
    let (sender, receiver) = mpsc::channel();
    let deadline = Instant::now() + timeout;
    let work = step.work;
    let spawned = thread::Builder::new()
        .name(format!("bundle: {}", step.name))
        .spawn(move || {
            let mut collected = Collected::default();
            let result = work(&hns, &mut collected, deadline);
            let _ = sender.send((collected, result));
        });
    if let Err(e) = spawned {
        return (
            Collected::default(),
            Err(StepError::Failed(format!("cannot start it: {e}"))),
        );
    }
    match receiver.recv_timeout(timeout + GRACE) {
        Ok(done) => done,
        Err(mpsc::RecvTimeoutError::Timeout) => (
            Collected::default(),
            Err(StepError::TimedOut(format!(
                "still running after {timeout:?}: abandoned"
            ))),
        ),
        Err(mpsc::RecvTimeoutError::Disconnected) => (
            Collected::default(),
            Err(StepError::Failed("the step panicked".to_owned())),
        ),
    }
}

/// `64 MiB`, `512 KiB` or `4000 bytes`: a size as an operator gave it.
fn in_units(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    match bytes {
        0 => "0 bytes".to_owned(),
        _ if bytes.is_multiple_of(MIB) => format!("{} MiB", bytes / MIB),
        _ if bytes.is_multiple_of(1024) => format!("{} KiB", bytes / 1024),
        _ => format!("{bytes} bytes"),
    }
}

fn written_by() -> String {
    let build = cni::build!();
    format!(
        "cni-win {} (commit {})",
        build.version,
        build.commit.unwrap_or("unknown")
    )
}

/// This node's name, as far as it can be told without a system call of its own, made safe
/// for a file name.
fn host_name() -> String {
    #[cfg(windows)]
    let name = std::env::var("COMPUTERNAME").unwrap_or_default();
    #[cfg(not(windows))]
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default();
    let name: String = name
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    if name.is_empty() {
        "node".to_owned()
    } else {
        name
    }
}
