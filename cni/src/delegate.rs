//! Running another plugin (an IPAM plugin) the way libcni's `invoke` package does: found by type
//! name in `CNI_PATH`, given the same environment and the same stdin, with only `CNI_COMMAND`
//! changed, its stderr passed through and its error JSON (with its code) propagated.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};

use crate::env::Command;
use crate::error::{Error, ErrorCode};
use crate::result::Success;
use crate::validate;
use crate::version::Version;

/// Suffixes tried after a plugin type, in order, in each directory: Windows looks for
/// `<type>.exe` first, then `<type>` (libcni's `ExecutableFileExtensions`).
const EXECUTABLE_SUFFIXES: &[&str] = if cfg!(windows) { &[".exe", ""] } else { &[""] };

/// Finds the binary for `plugin_type` in `cni_path`. The name is validated first, so it can only
/// ever resolve to a file directly inside one of the `CNI_PATH` directories.
pub fn find_in_path(plugin_type: &str, cni_path: &[PathBuf]) -> Result<PathBuf, Error> {
    find_with_suffixes(plugin_type, cni_path, EXECUTABLE_SUFFIXES)
}

/// [`find_in_path`] with the platform's suffixes as a parameter, so that the Windows order is
/// tested on every host.
fn find_with_suffixes(
    plugin_type: &str,
    cni_path: &[PathBuf],
    suffixes: &[&str],
) -> Result<PathBuf, Error> {
    validate::plugin_type("plugin type", plugin_type)?;
    if cni_path.is_empty() {
        return Err(Error::invalid_env(
            "CNI_PATH",
            format!("is empty, so plugin {plugin_type:?} cannot be found"),
        ));
    }
    cni_path
        .iter()
        .flat_map(|dir| {
            suffixes
                .iter()
                .map(move |suffix| dir.join(format!("{plugin_type}{suffix}")))
        })
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            let searched: Vec<_> = cni_path.iter().map(|d| d.display().to_string()).collect();
            Error::invalid_config(format!(
                "plugin {plugin_type:?} was not found in CNI_PATH ({}); install it there or fix the config's type",
                searched.join(", ")
            ))
        })
}

/// How much of a failed plugin's non-error stdout is kept in the error's details.
const MAX_STDOUT_IN_DETAILS: usize = 1000;

/// Runs `binary` for `command` with `stdin`, returning its stdout on success. A failure with
/// error JSON on stdout keeps that error's code; any other failure is code 999 naming the exit
/// status, with what the plugin printed on stdout (its stderr is passed through) in the details.
pub fn exec(binary: &Path, command: Command, stdin: &[u8]) -> Result<Vec<u8>, Error> {
    let name = binary.display().to_string();
    let mut child = Process::new(binary)
        .env("CNI_COMMAND", command.as_str())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| Error::new(ErrorCode::Io, format!("cannot run plugin {name}: {e}")))?;
    // stdin is fed from its own thread while stdout is drained: a plugin may write its reply
    // before it has read the whole config, and with both larger than a pipe buffer a write
    // followed by a read would wait on each other forever.
    let output = std::thread::scope(|scope| {
        if let Some(mut input) = child.stdin.take() {
            // A plugin that exits without reading stdin closes the pipe; its exit status tells
            // the rest.
            scope.spawn(move || {
                let _ = input.write_all(stdin);
            });
        }
        child.wait_with_output()
    })
    .map_err(|e| Error::new(ErrorCode::Io, format!("cannot wait for plugin {name}: {e}")))?;
    if output.status.success() {
        return Ok(output.stdout);
    }
    Err(Error::from_json(&output.stdout).unwrap_or_else(|| {
        let error = Error::internal(format!(
            "plugin {name} failed ({}) without a CNI error on stdout",
            output.status
        ));
        match String::from_utf8_lossy(&output.stdout).trim() {
            "" => error,
            printed => error.with_details(format!(
                "stdout: {}",
                printed
                    .chars()
                    .take(MAX_STDOUT_IN_DETAILS)
                    .collect::<String>()
            )),
        }
    }))
}

/// Delegates ADD and parses the plugin's result in any version.
pub fn add(
    plugin_type: &str,
    stdin: &[u8],
    cni_path: &[PathBuf],
    version: Version,
) -> Result<Success, Error> {
    let binary = find_in_path(plugin_type, cni_path)?;
    let stdout = exec(&binary, Command::Add, stdin)?;
    Success::from_slice(&stdout, version)
        .map_err(|e| e.context(format!("{plugin_type} ADD result")))
}

/// Delegates DEL, CHECK, GC or STATUS, which print nothing on success.
pub fn run(
    plugin_type: &str,
    command: Command,
    stdin: &[u8],
    cni_path: &[PathBuf],
) -> Result<(), Error> {
    let binary = find_in_path(plugin_type, cni_path)?;
    exec(&binary, command, stdin).map(drop)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A fresh directory and its path; the directory goes when the guard drops.
    fn scratch() -> (tempfile::TempDir, PathBuf) {
        let guard = tempfile::tempdir().unwrap();
        let path = guard.path().to_path_buf();
        (guard, path)
    }

    fn script(dir: &Path, name: &str, body: &str) {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn finds_plugins_only_inside_cni_path() {
        let (_guard, dir) = scratch();
        script(&dir, "ipam", "exit 0");
        let path = [PathBuf::from("/nonexistent"), dir.clone()];
        assert_eq!(find_in_path("ipam", &path).unwrap(), dir.join("ipam"));
        let missing = find_in_path("other", &path).unwrap_err();
        assert_eq!(missing.code(), ErrorCode::InvalidConfig);
        assert!(missing.msg().contains("/nonexistent"));
        assert_eq!(
            find_in_path("../ipam", &path).unwrap_err().code(),
            ErrorCode::InvalidConfig
        );
        assert_eq!(
            find_in_path("ipam", &[]).unwrap_err().code(),
            ErrorCode::InvalidEnvironment
        );
    }

    #[test]
    fn windows_tries_the_exe_first_in_each_directory_in_order() {
        let windows = [".exe", ""];
        let ((_first, first), (_second, second)) = (scratch(), scratch());
        script(&first, "ipam", "exit 0");
        script(&second, "ipam.exe", "exit 0");
        let path = [first.clone(), second.clone()];
        // Directory order wins over the suffix order, as in libcni.
        assert_eq!(
            find_with_suffixes("ipam", &path, &windows).unwrap(),
            first.join("ipam")
        );
        script(&first, "ipam.exe", "exit 0");
        assert_eq!(
            find_with_suffixes("ipam", &path, &windows).unwrap(),
            first.join("ipam.exe")
        );
        // Elsewhere the bare name only.
        assert_eq!(
            find_with_suffixes("ipam", std::slice::from_ref(&second), &[""])
                .unwrap_err()
                .code(),
            ErrorCode::InvalidConfig
        );
    }

    #[test]
    fn passes_stdin_and_command_and_reads_the_result() {
        let (_guard, dir) = scratch();
        script(
            &dir,
            "ipam",
            r#"read conf; [ "$CNI_COMMAND" = ADD ] && [ "$conf" = '{"x":1}' ] || exit 3
echo '{"cniVersion":"0.3.1","ips":[{"version":"4","address":"10.0.0.9/24"}]}'"#,
        );
        let result = add("ipam", b"{\"x\":1}\n", &[dir], Version::V1_0_0).unwrap();
        assert_eq!(result.ips[0].address.to_string(), "10.0.0.9/24");
    }

    #[test]
    fn a_delegate_that_answers_before_reading_a_large_stdin_does_not_deadlock() {
        let (_guard, dir) = scratch();
        // More than a pipe buffer each way: stdout is written before stdin is read.
        script(
            &dir,
            "ipam",
            "head -c 200000 /dev/zero | tr '\\0' ' '; cat >/dev/null",
        );
        let stdin = vec![b' '; 200_000];
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(run("ipam", Command::Del, &stdin, &[dir]));
        });
        let outcome = finished
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the delegation deadlocked");
        assert_eq!(outcome, Ok(()));
    }

    #[test]
    fn propagates_the_delegates_error_code() {
        let (_guard, dir) = scratch();
        script(
            &dir,
            "ipam",
            r#"echo '{"cniVersion":"1.0.0","code":11,"msg":"busy"}'; exit 1"#,
        );
        script(&dir, "crash", "echo 'fatal: store is locked'; exit 2");
        let err = run("ipam", Command::Del, b"{}", std::slice::from_ref(&dir)).unwrap_err();
        assert_eq!((err.code(), err.msg()), (ErrorCode::TryAgainLater, "busy"));
        let err = run("crash", Command::Del, b"{}", &[dir]).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Internal);
        // What it printed instead of an error object is kept, as libcni keeps it.
        assert!(err.details().contains("fatal: store is locked"), "{err:?}");
    }
}
