//! `cni-win daemon`: the node daemon's arguments and what it prints each round; the work is
//! [`cni_win::daemon`] (and, with `--network-policy`, [`cni_win::network_policy`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use cni::logging::LogSettings;
use cni_win::Error;
use cni_win::daemon::{self, Daemon};
use cni_win::network_policy::{self, Agent, ApiSettings};
use cni_win::shutdown::Shutdown;

use super::NodePathArgs;
use super::sweep::{log_pass, print};

/// Runs the node daemon: the sweep, HNS drift and doctor's checks each round, metrics, and
/// optionally the NetworkPolicy agent; stops on SIGTERM or Ctrl-C (the console's stop events
/// on Windows).
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub paths: NodePathArgs,
    /// Remove what is stale each round (without it, only report).
    #[arg(long)]
    pub apply: bool,
    /// Print each round's sweep as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// How long to wait after a round before the next starts (e.g. 30s, 5m, 1h).
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub every: Duration,
    #[command(flatten)]
    pub daemon: DaemonFlags,
}

/// What only the daemon does: `cni-win daemon`'s, and `cni-win sweep --every`'s, the
/// daemon's old spelling.
#[derive(Debug, Default, clap::Args)]
pub struct DaemonFlags {
    /// Serve Prometheus metrics at http://ADDRESS/metrics (e.g. 0.0.0.0:9760; port 0 picks a
    /// free port, printed), updated each round.
    #[arg(long, value_name = "ADDRESS", value_parser = parse_address)]
    pub metrics_address: Option<SocketAddr>,
    /// Enforce Kubernetes NetworkPolicy on this node's pods with HNS ACLs, watching the API
    /// server (the in-cluster ServiceAccount, or --kubeconfig) and writing the snapshot new
    /// pods start from (the conflist's networkPolicySnapshot).
    #[arg(long)]
    pub network_policy: bool,
    /// With --network-policy: the API server and credentials to use instead of the
    /// in-cluster ServiceAccount.
    #[arg(long, value_name = "PATH", requires = "network_policy")]
    pub kubeconfig: Option<PathBuf>,
    /// With --network-policy: this node's name in the cluster (default: $NODE_NAME, as a
    /// DaemonSet passes it from spec.nodeName).
    #[arg(long, value_name = "NAME", requires = "network_policy")]
    pub node_name: Option<String>,
    /// With --network-policy: how long after the agent last confirmed it ADD may use the
    /// snapshot (e.g. 2m, 5m; the agent confirms it at least every tenth of this while it is
    /// synced and the API server answers). Past it, and when the agent has run that long
    /// without syncing, new pods wait (ADD fails with code 11) instead of starting on stale
    /// rules or none.
    #[arg(long, value_name = "DURATION", requires = "network_policy", value_parser = parse_duration)]
    pub snapshot_max_age: Option<Duration>,
}

pub fn run(args: Args) -> Result<(), Error> {
    let paths = args.paths.paths()?;
    // The daemon's own log lines (HNS drift, the NetworkPolicy agent) go to stderr with the
    // passes, at info unless CNI_WIN_LOG_LEVEL says otherwise.
    let (logging, notes) =
        LogSettings::resolve(&|key| std::env::var(key).ok(), Some("info"), None, None);
    cni::logging::init("cni-win daemon:".to_owned(), &logging);
    for note in notes {
        log::warn!("{note}");
    }
    let stop = Shutdown::on_signals()?;
    let (apply, json) = (args.apply, args.json);
    let flags = args.daemon;
    let agent = if flags.network_policy {
        let node_name = node_name(flags.node_name)?;
        eprintln!("cni-win daemon: enforcing NetworkPolicy on node {node_name:?}");
        let settings = network_policy::Settings {
            node_name,
            snapshot_max_age: flags
                .snapshot_max_age
                .unwrap_or(cni_win_core::network_policy::DEFAULT_MAX_AGE),
        };
        let mut agent = Agent::start(settings, &stop);
        agent.watch(ApiSettings {
            kubeconfig: flags.kubeconfig,
        })?;
        Some(agent)
    } else {
        None
    };
    let settings = daemon::Settings {
        paths,
        apply,
        every: args.every,
        metrics_address: flags.metrics_address,
    };
    let mut daemon = Daemon::start(settings, move |pass| match pass {
        Ok(pass) => {
            log_pass(pass, apply);
            if let Err(e) = print(pass, json) {
                eprintln!("cni-win daemon: {}", cni_win::chain(&e));
            }
        }
        Err(e) => eprintln!("cni-win daemon: pass failed: {}", cni_win::chain(e)),
    })?;
    if let Some(agent) = &agent {
        daemon = daemon.with_task(agent.task());
    }
    if let Some(address) = daemon.metrics_address() {
        eprintln!("cni-win daemon: serving metrics on http://{address}/metrics");
    }
    daemon.run(&stop);
    drop(agent);
    eprintln!("cni-win daemon: stopped");
    Ok(())
}

/// The node's name: `--node-name`, else `NODE_NAME`.
fn node_name(flag: Option<String>) -> Result<String, Error> {
    flag.or_else(|| std::env::var("NODE_NAME").ok())
        .filter(|name| !name.trim().is_empty())
        .ok_or_else(|| {
            Error::new(
                "--network-policy needs this node's name: pass --node-name, or set NODE_NAME \
                 (a DaemonSet sets it from spec.nodeName)",
            )
        })
}

/// `IP:PORT`, such as `0.0.0.0:9760`.
fn parse_address(text: &str) -> Result<SocketAddr, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not IP:PORT (such as 0.0.0.0:9760)"))
}

/// `30s`, `5m`, `1h` or a number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (e.g. 30s, 5m, 1h)"))?;
    let seconds = match unit {
        "s" => number,
        "m" => number.saturating_mul(60),
        "h" => number.saturating_mul(3600),
        _ => return Err(format!("{text:?}: the unit must be s, m or h")),
    };
    if seconds == 0 {
        return Err("the interval must be at least 1s".to_owned());
    }
    Ok(Duration::from_secs(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_operators_write_them() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
        for bad in ["", "0s", "m", "5d", "-1s", "1.5m"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
