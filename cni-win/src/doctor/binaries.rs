//! doctor's checks of the plugin binaries the runtime runs: each type the configs name is
//! there, and the shipped ones are one release.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{Report, Severity};
use crate::paths::NodePaths;
use crate::shipped;

/// Every plugin type the configs name has its binary in a `--bin-dir` (a type without one,
/// such as a misspelt `win-overlay`, fails every ADD of its network).
pub(super) fn check_present(plugin_types: &[String], paths: &NodePaths, report: &mut Report) {
    for plugin_type in plugin_types {
        let file = format!("{plugin_type}{}", std::env::consts::EXE_SUFFIX);
        if let Some(path) = paths.find_binary(&file) {
            report.pass(
                format!("binary {file}"),
                format!("{} exists", path.display()),
            );
        } else {
            let wanted: Vec<String> = paths
                .cni_path()
                .iter()
                .map(|dir| dir.join(&file).display().to_string())
                .collect();
            report.add(
                format!("binary {file}"),
                Severity::Fail,
                format!(
                    "the configs name plugin type {plugin_type:?}, but {} does not exist",
                    wanted.join(" or ")
                ),
                "correct the type in the conflist, or run `cni-win install` (or pass the \
                 runtime's bin_dir with --bin-dir)",
            );
        }
    }
}

/// How long one `--version` of a plugin may take: doctor never waits without end.
const VERSION_DEADLINE: Duration = Duration::from_secs(10);

/// Each shipped plugin binary's release, as its `--version` said, with the file as it was
/// then: asked again only when the file changed (an install or upgrade replaces it), so a
/// daemon running the checks every round starts no process while nothing changes.
#[derive(Debug, Default)]
pub(super) struct Versions {
    seen: BTreeMap<PathBuf, (Stamp, String)>,
}

/// What tells one file from the next at a path: its size and modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        let metadata = std::fs::metadata(path).ok()?;
        Some(Stamp {
            len: metadata.len(),
            modified: metadata.modified().ok(),
        })
    }
}

impl Versions {
    /// The shipped CNI plugins the runtime finds (the first `--bin-dir` holding each) are
    /// one release: each answers `--version` with the same version and commit. A node mixing
    /// two releases (a half-finished upgrade, or the reference's `host-local.exe` left
    /// beside ours) runs ADD and DEL with different rules.
    pub(super) fn check_one_release(&mut self, paths: &NodePaths, report: &mut Report) {
        let mut releases: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let plugins = shipped::binaries()
            .iter()
            .filter(|binary| binary.role.is_cni_plugin());
        for plugin in plugins {
            let file = plugin.file_name();
            let Some(path) = paths.find_binary(&file) else {
                continue;
            };
            releases.entry(self.release(&path)).or_default().push(file);
        }
        Versions::judge(&releases, report);
    }

    /// What `path` says it is, asked of the binary only when it is not the file last asked.
    fn release(&mut self, path: &Path) -> String {
        let stamp = Stamp::of(path);
        if let (Some(stamp), Some((seen, release))) = (&stamp, self.seen.get(path))
            && stamp == seen
        {
            return release.clone();
        }
        let release = match about_line(path) {
            Ok(line) => release_of(&line).unwrap_or_else(|| format!("not cni-win ({line})")),
            Err(why) => format!("no answer to --version ({why})"),
        };
        match stamp {
            Some(stamp) => {
                self.seen.insert(path.to_owned(), (stamp, release.clone()));
            }
            None => {
                self.seen.remove(path);
            }
        }
        release
    }

    fn judge(releases: &BTreeMap<String, Vec<String>>, report: &mut Report) {
        let evidence = releases
            .iter()
            .map(|(release, files)| format!("{}: {release}", files.join(", ")))
            .collect::<Vec<_>>()
            .join("; ");
        match releases.len() {
        0 => {}
        1 if releases
            .keys()
            .all(|release| release.starts_with("cni-win ")) =>
        {
            report.pass("binaries are one release", evidence);
        }
        _ => report.add(
            "binaries are one release",
            Severity::Fail,
            evidence,
            "install every binary from one release: `cni-win install --source <unzipped release>`",
        ),
    }
    }
}

/// The first line `binary --version` prints, within [`VERSION_DEADLINE`].
fn about_line(binary: &std::path::Path) -> Result<String, String> {
    use rootsafe::child::{self, Ended, Stderr};
    let mut command = std::process::Command::new(binary);
    command.arg("--version").env_remove("CNI_COMMAND");
    let finished = child::run(&mut command, None, Stderr::Capture, VERSION_DEADLINE)
        .map_err(|e| std::io::Error::from(e).to_string())?;
    if finished.ended == Ended::TimedOut {
        return Err(format!("still running after {VERSION_DEADLINE:?}"));
    }
    let stdout = String::from_utf8_lossy(&finished.stdout);
    Ok(stdout.lines().next().unwrap_or_default().trim().to_owned())
}

/// `cni-win 0.1.0 (commit 0123456789ab)` from a cni-win plugin's about line
/// (`CNI win-bridge plugin 0.1.0 (commit 0123456789ab)`); `None` for anything else, such as the
/// reference plugins' `CNI win-bridge plugin v1.6.2`.
fn release_of(about: &str) -> Option<String> {
    let (_, release) = about.split_once(" plugin ")?;
    release
        .contains(" (commit ")
        .then(|| format!("cni-win {release}"))
}
