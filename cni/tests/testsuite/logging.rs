//! Logging end to end, each test with the process's logger to itself ([`crate::logger_turn`]):
//! the config's `logFile`/`logLevel`, the environment's override, and the command/attachment
//! tag on each line.

use cni::{About, DelRequest, Error, ErrorCode, NetworkRequest, Plugin, Request, Success};
use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;

/// ADD logs at info and fails; the rest succeed silently.
struct Logs;

impl Plugin for Logs {
    fn add(&self, _: &Request) -> Result<Success, Error> {
        log::info!("looking for room");
        Err(Error::new(ErrorCode::Plugin(120), "no room"))
    }
    fn del(&self, _: &DelRequest) -> Result<(), Error> {
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
    let _turn = crate::logger_turn();
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
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
}

/// A `logFile` that is a FIFO (with or without a reader) or a link is refused, and the command
/// neither waits for it nor writes through it.
#[cfg(unix)]
#[test]
fn a_log_file_that_is_not_a_regular_file_never_blocks_and_is_not_written() {
    use std::os::unix::ffi::OsStrExt;
    let _turn = crate::logger_turn();
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let fifo = dir.join("plugin.fifo");
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let target = dir.join("elsewhere.log");
    std::fs::write(&target, "").unwrap();
    let link = dir.join("link.log");
    std::os::unix::fs::symlink(&target, &link).unwrap();

    // Runs the failing ADD logging to `path` on a thread: a blocked open would never return.
    let add_logging_to = |path: &Path| {
        let config = serde_json::json!({"cniVersion": "1.0.0", "name": "cbr0", "type": "logs",
            "logFile": path, "logLevel": "info"});
        let (done, returned) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(add(&config, &[]));
        });
        let stdout = returned
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the plugin is blocked opening its log file");
        let error: serde_json::Value = serde_json::from_str(&stdout).expect("the error JSON");
        assert_eq!(error["code"], 120);
    };

    // No reader: an ordinary open for writing waits for one forever.
    add_logging_to(&fifo);
    // A reader: the open succeeds, but nothing may be written into the pipe.
    // SAFETY: a valid NUL-terminated path; the descriptor is owned by `reader` below.
    let fd = unsafe { libc::open(c_path.as_ptr(), libc::O_RDONLY | libc::O_NONBLOCK) };
    assert!(fd >= 0);
    // SAFETY: `fd` is open and owned by nothing else.
    let mut reader = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    add_logging_to(&fifo);
    let mut written = Vec::new();
    let _ = std::io::Read::read_to_end(&mut reader, &mut written);
    assert!(written.is_empty(), "{}", String::from_utf8_lossy(&written));
    // A link is not followed.
    add_logging_to(&link);
    assert_eq!(read(&target), "");
}

/// A `logFile` (or `CNI_WIN_LOG_FILE`) that is not a rooted path (on Linux, a Windows path is
/// relative) would be a file in whatever directory the runtime runs the plugin from: it is not
/// opened, and the command runs on, logging to stderr only.
#[test]
fn a_relative_log_file_is_never_created_in_the_working_directory() {
    let _turn = crate::logger_turn();
    let cwd = std::env::current_dir().unwrap();
    for name in ["cni-win-relative.log", r"C:\k\cni-win-relative.log"] {
        if cfg!(windows) && name.contains(':') {
            continue;
        }
        let config = serde_json::json!({"cniVersion": "1.0.0", "name": "cbr0", "type": "logs",
            "logFile": name, "logLevel": "info"});
        let error: serde_json::Value = serde_json::from_str(&add(&config, &[])).unwrap();
        assert_eq!(error["code"], 120, "{name}");
        let overridden = serde_json::json!({"cniVersion": "1.0.0", "name": "cbr0", "type": "logs"});
        add(&overridden, &[(cni::logging::FILE_VAR, Path::new(name))]);
        assert!(
            !cwd.join(name).exists(),
            "{name} was created in {}",
            cwd.display()
        );
    }
}
