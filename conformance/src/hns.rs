//! The HNS fixture: every case gets a fresh HCN emulator host with one network and one pod
//! namespace, made with `hnsctl` exactly as an operator would (`network create`, `namespace
//! create`), started through the run's launcher so the Wine lane runs `hnsctl.exe` too.
//!
//! Contributions to the case: `CNI_NETNS` = the namespace GUID, `HCN_EMULATOR_STATE` = the
//! state directory, the config's `name` = the network's name, and `{{hnsState}}` for templates.
//! The template keeps host-local's `dataDir` in the case dir with `{{caseDir}}`.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::json;

use crate::fixture::{Fixture, Scope, Setting};

/// The emulator's state variable, read by the plugins' HNS backend.
pub const STATE_ENV: &str = "HCN_EMULATOR_STATE";

/// Flannel host-gw's network: what win-bridge attaches to.
pub const L2BRIDGE_NETWORK: &str =
    "--name cbr0 --type L2Bridge --subnet 10.244.1.0/24 --gateway 10.244.1.1";

/// A fresh emulated HNS host per case.
#[derive(Debug, Clone)]
pub struct HnsFixture {
    hnsctl: PathBuf,
    network_args: Vec<String>,
    network_name: String,
}

impl HnsFixture {
    /// `network_args` are `hnsctl network create` arguments and must include `--name`.
    pub fn new(hnsctl: impl Into<PathBuf>, network_args: &str) -> Result<HnsFixture, String> {
        let network_args: Vec<String> =
            network_args.split_whitespace().map(str::to_owned).collect();
        let network_name = network_args
            .iter()
            .position(|arg| arg == "--name")
            .and_then(|i| network_args.get(i + 1))
            .cloned()
            .ok_or_else(|| {
                format!("the HNS network arguments {network_args:?} need --name NAME")
            })?;
        Ok(HnsFixture {
            hnsctl: hnsctl.into(),
            network_args,
            network_name,
        })
    }

    /// Runs `hnsctl --state STATE args...`; its stdout, or why it failed.
    fn hnsctl(&self, scope: &Scope<'_>, state: &Path, args: &[&str]) -> Result<String, String> {
        let output = scope
            .launcher
            .command(&self.hnsctl)
            .arg("--state")
            .arg(scope.launcher.plugin_path(state))
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.hnsctl.display()))?;
        if !output.status.success() {
            return Err(format!(
                "hnsctl {} failed ({}): {}",
                args.join(" "),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }
}

impl Fixture for HnsFixture {
    fn name(&self) -> &str {
        "hns"
    }

    fn set_up(&self, scope: &Scope<'_>) -> Result<Setting, String> {
        let state = scope.dir.join("hcn");
        std::fs::create_dir_all(&state).map_err(|e| format!("{}: {e}", state.display()))?;
        let mut create = vec!["network", "create"];
        create.extend(self.network_args.iter().map(String::as_str));
        self.hnsctl(scope, &state, &create)?;
        let namespace = self.hnsctl(scope, &state, &["namespace", "create"])?;
        let state_path = scope.launcher.plugin_path(&state);
        let mut setting = Setting {
            netns: namespace,
            ..Setting::default()
        };
        setting.env.insert(STATE_ENV.to_owned(), state_path.clone());
        setting
            .config
            .insert("name".to_owned(), json!(self.network_name));
        setting.vars.insert("hnsState".to_owned(), state_path);
        Ok(setting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_network_name_comes_from_the_arguments() {
        let fixture = HnsFixture::new("hnsctl", L2BRIDGE_NETWORK).unwrap();
        assert_eq!(fixture.network_name, "cbr0");
        assert!(HnsFixture::new("hnsctl", "--type L2Bridge").is_err());
    }
}
