//! `cni-win doctor`: its arguments and what it prints; the checks are [`cni_win::doctor`].

use cni_win::{Error, doctor};

use super::NodePathArgs;

/// Checks the node's HNS, configs, binaries and store, and says what to fix.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    paths: NodePathArgs,
    /// Print JSON instead of the report.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<(), Error> {
    let report = doctor::examine(&args.paths.paths()?);
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
