//! The network's `lock`, taken with a deadline.
//!
//! The reference holds the same lock (flock / LockFileEx through go-filemutex) and waits for it
//! without end; a plugin stuck behind a wedged holder would hang kubelet's sandbox setup until
//! its CRI deadline. We poll a non-blocking attempt instead and give up at the deadline with
//! code 11 ("try again later"), naming the lock and, where the OS tells, its holder.

use std::fs::{File, TryLockError};
use std::path::Path;
use std::time::{Duration, Instant};

use cni::{Error, ErrorCode};
use rootsafe::deadline::{self, Backoff};

use crate::fsutil::io_error;

/// Takes the exclusive lock on `file` (the store's `lock` at `path`), waiting at most `timeout`.
pub fn acquire(file: &File, path: &Path, timeout: Duration) -> Result<(), Error> {
    let taken = deadline::poll(Instant::now() + timeout, Backoff::default(), || match file
        .try_lock()
    {
        Ok(()) => Ok(Some(())),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(e)) => Err(io_error("lock", path, &e)),
    })?;
    taken.ok_or_else(|| timed_out(file, path, timeout))
}

fn timed_out(file: &File, path: &Path, timeout: Duration) -> Error {
    let holder = holder(file).map_or_else(String::new, |h| format!(" (held by {h})"));
    Error::new(
        ErrorCode::TryAgainLater,
        format!(
            "the store lock {} is still held by another process after {:.1} s{holder}; try again \
             later",
            path.display(),
            timeout.as_secs_f64()
        ),
    )
    .with_details(format!(
        "another host-local (this one or the reference) is working on the network; if it is \
         stuck, stop it. The deadline is ipam.lockTimeoutSeconds or {}",
        crate::config::LOCK_TIMEOUT_ENV
    ))
}

/// Who holds the lock on `file`: Linux lists flock holders in `/proc/locks` by inode.
#[cfg(target_os = "linux")]
fn holder(file: &File) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let metadata = file.metadata().ok()?;
    let dev = metadata.dev();
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let wanted = format!("{major:02x}:{minor:02x}:{}", metadata.ino());
    let locks = read_small("/proc/locks")?;
    let pid = locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF" (blocked waiters carry "->").
        match fields.as_slice() {
            [_, "FLOCK", _, _, pid, id, ..] if *id == wanted => pid.parse::<u32>().ok(),
            _ => None,
        }
    })?;
    let name = read_small(&format!("/proc/{pid}/comm"))
        .map(|comm| {
            comm.trim()
                .chars()
                .filter(|c| !c.is_control())
                .collect::<String>()
        })
        .unwrap_or_default();
    Some(if name.is_empty() {
        format!("process {pid}")
    } else {
        format!("process {pid}, {name}")
    })
}

#[cfg(not(target_os = "linux"))]
fn holder(_: &File) -> Option<String> {
    None
}

/// A small /proc file (at most 1 MiB read).
#[cfg(target_os = "linux")]
fn read_small(path: &str) -> Option<String> {
    use std::io::Read;
    let mut text = String::new();
    File::open(path)
        .ok()?
        .take(1 << 20)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gives_up_at_the_deadline_naming_the_lock_and_its_holder() {
        let dir = std::env::temp_dir().join(format!("ipam-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("lock");
        let held = File::create(&path).unwrap();
        held.lock().unwrap();
        let waiter = File::open(&path).unwrap();
        let err = acquire(&waiter, &path, Duration::from_millis(50)).unwrap_err();
        assert_eq!(err.code(), ErrorCode::TryAgainLater);
        assert!(
            err.msg().contains(&path.display().to_string()),
            "{}",
            err.msg()
        );
        #[cfg(target_os = "linux")]
        assert!(
            err.msg()
                .contains(&format!("process {}", std::process::id())),
            "{}",
            err.msg()
        );
        held.unlock().unwrap();
        acquire(&waiter, &path, Duration::from_millis(50)).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
