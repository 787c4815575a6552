//! The `cni` crate's integration tests, one binary: the skeleton end to end, logging and the
//! rotating log file, golden results for every spec version, and property tests.

use std::sync::{Mutex, MutexGuard};

mod log_rotation;
mod logging;
mod properties;
mod result_golden;
mod skel;

/// The process's logger, which every command run in-process (`cni::execute`) sets up again: the
/// tests that run one take turns, so that a test's lines go where it looks for them.
pub fn logger_turn() -> MutexGuard<'static, ()> {
    static LOGGER: Mutex<()> = Mutex::new(());
    // A test that failed during its turn says nothing about the next one's.
    LOGGER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
