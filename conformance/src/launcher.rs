//! How a plugin binary is started, and how host paths are spelled to it.
//!
//! Natively a plugin is exec'd directly and sees host paths. Under Wine (a later lane) the same
//! catalogue runs `wine64 plugin.exe`, and every path the plugin sees (CNI_PATH, a state dir in the
//! config) must be a Windows path (`Z:\...`) joined with `;`. Everything lane-specific lives behind
//! [`Launcher`], so such a lane is one more implementation, not a change to cases or fixtures:
//!
//! - `command`: `wine64` with the `.exe` as first argument (and `WINEDEBUG=-all`);
//! - `plugin_path`: `Z:` followed by the absolute host path with `/` turned into `\`;
//! - `path_list_separator`: `;`.
//!
//! Given to [`crate::Harness::with_launcher`], it reaches the plugin calls, `CNI_PATH`,
//! `{{caseDir}}`, and fixtures (which start their helpers, e.g. `hnsctl.exe`, through
//! [`crate::fixture::Scope::launcher`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Starts plugin processes and translates host paths into the plugin's view of them.
pub trait Launcher: fmt::Debug + Send + Sync {
    /// A short name for reports (`native`, `wine`).
    fn name(&self) -> &str;

    /// The process that runs `program`; the caller adds environment, stdin and pipes.
    fn command(&self, program: &Path) -> Command;

    /// `host` as the plugin must see it (in CNI_PATH, configs, fixture variables).
    fn plugin_path(&self, host: &Path) -> String;

    /// Host directories joined into one `CNI_PATH` value, with the plugin's separator.
    fn join_paths(&self, dirs: &[PathBuf]) -> String {
        let separator = self.path_list_separator().to_string();
        dirs.iter()
            .map(|d| self.plugin_path(d))
            .collect::<Vec<_>>()
            .join(&separator)
    }

    /// The `CNI_PATH` list separator the plugin splits on.
    fn path_list_separator(&self) -> char;

    /// Variables the launcher itself needs in every process it starts (e.g. `WINEPREFIX`):
    /// applied over the inherited environment and under each call's own variables.
    fn env(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// Runs the plugin directly, as a runtime on the same OS does.
#[derive(Debug, Clone, Copy, Default)]
pub struct Native;

impl Launcher for Native {
    fn name(&self) -> &str {
        "native"
    }

    fn command(&self, program: &Path) -> Command {
        Command::new(program)
    }

    fn plugin_path(&self, host: &Path) -> String {
        host.to_string_lossy().into_owned()
    }

    fn path_list_separator(&self) -> char {
        if cfg!(windows) { ';' } else { ':' }
    }
}

/// Runs a Windows `.exe` under Wine on a Unix host: `wine64 plugin.exe`, with every path the
/// plugin sees spelled as a Windows path on Wine's `Z:` drive (the host's `/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wine {
    program: PathBuf,
    prefix: Option<PathBuf>,
}

impl Wine {
    /// Names the Wine loader to use (default `wine64`).
    pub const PROGRAM_ENV: &str = "WINE";

    /// Runs plugins with the Wine loader `program`; the prefix is inherited (`WINEPREFIX`).
    pub fn new(program: impl Into<PathBuf>) -> Wine {
        Wine {
            program: program.into(),
            prefix: None,
        }
    }

    /// The loader from `$WINE` (else `wine64` on `PATH`) and the prefix from `$WINEPREFIX`.
    pub fn from_env() -> Wine {
        let program = std::env::var_os(Wine::PROGRAM_ENV)
            .filter(|value| !value.is_empty())
            .map_or_else(|| PathBuf::from("wine64"), PathBuf::from);
        let prefix = std::env::var_os("WINEPREFIX")
            .filter(|value| !value.is_empty())
            .map(PathBuf::from);
        Wine { program, prefix }
    }

    /// Uses the Wine prefix (the emulated `C:` drive and registry) at `prefix`.
    pub fn with_prefix(mut self, prefix: impl Into<PathBuf>) -> Wine {
        self.prefix = Some(prefix.into());
        self
    }
}

impl Launcher for Wine {
    fn name(&self) -> &str {
        "wine"
    }

    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(&self.program);
        command.arg(program);
        command
    }

    fn plugin_path(&self, host: &Path) -> String {
        windows_path(host)
    }

    fn path_list_separator(&self) -> char {
        ';'
    }

    /// Wine's own diagnostics off (they go to stderr, which plugins use for logs), unless the
    /// caller asked for them with `WINEDEBUG`; the prefix when one was given.
    fn env(&self) -> Vec<(String, String)> {
        let mut env = Vec::new();
        if std::env::var_os("WINEDEBUG").is_none() {
            env.push(("WINEDEBUG".to_owned(), "-all".to_owned()));
        }
        if let Some(prefix) = &self.prefix {
            env.push((
                "WINEPREFIX".to_owned(),
                prefix.to_string_lossy().into_owned(),
            ));
        }
        env
    }
}

/// A host path as a Windows program under Wine sees it: `Z:` (Wine's view of `/`) followed by
/// the absolute path with `\` separators, e.g. `/tmp/a` → `Z:\tmp\a`.
pub fn windows_path(host: &Path) -> String {
    let absolute = std::path::absolute(host).unwrap_or_else(|_| host.to_path_buf());
    format!("Z:{}", absolute.to_string_lossy().replace('/', "\\"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_joins_with_the_platform_separator() {
        let dirs = [PathBuf::from("a"), PathBuf::from("b")];
        let expected = if cfg!(windows) { "a;b" } else { "a:b" };
        assert_eq!(Native.join_paths(&dirs), expected);
        assert_eq!(Native.join_paths(&[]), "");
    }

    #[cfg(unix)]
    #[test]
    fn wine_spells_host_paths_on_the_z_drive_joined_with_semicolons() {
        let wine = Wine::new("wine64");
        assert_eq!(
            wine.plugin_path(Path::new("/tmp/cni/bin")),
            r"Z:\tmp\cni\bin"
        );
        let dirs = [PathBuf::from("/opt/cni"), PathBuf::from("/usr/lib/cni")];
        assert_eq!(wine.join_paths(&dirs), r"Z:\opt\cni;Z:\usr\lib\cni");
        let relative = wine.plugin_path(Path::new("bin"));
        assert!(
            relative.starts_with(r"Z:\") && relative.ends_with(r"\bin"),
            "{relative}"
        );
    }

    #[test]
    fn wine_runs_the_exe_through_the_loader_with_the_prefix() {
        let wine = Wine::new("/usr/lib/wine/wine64").with_prefix("/tmp/prefix");
        let command = wine.command(Path::new("/x/plugin.exe"));
        assert_eq!(command.get_program(), "/usr/lib/wine/wine64");
        assert_eq!(command.get_args().collect::<Vec<_>>(), ["/x/plugin.exe"]);
        assert!(
            wine.env()
                .contains(&("WINEPREFIX".to_owned(), "/tmp/prefix".to_owned()))
        );
    }
}
