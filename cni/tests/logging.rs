//! Logging end to end, in a process of its own (the logger is process-wide): the config's
//! `logFile`/`logLevel`, the environment's override, and the command/attachment tag on each line.

use cni::{About, Error, ErrorCode, NetworkRequest, Plugin, Request, Success};
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// ADD logs at info and fails; the rest succeed silently.
struct Logs;

impl Plugin for Logs {
    fn add(&self, _: &Request) -> Result<Success, Error> {
        log::info!("looking for room");
        Err(Error::new(ErrorCode::Plugin(120), "no room"))
    }
    fn del(&self, _: &Request) -> Result<(), Error> {
        Ok(())
    }
    fn check(&self, _: &Request) -> Result<(), Error> {
        Ok(())
    }
    fn gc(&self, _: &NetworkRequest) -> Result<(), Error> {
        Ok(())
    }
    fn status(&self, _: &NetworkRequest) -> Result<(), Error> {
        Ok(())
    }
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cni-logging-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs a failing ADD of `c1/eth0` with `config` and the extra variables; returns stdout.
fn add(config: &serde_json::Value, extra_env: &[(&str, &Path)]) -> String {
    let mut vars: HashMap<String, OsString> = [
        ("CNI_COMMAND", "ADD"),
        ("CNI_CONTAINERID", "c1"),
        ("CNI_IFNAME", "eth0"),
        ("CNI_NETNS", "ns-guid"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), OsString::from(v)))
    .collect();
    for (k, v) in extra_env {
        vars.insert((*k).to_owned(), v.as_os_str().to_owned());
    }
    let mut out = Vec::new();
    let about = About {
        name: "logs",
        version: "test",
        commit: None,
    };
    let status = cni::execute(
        &Logs,
        about,
        &|name| vars.get(name).cloned(),
        &mut config.to_string().as_bytes(),
        &mut out,
    );
    assert_eq!(status, 1);
    String::from_utf8(out).unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_log_file_and_level_come_from_the_config_or_the_environment_and_lines_are_tagged() {
    let dir = scratch();
    let from_config = dir.join("config/plugin.log");
    let config = serde_json::json!({"cniVersion": "1.0.0", "name": "cbr0", "type": "logs",
        "logFile": from_config, "logLevel": "info"});

    let stdout = add(&config, &[]);
    let error: serde_json::Value = serde_json::from_str(&stdout).expect("only the error JSON");
    assert_eq!(error["code"], 120);
    let log = read(&from_config);
    assert!(
        log.contains("[INFO] ADD c1/eth0: looking for room"),
        "{log}"
    );
    assert!(log.contains("[ERROR] ADD c1/eth0: no room"), "{log}");

    // The environment overrides both keys: another file, and info lines no longer pass.
    let from_env = dir.join("env.log");
    add(
        &config,
        &[
            (cni::logging::FILE_VAR, &from_env),
            (cni::logging::LEVEL_VAR, Path::new("error")),
        ],
    );
    let log = read(&from_env);
    assert!(log.contains("[ERROR] ADD c1/eth0: no room"), "{log}");
    assert!(!log.contains("looking for room"), "{log}");
    assert_eq!(read(&from_config).lines().count(), 2);

    // A control character in an unvalidated variable cannot forge a line of its own.
    let forged = dir.join("forged.log");
    add(
        &config,
        &[
            (cni::logging::FILE_VAR, &forged),
            ("CNI_CONTAINERID", Path::new("c1\n[ERROR] forged")),
        ],
    );
    let log = read(&forged);
    assert!(
        log.lines().all(|l| !l.starts_with("[ERROR] forged")),
        "{log}"
    );
    assert!(log.contains("ADD c1?[ERROR] forged/eth0:"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}
