//! `cni-win`: the operator's command on a Windows node, a thin binary over the `cni_win`
//! library: `install`, `uninstall`, `sweep`, `daemon`, `doctor`, `source-vip` and
//! `support-bundle` parse their arguments and print what the library reports (see
//! [`commands`]).
#![forbid(unsafe_code)]

use std::process::ExitCode;
use std::sync::LazyLock;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod commands;

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
    Install(commands::install::Args),
    Uninstall(commands::uninstall::Args),
    Sweep(commands::sweep::Args),
    Daemon(commands::daemon::Args),
    Doctor(commands::doctor::Args),
    SourceVip(commands::source_vip::Args),
    SupportBundle(commands::support_bundle::Args),
}

fn main() -> ExitCode {
    let command = Cli::command().version(VERSION_LINE.as_str());
    let cli = match Cli::from_arg_matches(&command.get_matches()) {
        Ok(cli) => cli,
        Err(err) => err.exit(),
    };
    let outcome = match cli.command {
        Commands::Install(args) => commands::install::run(args),
        Commands::Uninstall(args) => commands::uninstall::run(args),
        Commands::Sweep(args) => commands::sweep::run(args),
        Commands::Daemon(args) => commands::daemon::run(args),
        Commands::Doctor(args) => commands::doctor::run(args),
        Commands::SourceVip(args) => commands::source_vip::run(args),
        Commands::SupportBundle(args) => commands::support_bundle::run(args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("cni-win: {}", cni_win::chain(&err));
            ExitCode::FAILURE
        }
    }
}
