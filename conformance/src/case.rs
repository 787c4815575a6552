//! A conformance case: an id, the spec section it proves, and a check that drives the plugin
//! through a [`Context`].

use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;

use crate::exec::{self, Exec, Invocation};
use crate::fixture::{Fixture, Setting};
use crate::launcher::Launcher;
use crate::protocol::Violation;

/// Why a case did not pass. The message is the case's line in the report, written by the
/// check for that one case, so it stays prose rather than a variant per case.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Failure {
    /// The plugin broke a rule; the message says which and how.
    #[error("{0}")]
    Fail(String),
    /// The case cannot run in this setting (e.g. it needs a valid config and none was given).
    #[error("skipped: {0}")]
    Skip(String),
}

/// A check's own explanation (`format!` in a case) fails the case with it.
impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::Fail(message)
    }
}

/// A reply that breaks the protocol fails the case with the violation's message.
impl From<Violation> for Failure {
    fn from(violation: Violation) -> Failure {
        Failure::Fail(violation.to_string())
    }
}

/// What a check returns: `Ok` with a note on what was proven, or why not.
pub type Outcome = Result<String, Failure>;

type Check = dyn Fn(&Context<'_>) -> Outcome + Send + Sync;

/// One named, self-explaining check of a plugin.
pub struct Case {
    id: String,
    section: String,
    check: Box<Check>,
    fixture: Option<Arc<dyn Fixture>>,
}

impl Case {
    /// `id` is dotted, most general first (`env.missing-netns`), so a prefix selects a group.
    pub fn new(
        id: impl Into<String>,
        section: impl Into<String>,
        check: impl Fn(&Context<'_>) -> Outcome + Send + Sync + 'static,
    ) -> Case {
        Case {
            id: id.into(),
            section: section.into(),
            check: Box::new(check),
            fixture: None,
        }
    }

    /// Runs this case with its own fixture instead of the run's (e.g. "no HNS network").
    pub fn with_fixture(mut self, fixture: Arc<dyn Fixture>) -> Case {
        self.fixture = Some(fixture);
        self
    }

    /// The unique id that reports print and `--case` prefixes select on.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The spec section the case proves, as printed in reports.
    pub fn section(&self) -> &str {
        &self.section
    }

    /// The fixture this case needs instead of the run's, if it needs one.
    pub fn fixture(&self) -> Option<&Arc<dyn Fixture>> {
        self.fixture.as_ref()
    }

    pub(crate) fn check(&self, context: &Context<'_>) -> Outcome {
        (self.check)(context)
    }
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case")
            .field("id", &self.id)
            .field("section", &self.section)
            .field("fixture", &self.fixture)
            .finish_non_exhaustive()
    }
}

/// Everything a check needs to call the plugin as a runtime would, for one case.
#[derive(Debug)]
pub struct Context<'a> {
    pub(crate) plugin: &'a Path,
    pub(crate) launcher: &'a dyn Launcher,
    pub(crate) timeout: Duration,
    pub(crate) cni_path: String,
    pub(crate) template: Option<&'a Map<String, Value>>,
    pub(crate) versions: &'a [String],
    pub(crate) setting: &'a Setting,
    /// This case's directory on the host (`{{caseDir}}` is its spelling for the plugin).
    pub(crate) dir: &'a Path,
    /// The fixture's placeholder values plus `caseDir`.
    pub(crate) vars: BTreeMap<String, String>,
    pub(crate) container_id: String,
}

/// The interface name every case attaches.
pub const IFNAME: &str = "eth0";

/// The network name when the template does not set one.
pub const DEFAULT_NETWORK: &str = "cni-conformance";

impl Context<'_> {
    /// The spec versions the plugin is expected to support.
    pub fn versions(&self) -> &[String] {
        self.versions
    }

    /// This case's container ID: unique per case, so cases never share an attachment.
    pub fn container_id(&self) -> &str {
        &self.container_id
    }

    /// How the plugin is started: a fixture's helper programs are started the same way.
    pub fn launcher(&self) -> &dyn Launcher {
        self.launcher
    }

    /// The deadline of one plugin (or helper) call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// An environment variable the fixture set for this case.
    pub fn fixture_env(&self, name: &str) -> Option<&str> {
        self.setting.env.get(name).map(String::as_str)
    }

    /// The `CNI_NETNS` the fixture prepared for this case.
    pub fn netns(&self) -> &str {
        &self.setting.netns
    }

    /// This case's directory as the harness sees it (for inspecting what the plugin stored).
    pub fn case_dir(&self) -> &Path {
        self.dir
    }

    /// The network config for `version`: the caller's template (or, without one, the bare
    /// `name`/`type`), the fixture's keys, `cniVersion`, and `{{placeholders}}` filled in.
    pub fn config(&self, version: &str) -> Result<Value, Failure> {
        let mut config = self.template.cloned().unwrap_or_default();
        config.extend(self.setting.config.clone());
        config.insert("cniVersion".into(), json!(version));
        config
            .entry("name")
            .or_insert_with(|| json!(DEFAULT_NETWORK));
        let plugin_type = self
            .plugin
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned());
        config
            .entry("type")
            .or_insert_with(|| json!(plugin_type.unwrap_or_default()));
        let mut config = Value::Object(config);
        fill_placeholders(&mut config, &self.vars)?;
        Ok(config)
    }

    /// As [`Context::config`], but for cases that need the plugin to succeed: skipped when the
    /// caller gave no template, since only the caller knows what a working config is.
    pub fn valid_config(&self, version: &str) -> Result<Value, Failure> {
        if self.template.is_none() {
            return Err(Failure::Skip(
                "needs a valid config for this plugin (--config FILE)".into(),
            ));
        }
        self.config(version)
    }

    /// The environment a runtime sets for `command`: `CNI_COMMAND` and `CNI_PATH`, for ADD, DEL
    /// and CHECK the attachment and Kubernetes' `CNI_ARGS`, and the fixture's variables.
    pub fn invocation(&self, command: &str) -> Invocation {
        let mut invocation = Invocation::new()
            .set("CNI_COMMAND", command)
            .set("CNI_PATH", self.cni_path.clone());
        invocation.env.extend(self.setting.env.clone());
        if matches!(command, "ADD" | "DEL" | "CHECK") {
            invocation = invocation
                .set("CNI_CONTAINERID", self.container_id.clone())
                .set("CNI_NETNS", self.setting.netns.clone())
                .set("CNI_IFNAME", IFNAME)
                .set(
                    "CNI_ARGS",
                    format!(
                        "IgnoreUnknown=1;K8S_POD_NAMESPACE=conformance;K8S_POD_NAME={}",
                        self.container_id
                    ),
                );
        }
        invocation
    }

    /// Calls the plugin; only a failure to start it is an error here, everything else is in
    /// the [`Exec`] for the `expect_*` checks.
    pub fn call(&self, invocation: &Invocation) -> Result<Exec, Failure> {
        exec::execute(self.launcher, self.plugin, invocation, self.timeout)
            .map_err(|e| Failure::Fail(format!("cannot start {}: {e}", self.plugin.display())))
    }
}

/// Replaces `{{name}}` in every string of `value`; an unknown name fails the case, since the
/// config would otherwise reach the plugin half-written.
fn fill_placeholders(value: &mut Value, vars: &BTreeMap<String, String>) -> Result<(), Failure> {
    match value {
        Value::String(text) => {
            let mut filled = String::with_capacity(text.len());
            let mut rest = text.as_str();
            while let Some(start) = rest.find("{{") {
                let Some(len) = rest[start..].find("}}") else {
                    break;
                };
                let name = &rest[start + 2..start + len];
                let Some(replacement) = vars.get(name) else {
                    return Err(Failure::Fail(format!(
                        "the config template uses {{{{{name}}}}}, which this run does not provide \
                         (known: {})",
                        vars.keys()
                            .map(String::as_str)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                };
                filled.push_str(&rest[..start]);
                filled.push_str(replacement);
                rest = &rest[start + len + 2..];
            }
            filled.push_str(rest);
            *text = filled;
        }
        Value::Array(items) => {
            for item in items {
                fill_placeholders(item, vars)?;
            }
        }
        Value::Object(map) => {
            for item in map.values_mut() {
                fill_placeholders(item, vars)?;
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_everywhere_and_unknown_ones_fail() {
        let vars = BTreeMap::from([("caseDir".to_owned(), "/tmp/c".to_owned())]);
        let mut config = json!({"dataDir": "{{caseDir}}/state", "list": ["x{{caseDir}}y"], "n": 1,
            "nested": {"k": "{{caseDir}}{{caseDir}}"}, "open": "{{caseDir"});
        fill_placeholders(&mut config, &vars).unwrap();
        assert_eq!(
            config,
            json!({"dataDir": "/tmp/c/state", "list": ["x/tmp/cy"], "n": 1,
                "nested": {"k": "/tmp/c/tmp/c"}, "open": "{{caseDir"})
        );
        let mut unknown = json!({"s": "{{netns}}"});
        let Err(Failure::Fail(msg)) = fill_placeholders(&mut unknown, &vars) else {
            panic!("an unknown placeholder must fail");
        };
        assert!(
            msg.contains("{{netns}}") && msg.contains("known: caseDir"),
            "{msg}"
        );
    }
}
