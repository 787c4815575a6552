//! Running one helper process with a deadline ([`rootsafe::child::run`]) and capturing what it
//! printed.

use std::process::Command;
use std::time::Duration;

use rootsafe::child::{self, Ended, RunError, Stderr};

/// A single tool or probe slower than this is killed: each takes well under a second once the
/// wineserver is up, and a hung one must not hang CI.
pub const TOOL_DEADLINE: Duration = Duration::from_secs(60);

/// A whole `cni-conformance` catalogue run (58 cases, one of them 50 pods at once) takes about
/// a minute under Wine on 2 cores; its own per-exec timeout catches a hung plugin first.
pub const CATALOGUE_DEADLINE: Duration = Duration::from_secs(20 * 60);

/// How a finished process ended and what it printed.
#[derive(Debug, Clone)]
pub struct Ran {
    /// `program args…`, for messages.
    pub command_line: String,
    /// Exit status; `None` when killed (deadline or signal).
    pub status: Option<i32>,
    /// The signal that ended it, when one did and the deadline did not.
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    pub fn succeeded(&self) -> bool {
        self.status == Some(0)
    }

    /// stdout of a run that had to succeed; otherwise an error quoting the failure.
    pub fn ok(self) -> Result<String, String> {
        if self.succeeded() {
            Ok(self.stdout)
        } else {
            Err(self.failure())
        }
    }

    /// How it ended: `exit status N`, `killed by signal N` or `killed at the deadline`.
    pub fn ending(&self) -> String {
        match (self.status, self.signal) {
            (Some(code), _) => format!("exit status {code}"),
            (None, Some(signal)) => format!("killed by signal {signal}"),
            (None, None) => "killed at the deadline".to_owned(),
        }
    }

    /// What went wrong, for a run that did not succeed.
    pub fn failure(&self) -> String {
        format!(
            "`{}` failed ({}): {}",
            self.command_line,
            self.ending(),
            self.stderr.trim()
        )
    }

    /// stderr of a run that had to fail; an error if it succeeded.
    pub fn failed(self) -> Result<String, String> {
        if self.succeeded() {
            Err(format!(
                "`{}` succeeded but must fail; it printed {:?}",
                self.command_line,
                self.stdout.trim()
            ))
        } else {
            Ok(self.stderr)
        }
    }
}

/// Runs `command` to completion (or `deadline`) with stdin closed.
pub fn run(command: Command, deadline: Duration) -> Result<Ran, String> {
    run_with_stdin(command, None, deadline)
}

/// Runs `command` to completion (or `deadline`) with `stdin` (closed when `None`).
pub fn run_with_stdin(
    mut command: Command,
    stdin: Option<Vec<u8>>,
    deadline: Duration,
) -> Result<Ran, String> {
    let command_line = describe(&command);
    let finished = child::run(&mut command, stdin.as_deref(), Stderr::Capture, deadline).map_err(
        |e| match e {
            RunError::Start(e) => format!("cannot start `{command_line}`: {e}"),
            RunError::Wait(e) => format!("waiting for `{command_line}`: {e}"),
        },
    )?;
    Ok(Ran {
        command_line,
        status: match finished.ended {
            Ended::Exited(status) => status.code(),
            Ended::TimedOut => None,
        },
        signal: match finished.ended {
            Ended::Exited(status) => signal(status),
            Ended::TimedOut => None,
        },
        stdout: String::from_utf8_lossy(&finished.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&finished.stderr).into_owned(),
    })
}

#[cfg(unix)]
fn signal(status: std::process::ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(&status)
}

#[cfg(not(unix))]
fn signal(_: std::process::ExitStatus) -> Option<i32> {
    None
}

fn describe(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| part.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}
