//! The harness must catch real bugs: each deliberately broken plugin (a small shell script)
//! fails exactly the cases whose rule it breaks, with a message that says how.
#![cfg(unix)]

use conformance::{Harness, Report, Verdict, cases};
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

/// Writes `body` as an executable `/bin/sh` script and runs the cases under `filter` on it.
fn run_script(body: &str, filter: &str, timeout: Duration) -> Report {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken-plugin");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    Harness::new(&path)
        .with_timeout(timeout)
        .with_config_template(json!({"name": "broken", "type": "broken-plugin"}))
        .unwrap()
        .run(&cases::protocol(), filter)
}

fn run(body: &str, filter: &str) -> Report {
    run_script(body, filter, Duration::from_secs(5))
}

/// Asserts the case `id` failed with a message containing `needle`.
fn assert_fails(report: &Report, id: &str, needle: &str) {
    let case = report
        .cases
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("{id} did not run:\n{}", report.table()));
    assert_eq!(
        case.verdict,
        Verdict::Fail,
        "{id} should fail:\n{}",
        report.table()
    );
    assert!(
        case.message.contains(needle),
        "{id}: {:?} lacks {needle:?}",
        case.message
    );
    assert!(!report.passed());
}

fn assert_passes(report: &Report, id: &str) {
    let case = report.cases.iter().find(|c| c.id == id).unwrap();
    assert_eq!(case.verdict, Verdict::Pass, "{id}:\n{}", report.table());
}

#[test]
fn a_result_in_the_wrong_version_fails_and_so_does_output_on_del() {
    let script = r#"cat >/dev/null
printf '{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.0.0.2/24"}]}'"#;
    let report = run(script, "add.result.");
    assert_fails(
        &report,
        "add.result.1.0.0",
        "result cniVersion is \"0.4.0\"",
    );
    assert_fails(
        &report,
        "add.result.0.2.0",
        "result cniVersion is \"0.4.0\"",
    );
    // The ADD is right for 0.4.0, but this plugin also prints a result for DEL.
    assert_fails(
        &report,
        "add.result.0.4.0",
        "DEL after ADD: succeeded but printed on stdout",
    );
}

#[test]
fn a_result_in_the_wrong_layout_fails() {
    let script = r#"cat >/dev/null
[ "$CNI_COMMAND" = ADD ] && printf '{"cniVersion":"1.1.0","ips":[{"version":"4","address":"10.0.0.2"}]}'
exit 0"#;
    let report = run(script, "add.result.1.1.0");
    assert_fails(
        &report,
        "add.result.1.1.0",
        "ips[0].version is not part of this version",
    );
    assert_fails(
        &report,
        "add.result.1.1.0",
        "ips[0].address must be an address in CIDR",
    );
}

#[test]
fn an_error_with_exit_status_0_fails() {
    let script = r#"printf '{"cniVersion":"1.1.0","code":6,"msg":"cannot decode"}'"#;
    let report = run(script, "config.bad-json");
    assert_fails(&report, "config.bad-json", "but exited 0");
}

#[test]
fn garbage_on_stdout_fails() {
    let report = run("echo 'something went wrong'\nexit 1", "env.missing-netns");
    assert_fails(
        &report,
        "env.missing-netns",
        "stdout is not JSON: something went wrong",
    );
}

#[test]
fn an_error_on_stderr_only_fails() {
    let script = r#"echo '{"code":4,"msg":"CNI_NETNS is missing"}' >&2
exit 1"#;
    let report = run(script, "env.missing-netns");
    assert_fails(&report, "env.missing-netns", "got nothing (exit status 1)");
    assert_fails(&report, "env.missing-netns", "[stderr: {\"code\":4");
}

#[test]
fn the_wrong_code_fails_and_the_right_one_passes() {
    let script = r#"printf '{"cniVersion":"1.1.0","code":7,"msg":"invalid"}'
exit 1"#;
    let report = run(script, "");
    assert_fails(
        &report,
        "env.missing-netns",
        "expected error code 4, got code 7: invalid",
    );
    assert_fails(
        &report,
        "config.bad-json",
        "expected error code 6, got code 7",
    );
    assert_fails(
        &report,
        "del.twice",
        "ADD 1.1.0: failed with code 7: invalid (exit status 1)",
    );
    // Code 7 is what an invalid name deserves: the harness does not fail everything blindly.
    assert_passes(&report, "config.invalid-name");
}

#[test]
fn an_error_that_does_not_name_the_variable_fails() {
    let script = r#"printf '{"cniVersion":"1.1.0","code":4,"msg":"bad environment"}'
exit 1"#;
    let report = run(script, "env.");
    assert_fails(&report, "env.missing-netns", "does not name CNI_NETNS");
    assert_fails(
        &report,
        "env.unknown-command",
        "names neither CNI_COMMAND nor FROB",
    );
}

#[test]
fn a_version_reply_that_ignores_the_question_fails() {
    let script = r#"printf '{"cniVersion":"1.1.0","supportedVersions":["1.0.0","1.1.0"]}'"#;
    let report = run(script, "version.");
    assert_fails(
        &report,
        "version.reports-all",
        "lacks 0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0",
    );
    assert_fails(
        &report,
        "version.echoes-asked",
        "asked 0.1.0: VERSION reply's cniVersion is \"1.1.0\"",
    );
}

#[test]
fn a_plugin_that_hangs_is_killed_at_the_deadline() {
    let started = Instant::now();
    let report = run_script(
        "exec sleep 30",
        "version.reports-all",
        Duration::from_millis(300),
    );
    assert_fails(
        &report,
        "version.reports-all",
        "plugin still running after 300 ms: killed",
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the harness waited for the plugin"
    );
}

#[test]
fn a_plugin_that_cannot_start_fails_every_case_with_the_reason() {
    let report = Harness::new("/nonexistent/cni-plugin").run(&cases::protocol(), "version.");
    assert_fails(
        &report,
        "version.reports-all",
        "cannot start /nonexistent/cni-plugin",
    );
}

#[test]
fn a_missing_netns_or_path_accepted_where_the_spec_requires_it_fails() {
    // Refuses a missing CNI_NETNS for ADD only, and never asks for CNI_PATH.
    let script = r#"cat >/dev/null
if [ -z "$CNI_NETNS" ] && [ "$CNI_COMMAND" = ADD ]; then
    printf '{"cniVersion":"1.1.0","code":4,"msg":"CNI_NETNS is missing"}'
    exit 1
fi"#;
    let report = run(script, "env.missing-");
    assert_fails(
        &report,
        "env.missing-netns",
        "CHECK without CNI_NETNS: expected error code 4",
    );
    assert_fails(
        &report,
        "env.missing-path",
        "GC without CNI_PATH: expected error code 4",
    );
}
