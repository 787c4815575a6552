//! Executing a plugin exactly as a container runtime does: chosen environment, config on stdin,
//! a deadline, and everything it prints captured.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::launcher::Launcher;

/// More output than this from one call is dropped: no real reply comes near it, and a runaway
/// plugin must not exhaust the harness's memory before its deadline.
const MAX_CAPTURE_BYTES: usize = 4 * 1024 * 1024;

/// How long to wait for a pipe to close after the plugin exited or was killed. A grandchild that
/// inherited the pipe can hold it open; the harness reports what it read rather than hanging.
const PIPE_GRACE: Duration = Duration::from_millis(500);

/// What a runtime hands one plugin call: environment variables and stdin.
///
/// Only these variables carry CNI meaning for the plugin: the harness's own `CNI_*` variables
/// are removed from the inherited environment, so a case that leaves one out really leaves it out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Invocation {
    /// The whole environment of the call, not added to the harness's.
    pub env: BTreeMap<String, String>,
    /// The bytes the plugin reads on stdin, normally the network config.
    pub stdin: Vec<u8>,
}

impl Invocation {
    /// An invocation with no variables and empty stdin, for a case to build up.
    pub fn new() -> Invocation {
        Invocation::default()
    }

    /// Sets an environment variable (a `CNI_*` one, or one a fixture needs).
    pub fn set(mut self, name: &str, value: impl Into<String>) -> Invocation {
        self.env.insert(name.to_owned(), value.into());
        self
    }

    /// Removes a variable, for cases that prove a missing one is refused.
    pub fn unset(mut self, name: &str) -> Invocation {
        self.env.remove(name);
        self
    }

    /// Raw stdin bytes, for cases that send something other than a config.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Invocation {
        self.stdin = bytes.into();
        self
    }

    /// A JSON document (the network config) as stdin.
    pub fn config(self, config: &serde_json::Value) -> Invocation {
        self.stdin(config.to_string())
    }
}

/// How a plugin process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this status.
    Status(i32),
    /// It was ended by a signal it did not handle (Unix).
    Signalled,
    /// It outlived the deadline and was killed.
    TimedOut(Duration),
}

impl Exit {
    /// Whether the plugin exited 0, the only status the spec counts as success.
    pub fn success(self) -> bool {
        self == Exit::Status(0)
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Status(code) => write!(f, "exit status {code}"),
            Exit::Signalled => f.write_str("killed by a signal"),
            Exit::TimedOut(limit) => {
                write!(f, "still running after {} ms: killed", limit.as_millis())
            }
        }
    }
}

/// One finished plugin call.
#[derive(Debug, Clone)]
pub struct Exec {
    /// How the process ended, so a hang or a crash is reported as such.
    pub exit: Exit,
    /// Everything on stdout, which the protocol checks parse as a result or an error.
    pub stdout: Vec<u8>,
    /// Everything on stderr, shown in a failing case's message.
    pub stderr: Vec<u8>,
    /// Wall-clock time of the call, printed per case in reports.
    pub elapsed: Duration,
}

/// Runs `program` through `launcher` with `invocation`, killing it at `timeout`.
///
/// Fails only when the process cannot be started; everything the plugin does after that
/// (including hanging) is reported in the [`Exec`].
pub fn execute(
    launcher: &dyn Launcher,
    program: &Path,
    invocation: &Invocation,
    timeout: Duration,
) -> io::Result<Exec> {
    execute_with_args(launcher, program, &[], invocation, timeout)
}

/// [`execute`] with command-line arguments, for the helper programs fixtures run (`hnsctl`):
/// they get the plugin's launcher, environment rules and deadline, so a hung helper cannot hang
/// the run.
pub fn execute_with_args(
    launcher: &dyn Launcher,
    program: &Path,
    args: &[&str],
    invocation: &Invocation,
    timeout: Duration,
) -> io::Result<Exec> {
    let started = Instant::now();
    let mut child = spawn(launcher, program, args, invocation)?;

    let feeder = child.stdin.take().map(|mut pipe| {
        let bytes = invocation.stdin.clone();
        // A plugin may exit without reading stdin; a broken pipe then is its right, not an error.
        thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        })
    });
    let stdout = child.stdout.take().map(Capture::start);
    let stderr = child.stderr.take().map(Capture::start);

    let exit = wait_until(&mut child, started + timeout, timeout)?;
    let elapsed = started.elapsed();
    if let Some(feeder) = feeder {
        // The process is gone, so the write has finished or failed; the join cannot block.
        let _ = feeder.join();
    }
    Ok(Exec {
        exit,
        stdout: stdout.map(Capture::finish).unwrap_or_default(),
        stderr: stderr.map(Capture::finish).unwrap_or_default(),
        elapsed,
    })
}

fn spawn(
    launcher: &dyn Launcher,
    program: &Path,
    args: &[&str],
    invocation: &Invocation,
) -> io::Result<Child> {
    let mut command = launcher.command(program);
    command
        .args(args)
        .env_clear()
        .envs(without_cni_variables(std::env::vars_os()))
        .envs(launcher.env())
        .envs(&invocation.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // A binary written just before (a test's script, a fresh build) can be briefly busy while a
    // forked sibling still holds it open for writing; libcni retries for the same reason.
    let mut attempts = 0;
    loop {
        match command.spawn() {
            Err(err) if err.kind() == io::ErrorKind::ExecutableFileBusy && attempts < 5 => {
                attempts += 1;
                thread::sleep(Duration::from_millis(20 * attempts));
            }
            other => return other,
        }
    }
}

/// The inherited environment minus every `CNI_*` variable (matched without regard to case, as
/// Windows does).
pub(crate) fn without_cni_variables(
    vars: impl Iterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    vars.filter(|(name, _)| {
        // Bytes, not a `str` slice: a name with a multi-byte character across byte 4 (or one
        // that is not Unicode) must be judged, not panic the harness.
        !name
            .as_encoded_bytes()
            .get(..4)
            .is_some_and(|prefix| prefix.eq_ignore_ascii_case(b"CNI_"))
    })
    .collect()
}

fn wait_until(child: &mut Child, deadline: Instant, timeout: Duration) -> io::Result<Exit> {
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(status.code().map_or(Exit::Signalled, Exit::Status));
        }
        let now = Instant::now();
        if now >= deadline {
            // The process may have exited in between; either way it is reaped below.
            let _ = child.kill();
            child.wait()?;
            return Ok(Exit::TimedOut(timeout));
        }
        thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(10));
    }
}

/// A pipe drained by a thread into a shared buffer, so a pipe that never closes still yields
/// what was read from it. Public for other harnesses that run processes a grandchild may
/// outlive (the first Wine process of a session starts Wine's services, which inherit its
/// stderr and keep it open).
#[derive(Debug)]
pub struct Capture {
    buffer: Arc<Mutex<Vec<u8>>>,
    done: mpsc::Receiver<()>,
}

impl Capture {
    /// Starts draining `pipe` (at most 4 MiB is kept).
    pub fn start(mut pipe: impl Read + Send + 'static) -> Capture {
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = mpsc::channel();
        let shared = Arc::clone(&buffer);
        thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                if let Ok(mut buffer) = shared.lock()
                    && buffer.len() < MAX_CAPTURE_BYTES
                {
                    buffer.extend_from_slice(&chunk[..n]);
                }
            }
            let _ = tx.send(());
        });
        Capture { buffer, done }
    }

    /// What was read, once the pipe closed or, after the process ended, at most half a second
    /// later.
    pub fn finish(self) -> Vec<u8> {
        let _ = self.done.recv_timeout(PIPE_GRACE);
        match self.buffer.lock() {
            Ok(mut buffer) => std::mem::take(&mut *buffer),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_harness_own_cni_variables_never_reach_the_plugin() {
        let inherited = [
            ("PATH", "/usr/bin"),
            ("CNI_NETNS", "/leaked"),
            ("cni_path", "/leaked"),
            ("CNI", "kept: not a CNI_ variable"),
            (
                "ABCé",
                "kept: a multi-byte character across the prefix's end",
            ),
            ("HOME", "/root"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let kept: Vec<_> = without_cni_variables(inherited.into_iter())
            .into_iter()
            .map(|(k, _)| k)
            .collect();
        assert_eq!(kept, ["PATH", "CNI", "ABCé", "HOME"]);
    }

    #[test]
    fn invocation_builder_sets_and_unsets() {
        let inv = Invocation::new()
            .set("CNI_COMMAND", "ADD")
            .set("CNI_NETNS", "ns")
            .unset("CNI_NETNS")
            .config(&serde_json::json!({"a": 1}));
        assert_eq!(inv.env.len(), 1);
        assert_eq!(inv.stdin, br#"{"a":1}"#);
    }
}
