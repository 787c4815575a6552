//! `cni-win doctor`: its arguments and what it prints; the checks are [`cni_win::doctor`].

use std::path::PathBuf;

use cni_win::doctor::{self, Settings};
use cni_win::{Error, defaults};

/// Checks the node's HNS, configs, binaries and store, and says what to fix.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The CNI config directory the runtime reads (containerd's `conf_dir`).
    #[arg(long, value_name = "DIR", default_value = defaults::CONF_DIR)]
    conf_dir: PathBuf,
    /// Where the runtime finds the plugins (containerd's `bin_dir`).
    #[arg(long, value_name = "DIR", default_value = defaults::BIN_DIR)]
    bin_dir: PathBuf,
    /// Print JSON instead of the report.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<(), Error> {
    let settings = Settings {
        conf_dir: args.conf_dir,
        bin_dir: args.bin_dir,
    };
    let report = doctor::examine(&settings);
    if args.json {
        let json = serde_json::to_string(&report).map_err(|e| Error::new(e.to_string()))?;
        println!("{json}");
    } else {
        print!("{report}");
    }
    if report.healthy {
        Ok(())
    } else {
        Err(Error::Found(
            "the node is not healthy: see the failed checks".to_owned(),
        ))
    }
}
