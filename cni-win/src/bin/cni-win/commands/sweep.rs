//! `cni-win sweep`: one removal of what is stale, its arguments and what it prints (also each
//! round of the node daemon); the work is [`cni_win::sweep`]. `sweep --every` is the node
//! daemon's old spelling, kept as an alias of `cni-win daemon` that says so.

use std::fmt;
use std::time::Duration;

use cni_win::Error;
use cni_win::sweep::{self, Outcome, Pass, Settings};

use super::NodePathArgs;
use super::daemon::{self, DaemonFlags, parse_duration};

/// Removes stale endpoints and reservations of cni-win's networks (dry run unless --apply).
#[derive(Debug, clap::Args)]
#[command(group(
    clap::ArgGroup::new("daemon_only")
        .args(["metrics_address", "network_policy", "kubeconfig", "node_name", "snapshot_max_age"])
        .multiple(true)
        .requires("every")
))]
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
    /// The node daemon's old spelling: runs `cni-win daemon --every DURATION` (use that).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = "Deprecated: the node daemon's, now `cni-win daemon`")]
    every: Option<Duration>,
    #[command(
        flatten,
        next_help_heading = "Deprecated: the node daemon's, now `cni-win daemon`"
    )]
    daemon: DaemonFlags,
}

pub fn run(args: Args) -> Result<(), Error> {
    if let Some(every) = args.every {
        eprintln!(
            "cni-win sweep: `sweep --every` is the node daemon's old spelling: running `cni-win \
             daemon` (use `cni-win daemon --every …` with the same flags)"
        );
        return daemon::run(daemon::Args {
            paths: args.paths,
            apply: args.apply,
            json: args.json,
            every,
            daemon: args.daemon,
        });
    }
    let pass = sweep::pass(&Settings {
        paths: args.paths.paths()?,
        apply: args.apply,
    })?;
    print(&pass, args.json)?;
    if pass.failed() {
        Err(Error::Found(
            "some stale objects could not be examined or removed".to_owned(),
        ))
    } else {
        Ok(())
    }
}

/// One line per pass on stderr: what was found and done.
pub fn log_pass(pass: &Pass, apply: bool) {
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

/// The pass on stdout: a table, or JSON.
pub fn print(pass: &Pass, json: bool) -> Result<(), Error> {
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
