//! Running a child process to its end or its deadline, whichever comes first.
//!
//! A plugin delegates to an IPAM plugin, the operator command asks binaries for their version,
//! the test harnesses run plugins and tools: each of them may hang, and none may hang its
//! caller. So [`run`] feeds stdin from its own thread while stdout and stderr are drained on
//! theirs (a child may answer before it has read its input, and with both larger than a pipe's
//! buffer a write followed by a read would wait on each other forever), waits at most until
//! the deadline, and then kills and reaps the child. It reports which of the two happened, and
//! what the child printed either way.

use std::io::{self, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use crate::deadline::{self, Backoff};

/// More output than this on one stream is dropped: no real answer comes near it, and a runaway
/// child must not exhaust its caller's memory before its deadline.
pub const MAX_CAPTURE_BYTES: usize = 4 * 1024 * 1024;

/// How long to wait for a child's stdout or stderr to close once it has exited or was killed.
/// A grandchild that inherited the pipe can hold it open; the caller gets what was read rather
/// than wait for the grandchild.
const PIPE_GRACE: Duration = Duration::from_millis(500);

/// How long a binary that is still open for writing somewhere ("text file busy": an installer is
/// writing it, or a descriptor a concurrent fork of this process inherited) is started again:
/// libcni retries the same condition. Bounded, so a binary that stays busy fails within a second.
const BUSY_WINDOW: Duration = Duration::from_secs(1);
/// The pauses between two starts of a busy binary.
const BUSY_BACKOFF: Backoff = Backoff::new(Duration::from_millis(20), Duration::from_millis(200));

/// The pauses between two looks at whether the child has exited: fine enough that a fast child's
/// run is not measured longer than it is.
const EXIT_BACKOFF: Backoff = Backoff::new(Duration::from_millis(1), Duration::from_millis(10));

/// What becomes of the child's stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stderr {
    /// Captured into [`Finished::stderr`].
    Capture,
    /// Passed through to this process's stderr (a delegated plugin's log lines reach the
    /// runtime's log as the plugin's own).
    Inherit,
}

/// How the child's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited (or was ended by a signal) on its own.
    Exited(ExitStatus),
    /// It outlived the deadline and was killed and reaped.
    TimedOut,
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct Finished {
    /// Whether the child exited or was killed at the deadline.
    pub ended: Ended,
    /// Everything it printed on stdout (up to [`MAX_CAPTURE_BYTES`]).
    pub stdout: Vec<u8>,
    /// Everything it printed on stderr (up to [`MAX_CAPTURE_BYTES`]); empty unless captured.
    pub stderr: Vec<u8>,
    /// Wall-clock time from the start to the end (exit or kill).
    pub elapsed: Duration,
}

/// Why a run could not be done at all.
#[derive(Debug)]
pub enum RunError {
    /// The child could not be started.
    Start(io::Error),
    /// Its state could not be read; it was killed and reaped.
    Wait(io::Error),
}

impl From<RunError> for io::Error {
    fn from(error: RunError) -> io::Error {
        match error {
            RunError::Start(e) | RunError::Wait(e) => e,
        }
    }
}

/// Runs `command` with `stdin` as its input (`None`: no input, stdin closed), capturing its
/// stdout and, as `stderr` says, its stderr; kills and reaps it once `timeout` has passed.
/// A binary that is busy being written is started again for up to a second.
pub fn run(
    command: &mut Command,
    stdin: Option<&[u8]>,
    stderr: Stderr,
    timeout: Duration,
) -> Result<Finished, RunError> {
    command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(match stderr {
            Stderr::Capture => Stdio::piped(),
            Stderr::Inherit => Stdio::inherit(),
        });
    let started = Instant::now();
    let mut child = start(command).map_err(RunError::Start)?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let bytes = bytes.to_vec();
        // A child may exit without reading its input; a broken pipe then is its right, and its
        // exit status tells the rest. The thread is not joined: a grandchild holding the pipe
        // could keep the write waiting.
        thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    let stdout = child.stdout.take().map(Capture::start);
    let stderr = child.stderr.take().map(Capture::start);
    let ended = wait(&mut child, started + timeout).map_err(|e| {
        let _ = child.kill();
        let _ = child.wait();
        RunError::Wait(e)
    })?;
    let elapsed = started.elapsed();
    Ok(Finished {
        ended,
        stdout: stdout.map(Capture::finish).unwrap_or_default(),
        stderr: stderr.map(Capture::finish).unwrap_or_default(),
        elapsed,
    })
}

/// Starts `command`, starting a binary that is busy being written again (see [`BUSY_WINDOW`]).
fn start(command: &mut Command) -> io::Result<Child> {
    let mut busy = None;
    let started = deadline::poll(Instant::now() + BUSY_WINDOW, BUSY_BACKOFF, || match command
        .spawn()
    {
        Ok(child) => Ok(Some(child)),
        Err(e) if e.kind() == io::ErrorKind::ExecutableFileBusy => {
            busy = Some(e);
            Ok(None)
        }
        Err(e) => Err(e),
    })?;
    started.ok_or_else(|| busy.unwrap_or_else(|| io::ErrorKind::ExecutableFileBusy.into()))
}

/// Waits for `child` to exit until `deadline`, then kills and reaps it.
fn wait(child: &mut Child, deadline: Instant) -> io::Result<Ended> {
    match deadline::poll(deadline, EXIT_BACKOFF, || child.try_wait())? {
        Some(status) => Ok(Ended::Exited(status)),
        None => {
            // It may have exited in between; either way it is reaped here.
            let _ = child.kill();
            child.wait()?;
            Ok(Ended::TimedOut)
        }
    }
}

/// A pipe drained by a thread into a shared buffer, so that a pipe that never closes still
/// yields what was read from it.
struct Capture {
    buffer: Arc<Mutex<Vec<u8>>>,
    done: mpsc::Receiver<()>,
}

impl Capture {
    fn start(mut pipe: impl Read + Send + 'static) -> Capture {
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

    fn finish(self) -> Vec<u8> {
        let _ = self.done.recv_timeout(PIPE_GRACE);
        match self.buffer.lock() {
            Ok(mut buffer) => std::mem::take(&mut *buffer),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        }
    }
}
