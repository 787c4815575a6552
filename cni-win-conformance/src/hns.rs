//! The HNS fixture: every case gets a fresh HCN emulator host with one network and one pod
//! namespace, made with `hnsctl` exactly as an operator would (`network create`, `namespace
//! create`), started through the run's launcher so the Wine lane runs `hnsctl.exe` too.
//!
//! Contributions to the case: `CNI_NETNS` = the namespace GUID, `HCN_EMULATOR_STATE` = the
//! state directory, the config's `name` = the network's name, and `{{hnsState}}` for templates.
//! The template keeps host-local's `dataDir` in the case dir with `{{caseDir}}`.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use thiserror::Error;

use conformance::case::{Context, Failure};
use conformance::exec::{self, Exit, Invocation};
use conformance::fixture::{Fixture, FixtureError, Scope, Setting};
use conformance::launcher::Launcher;

/// The emulator's state variable, read by the plugins' HNS backend.
pub const STATE_ENV: &str = "HCN_EMULATOR_STATE";

/// Flannel host-gw's network: what win-bridge attaches to.
pub const L2BRIDGE_NETWORK: &str =
    "--name cbr0 --type L2Bridge --subnet 10.244.1.0/24 --gateway 10.244.1.1";

/// Flannel vxlan's network as flanneld leaves it: VSID 4096 on the subnet, VXLAN port 4789 and
/// the host's provider address as network policies (HNS adds the DR MAC itself). What
/// win-overlay attaches to.
pub const OVERLAY_NETWORK: &str = "--name flannel.4096 --type Overlay --subnet 10.244.1.0/24 \
    --gateway 10.244.1.1 --vni 4096 --vxlan-port 4789 --provider-address 10.127.130.38";

/// A type neither plugin attaches to, for the "wrong network type" cases.
const FOREIGN_TYPE: &str = "NAT";

/// The state directory inside each case's directory.
const STATE_DIR: &str = "hcn";

/// A fresh emulated HNS host per case.
#[derive(Debug, Clone)]
pub struct HnsFixture {
    hnsctl: PathBuf,
    /// A native `hnsctl` for the emulator's test controls (`stats`, `fault`): a Windows
    /// `hnsctl.exe` has no emulator in it, so under Wine the controls go through the Linux one.
    controls: PathBuf,
    /// `hnsctl network create` arguments; empty for a host without the network.
    network_args: Vec<String>,
    network_name: String,
}

impl HnsFixture {
    /// `network_args` are `hnsctl network create` arguments and must include `--name`.
    pub fn new(
        hnsctl: impl Into<PathBuf>,
        network_args: &str,
    ) -> Result<HnsFixture, UnnamedNetwork> {
        let network_args: Vec<String> =
            network_args.split_whitespace().map(str::to_owned).collect();
        let Some(network_name) = option_value(&network_args, "--name") else {
            return Err(UnnamedNetwork { network_args });
        };
        let hnsctl = hnsctl.into();
        Ok(HnsFixture {
            controls: hnsctl.clone(),
            hnsctl,
            network_args,
            network_name,
        })
    }

    /// Runs the emulator's test controls with `controls`, a native (Linux) `hnsctl`, when
    /// the `hnsctl` the host is made with is a Windows one run under Wine.
    pub fn with_controls(self, controls: impl Into<PathBuf>) -> HnsFixture {
        HnsFixture {
            controls: controls.into(),
            ..self
        }
    }

    /// The network's name, which plugin configs refer to in `name`.
    pub fn network_name(&self) -> &str {
        &self.network_name
    }

    /// The network's type as `hnsctl network create` gets it, if the arguments name one.
    pub fn network_type(&self) -> Option<String> {
        option_value(&self.network_args, "--type")
    }

    /// The same host without the network (it "does not exist yet").
    pub fn without_network(&self) -> HnsFixture {
        HnsFixture {
            network_args: Vec::new(),
            ..self.clone()
        }
    }

    /// The same host with the network of a type no cni-win plugin attaches to.
    pub fn with_foreign_network_type(&self) -> HnsFixture {
        let mut args = self.network_args.clone();
        match args.iter().position(|arg| arg == "--type") {
            Some(i) if i + 1 < args.len() => args[i + 1] = FOREIGN_TYPE.to_owned(),
            _ => args.extend(["--type".to_owned(), FOREIGN_TYPE.to_owned()]),
        }
        HnsFixture {
            network_args: args,
            ..self.clone()
        }
    }

    /// The type the network gets with [`HnsFixture::with_foreign_network_type`].
    pub fn foreign_type(&self) -> &'static str {
        FOREIGN_TYPE
    }

    /// Runs `hnsctl args...` on this case's host, started as the plugin is.
    pub fn hnsctl(&self, ctx: &Context<'_>, args: &[&str]) -> Result<String, Failure> {
        let state = ctx.fixture_env(STATE_ENV).ok_or_else(|| {
            Failure::Fail(format!(
                "the case has no {STATE_ENV}: not on an HNS fixture"
            ))
        })?;
        run_hnsctl(ctx.launcher(), &self.hnsctl, state, args, ctx.timeout())
            .map_err(|e| Failure::Fail(e.to_string()))
    }
}

impl HnsFixture {
    /// Runs the native control `hnsctl` (`stats`, `fault ...`) on this case's host, between
    /// the plugin's calls (a Linux process must not share the state with a running Wine one).
    pub fn control(&self, ctx: &Context<'_>, args: &[&str]) -> Result<String, Failure> {
        let state = ctx.case_dir().join(STATE_DIR);
        run_hnsctl(
            &conformance::Native,
            &self.controls,
            &state.to_string_lossy(),
            args,
            ctx.timeout(),
        )
        .map_err(|e| Failure::Fail(e.to_string()))
    }
}

/// `hnsctl network create` arguments without `--name`: the fixture could not tell plugin configs
/// which network to attach to.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("the HNS network arguments {network_args:?} need --name NAME")]
pub struct UnnamedNetwork {
    /// The arguments as split.
    pub network_args: Vec<String>,
}

/// Why an `hnsctl` run (making the case's host, or a test control) did not give its output.
#[derive(Debug, Error)]
pub enum HnsctlError {
    /// The program could not be started (missing, not executable, no Wine).
    #[error("cannot run {}: {source}", .program.display())]
    Start {
        /// The `hnsctl` that was to run.
        program: PathBuf,
        /// Why the launcher could not start it.
        source: io::Error,
    },
    /// It ran and failed, hung past the deadline or was killed; its stderr says why.
    #[error("hnsctl {} failed ({exit}): {stderr}", .args.join(" "))]
    Failed {
        /// The arguments it ran with.
        args: Vec<String>,
        /// How it ended.
        exit: Exit,
        /// Its stderr, trimmed.
        stderr: String,
    },
}

/// Why the HNS fixture could not make a case's emulated host.
#[derive(Debug, Error)]
pub enum SetUpError {
    /// The emulator's state directory could not be created in the case's directory.
    #[error("{}: {source}", .path.display())]
    StateDir {
        /// The state directory.
        path: PathBuf,
        /// Why it could not be created.
        source: io::Error,
    },
    /// `hnsctl network create` or `namespace create` failed.
    #[error(transparent)]
    Hnsctl(#[from] HnsctlError),
}

/// The value after `flag` in an argument list.
fn option_value(args: &[String], flag: &str) -> Option<String> {
    let i = args.iter().position(|arg| arg == flag)?;
    args.get(i + 1).cloned()
}

/// `hnsctl args...` with `HCN_EMULATOR_STATE=STATE`, started as the plugin is and killed at
/// `timeout`; its stdout, or why it failed. The state goes in the environment, where the plugin
/// finds it too: a Linux hnsctl opens the emulator there, a Windows one under Wine reaches it
/// through the emulated computenetwork.dll.
fn run_hnsctl(
    launcher: &dyn Launcher,
    hnsctl: &Path,
    state: &str,
    args: &[&str],
    timeout: Duration,
) -> Result<String, HnsctlError> {
    let invocation = Invocation::new().set(STATE_ENV, state);
    let exec = exec::execute_with_args(launcher, hnsctl, args, &invocation, timeout).map_err(
        |source| HnsctlError::Start {
            program: hnsctl.to_path_buf(),
            source,
        },
    )?;
    if !exec.exit.success() {
        return Err(HnsctlError::Failed {
            args: args.iter().map(|&arg| arg.to_owned()).collect(),
            exit: exec.exit,
            stderr: String::from_utf8_lossy(&exec.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&exec.stdout).trim().to_owned())
}

impl Fixture for HnsFixture {
    fn name(&self) -> &str {
        "hns"
    }

    fn set_up(&self, scope: &Scope<'_>) -> Result<Setting, FixtureError> {
        Ok(self.make_host(scope)?)
    }
}

impl HnsFixture {
    /// The case's emulated host: the state directory, the network (unless the case wants none)
    /// and the pod's namespace.
    fn make_host(&self, scope: &Scope<'_>) -> Result<Setting, SetUpError> {
        let state = scope.dir.join(STATE_DIR);
        std::fs::create_dir_all(&state).map_err(|source| SetUpError::StateDir {
            path: state.clone(),
            source,
        })?;
        let state_path = scope.launcher.plugin_path(&state);
        let hnsctl = |args: &[&str]| {
            run_hnsctl(
                scope.launcher,
                &self.hnsctl,
                &state_path,
                args,
                scope.timeout,
            )
        };
        if !self.network_args.is_empty() {
            let mut create = vec!["network", "create"];
            create.extend(self.network_args.iter().map(String::as_str));
            hnsctl(&create)?;
        }
        let namespace = hnsctl(&["namespace", "create"])?;
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

    #[cfg(unix)]
    #[test]
    fn a_hanging_hnsctl_is_killed_at_the_runs_deadline() {
        use std::os::unix::fs::PermissionsExt;

        let dir = tempfile::tempdir().unwrap();
        let hnsctl = dir.path().join("hnsctl");
        std::fs::write(&hnsctl, "#!/bin/sh\nsleep 3\necho 0b0c0d0e\n").unwrap();
        std::fs::set_permissions(&hnsctl, std::fs::Permissions::from_mode(0o755)).unwrap();
        let fixture = HnsFixture::new(&hnsctl, L2BRIDGE_NETWORK).unwrap();
        let scope = Scope {
            case_id: "hang",
            dir: dir.path(),
            launcher: &conformance::Native,
            timeout: Duration::from_millis(200),
        };
        let started = std::time::Instant::now();
        let err = fixture.set_up(&scope).unwrap_err();
        assert!(
            err.to_string().contains("still running after 200 ms"),
            "{err}"
        );
        let err = err.downcast::<SetUpError>().unwrap();
        assert!(
            matches!(
                *err,
                SetUpError::Hnsctl(HnsctlError::Failed {
                    exit: Exit::TimedOut(limit),
                    ..
                }) if limit == Duration::from_millis(200)
            ),
            "{err:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn the_network_name_comes_from_the_arguments() {
        let fixture = HnsFixture::new("hnsctl", L2BRIDGE_NETWORK).unwrap();
        assert_eq!(fixture.network_name, "cbr0");
        let unnamed = HnsFixture::new("hnsctl", "--type L2Bridge").unwrap_err();
        assert_eq!(unnamed.network_args, ["--type", "L2Bridge"]);
        assert_eq!(
            unnamed.to_string(),
            r#"the HNS network arguments ["--type", "L2Bridge"] need --name NAME"#
        );
        let overlay = HnsFixture::new("hnsctl", OVERLAY_NETWORK).unwrap();
        assert_eq!(overlay.network_name(), "flannel.4096");
        let foreign = overlay.with_foreign_network_type();
        assert_eq!(
            option_value(&foreign.network_args, "--type").unwrap(),
            "NAT"
        );
        assert_eq!(
            option_value(&foreign.network_args, "--vni").unwrap(),
            "4096"
        );
        assert!(overlay.without_network().network_args.is_empty());
    }
}
