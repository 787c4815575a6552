//! A run: one plugin, one launcher, one fixture, a config template, and the selected cases.

use serde_json::{Map, Value};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use thiserror::Error;

use crate::case::{Case, Context, Failure, Outcome};
use crate::catalogue::Catalogue;
use crate::fixture::{Fixture, FixtureError, Plain, Scope};
use crate::launcher::{Launcher, Native};
use crate::report::{CaseReport, Report, Verdict};
use crate::schema::SPEC_VERSIONS;

/// A plugin call taking longer than this is killed: real ones take milliseconds.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// How to run the plugin under test; build with [`Harness::new`] and the `with_*` methods.
#[derive(Debug, Clone)]
pub struct Harness {
    plugin: PathBuf,
    launcher: Arc<dyn Launcher>,
    fixture: Arc<dyn Fixture>,
    cni_path: Vec<PathBuf>,
    template: Option<Map<String, Value>>,
    timeout: Duration,
    versions: Vec<String>,
}

impl Harness {
    /// Native launcher, plain fixture, no config template, [`DEFAULT_TIMEOUT`], every released
    /// spec version expected, `CNI_PATH` = the plugin's directory.
    pub fn new(plugin: impl Into<PathBuf>) -> Harness {
        Harness {
            plugin: plugin.into(),
            launcher: Arc::new(Native),
            fixture: Arc::new(Plain),
            cni_path: Vec::new(),
            template: None,
            timeout: DEFAULT_TIMEOUT,
            versions: SPEC_VERSIONS.map(str::to_owned).to_vec(),
        }
    }

    /// Runs plugins through `launcher` (e.g. under Wine) instead of as native processes.
    pub fn with_launcher(mut self, launcher: Arc<dyn Launcher>) -> Harness {
        self.launcher = launcher;
        self
    }

    /// The fixture for every case that does not bring its own.
    pub fn with_fixture(mut self, fixture: Arc<dyn Fixture>) -> Harness {
        self.fixture = fixture;
        self
    }

    /// Host directories for `CNI_PATH` (the launcher spells and joins them).
    pub fn with_cni_path(mut self, dirs: Vec<PathBuf>) -> Harness {
        self.cni_path = dirs;
        self
    }

    /// A valid config for this plugin; cases set `cniVersion` (and `name` when it is absent).
    /// String values may use `{{caseDir}}` and the fixture's placeholders. Must be an object.
    pub fn with_config_template(mut self, template: Value) -> Result<Harness, TemplateNotAnObject> {
        match template {
            Value::Object(map) => {
                self.template = Some(map);
                Ok(self)
            }
            found => Err(TemplateNotAnObject { found }),
        }
    }

    /// How long one plugin call may run before it is killed and the case fails.
    pub fn with_timeout(mut self, timeout: Duration) -> Harness {
        self.timeout = timeout;
        self
    }

    /// The versions the plugin must support (default: all released ones).
    pub fn with_versions(mut self, versions: Vec<String>) -> Harness {
        self.versions = versions;
        self
    }

    /// Runs the cases of `catalogue` whose id starts with `filter`, in order.
    pub fn run(&self, catalogue: &Catalogue, filter: &str) -> Report {
        Report {
            plugin: self.plugin.display().to_string(),
            launcher: self.launcher.name().to_owned(),
            fixture: self.fixture.name().to_owned(),
            cases: catalogue
                .select(filter)
                .map(|case| self.run_case(case))
                .collect(),
        }
    }

    fn run_case(&self, case: &Case) -> CaseReport {
        let started = Instant::now();
        let (verdict, message) = match self.outcome(case) {
            Ok(note) => (Verdict::Pass, note),
            Err(Failure::Fail(why)) => (Verdict::Fail, why),
            Err(Failure::Skip(why)) => (Verdict::Skip, why),
        };
        CaseReport {
            id: case.id().to_owned(),
            section: case.section().to_owned(),
            verdict,
            message,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// Sets up the fixture, runs the check (a panic in it fails the case, not the run), and
    /// tears down; a failed tear-down fails an otherwise passing case.
    fn outcome(&self, case: &Case) -> Outcome {
        let dir = tempfile::Builder::new()
            .prefix("cni-conformance-")
            .tempdir()
            .map_err(Surroundings::CaseDir)?;
        let fixture = case.fixture().unwrap_or(&self.fixture);
        let scope = Scope {
            case_id: case.id(),
            dir: dir.path(),
            launcher: self.launcher.as_ref(),
            timeout: self.timeout,
        };
        let setting = fixture
            .set_up(&scope)
            .map_err(|source| Surroundings::SetUp {
                fixture: fixture.name().to_owned(),
                source,
            })?;

        let mut vars = setting.vars.clone();
        vars.insert("caseDir".into(), self.launcher.plugin_path(dir.path()));
        let cni_path = match self.cni_path.as_slice() {
            [] => vec![self.plugin.parent().unwrap_or(Path::new(".")).to_path_buf()],
            dirs => dirs.to_vec(),
        };
        let context = Context {
            plugin: &self.plugin,
            launcher: self.launcher.as_ref(),
            timeout: self.timeout,
            cni_path: self.launcher.join_paths(&cni_path),
            template: self.template.as_ref(),
            versions: &self.versions,
            setting: &setting,
            dir: dir.path(),
            vars,
            container_id: container_id_for(case.id()),
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| case.check(&context)))
            .unwrap_or_else(|_| Err(Failure::Fail("the check panicked (a harness bug)".into())));

        match (fixture.tear_down(&scope, &setting), outcome) {
            (Ok(()), outcome) => outcome,
            (Err(source), Ok(_)) => Err(Surroundings::TearDown {
                fixture: fixture.name().to_owned(),
                source,
            }
            .into()),
            (Err(source), Err(Failure::Fail(why) | Failure::Skip(why))) => {
                Err(Failure::Fail(format!(
                    "{why}; fixture {} tear-down also failed: {source}",
                    fixture.name()
                )))
            }
        }
    }
}

/// A config template that is not a JSON object, so it cannot be a network config.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("the config template must be a JSON object, found {found}")]
pub struct TemplateNotAnObject {
    /// What was given instead.
    pub found: Value,
}

/// Why a case's surroundings could not be made or undone; fails the case with its message.
#[derive(Debug, Error)]
enum Surroundings {
    #[error("cannot create the case's temp dir: {0}")]
    CaseDir(#[source] std::io::Error),
    #[error("fixture {fixture} set-up failed: {source}")]
    SetUp {
        fixture: String,
        source: FixtureError,
    },
    #[error("fixture {fixture} tear-down failed: {source}")]
    TearDown {
        fixture: String,
        source: FixtureError,
    },
}

impl From<Surroundings> for Failure {
    fn from(error: Surroundings) -> Failure {
        Failure::Fail(error.to_string())
    }
}

/// A valid, per-case container ID (`^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`).
fn container_id_for(case_id: &str) -> String {
    let safe: String = case_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("cfm-{safe}")
}
