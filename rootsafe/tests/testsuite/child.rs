//! Running a child to its end or its deadline, with its input fed and its output drained.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use rootsafe::child::{Ended, RunError, Stderr, run};

/// Generous: only a hang comes near it.
const LONG: Duration = Duration::from_secs(60);

fn sh(script: &str) -> Command {
    let mut command = Command::new("/bin/sh");
    command.args(["-c", script]);
    command
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn feeds_stdin_and_captures_both_streams_and_the_status() {
    let finished = run(
        &mut sh("read line; echo \"out $line\"; echo err >&2; exit 3"),
        Some(b"in\n"),
        Stderr::Capture,
        LONG,
    )
    .unwrap();
    let Ended::Exited(status) = finished.ended else {
        panic!("{:?}", finished.ended)
    };
    assert_eq!(status.code(), Some(3));
    assert_eq!(finished.stdout, b"out in\n");
    assert_eq!(finished.stderr, b"err\n");
}

#[test]
fn without_input_stdin_is_closed() {
    let finished = run(&mut sh("cat"), None, Stderr::Capture, LONG).unwrap();
    assert!(matches!(finished.ended, Ended::Exited(s) if s.success()));
    assert!(finished.stdout.is_empty());
}

#[test]
fn inherited_stderr_is_not_captured() {
    let finished = run(&mut sh("echo err >&2"), None, Stderr::Inherit, LONG).unwrap();
    assert!(finished.stderr.is_empty());
}

/// More than a pipe buffer each way, the answer written before the input is read: feeding and
/// draining on one thread would wait on each other forever.
#[test]
fn a_child_that_answers_before_reading_a_large_input_does_not_deadlock() {
    let (done, finished) = mpsc::channel();
    thread::spawn(move || {
        let input = vec![b' '; 200_000];
        let _ = done.send(run(
            &mut sh("head -c 200000 /dev/zero; cat >/dev/null"),
            Some(&input),
            Stderr::Capture,
            LONG,
        ));
    });
    let finished = finished
        .recv_timeout(Duration::from_secs(20))
        .expect("the run deadlocked")
        .unwrap();
    assert!(matches!(finished.ended, Ended::Exited(s) if s.success()));
    assert_eq!(finished.stdout.len(), 200_000);
}

/// A hung child is killed at the deadline, even while a grandchild holds its pipes open; what it
/// printed before is kept.
#[test]
fn a_hung_child_is_killed_at_the_deadline() {
    let timeout = Duration::from_millis(300);
    let finished = run(
        &mut sh("echo started; sleep 30 & sleep 30"),
        None,
        Stderr::Capture,
        timeout,
    )
    .unwrap();
    assert_eq!(finished.ended, Ended::TimedOut);
    assert!(finished.elapsed >= timeout);
    assert_eq!(finished.stdout, b"started\n");
}

#[test]
fn a_binary_that_cannot_start_is_a_start_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = run(
        &mut Command::new(dir.path().join("absent")),
        None,
        Stderr::Capture,
        LONG,
    )
    .unwrap_err();
    assert!(
        matches!(&error, RunError::Start(e) if e.kind() == std::io::ErrorKind::NotFound),
        "{error:?}"
    );
}

/// A binary still open for writing ("text file busy": being installed, or a descriptor a
/// concurrent fork inherited) is started once the writer lets go.
#[test]
fn a_binary_busy_being_written_is_started_once_it_is_free() {
    let dir = tempfile::tempdir().unwrap();
    let binary = script(dir.path(), "ipam", "cat >/dev/null");
    let writer = std::fs::OpenOptions::new()
        .append(true)
        .open(&binary)
        .unwrap();
    let release = thread::spawn(move || {
        thread::sleep(Duration::from_millis(200));
        drop(writer);
    });
    let finished = run(
        &mut Command::new(&binary),
        Some(b"{}"),
        Stderr::Capture,
        LONG,
    );
    release.join().unwrap();
    assert!(matches!(finished.unwrap().ended, Ended::Exited(s) if s.success()));
}
