//! The NetworkPolicy agent as a process of the lane (the `.exe` under Wine or the Linux build):
//! whether it still runs, the end of its log for a message, and killed when dropped.

use std::cell::RefCell;
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

/// A started agent and the file its stdout and stderr go to.
pub struct AgentProcess {
    child: RefCell<Child>,
    log: PathBuf,
}

impl AgentProcess {
    pub fn new(child: Child, log: PathBuf) -> AgentProcess {
        AgentProcess {
            child: RefCell::new(child),
            log,
        }
    }

    /// Whether it still runs; an error quoting its log when it does not.
    pub fn running(&self) -> Result<(), String> {
        match self.child.borrow_mut().try_wait() {
            Ok(None) => Ok(()),
            _ => Err(format!("the agent exited: {}", self.log_tail())),
        }
    }

    /// Asks `check` every `interval` until it answers, fails, the agent exits, or `within`
    /// has passed: every wait of the lane on the agent has a deadline and notices its death.
    pub fn poll<T>(
        &self,
        within: Duration,
        interval: Duration,
        what: &str,
        mut check: impl FnMut() -> Result<Option<T>, String>,
    ) -> Result<T, String> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(found) = check()? {
                return Ok(found);
            }
            self.running()?;
            if Instant::now() >= deadline {
                return Err(format!(
                    "no {what} within {} s; the agent's log ends: {}",
                    within.as_secs(),
                    self.log_tail()
                ));
            }
            std::thread::sleep(interval);
        }
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(6)..].join("\n")
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let child = self.child.get_mut();
        let _ = child.kill();
        let _ = child.wait();
    }
}
