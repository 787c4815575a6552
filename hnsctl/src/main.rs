//! `hnsctl`: inspect and drive HNS (or the HCN emulator) from the command line.
//!
//! The same typed client the plugins use; on Windows it talks to the real HNS
//! through computenetwork.dll, elsewhere to the emulator named by
//! `HCN_EMULATOR_STATE` (or `--state DIR`). Errors are one line on stderr and a
//! non-zero exit; usage errors are clap's (exit 2).
#![forbid(unsafe_code)]

#[cfg(not(windows))]
mod acl;
mod balancers;
mod cli;
mod controls;
mod objects;

use std::process::ExitCode;
use std::sync::LazyLock;

use clap::{CommandFactory, FromArgMatches};
use cli::{Cli, Command};
use hns::Client;
#[cfg(not(windows))]
use hns_emulator::{Emulator, Engine};

/// How a command reaches HNS.
#[derive(Debug)]
pub struct Context {
    /// The typed client.
    pub client: Client,
    /// The emulator engine, for the test controls.
    #[cfg(not(windows))]
    pub engine: Engine,
    /// Print JSON.
    pub json: bool,
}

/// `0.1.0 (commit 0123456789ab)`: what `--version` prints after the name, so an operator can
/// tell which source a binary on a node was built from (`build/commit.rs` records the commit).
static VERSION_LINE: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{} (commit {})",
        env!("CARGO_PKG_VERSION"),
        option_env!("CNI_WIN_COMMIT").unwrap_or("unknown")
    )
});

fn main() -> ExitCode {
    let matches = Cli::command().version(VERSION_LINE.as_str()).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(err) => err.exit(),
    };
    match run(cli) {
        Ok(status) => status,
        Err(message) => {
            eprintln!("hnsctl: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode, String> {
    let connect = connector(&cli);
    match cli.command {
        Command::Network(command) => objects::network(&connect()?, command),
        Command::Endpoint(command) => objects::endpoint(&connect()?, command),
        Command::Namespace(command) => objects::namespace(&connect()?, command),
        Command::LoadBalancer(command) => balancers::load_balancer(&connect()?, command),
        Command::Host(command) => controls::host(&connect()?, command),
        #[cfg(not(windows))]
        Command::Stats { reset, writes } => controls::stats(&connect()?, reset, writes),
        #[cfg(not(windows))]
        Command::Fault(command) => controls::fault(&connect()?, command),
        #[cfg(not(windows))]
        Command::Acl(command) => return Ok(acl::run(connect, command)),
        #[cfg(not(windows))]
        Command::Inject(command) => controls::inject(&connect()?, command),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "hnsctl", &mut std::io::stdout());
            Ok(())
        }
    }
    .map(|()| ExitCode::SUCCESS)
}

/// The host's HNS: computenetwork.dll is the only backend a Windows build has.
#[cfg(windows)]
fn connector(cli: &Cli) -> impl Fn() -> Result<Context, String> + use<> {
    let json = cli.json;
    move || {
        Ok(Context {
            client: Client::native(),
            json,
        })
    }
}

/// The emulator at `--state`, or at `$HCN_EMULATOR_STATE`.
#[cfg(not(windows))]
fn connector(cli: &Cli) -> impl Fn() -> Result<Context, String> + use<> {
    let (json, state) = (cli.json, cli.state.clone());
    move || {
        let emulator = match &state {
            Some(root) => Emulator::open(root),
            None => Emulator::from_env(),
        }
        .map_err(|e| e.to_string())?;
        let engine = emulator.engine().clone();
        Ok(Context {
            client: Client::from_box(Box::new(emulator)),
            engine,
            json,
        })
    }
}

/// Prints a value as compact JSON.
pub fn print_json<T: serde::Serialize>(value: &T) -> Result<(), String> {
    println!(
        "{}",
        serde_json::to_string(value).map_err(|e| e.to_string())?
    );
    Ok(())
}

/// Prints an object's GUID, what `create` prints without `--json`.
pub fn print_line(id: hns::Guid) -> Result<(), String> {
    println!("{id}");
    Ok(())
}

/// An HNS error as the one line hnsctl prints.
pub fn fail(error: hns::HnsError) -> String {
    error.to_string()
}

/// The text of `path`, or of stdin for `-`, for a command that reads a JSON document: UTF-8,
/// a leading byte-order mark dropped (what PowerShell's `-Encoding utf8` writes).
pub fn read_input(path: &std::path::Path) -> Result<String, String> {
    use std::io::Read;
    let (name, read) = if path == std::path::Path::new("-") {
        let mut text = String::new();
        let read = std::io::stdin().read_to_string(&mut text).map(|_| text);
        ("stdin".to_owned(), read)
    } else {
        (path.display().to_string(), std::fs::read_to_string(path))
    };
    match read {
        Ok(text) => Ok(text
            .strip_prefix('\u{feff}')
            .map(str::to_owned)
            .unwrap_or(text)),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => Err(format!(
            "cannot read {name}: not UTF-8 (in PowerShell write it with Set-Content -Encoding ascii)"
        )),
        Err(e) => Err(format!("cannot read {name}: {e}")),
    }
}

/// Prints a value as indented JSON (for `show`).
pub fn print_pretty<T: serde::Serialize>(value: &T) -> Result<(), String> {
    println!(
        "{}",
        serde_json::to_string_pretty(value).map_err(|e| e.to_string())?
    );
    Ok(())
}
