//! `cni-win support-bundle`: its arguments and what it prints; the collecting is
//! [`cni_win::support_bundle`].

use std::path::PathBuf;
use std::time::Duration;

use cni_win::support_bundle::{self, Outcome, Plan, Settings};
use cni_win::{Error, defaults};
use cni_win_core::platform::{self, Deadline};

use super::NodePathArgs;

/// Collects what a bug report needs into one zip (secrets redacted): see
/// docs/reporting-a-bug.md.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The node's paths: the plugins found in the plugin directories are the only binaries
    /// run.
    #[command(flatten)]
    paths: NodePathArgs,
    /// Flannel's subnet.env (any other a config names is collected too).
    #[arg(long, value_name = "FILE", default_value = defaults::SUBNET_FILE)]
    subnet_file: PathBuf,
    /// How much of the end of each plugin log, in KiB.
    #[arg(long, value_name = "KIB", default_value_t = support_bundle::DEFAULT_LOG_TAIL_BYTES / 1024)]
    log_tail: u64,
    /// How long one step may take, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = support_bundle::DEFAULT_STEP_TIMEOUT.as_secs_f64())]
    step_timeout: f64,
    /// How long all steps may take together, in seconds (a step left then is recorded as not
    /// run).
    #[arg(long, value_name = "SECONDS", default_value_t = support_bundle::DEFAULT_TIMEOUT.as_secs_f64())]
    timeout: f64,
    /// The most the bundle may hold, uncompressed, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = support_bundle::DEFAULT_MAX_BYTES / (1024 * 1024))]
    max_size: u64,
    /// Where to write the zip (never over an existing file) [default:
    /// cni-win-support-<host>-<UTC time>.zip in the current directory].
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// List what would be collected, and write nothing.
    #[arg(long)]
    dry_run: bool,
}

pub fn run(args: Args) -> Result<(), Error> {
    let step_timeout = seconds("--step-timeout", args.step_timeout)?;
    let timeout = seconds("--timeout", args.timeout)?;
    let settings = Settings {
        paths: args.paths.paths()?,
        subnet_file: args.subnet_file,
        log_tail_bytes: args.log_tail.saturating_mul(1024),
        step_timeout,
        timeout,
        max_bytes: args.max_size.saturating_mul(1024 * 1024),
    };
    let output = args
        .output
        .unwrap_or_else(|| PathBuf::from(support_bundle::default_file_name()));
    let plan = Plan::new(&settings);
    if args.dry_run {
        print!("{plan}");
        println!("output: {} (not written: dry run)", output.display());
        return Ok(());
    }
    let bundle = plan.collect(platform::connect(Deadline::Node));
    bundle.publish(&output)?;
    for step in &bundle.manifest.steps {
        let outcome = match step.outcome {
            Outcome::Ok => "ok",
            Outcome::Failed => "FAILED",
            Outcome::TimedOut => "TIMED OUT",
        };
        match &step.error {
            Some(error) => println!("[{outcome}] {}: {error}", step.name),
            None => println!("[{outcome}] {} ({} bytes)", step.name, step.bytes),
        }
    }
    let manifest = &bundle.manifest;
    println!(
        "wrote {}: {} entries, {} skipped, {} value(s) redacted (see manifest.json)",
        output.display(),
        bundle.entries.len(),
        manifest.skipped.len(),
        manifest.redacted.len()
    );
    Ok(())
}

/// A positive number of seconds from flag `flag`.
fn seconds(flag: &str, value: f64) -> Result<Duration, Error> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|timeout| !timeout.is_zero())
        .ok_or_else(|| Error::new(format!("{flag}: give a positive number of seconds")))
}
