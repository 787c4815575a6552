//! hnsctl as an operator runs it: the emulator behind it on Linux, errors on stderr, usage
//! errors from the parser with exit status 2, help and shell completions.
#![cfg(not(windows))]

use std::process::Command;

use hns::Guid;

const HNSCTL: &str = env!("CARGO_BIN_EXE_hnsctl");

#[test]
fn hnsctl_drives_the_emulator_and_reports_errors_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let hnsctl = |args: &[&str]| {
        Command::new(HNSCTL)
            .args(args)
            .env("HCN_EMULATOR_STATE", dir.path())
            .output()
            .unwrap()
    };
    let created = hnsctl(&[
        "network",
        "create",
        "--name",
        "flannel.4096",
        "--type",
        "Overlay",
        "--subnet",
        "10.244.1.0/24",
        "--gateway",
        "10.244.1.1",
        "--vni",
        "4096",
        "--vxlan-port",
        "4789",
        "--provider-address",
        "192.168.1.10",
        "--dr-mac",
        "0E-2A-C0-A8-01-0A",
    ]);
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let shown = hnsctl(&["--json", "network", "show", "flannel.4096"]);
    let network: hns::schema::HostComputeNetwork = serde_json::from_slice(&shown.stdout).unwrap();
    let json = serde_json::to_string(&network).unwrap();
    for needle in [
        r#""ProviderAddress":"192.168.1.10""#,
        r#""Address":"0E-2A-C0-A8-01-0A""#,
        r#""IsolationId":4096"#,
        r#""Port":4789"#,
    ] {
        assert!(json.contains(needle), "{needle} missing in {json}");
    }
    let namespace = hnsctl(&["namespace", "create"]);
    let text = String::from_utf8(namespace.stdout).unwrap();
    assert!(
        text.trim().parse::<Guid>().is_ok() && text.lines().count() == 1,
        "{text:?}"
    );
    let stats = hnsctl(&["--json", "stats"]);
    let counters: std::collections::BTreeMap<String, u64> =
        serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(counters["HcnCreateNetwork"], 1);
    assert_eq!(counters["HcnCreateNamespace"], 1);

    let failed = hnsctl(&["endpoint", "delete", "deadbeef-0000-0000-0000-000000000001"]);
    assert!(!failed.status.success());
    let stderr = String::from_utf8(failed.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("0x803B0002"), "{stderr}");

    let unset = Command::new(HNSCTL)
        .args(["network", "list"])
        .env_remove("HCN_EMULATOR_STATE")
        .output()
        .unwrap();
    assert!(!unset.status.success());
    assert!(String::from_utf8_lossy(&unset.stderr).contains("HCN_EMULATOR_STATE is not set"));
}

#[test]
fn hnsctl_refuses_an_empty_state_directory() {
    let cwd = tempfile::tempdir().unwrap();
    let output = Command::new(HNSCTL)
        .args(["--state", "", "network", "list"])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.contains("--state") && first.contains("needs a directory"),
        "{stderr}"
    );
    let written: Vec<_> = std::fs::read_dir(cwd.path()).unwrap().collect();
    assert!(
        written.is_empty(),
        "state written into the working directory: {written:?}"
    );
}

#[test]
fn help_usage_errors_and_completions_are_the_parsers() {
    let run = |args: &[&str]| Command::new(HNSCTL).args(args).output().unwrap();
    let help = run(&["network", "create", "--help"]);
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success(), "{text}");
    for option in [
        "--name",
        "--type",
        "--subnet",
        "--gateway",
        "--vni",
        "--provider-address",
    ] {
        assert!(text.contains(option), "{option} missing in {text}");
    }
    let typo = run(&["netwrok", "list"]);
    let stderr = String::from_utf8_lossy(&typo.stderr);
    assert_eq!(typo.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("network"), "no suggestion in {stderr}");
    let missing = run(&["network", "create", "--name", "cbr0"]);
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--type"), "{stderr}");
    let completions = run(&["completions", "bash"]);
    let script = String::from_utf8_lossy(&completions.stdout);
    assert!(completions.status.success());
    assert!(
        script.contains("hnsctl") && script.contains("namespace"),
        "{script}"
    );
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let output = Command::new(HNSCTL).arg("--version").output().unwrap();
    assert!(output.status.success());
    let commit = option_env!("CNI_WIN_COMMIT").unwrap_or("unknown");
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!("hnsctl {} (commit {commit})\n", env!("CARGO_PKG_VERSION"))
    );
    assert_ne!(commit, "unknown", "a git checkout names its commit");
}
