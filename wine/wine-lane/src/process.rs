//! Running one helper process with a deadline and capturing what it printed.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

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

    /// What went wrong, for a run that did not succeed.
    pub fn failure(&self) -> String {
        let status = self
            .status
            .map_or_else(|| "killed".to_owned(), |code| format!("exit status {code}"));
        format!(
            "`{}` failed ({status}): {}",
            self.command_line,
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
    run_with_input(command, &[], deadline)
}

/// Runs `command` to completion (or `deadline`) with `input` on stdin (a CNI config).
pub fn run_with_input(
    mut command: Command,
    input: &[u8],
    deadline: Duration,
) -> Result<Ran, String> {
    let command_line = describe(&command);
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start `{command_line}`: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A child that exits without reading its input is its own failure, reported by its status.
        let _ = stdin.write_all(input);
    }
    let stdout = capture(child.stdout.take());
    let stderr = capture(child.stderr.take());
    let status =
        wait(&mut child, deadline).map_err(|e| format!("waiting for `{command_line}`: {e}"))?;
    Ok(Ran {
        command_line,
        status,
        stdout: collect(stdout),
        stderr: collect(stderr),
    })
}

fn wait(child: &mut Child, deadline: Duration) -> std::io::Result<Option<i32>> {
    let deadline = Instant::now() + deadline;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status.code());
        }
        if Instant::now() >= deadline {
            child.kill()?;
            child.wait()?;
            return Ok(None);
        }
        thread::sleep(Duration::from_millis(5));
    }
}

fn capture(pipe: Option<impl Read + Send + 'static>) -> Option<JoinHandle<String>> {
    pipe.map(|mut pipe| {
        thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    })
}

fn collect(reader: Option<JoinHandle<String>>) -> String {
    reader
        .and_then(|reader| reader.join().ok())
        .unwrap_or_default()
}

fn describe(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|part| part.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}
