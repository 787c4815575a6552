//! Run by hand, the plugin answers a version query as the Go plugins do, naming its commit; the
//! CNI `VERSION` command keeps its spec reply.

use std::io::Write;
use std::process::{Command, Stdio};

fn host_local() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_host-local"));
    command.env_remove("CNI_COMMAND");
    command
}

fn about() -> String {
    format!(
        "CNI host-local plugin {} (commit {})\nCNI protocol versions supported: ",
        env!("CARGO_PKG_VERSION"),
        option_env!("CNI_WIN_COMMIT").unwrap_or("unknown")
    )
}

#[test]
fn version_flag_prints_the_about_text_on_stdout() {
    let output = host_local().arg("--version").output().unwrap();
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.starts_with(&about()), "{stdout}");
    assert!(stdout.trim_end().ends_with("1.1.0"), "{stdout}");
    let head = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok();
    if let Some(head) = head.filter(|h| h.status.success()) {
        let head = String::from_utf8(head.stdout).unwrap();
        let commit = option_env!("CNI_WIN_COMMIT");
        assert!(
            commit.is_some_and(|commit| head.starts_with(commit)),
            "a git checkout at {head} recorded commit {commit:?}"
        );
    }
}

#[test]
fn without_cni_command_the_about_text_goes_to_stderr() {
    let output = host_local().output().unwrap();
    assert!(String::from_utf8_lossy(&output.stderr).starts_with(&about()));
    // stdout stays the protocol's: the error JSON.
    let error: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(error["code"], 4);
}

#[test]
fn cni_version_keeps_its_spec_reply() {
    let mut child = host_local()
        .env("CNI_COMMAND", "VERSION")
        .arg("--version")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"cniVersion":"1.0.0"}"#)
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let reply: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(reply["cniVersion"], "1.0.0");
    assert!(reply["supportedVersions"].as_array().unwrap().len() > 5);
}
