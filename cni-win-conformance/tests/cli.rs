//! `cni-win-conformance` is `cni-conformance` plus the HNS options; the generic tool has none.

use std::process::Command;

const CLI: &str = env!("CARGO_BIN_EXE_cni-win-conformance");

#[test]
fn lists_the_protocol_and_hns_catalogues() {
    let out = Command::new(CLI).arg("--list").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.lines().any(|line| line.starts_with("version.")),
        "{stdout}"
    );
    assert!(
        stdout.lines().any(|line| line.starts_with("hns.")),
        "{stdout}"
    );
}

#[test]
fn the_hns_options_are_in_the_help_and_checked() {
    let help = Command::new(CLI).arg("--help").output().unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("usage: cni-win-conformance"), "{text}");
    assert!(
        text.contains("--hnsctl PATH") && text.contains("--hns-network ARGS"),
        "{text}"
    );
    let lonely = Command::new(CLI)
        .args(["--plugin", "p", "--hns-network", "--name x"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&lonely.stderr);
    assert_eq!(lonely.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--hns-network needs --hnsctl"), "{stderr}");
    let controls = Command::new(CLI)
        .args(["--plugin", "p", "--hns-controls", "hnsctl"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&controls.stderr);
    assert_eq!(controls.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--hns-controls needs --hnsctl"), "{stderr}");
}
