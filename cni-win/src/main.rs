//! `cni-win`: the operator's command on a Windows node.
//!
//! One module per subcommand, each with its clap arguments and its `run`: `install` puts the
//! plugins and a conflist in place (what a HostProcess init container runs), `uninstall` takes
//! back exactly what install wrote, `sweep` removes the endpoints and reservations of dead
//! attachments, `doctor` checks the node and says what to fix. The shared pieces are modules of their own: the binary swap
//! ([`binaries`]), `SHA256SUMS` ([`checksums`]), the conflist templates ([`templates`]) and
//! their validation by the plugins' own config code ([`lint`]), what install recorded
//! ([`record`]), atomic writes ([`fsutil`]) and containerd's config ([`containerd`]).

use std::process::ExitCode;
use std::sync::LazyLock;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod binaries;
mod checksums;
mod confdir;
mod containerd;
mod defaults;
mod doctor;
mod error;
mod fsutil;
mod install;
mod lint;
mod record;
mod sweep;
mod templates;
#[cfg(all(test, not(windows)))]
mod testnode;
mod uninstall;

/// `cni-win 0.1.0 (commit 0123456789ab)`: clap prints it for `--version`.
static VERSION_LINE: LazyLock<String> = LazyLock::new(|| {
    let build = cni::build!();
    format!(
        "{} (commit {})",
        build.version,
        build.commit.unwrap_or("unknown")
    )
});

/// Installs and looks after cni-win on a Windows node.
#[derive(Debug, Parser)]
#[command(name = "cni-win")]
struct Cli {
    #[command(subcommand)]
    command: Commands,
}

#[derive(Debug, Subcommand)]
enum Commands {
    Install(install::Args),
    Uninstall(uninstall::Args),
    Sweep(sweep::Args),
    Doctor(doctor::Args),
}

fn main() -> ExitCode {
    let command = Cli::command().version(VERSION_LINE.as_str());
    let cli = match Cli::from_arg_matches(&command.get_matches()) {
        Ok(cli) => cli,
        Err(err) => err.exit(),
    };
    let outcome = match cli.command {
        Commands::Install(args) => install::run(&args),
        Commands::Uninstall(args) => uninstall::run(&args),
        Commands::Sweep(args) => sweep::run(&args),
        Commands::Doctor(args) => doctor::run(&args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("cni-win: {err}");
            ExitCode::FAILURE
        }
    }
}
