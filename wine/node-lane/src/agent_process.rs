//! The node daemon as a process of a harness, the NetworkPolicy agent's or the daemon alone,
//! started one way wherever it runs (the `.exe` under the node lane's Wine, the Linux build in
//! the truth tables and the benchmark): whether it still runs, its metrics, the end of its log,
//! and killed when dropped.

use std::cell::RefCell;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hns_emulator::STATE_ENV;

use crate::NODE_NAME;
use crate::control_plane::ControlPlane;

/// What differs between the nodes an agent runs on: the program and its environment, how it
/// spells a path, and the node's directories.
pub struct Launch<'a> {
    /// `cni-win`, with the node's environment (the emulator's state; Wine's, for the `.exe`).
    pub command: Command,
    /// A path as the agent sees it: unchanged natively, `Z:\…` under Wine.
    pub spell: Box<dyn Fn(&Path) -> String + 'a>,
    /// Where its kubeconfig and its log are written.
    pub dir: PathBuf,
    /// The node's CNI config directory: the conflist names the snapshot the agent writes.
    pub conf_dir: PathBuf,
    /// The node's plugin directory.
    pub bin_dir: PathBuf,
}

impl Launch<'_> {
    /// The native Linux `cni-win` at `binary`, on the emulator state at `state`.
    pub fn native(
        binary: &Path,
        state: &Path,
        dir: PathBuf,
        conf_dir: PathBuf,
        bin_dir: PathBuf,
    ) -> Launch<'static> {
        let mut command = Command::new(binary);
        command.env(STATE_ENV, state);
        Launch {
            command,
            spell: Box::new(|path| path.display().to_string()),
            dir,
            conf_dir,
            bin_dir,
        }
    }
}

impl std::fmt::Debug for Launch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("command", &self.command)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// A started daemon (the agent's, or the daemon alone), the file its stdout and stderr go to,
/// and where it serves its metrics.
#[derive(Debug)]
pub struct AgentProcess {
    child: RefCell<Child>,
    log: PathBuf,
    metrics: SocketAddr,
}

impl AgentProcess {
    /// Starts the agent as a node runs it (the daemon with `--network-policy`), authenticated
    /// to `plane` as deploy/rbac.yaml's ServiceAccount, its metrics on a free loopback port,
    /// its log (`agent.log`) appended to (a restarted agent's follows the first one's). Its
    /// daemon rounds are an hour apart: what a harness judges is its reaction to the watches,
    /// not a round.
    pub fn start(plane: &ControlPlane, launch: Launch<'_>) -> Result<AgentProcess, String> {
        let kubeconfig = launch.dir.join("agent.kubeconfig");
        plane.write_agent_kubeconfig(&kubeconfig, &launch.spell)?;
        let flags = [
            "--every".to_owned(),
            "1h".to_owned(),
            "--network-policy".to_owned(),
            "--node-name".to_owned(),
            NODE_NAME.to_owned(),
            "--kubeconfig".to_owned(),
            (launch.spell)(&kubeconfig),
        ];
        AgentProcess::daemon(launch, "agent.log", &flags)
    }

    /// Starts the node daemon with `flags` added to what every harness gives it (metrics on a
    /// free loopback port, the node's directories), its stdout and stderr appended to `log`
    /// in the launch's directory: without `--network-policy`, the daemon as a node without
    /// the agent runs it, whose rounds (the sweep, drift and its repair, doctor's checks) a
    /// harness judges by its metrics.
    pub fn daemon(launch: Launch<'_>, log: &str, flags: &[String]) -> Result<AgentProcess, String> {
        let Launch {
            mut command,
            spell,
            dir,
            conf_dir,
            bin_dir,
        } = launch;
        let metrics = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|error| format!("a free port for the daemon's metrics: {error}"))?;
        let log = dir.join(log);
        let out = std::fs::File::options()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|error| format!("{}: {error}", log.display()))?;
        let err = out
            .try_clone()
            .map_err(|error| format!("{}: {error}", log.display()))?;
        command
            .arg("daemon")
            .args(["--metrics-address", &metrics.to_string()])
            .args(["--conf-dir", &spell(&conf_dir)])
            .args(["--bin-dir", &spell(&bin_dir)])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let child = command.spawn().map_err(|error| {
            format!(
                "cannot start the daemon ({:?}): {error}",
                command.get_program()
            )
        })?;
        Ok(AgentProcess {
            child: RefCell::new(child),
            log,
            metrics,
        })
    }

    /// Whether it still runs; an error quoting its log when it does not.
    pub fn running(&self) -> Result<(), String> {
        match self.child.borrow_mut().try_wait() {
            Ok(None) => Ok(()),
            _ => Err(format!("the daemon exited: {}", self.log_tail())),
        }
    }

    /// Asks `check` every `interval` until it answers, fails, the daemon exits, or `within`
    /// has passed: every wait of a harness on the daemon has a deadline and notices its death.
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
                    "no {what} within {} s; the daemon's log ends: {}",
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

    /// Its metrics, as Prometheus scrapes them.
    pub fn scrape(&self) -> Result<String, String> {
        let failed = |error: std::io::Error| format!("metrics at {}: {error}", self.metrics);
        let mut stream =
            TcpStream::connect_timeout(&self.metrics, Duration::from_secs(5)).map_err(failed)?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(failed)?;
        write!(
            stream,
            "GET /metrics HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.metrics
        )
        .map_err(failed)?;
        let mut response = String::new();
        stream.read_to_string(&mut response).map_err(failed)?;
        Ok(response
            .split_once("\r\n\r\n")
            .map_or(response.clone(), |(_, body)| body.to_owned()))
    }

    /// The value of the metric line `name` (its labels included) in one scrape; `None` while
    /// the agent does not answer or has no such line.
    pub fn metric(&self, name: &str) -> Option<f64> {
        let metrics = self.scrape().ok()?;
        metrics.lines().find_map(|line| {
            let value = line.strip_prefix(name)?.strip_prefix(' ')?;
            value.trim().parse().ok()
        })
    }

    /// The sum of every series of the family `family` in one scrape (0 when it has none yet,
    /// as a labelled counter before its first increment); `None` while the daemon does not
    /// answer.
    pub fn total(&self, family: &str) -> Option<f64> {
        Some(family_total(&self.scrape().ok()?, family))
    }

    /// `VmHWM` and `VmRSS` from /proc (kB): the Linux build's peak and current resident set.
    pub fn memory(&self) -> Result<(u64, u64), String> {
        let pid = self.child.borrow().id();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .map_err(|error| format!("the agent's /proc status: {error}"))?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
                .ok_or_else(|| format!("no {name} in the agent's /proc status"))
        };
        Ok((field("VmHWM:")?, field("VmRSS:")?))
    }
}

/// The sum of every series of `family` in `metrics` (OpenMetrics text), whatever its labels.
fn family_total(metrics: &str, family: &str) -> f64 {
    metrics
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(family)?;
            let value = match rest.strip_prefix('{') {
                Some(labelled) => labelled.rsplit_once("} ")?.1,
                None => rest.strip_prefix(' ')?,
            };
            value.trim().parse::<f64>().ok()
        })
        .sum()
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let child = self.child.get_mut();
        let _ = child.kill();
        let _ = child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_familys_total_sums_its_series_and_no_other_familys() {
        let metrics = "# TYPE cniwin_hns_drift gauge\n\
                       cniwin_hns_drift{reason=\"duplicate-address-remote\",network=\"cbr0\"} 1\n\
                       cniwin_hns_drift{reason=\"hns-unreadable\",network=\"\"} 2\n\
                       cniwin_hns_drift_repairs_total{reason=\"duplicate-address-remote\",result=\"removed\"} 5\n\
                       cniwin_hns_up 1\n";
        assert_eq!(family_total(metrics, "cniwin_hns_drift"), 3.0);
        assert_eq!(family_total(metrics, "cniwin_hns_drift_repairs_total"), 5.0);
        assert_eq!(family_total(metrics, "cniwin_hns_up"), 1.0);
        assert_eq!(
            family_total(metrics, "cniwin_stale_objects_removed_total"),
            0.0
        );
    }
}
