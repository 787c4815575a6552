//! Build script shared by every shipped binary: records the commit the binary is built from in
//! `CNI_WIN_COMMIT`, which `cni::build!()` reads, so `--version` names the exact source.
//!
//! `CNI_WIN_COMMIT` set in the environment wins (a build from a source archive has no `.git`);
//! otherwise `git rev-parse HEAD`, shortened to 12 digits; with neither, the about line says
//! the commit is unknown. Cargo re-runs this when HEAD or the branch it names moves.

use std::path::PathBuf;
use std::process::Command;

const COMMIT_DIGITS: usize = 12;

fn main() {
    println!("cargo:rerun-if-env-changed=CNI_WIN_COMMIT");
    let commit = std::env::var("CNI_WIN_COMMIT")
        .ok()
        .filter(|commit| !commit.trim().is_empty())
        .or_else(|| {
            let head = git(&["rev-parse", "HEAD"])?;
            Some(head.chars().take(COMMIT_DIGITS).collect())
        });
    if let Some(commit) = commit {
        println!("cargo:rustc-env=CNI_WIN_COMMIT={}", commit.trim());
    }
    for watched in git_files_naming_head() {
        println!("cargo:rerun-if-changed={}", watched.display());
    }
}

/// HEAD, the branch file it points at and packed-refs: whichever exist (cargo re-runs on every
/// build for a path that does not).
fn git_files_naming_head() -> Vec<PathBuf> {
    let mut names = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        names.push(branch);
    }
    names
        .iter()
        .filter_map(|name| git(&["rev-parse", "--path-format=absolute", "--git-path", name]))
        .map(PathBuf::from)
        .filter(|path| path.is_file())
        .collect()
}

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(std::env::var_os("CARGO_MANIFEST_DIR")?)
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    (output.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}
