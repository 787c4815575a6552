//! `hnsctl`: inspect and drive HNS (or the HCN emulator) from the command line.
//!
//! The same typed client the plugins use; on Windows it talks to the real HNS,
//! elsewhere to the emulator named by `HCN_EMULATOR_STATE` (or `--state DIR`).
//! Errors are one line on stderr and a non-zero exit.

mod args;
mod controls;
mod objects;

use std::path::PathBuf;
use std::process::ExitCode;

use args::Args;
use hns::Client;
use hns::emulator::{Emulator, Engine};

const USAGE: &str = "\
usage: hnsctl [--json] [--state DIR] <command>

networks:
  network create --name N --type L2Bridge|L2Tunnel|Overlay|NAT --subnet CIDR --gateway IP
                 [--adapter NAME] [--vni N] [--vxlan-port P] [--provider-address IP] [--dr-mac MAC] [--id GUID]
  network list
  network show <ID|NAME>
  network delete <ID|NAME>
endpoints:
  endpoint list [--network ID|NAME]
  endpoint show <ID|NAME>
  endpoint delete <ID|NAME>
namespaces:
  namespace create [--id GUID]          prints the new namespace GUID
  namespace list
  namespace show <ID>
  namespace delete <ID>
  namespace attach <NAMESPACE> <ENDPOINT>
  namespace detach <NAMESPACE> <ENDPOINT>
host:
  host version [--set MAJOR.MINOR]      (--set: emulator only)
  host features
  host call <METHOD> <PATH> [--body JSON]
                                        one V1 HNSCall; prints the reply envelope
  host restart                          emulator: HNS restarts (endpoints dropped)
  host reboot                           emulator: host reboots (also namespaces and
                                        networks with EnableNonPersistent dropped)
emulator test controls:
  stats [--reset]                       calls per HCN function
  fault inject --function F --hresult H [--nth N]
  fault crash --function F [--nth N]    abort right after the Nth next call of F
  fault latency --micros N              sleep N microseconds in every call
  fault clear
  fault list

--json prints machine-readable output. --state DIR selects the emulator state
(default: $HCN_EMULATOR_STATE; on Windows the real HNS unless HNS_BACKEND=emulator).";

/// How a command reaches HNS.
#[derive(Debug)]
pub struct Context {
    /// The typed client.
    pub client: Client,
    /// The emulator engine, when the backend is the emulator (test controls need it).
    pub engine: Option<Engine>,
    /// Print JSON.
    pub json: bool,
}

impl Context {
    /// The emulator engine, or an error for commands that only make sense with it.
    pub fn engine(&self, command: &str) -> Result<&Engine, String> {
        self.engine.as_ref().ok_or_else(|| {
            format!(
                "`{command}` works only with the HCN emulator (set HCN_EMULATOR_STATE or --state)"
            )
        })
    }
}

fn main() -> ExitCode {
    match run(std::env::args().skip(1)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("hnsctl: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(raw: impl Iterator<Item = String>) -> Result<(), String> {
    let mut args = Args::parse(raw)?;
    let Some(group) = args.word() else {
        println!("{USAGE}");
        return Ok(());
    };
    if args.flag("help") || group == "help" {
        println!("{USAGE}");
        return Ok(());
    }
    let json = args.flag("json");
    let state = match args.option("state") {
        Some(dir) if dir.is_empty() => {
            return Err("--state needs a directory (it is created if missing)".to_owned());
        }
        dir => dir.map(PathBuf::from),
    };
    let context = connect(state, json)?;
    match group.as_str() {
        "network" => objects::network(&context, args),
        "endpoint" => objects::endpoint(&context, args),
        "namespace" => objects::namespace(&context, args),
        "host" => controls::host(&context, args),
        "stats" => controls::stats(&context, args),
        "fault" => controls::fault(&context, args),
        other => Err(format!("unknown command {other:?}; run `hnsctl help`")),
    }
}

fn connect(state: Option<PathBuf>, json: bool) -> Result<Context, String> {
    let emulator_root = match state {
        Some(root) => Some(root),
        None if cfg!(windows)
            && std::env::var(hns::backend::BACKEND_ENV)
                .map_or(true, |v| !v.eq_ignore_ascii_case("emulator")) =>
        {
            None
        }
        None => Some(hns::emulator::state_root_from_env().map_err(|e| e.to_string())?),
    };
    match emulator_root {
        Some(root) => {
            let emulator = Emulator::open(&root).map_err(|e| e.to_string())?;
            let engine = emulator.engine().clone();
            Ok(Context {
                client: Client::from_box(Box::new(emulator)),
                engine: Some(engine),
                json,
            })
        }
        None => Ok(Context {
            client: Client::from_env().map_err(|e| e.to_string())?,
            engine: None,
            json,
        }),
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

/// Prints a value as indented JSON (for `show`).
pub fn print_pretty<T: serde::Serialize>(value: &T) -> Result<(), String> {
    println!(
        "{}",
        serde_json::to_string_pretty(value).map_err(|e| e.to_string())?
    );
    Ok(())
}
