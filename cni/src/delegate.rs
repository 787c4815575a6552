//! Running another plugin (an IPAM plugin) the way libcni's `invoke` package does: found by type
//! name in `CNI_PATH`, given the same environment and the same stdin, with only `CNI_COMMAND`
//! changed, its stderr passed through and its error JSON (with its code) propagated.
//!
//! Delegation must end, and only a plugin that delegates can loop: it refuses a type that
//! leads back into itself before it runs anything (cni-win's HNS plugins do, in
//! `cni-win-core`). A copy under another name escapes any list of names, so every delegation
//! also extends [`CHAIN_VAR`] in the delegate's environment, and a delegating plugin calls
//! [`DelegationChain::admit`] first, which stops a chain nested deeper than [`MAX_DEPTH`],
//! whatever the plugins in between. The skeleton checks neither: a plugin that delegates
//! nothing (`host-local`) runs whatever its config's `ipam.type` says.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command as Process;
use std::time::Duration;

use rootsafe::child::{self, Ended, RunError, Stderr};

use crate::config::NetConf;
use crate::env::Command;
use crate::error::{Error, ErrorCode};
use crate::quote::quoted;
use crate::result::Success;
use crate::validate;
use crate::version::Version;

/// The environment variable through which a cni-win plugin tells the plugin it delegates to
/// which delegations led there: the delegates' types, outermost first, comma-separated.
/// Plugins of other projects pass it on untouched (libcni's `invoke` hands a delegate the whole
/// environment), so a loop through them is counted too.
pub const CHAIN_VAR: &str = "CNI_WIN_DELEGATION_CHAIN";

/// How many delegations may be nested before a plugin refuses to run. A real chain nests one
/// (an HNS plugin's IPAM) or two (an IPAM plugin that delegates in turn); a loop stops after
/// this many processes beyond the first.
pub const MAX_DEPTH: usize = 3;

/// The delegations that led to this process, from [`CHAIN_VAR`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DelegationChain {
    delegates: Vec<String>,
}

impl DelegationChain {
    /// Reads [`CHAIN_VAR`]; code 4 when it is not a list of plugin types (it is only ever set by
    /// cni-win plugins for the plugins they run).
    pub fn from_lookup(
        lookup: &dyn Fn(&str) -> Option<OsString>,
    ) -> Result<DelegationChain, Error> {
        let Some(value) = lookup(CHAIN_VAR) else {
            return Ok(DelegationChain::default());
        };
        let malformed = || {
            Error::invalid_env(
                CHAIN_VAR,
                "is not a comma-separated list of plugin types; cni-win plugins set it for the \
                 plugins they delegate to, so unset it",
            )
            .with_details(format!("{CHAIN_VAR} as received: {value:?}"))
        };
        let text = value.to_str().ok_or_else(malformed)?;
        let delegates: Vec<String> = text
            .split(',')
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect();
        if delegates
            .iter()
            .any(|t| validate::plugin_type(CHAIN_VAR, t).is_err())
        {
            return Err(malformed());
        }
        Ok(DelegationChain { delegates })
    }

    /// Refuses (code 7) to run a plugin nested deeper than [`MAX_DEPTH`], naming the chain from
    /// the config's `type` (which the outermost plugin was run as) to this plugin. A plugin
    /// that delegates calls it before it does anything, so a loop ends with that process.
    pub fn admit(&self, config: &NetConf) -> Result<(), Error> {
        if self.delegates.len() <= MAX_DEPTH {
            return Ok(());
        }
        let chain: Vec<&str> = std::iter::once(config.plugin_type.as_str())
            .chain(self.delegates.iter().map(String::as_str))
            .collect();
        Err(Error::invalid_config(format!(
            "delegation loop: {} nests more than {MAX_DEPTH} plugins; an ipam.type leads back into \
             a plugin that delegates again: set it to an IPAM plugin such as host-local",
            chain.join(" → ")
        )))
    }

    /// The value of [`CHAIN_VAR`] for a delegate of type `plugin_type`.
    fn extended(&self, plugin_type: &str) -> String {
        self.delegates
            .iter()
            .map(String::as_str)
            .chain([plugin_type])
            .collect::<Vec<_>>()
            .join(",")
    }
}

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
            format!(
                "is empty, so plugin {} cannot be found",
                quoted(plugin_type)
            ),
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
                "plugin {} was not found in CNI_PATH ({}); install it there or fix the config's type",
                quoted(plugin_type),
                searched.join(", ")
            ))
        })
}

/// How long a delegated plugin may run before it is stopped and the command fails with code 11
/// ("try again later").
///
/// An IPAM plugin answers in milliseconds; one still running after a minute is stuck (on its
/// own lock, its data store, a full disk), and without a deadline it would hang the command
/// until the runtime killed the plugin, which then learns nothing and rolls nothing back. The
/// deadline is fixed rather than a setting: 60 s is as long as the waits for the attachment
/// lock and for host-local's store lock, far beyond any healthy IPAM, and with the HNS deadline
/// (30 s for a hung call) a DEL that meets both still answers inside kubelet's 2-minute
/// `--runtime-request-timeout`. What a stopped IPAM ADD may have reserved is released by the
/// DEL the runtime sends for the failed pod.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// How much of a failed plugin's non-error stdout is kept in the error's details.
const MAX_STDOUT_IN_DETAILS: usize = 1000;

/// Runs `binary` for `command` with `stdin`, returning its stdout on success. A failure with
/// error JSON on stdout keeps that error's code; any other failure is code 999 naming the exit
/// status, with what the plugin printed on stdout (its stderr is passed through) in the details;
/// a plugin still running at [`DEADLINE`] is stopped (code 11).
/// The delegate's [`CHAIN_VAR`] is this process's with `plugin_type` added.
pub fn exec(
    binary: &Path,
    plugin_type: &str,
    command: Command,
    stdin: &[u8],
) -> Result<Vec<u8>, Error> {
    exec_within(binary, plugin_type, command, stdin, DEADLINE)
}

/// [`exec`] with the deadline as a parameter.
fn exec_within(
    binary: &Path,
    plugin_type: &str,
    command: Command,
    stdin: &[u8],
    deadline: Duration,
) -> Result<Vec<u8>, Error> {
    let name = binary.display().to_string();
    // This process was admitted with the same variable (the skeleton reads it before any
    // command runs), so a malformed one never gets here; an unreadable one starts afresh.
    let chain = DelegationChain::from_lookup(&|name| std::env::var_os(name)).unwrap_or_default();
    let mut process = Process::new(binary);
    process
        .env("CNI_COMMAND", command.as_str())
        .env(CHAIN_VAR, chain.extended(plugin_type));
    let finished =
        child::run(&mut process, Some(stdin), Stderr::Inherit, deadline).map_err(|e| match e {
            RunError::Start(e) => {
                Error::new(ErrorCode::Io, format!("cannot run plugin {name}: {e}"))
            }
            RunError::Wait(e) => {
                Error::new(ErrorCode::Io, format!("cannot wait for plugin {name}: {e}"))
            }
        })?;
    let status = match finished.ended {
        Ended::Exited(status) => status,
        Ended::TimedOut => {
            return Err(Error::new(
                ErrorCode::TryAgainLater,
                format!(
                    "plugin {name} did not finish {} within {:.1} s: it was stopped; try again \
                     later",
                    command.as_str(),
                    deadline.as_secs_f64()
                ),
            )
            .with_details(
                "an IPAM plugin answers in well under a second; one still running after this \
                 long is stuck (on its own lock or data store): see its log",
            ));
        }
    };
    if status.success() {
        return Ok(finished.stdout);
    }
    Err(Error::from_json(&finished.stdout).unwrap_or_else(|| {
        let error = Error::internal(format!(
            "plugin {name} failed ({status}) without a CNI error on stdout"
        ));
        match String::from_utf8_lossy(&finished.stdout).trim() {
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
    let stdout = exec(&binary, plugin_type, Command::Add, stdin)?;
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
    exec(&binary, plugin_type, command, stdin).map(drop)
}

#[cfg(test)]
mod chain_tests {
    use super::*;

    fn conf(plugin_type: &str) -> NetConf {
        NetConf::parse(
            serde_json::json!({"cniVersion": "1.1.0", "name": "cbr0", "type": plugin_type})
                .to_string()
                .as_bytes(),
        )
        .unwrap()
    }

    fn chain(value: &str) -> Result<DelegationChain, Error> {
        let value = OsString::from(value);
        DelegationChain::from_lookup(&|name| (name == CHAIN_VAR).then(|| value.clone()))
    }

    #[test]
    fn the_chain_admits_up_to_the_bound_and_names_itself_beyond() {
        let conf = conf("win-bridge");
        let none = DelegationChain::from_lookup(&|_| None).unwrap();
        assert_eq!(none.admit(&conf), Ok(()));
        assert_eq!(none.extended("loop"), "loop");
        let mut value = String::from("loop");
        for _ in 1..MAX_DEPTH {
            value = chain(&value).unwrap().extended("loop");
        }
        assert_eq!(chain(&value).unwrap().admit(&conf), Ok(()));
        let too_deep = chain(&chain(&value).unwrap().extended("loop")).unwrap();
        let err = too_deep.admit(&conf).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidConfig);
        let expected = format!("win-bridge{}", " → loop".repeat(MAX_DEPTH + 1));
        assert!(err.msg().contains(&expected), "{}", err.msg());
    }

    #[test]
    fn a_malformed_chain_is_an_environment_error() {
        for bad in ["a,../b", "a b", "x,/bin/sh"] {
            assert_eq!(
                chain(bad).unwrap_err().code(),
                ErrorCode::InvalidEnvironment,
                "{bad}"
            );
        }
        assert_eq!(chain("").unwrap(), DelegationChain::default());
    }
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

    /// A delegate that hangs (here: a grandchild holding its stdout too) is stopped at the
    /// deadline, and the command fails with 11 naming it, instead of hanging with it.
    #[test]
    fn a_delegate_that_hangs_is_stopped_at_the_deadline_with_code_11() {
        let (_guard, dir) = scratch();
        script(&dir, "ipam", "sleep 30 & sleep 30");
        let binary = dir.join("ipam");
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let deadline = std::time::Duration::from_millis(200);
            let _ = done.send(exec_within(&binary, "ipam", Command::Del, b"{}", deadline));
        });
        let err = finished
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the delegation hung")
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::TryAgainLater);
        assert!(
            err.msg().contains("ipam did not finish DEL within 0.2 s"),
            "{}",
            err.msg()
        );
    }

    #[test]
    fn the_delegate_gets_the_chain_extended_with_its_type() {
        let (_guard, dir) = scratch();
        script(
            &dir,
            "ipam",
            &format!(r#"echo "{{\"code\":11,\"msg\":\"${CHAIN_VAR}\"}}"; exit 1"#),
        );
        let inherited = std::env::var(CHAIN_VAR).unwrap_or_default();
        let expected = chain(&inherited).extended("ipam");
        let err = run("ipam", Command::Del, b"{}", &[dir]).unwrap_err();
        assert_eq!(err.msg(), expected);
    }

    fn chain(value: &str) -> DelegationChain {
        let value = OsString::from(value);
        DelegationChain::from_lookup(&|name| (name == CHAIN_VAR).then(|| value.clone())).unwrap()
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
