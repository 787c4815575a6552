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
}
