//! Running one helper process with a deadline and capturing what it printed.

use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use conformance::exec::Capture;

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
    let mut child = command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start `{command_line}`: {e}"))?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A process that exits without reading closes the pipe; its status tells the rest.
        thread::spawn(move || {
            let _ = std::io::Write::write_all(&mut pipe, &bytes);
        });
    }
    let stdout = child.stdout.take().map(Capture::start);
    let stderr = child.stderr.take().map(Capture::start);
    let ended =
        wait(&mut child, deadline).map_err(|e| format!("waiting for `{command_line}`: {e}"))?;
    Ok(Ran {
        command_line,
        status: ended.and_then(|status| status.code()),
        signal: ended.and_then(signal),
        stdout: collect(stdout),
        stderr: collect(stderr),
    })
}

/// How the child ended; `None` when it was killed at the deadline.
fn wait(child: &mut Child, deadline: Duration) -> std::io::Result<Option<ExitStatus>> {
    let deadline = Instant::now() + deadline;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            child.kill()?;
            child.wait()?;
            return Ok(None);
        }
        thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(unix)]
fn signal(status: ExitStatus) -> Option<i32> {
    std::os::unix::process::ExitStatusExt::signal(&status)
}

#[cfg(not(unix))]
fn signal(_: ExitStatus) -> Option<i32> {
    None
}

/// What a pipe carried, read until it closed or shortly after the process ended: the first
/// Wine process of a session starts Wine's services, which keep its stderr open.
fn collect(capture: Option<Capture>) -> String {
    capture
        .map(|capture| String::from_utf8_lossy(&capture.finish()).into_owned())
        .unwrap_or_default()
}

fn describe(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| part.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}
