//! `cni-win sweep`: its arguments, the `--every` loop and what it prints; the work is
//! [`cni_win::sweep`].

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use cni_win::metrics::http::MetricsEndpoint;
use cni_win::metrics::{NodeMetrics, Round};
use cni_win::sweep::{self, Outcome, Pass, Settings};
use cni_win::{Error, defaults, doctor};

/// Removes stale endpoints and reservations of cni-win's networks (dry run unless --apply).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The CNI config directory the runtime reads (containerd's `conf_dir`).
    #[arg(long, value_name = "DIR", default_value = defaults::CONF_DIR)]
    conf_dir: PathBuf,
    /// `CNI_PATH` for a delegated IPAM plugin's DEL (host-local runs in-process).
    #[arg(long, value_name = "DIR")]
    bin_dir: Vec<PathBuf>,
    /// Remove what is stale (without it, only report).
    #[arg(long)]
    apply: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Run again every DURATION (e.g. 30s, 5m, 1h), logging each pass: a DaemonSet's loop.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    every: Option<Duration>,
    /// With --every: serve Prometheus metrics at http://ADDRESS/metrics (e.g. 0.0.0.0:9760),
    /// updated each pass, with doctor's checks run after each pass.
    #[arg(long, value_name = "ADDRESS", requires = "every")]
    metrics_address: Option<String>,
}

pub fn run(args: Args) -> Result<(), Error> {
    let settings = Settings {
        conf_dir: args.conf_dir,
        cni_path: args.bin_dir,
        apply: args.apply,
    };
    let Some(every) = args.every else {
        let pass = sweep::pass(&settings)?;
        print(&pass, args.json)?;
        return if pass.failed() {
            Err(Error::Found(
                "some stale objects could not be examined or removed".to_owned(),
            ))
        } else {
            Ok(())
        };
    };
    let metrics = match &args.metrics_address {
        Some(address) => Some(serve_metrics(address)?),
        None => None,
    };
    // doctor's plugins are where the runtime finds them: the first CNI_PATH entry given.
    let doctor_settings = doctor::Settings {
        conf_dir: settings.conf_dir.clone(),
        bin_dir: (settings.cni_path.first().cloned())
            .unwrap_or_else(|| PathBuf::from(defaults::BIN_DIR)),
    };
    loop {
        let started = Instant::now();
        let pass = sweep::pass(&settings);
        let duration = started.elapsed();
        match &pass {
            Ok(pass) => {
                log_pass(pass, settings.apply);
                print(pass, args.json)?;
            }
            Err(e) => eprintln!("cni-win sweep: pass failed: {}", cni_win::chain(e)),
        }
        if let Some(metrics) = &metrics {
            let report = doctor::examine(&doctor_settings);
            metrics.observe(&Round {
                pass: pass.as_ref(),
                duration,
                ended: SystemTime::now(),
                doctor: &report,
            });
        }
        std::thread::sleep(every);
    }
}

/// Starts serving the metrics and says where (port 0 picks a free port: the line tells it).
fn serve_metrics(address: &str) -> Result<Arc<NodeMetrics>, Error> {
    let build = cni::build!();
    let metrics = Arc::new(NodeMetrics::new(
        build.version,
        build.commit.unwrap_or("unknown"),
    ));
    let endpoint = MetricsEndpoint::serve(address, Arc::clone(&metrics))?;
    eprintln!(
        "cni-win sweep: serving metrics on http://{}/metrics",
        endpoint.address()
    );
    Ok(metrics)
}

fn log_pass(pass: &Pass, apply: bool) {
    if apply {
        let removed = pass.count(&Outcome::Removed);
        let skipped = pass.count(&Outcome::Skipped);
        let alive = pass.count(&Outcome::Alive);
        eprintln!(
            "cni-win sweep: {} stale, {removed} removed, {skipped} skipped (command in flight), {alive} no longer stale, {} failed, {} error(s)",
            pass.stale.len(),
            pass.stale.len() - removed - skipped - alive,
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
