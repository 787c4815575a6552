//! `cni-win --version` names the version and the commit the binary was built from.

use std::process::Command;

#[test]
fn version_names_the_commit_it_was_built_from() {
    let output = Command::new(env!("CARGO_BIN_EXE_cni-win"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(output.status.success());
    let commit = option_env!("CNI_WIN_COMMIT").unwrap_or("unknown");
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!("cni-win {} (commit {commit})\n", env!("CARGO_PKG_VERSION"))
    );
    // In a git checkout the build script finds the commit.
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok();
    if let Some(head) = head.filter(|h| h.status.success()) {
        assert!(String::from_utf8(head.stdout).unwrap().starts_with(commit));
    }
}
