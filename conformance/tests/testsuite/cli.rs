//! The `cni-conformance` binary: table, exit status, JSON report, usage errors.

use conformance::cases;
use std::path::Path;
use std::process::{Command, Output};

const CLI: &str = env!("CARGO_BIN_EXE_cni-conformance");
const PLUGIN: &str = env!("CARGO_BIN_EXE_cni-example-plugin");

fn cli(args: &[&str]) -> Output {
    Command::new(CLI).args(args).output().unwrap()
}

fn template() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/example-plugin.json")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn prints_the_table_for_the_example_plugin_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let report_path = dir.path().join("report.json");
    let out = cli(&[
        "--plugin",
        PLUGIN,
        "--config",
        &template(),
        "--json-report",
        report_path.to_str().unwrap(),
        "--timeout-ms",
        "5000",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.starts_with("CASE "), "{stdout}");
    for case in cases::protocol().cases() {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("{} ", case.id())))
            .unwrap_or_else(|| panic!("no row for {}", case.id()));
        assert!(row.contains(" PASS "), "{row}");
    }
    assert!(stdout.contains("0 failed, 0 skipped"), "{stdout}");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    assert_eq!(
        json["cases"].as_array().unwrap().len(),
        cases::protocol().cases().len()
    );
}

#[test]
fn unknown_flags_get_one_clear_line_and_exit_2() {
    let out = cli(&["--plugin", PLUGIN, "--verbose"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("unknown argument \"--verbose\""),
        "{stderr}"
    );
}

#[test]
fn a_filter_that_matches_nothing_is_a_usage_error() {
    let out = cli(&["--plugin", PLUGIN, "--filter", "no-such-case"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no case id starts with"));
}

#[cfg(unix)]
#[test]
fn a_failing_case_makes_the_exit_status_1() {
    // `false` prints nothing and exits 1: every error case fails.
    let out = cli(&["--plugin", "/bin/false", "--filter", "env.missing-netns"]);
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("FAIL"), "{stdout}");
}

#[test]
fn the_harness_own_cni_variables_do_not_leak_into_plugin_calls() {
    // Were these inherited, the plugin would see them and the missing-variable cases would fail.
    let out = Command::new(CLI)
        .args(["--plugin", PLUGIN, "--filter", "env.missing-"])
        .env("CNI_COMMAND", "ADD")
        .env("CNI_CONTAINERID", "leaked")
        .env("CNI_NETNS", "leaked")
        .env("CNI_IFNAME", "leaked0")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("5 passed, 0 failed"), "{stdout}");
}

#[test]
fn the_generic_tool_knows_nothing_of_hns() {
    let out = cli(&["--plugin", PLUGIN, "--hnsctl", "hnsctl"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown argument \"--hnsctl\""), "{stderr}");
    let listing = cli(&["--list"]);
    let stdout = String::from_utf8_lossy(&listing.stdout);
    assert!(!stdout.contains("hns."), "{stdout}");
}
