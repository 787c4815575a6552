//! Stopping a long-running command cleanly: asked for by the process's stop signals (SIGTERM,
//! Ctrl-C; on Windows the console's Ctrl-C, Ctrl-Break, close and system shutdown events, the
//! last being what a stopping container and a shutting-down node send) or by the caller, and
//! seen between rounds and between removals, so a stop never cuts a removal in half and a
//! node daemon that is told to stop does so within a second of finishing what it was doing.
//!
//! A signal handler may only touch an atomic flag; waiting therefore looks at that flag every
//! [`POLL`], and a stop asked for by the caller wakes the wait at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::Error;

/// How often a wait looks at the signal flag: a signalled stop is seen within this.
pub const POLL: Duration = Duration::from_millis(100);

/// Set by the process's stop signals (see [`Shutdown::on_signals`]).
static SIGNALLED: AtomicBool = AtomicBool::new(false);

/// A stop that may be asked for: cloned to whoever must see it.
#[derive(Debug, Clone, Default)]
pub struct Shutdown {
    inner: Arc<Inner>,
    /// Whether the process's stop signals ask for this stop.
    signals: bool,
}

#[derive(Debug, Default)]
struct Inner {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    requested: bool,
    finished: bool,
}

impl Shutdown {
    /// A stop only the caller asks for ([`Shutdown::request`]).
    pub fn new() -> Shutdown {
        Shutdown::default()
    }

    /// A stop the process's stop signals ask for, as well as the caller: installs the
    /// handlers (once per process; later calls share them).
    pub fn on_signals() -> Result<Shutdown, Error> {
        let shutdown = Shutdown {
            signals: true,
            ..Shutdown::default()
        };
        platform::install(&shutdown)?;
        Ok(shutdown)
    }

    /// Asks for the stop.
    pub fn request(&self) {
        self.lock().requested = true;
        self.inner.changed.notify_all();
    }

    /// Whether the stop was asked for.
    pub fn is_requested(&self) -> bool {
        self.lock().requested || (self.signals && SIGNALLED.load(Ordering::SeqCst))
    }

    /// Waits until the stop is asked for or `timeout` has passed; returns whether it was
    /// asked for.
    pub fn wait(&self, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        let mut state = self.lock();
        loop {
            if state.requested || (self.signals && SIGNALLED.load(Ordering::SeqCst)) {
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            let slice = if self.signals { left.min(POLL) } else { left };
            state = self
                .inner
                .changed
                .wait_timeout(state, slice)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }

    /// Says the command has stopped: a Windows close or shutdown handler, which the system
    /// ends the process after, waits for this first.
    pub fn finished(&self) {
        self.lock().finished = true;
        self.inner.changed.notify_all();
    }

    /// Waits until [`Shutdown::finished`], at most `timeout`.
    #[cfg_attr(not(windows), allow(dead_code))]
    fn wait_finished(&self, timeout: Duration) {
        let until = Instant::now() + timeout;
        let mut state = self.lock();
        while !state.finished {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            state = self
                .inner
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// SIGTERM (what kubelet and containerd stop a container with) and SIGINT (Ctrl-C).
#[cfg(unix)]
#[allow(unsafe_code)] // installing a signal handler is an FFI call
mod platform {
    use std::sync::atomic::Ordering;

    use super::{SIGNALLED, Shutdown};
    use crate::error::Error;

    extern "C" fn on_signal(_: libc::c_int) {
        SIGNALLED.store(true, Ordering::SeqCst);
    }

    pub(super) fn install(_: &Shutdown) -> Result<(), Error> {
        for signal in [libc::SIGTERM, libc::SIGINT] {
            // SAFETY: `on_signal` only stores to an atomic, which is async-signal-safe, and
            // has the signature `signal` expects; replacing the default action of SIGTERM
            // and SIGINT affects only how this process stops.
            let previous =
                unsafe { libc::signal(signal, on_signal as *const () as libc::sighandler_t) };
            if previous == libc::SIG_ERR {
                return Err(Error::new(format!(
                    "cannot handle signal {signal}: {}",
                    std::io::Error::last_os_error()
                )));
            }
        }
        Ok(())
    }
}

/// The console control events: Ctrl-C and Ctrl-Break (an operator at the console), the
/// console closing, and the system shutting down (what Windows sends a container's processes
/// when the container stops, and every process when the node shuts down). A user logging
/// off is not a reason to stop a node's daemon. The system ends the process once the handler
/// of a close or shutdown returns, so that handler waits (a few seconds at most) until the
/// command has stopped.
#[cfg(windows)]
#[allow(unsafe_code)] // installing a console control handler is an FFI call
mod platform {
    use std::sync::OnceLock;
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use windows::Win32::System::Console::{
        CTRL_BREAK_EVENT, CTRL_C_EVENT, CTRL_CLOSE_EVENT, CTRL_LOGOFF_EVENT, CTRL_SHUTDOWN_EVENT,
        SetConsoleCtrlHandler,
    };
    use windows::core::BOOL;

    use super::{SIGNALLED, Shutdown};
    use crate::error::Error;

    /// Windows gives a close handler 5 s before it ends the process.
    const GRACE: Duration = Duration::from_millis(4500);

    static STOPPING: OnceLock<Shutdown> = OnceLock::new();

    unsafe extern "system" fn on_event(event: u32) -> BOOL {
        match event {
            CTRL_C_EVENT | CTRL_BREAK_EVENT => {
                SIGNALLED.store(true, Ordering::SeqCst);
                true.into()
            }
            CTRL_CLOSE_EVENT | CTRL_SHUTDOWN_EVENT => {
                SIGNALLED.store(true, Ordering::SeqCst);
                if let Some(shutdown) = STOPPING.get() {
                    shutdown.request();
                    shutdown.wait_finished(GRACE);
                }
                true.into()
            }
            CTRL_LOGOFF_EVENT => true.into(),
            _ => false.into(),
        }
    }

    pub(super) fn install(shutdown: &Shutdown) -> Result<(), Error> {
        if STOPPING.set(shutdown.clone()).is_err() {
            return Ok(());
        }
        // SAFETY: `on_event` has the handler routine's signature and touches only an atomic
        // and the process-wide `Shutdown`, which outlives it (a static).
        unsafe { SetConsoleCtrlHandler(Some(on_event), true) }
            .map_err(|e| Error::new(format!("cannot handle console stop events: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_requested_stop_wakes_a_wait_at_once() {
        let shutdown = Shutdown::new();
        assert!(!shutdown.wait(Duration::from_millis(10)));
        let asker = shutdown.clone();
        let started = Instant::now();
        let thread = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            asker.request();
        });
        assert!(shutdown.wait(Duration::from_secs(30)));
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(shutdown.is_requested());
        thread.join().unwrap();
    }
}
