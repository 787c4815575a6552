//! The two sides of every case: the Linux binaries with the in-process emulator, and the
//! Windows binaries under Wine with the emulator DLLs. A [`Bench`] is one case on one side.

use std::path::{Path, PathBuf};
use std::process::Command;

use conformance::{Launcher, Native, Wine};
use hns_emulator::STATE_ENV;
use serde_json::Value;

use crate::process::{self, Ran};

/// Which build a case runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Linux binaries; HNS is the in-process emulator.
    Native,
    /// Windows `.exe` files under Wine; HNS is `computenetwork.dll`/`vmcompute.dll` over the
    /// emulator, reached through `hns::native`.
    Wine,
}

impl Side {
    pub const BOTH: [Side; 2] = [Side::Native, Side::Wine];

    pub fn name(self) -> &'static str {
        match self {
            Side::Native => "native",
            Side::Wine => "wine",
        }
    }
}

/// Where the binaries are and how each side starts them.
#[derive(Debug)]
pub struct Lane {
    native_bin: PathBuf,
    windows_bin: PathBuf,
    scratch: PathBuf,
    wine: Wine,
    cycles: usize,
}

impl Lane {
    /// `native_bin` holds the Linux builds, `windows_bin` the `.exe` files with the DLLs
    /// staged beside them; every case gets a fresh directory under `scratch`. `cycles` is how
    /// many pod cycles `win-bridge.exit-status` runs per side.
    pub fn new(native_bin: PathBuf, windows_bin: PathBuf, scratch: PathBuf, cycles: usize) -> Lane {
        Lane {
            native_bin,
            windows_bin,
            scratch,
            wine: Wine::from_env(),
            cycles,
        }
    }

    pub fn scratch(&self) -> &Path {
        &self.scratch
    }

    pub fn launcher(&self, side: Side) -> &dyn Launcher {
        match side {
            Side::Native => &Native,
            Side::Wine => &self.wine,
        }
    }

    /// The build of binary `name` for `side`.
    pub fn program(&self, side: Side, name: &str) -> PathBuf {
        match side {
            Side::Native => self.native_bin.join(name),
            Side::Wine => self.windows_bin.join(format!("{name}.exe")),
        }
    }

    /// A command running `name` on `side`, with the launcher's environment.
    pub fn command(&self, side: Side, name: &str) -> Command {
        let launcher = self.launcher(side);
        let mut command = launcher.command(&self.program(side, name));
        command.envs(launcher.env());
        command
    }

    /// An empty emulated host for one case on one side.
    pub fn bench(&self, side: Side, case: &str) -> Result<Bench<'_>, String> {
        let state = self.scratch.join("hns").join(side.name()).join(case);
        let _ = std::fs::remove_dir_all(&state);
        std::fs::create_dir_all(&state)
            .map_err(|e| format!("cannot create {}: {e}", state.display()))?;
        Ok(Bench {
            lane: self,
            side,
            state,
        })
    }
}

/// One case on one side: its emulated host and the tools that reach it.
#[derive(Debug)]
pub struct Bench<'a> {
    lane: &'a Lane,
    side: Side,
    state: PathBuf,
}

impl Bench<'_> {
    pub fn side(&self) -> Side {
        self.side
    }

    /// How many pod cycles a case that repeats commands runs.
    pub fn cycles(&self) -> usize {
        self.lane.cycles
    }

    /// The state directory on the host.
    pub fn state(&self) -> &Path {
        &self.state
    }

    /// `hnsctl` of the side under test.
    pub fn hnsctl(&self, args: &[&str]) -> Result<Ran, String> {
        self.run(self.side, "hnsctl", args)
    }

    /// `hns-probe` of the side under test.
    pub fn probe(&self, args: &[&str]) -> Result<Ran, String> {
        self.run(self.side, "hns-probe", args)
    }

    /// Linux `hnsctl` on the same state: the independent view a Wine run is checked against
    /// and the way to set test controls. Never run while a Wine process uses the state
    /// (Wine's file locks do not exclude Linux ones); the lane runs everything in sequence.
    pub fn linux_hnsctl(&self, args: &[&str]) -> Result<Ran, String> {
        self.run(Side::Native, "hnsctl", args)
    }

    /// Binary `name` of the side under test, to start as the caller needs (many at once).
    pub fn tool(&self, name: &str) -> Command {
        self.command(self.side, name)
    }

    /// `cni-win` of the side under test.
    pub fn cni_win(&self, args: &[&str]) -> Result<Ran, String> {
        self.run(self.side, "cni-win", args)
    }

    /// The directory of the side's binaries (the plugins' `CNI_PATH`), on the host.
    pub fn bin_dir(&self) -> PathBuf {
        let program = self.lane.program(self.side, "win-bridge");
        program.parent().unwrap_or(Path::new(".")).to_owned()
    }

    /// `path` on the host as the side's programs see it (`Z:\...` under Wine).
    pub fn side_path(&self, path: &Path) -> String {
        self.lane.launcher(self.side).plugin_path(path)
    }

    /// Plugin `name` of the side under test, run as a runtime runs it: the `CNI_*` variables
    /// in `env` (`CNI_PATH` defaults to the side's binaries), `config` on stdin.
    pub fn plugin(&self, name: &str, env: &[(&str, &str)], config: &Value) -> Result<Ran, String> {
        let program = self.lane.program(self.side, name);
        let bin = program.parent().unwrap_or(Path::new("."));
        let mut command = self.command(self.side, name);
        command
            .env("CNI_PATH", self.side_path(bin))
            .envs(env.iter().copied());
        process::run_with_stdin(
            command,
            Some(config.to_string().into_bytes()),
            process::TOOL_DEADLINE,
        )
    }

    fn run(&self, side: Side, name: &str, args: &[&str]) -> Result<Ran, String> {
        let mut command = self.command(side, name);
        command.args(args);
        process::run(command, process::TOOL_DEADLINE)
    }

    /// Program `name` of `side` on this bench's emulated host.
    fn command(&self, side: Side, name: &str) -> Command {
        let mut command = self.lane.command(side, name);
        command.env(STATE_ENV, self.lane.launcher(side).plugin_path(&self.state));
        command
    }
}
