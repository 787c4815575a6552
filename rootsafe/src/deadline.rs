//! Waiting for something another process holds, up to a deadline.
//!
//! A lock's holder may be wedged, a child may hang: a process that waits without end hangs its
//! own caller (kubelet's sandbox setup, an operator's shell) until that caller kills it, and then
//! nobody learns why and nothing is rolled back. So every wait here ends at a deadline, and the
//! caller answers in time, naming what it waited for.
//!
//! Only non-blocking attempts are polled: an attempt that blocks cannot be abandoned at the
//! deadline.

use std::thread;
use std::time::{Duration, Instant};

/// The pauses between attempts: `first`, doubling up to `max`. Short first pauses answer a
/// wait that ends at once quickly; the cap bounds how late the end of a long one is noticed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    first: Duration,
    max: Duration,
}

impl Backoff {
    /// Pauses from `first`, doubling up to `max`.
    pub const fn new(first: Duration, max: Duration) -> Backoff {
        Backoff { first, max }
    }
}

impl Default for Backoff {
    /// 1 ms doubling up to 50 ms, for a lock another process holds: a release is noticed within
    /// 50 ms, and a long wait costs about 20 attempts a second.
    fn default() -> Backoff {
        Backoff::new(Duration::from_millis(1), Duration::from_millis(50))
    }
}

/// Calls `attempt` until it gives a value or an error, pausing between calls as `backoff` says,
/// and gives up once `deadline` has passed: `Ok(None)`. `attempt` runs at least once, and once
/// more at the deadline when the last pause ends there.
pub fn poll<T, E>(
    deadline: Instant,
    backoff: Backoff,
    mut attempt: impl FnMut() -> Result<Option<T>, E>,
) -> Result<Option<T>, E> {
    let mut pause = backoff.first;
    loop {
        if let Some(value) = attempt()? {
            return Ok(Some(value));
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(backoff.max);
    }
}
