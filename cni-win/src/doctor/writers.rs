//! Who may write the node's CNI directories: whoever may write the config directory decides
//! what every pod is attached with, and whoever may write a plugin directory what the runtime
//! runs as SYSTEM ([`rootsafe::writers`]; on Windows a directory made under `C:\` lets every
//! authenticated user modify it unless told otherwise).

use std::path::Path;

use rootsafe::writers::{self, Writers};

use super::{Report, Severity};
use crate::paths::NodePaths;

/// How to let only SYSTEM and Administrators write a directory (and everyone read it).
const FIX: &str = "icacls DIR /inheritance:r /grant SYSTEM:(OI)(CI)F \
                   Administrators:(OI)(CI)F Users:(OI)(CI)RX (on Linux: chown root and chmod \
                   go-w)";

/// One finding per directory.
pub(super) fn check(paths: &NodePaths, report: &mut Report) {
    check_dir(
        "config directory: who may write",
        &paths.conf_dir,
        "decides what every pod is attached with",
        report,
    );
    for dir in paths.cni_path() {
        check_dir(
            &format!("plugin directory {}: who may write", dir.display()),
            dir,
            "decides what the runtime runs as SYSTEM",
            report,
        );
    }
}

fn check_dir(check: &str, dir: &Path, stakes: &str, report: &mut Report) {
    match writers::of(dir) {
        Ok(Writers::Administrators) => {
            report.pass(check, format!("{}: only administrators", dir.display()))
        }
        Ok(others) => report.add(
            check,
            Severity::Warn,
            format!(
                "{}: {others}, and whoever may write it {stakes}",
                dir.display()
            ),
            FIX,
        ),
        // A directory that is not there is another check's finding.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => report.add(
            check,
            Severity::Warn,
            format!("{}: cannot tell who may write it: {e}", dir.display()),
            "run doctor as an administrator",
        ),
    }
}
