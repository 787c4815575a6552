//! `cni-win sweep`: its arguments and what it prints, once or each round of the node daemon
//! (`--every`); the work is [`cni_win::sweep`] and [`cni_win::daemon`].

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use cni::logging::LogSettings;
use cni_win::Error;
use cni_win::daemon::{self, Daemon};
use cni_win::network_policy::{self, Agent, ApiSettings};
use cni_win::shutdown::Shutdown;
use cni_win::sweep::{self, Outcome, Pass, Settings};
use cni_win_core::platform::{self, Deadline};

use super::NodePathArgs;

/// Removes stale endpoints and reservations of cni-win's networks (dry run unless --apply).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The node's paths (a delegated IPAM plugin's DEL runs from the plugin directories;
    /// host-local runs in-process).
    #[command(flatten)]
    paths: NodePathArgs,
    /// Remove what is stale (without it, only report).
    #[arg(long)]
    apply: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Run as the node daemon: a round every DURATION (e.g. 30s, 5m, 1h) after the last one
    /// ended, logging each pass, with doctor's checks after each; stops on SIGTERM or Ctrl-C
    /// (the console's stop events on Windows).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    every: Option<Duration>,
    /// With --every: serve Prometheus metrics at http://ADDRESS/metrics (e.g. 0.0.0.0:9760;
    /// port 0 picks a free port, printed), updated each round.
    #[arg(long, value_name = "ADDRESS", requires = "every", value_parser = parse_address)]
    metrics_address: Option<SocketAddr>,
    /// With --every: enforce Kubernetes NetworkPolicy on this node's pods with HNS ACLs,
    /// watching the API server (the in-cluster ServiceAccount, or --kubeconfig) and writing
    /// the snapshot new pods start from (the conflist's networkPolicySnapshot).
    #[arg(long, requires = "every")]
    network_policy: bool,
    /// With --network-policy: the API server and credentials to use instead of the
    /// in-cluster ServiceAccount.
    #[arg(long, value_name = "PATH", requires = "network_policy")]
    kubeconfig: Option<PathBuf>,
    /// With --network-policy: this node's name in the cluster (default: $NODE_NAME, as a
    /// DaemonSet passes it from spec.nodeName).
    #[arg(long, value_name = "NAME", requires = "network_policy")]
    node_name: Option<String>,
}

pub fn run(args: Args) -> Result<(), Error> {
    let paths = args.paths.paths()?;
    let Some(every) = args.every else {
        let pass = sweep::pass(&Settings {
            paths,
            apply: args.apply,
        })?;
        print(&pass, args.json)?;
        return if pass.failed() {
            Err(Error::Found(
                "some stale objects could not be examined or removed".to_owned(),
            ))
        } else {
            Ok(())
        };
    };
    // The daemon's own log lines (HNS drift, the NetworkPolicy agent) go to stderr with the
    // passes, at info unless CNI_WIN_LOG_LEVEL says otherwise.
    let (logging, note) =
        LogSettings::resolve(&|key| std::env::var(key).ok(), Some("info"), None, None);
    cni::logging::init("cni-win sweep:".to_owned(), &logging);
    if let Some(note) = note {
        log::warn!("{note}");
    }
    let stop = Shutdown::on_signals()?;
    let (apply, json) = (args.apply, args.json);
    let agent = if args.network_policy {
        Some(start_agent(
            paths.clone(),
            args.node_name,
            args.kubeconfig,
            &stop,
        )?)
    } else {
        None
    };
    let settings = daemon::Settings {
        paths,
        apply,
        every,
        metrics_address: args.metrics_address,
    };
    let mut daemon = Daemon::start(settings, move |pass| match pass {
        Ok(pass) => {
            log_pass(pass, apply);
            if let Err(e) = print(pass, json) {
                eprintln!("cni-win sweep: {}", cni_win::chain(&e));
            }
        }
        Err(e) => eprintln!("cni-win sweep: pass failed: {}", cni_win::chain(e)),
    })?;
    if let Some(agent) = &agent {
        daemon = daemon.with_task(agent.task());
    }
    if let Some(address) = daemon.metrics_address() {
        eprintln!("cni-win sweep: serving metrics on http://{address}/metrics");
    }
    daemon.run(&stop);
    drop(agent);
    eprintln!("cni-win sweep: stopped");
    Ok(())
}

/// The NetworkPolicy agent, its watches started: the node's name from `--node-name`, else
/// `NODE_NAME`.
fn start_agent(
    paths: cni_win::paths::NodePaths,
    node_name: Option<String>,
    kubeconfig: Option<PathBuf>,
    stop: &Shutdown,
) -> Result<Agent, Error> {
    let node_name = node_name
        .or_else(|| std::env::var("NODE_NAME").ok())
        .filter(|name| !name.trim().is_empty())
        .ok_or_else(|| {
            Error::new(
                "--network-policy needs this node's name: pass --node-name, or set NODE_NAME \
                 (a DaemonSet sets it from spec.nodeName)",
            )
        })?;
    eprintln!("cni-win sweep: enforcing NetworkPolicy on node {node_name:?}");
    let settings = network_policy::Settings { node_name, paths };
    let mut agent = Agent::start(settings, platform::connect(Deadline::Node), stop);
    agent.watch(ApiSettings { kubeconfig })?;
    Ok(agent)
}

fn log_pass(pass: &Pass, apply: bool) {
    if apply {
        let removed = pass.count(&Outcome::Removed);
        let skipped = pass.count(&Outcome::Skipped);
        let alive = pass.count(&Outcome::Alive);
        let abandoned = pass.count(&Outcome::Abandoned);
        let stopping = if abandoned > 0 {
            format!(", {abandoned} left for later (stopping)")
        } else {
            String::new()
        };
        eprintln!(
            "cni-win sweep: {} stale, {removed} removed, {skipped} skipped (command in flight), {alive} no longer stale, {} failed{stopping}, {} error(s)",
            pass.stale.len(),
            pass.stale.len() - removed - skipped - alive - abandoned,
            pass.errors.len()
        );
    } else {
        eprintln!(
            "cni-win sweep: {} stale (dry run), {} error(s)",
            pass.stale.len(),
            pass.errors.len()
        );
    }
}

fn print(pass: &Pass, json: bool) -> Result<(), Error> {
    if json {
        let json = serde_json::to_string(pass).map_err(|e| Error::new(e.to_string()))?;
        println!("{json}");
    } else {
        print!("{}", Table(pass));
        for name in &pass.left_alone {
            eprintln!("cni-win sweep: network {name:?} left alone: its conflist sets disableGC");
        }
        for error in &pass.errors {
            eprintln!("cni-win sweep: {error}");
        }
    }
    Ok(())
}

/// The human report: one row per stale object.
struct Table<'a>(&'a Pass);

impl fmt::Display for Table<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.stale.is_empty() {
            return writeln!(f, "nothing stale");
        }
        let rows: Vec<[String; 4]> = self
            .0
            .stale
            .iter()
            .map(|stale| {
                let outcome = match &stale.outcome {
                    None => "would remove".to_owned(),
                    Some(Outcome::Removed) => "removed".to_owned(),
                    Some(Outcome::Skipped) => "skipped: command in flight".to_owned(),
                    Some(Outcome::Alive) => "left: no longer stale".to_owned(),
                    Some(Outcome::Failed(e)) => format!("FAILED: {e}"),
                    Some(Outcome::Abandoned) => "left: stopping".to_owned(),
                };
                [
                    stale.object.clone(),
                    stale.network.clone(),
                    stale.why.clone(),
                    outcome,
                ]
            })
            .collect();
        let header = ["OBJECT", "NETWORK", "WHY", "ACTION"];
        let width = |column: usize| {
            rows.iter()
                .map(|row| row[column].len())
                .chain([header[column].len()])
                .max()
                .unwrap_or(0)
        };
        let widths = [width(0), width(1), width(2)];
        let line = |f: &mut fmt::Formatter<'_>, row: [&str; 4]| {
            writeln!(
                f,
                "{:w0$}  {:w1$}  {:w2$}  {}",
                row[0],
                row[1],
                row[2],
                row[3],
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2]
            )
        };
        line(f, header)?;
        for row in &rows {
            line(f, [&row[0], &row[1], &row[2], &row[3]])?;
        }
        Ok(())
    }
}

/// `IP:PORT`, such as `0.0.0.0:9760`.
fn parse_address(text: &str) -> Result<SocketAddr, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not IP:PORT (such as 0.0.0.0:9760)"))
}

/// `30s`, `5m`, `1h` or a number of seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
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
