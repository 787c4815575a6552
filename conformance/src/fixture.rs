//! What a case needs set up around the plugin before it runs, and torn down after.
//!
//! The protocol cases need nothing but an empty directory. HNS cases (a later issue) need an HCN
//! emulator network and namespace created with `hnsctl`, the namespace GUID as `CNI_NETNS` and the
//! emulator's state file in `HCN_EMULATOR_STATE`: a [`Fixture`] provides exactly those
//! contributions ([`Setting`]), so cases stay the same whichever fixture a run uses.
//!
//! A run's fixture is given to [`crate::Harness::with_fixture`]; a case that needs different
//! surroundings (e.g. "the network does not exist") brings its own with
//! [`crate::Case::with_fixture`].

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::time::Duration;

use crate::launcher::Launcher;

/// Why a fixture could not set up or tear down a case's surroundings: the fixture's own error
/// type, boxed because the harness holds fixtures of any kind behind one trait object. Its
/// message becomes the case's failure message.
pub type FixtureError = Box<dyn std::error::Error + Send + Sync>;

/// Sets up and tears down one case's surroundings.
pub trait Fixture: fmt::Debug + Send + Sync {
    /// A short name for reports.
    fn name(&self) -> &str;

    /// Prepares the case; `Err` fails the case with the message, without running it.
    fn set_up(&self, scope: &Scope<'_>) -> Result<Setting, FixtureError>;

    /// Undoes [`Fixture::set_up`]; runs whether the case passed or not. The scope's directory
    /// is removed by the harness afterwards.
    fn tear_down(&self, scope: &Scope<'_>, setting: &Setting) -> Result<(), FixtureError> {
        let _ = (scope, setting);
        Ok(())
    }
}

/// Where and how a fixture works for one case.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The case being run, so a fixture can name what it creates after it.
    pub case_id: &'a str,
    /// An empty directory of this case's own (e.g. for an emulator state file).
    pub dir: &'a Path,
    /// The run's launcher: a fixture that runs helper programs (`hnsctl`) starts them the same way
    /// the plugin is started (natively, or under Wine), with [`crate::exec::execute`].
    pub launcher: &'a dyn Launcher,
    /// The run's per-call deadline, for those helper programs.
    pub timeout: Duration,
}

/// A fixture's contributions to every plugin call of one case.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Setting {
    /// The value of `CNI_NETNS` for ADD, DEL and CHECK.
    pub netns: String,
    /// Extra process environment (e.g. `HCN_EMULATOR_STATE`).
    pub env: BTreeMap<String, String>,
    /// Top-level config keys that override the caller's template (e.g. the network `name`).
    pub config: Map<String, Value>,
    /// Values for `{{placeholders}}` in the config template, as the plugin must see them.
    pub vars: BTreeMap<String, String>,
}

/// `CNI_NETNS` when no fixture creates a namespace: plugins that only record it work; plugins
/// that need a real namespace need a fixture that makes one.
pub const PLACEHOLDER_NETNS: &str = "cni-conformance-netns";

/// No surroundings: the case gets its directory (as `{{caseDir}}`) and a placeholder netns.
#[derive(Debug, Clone, Copy, Default)]
pub struct Plain;

impl Fixture for Plain {
    fn name(&self) -> &str {
        "plain"
    }

    fn set_up(&self, _scope: &Scope<'_>) -> Result<Setting, FixtureError> {
        Ok(Setting {
            netns: PLACEHOLDER_NETNS.to_owned(),
            ..Setting::default()
        })
    }
}
