//! `hns-drift`: HNS drift made on the node lane's emulated host while Windows processes of the
//! node use it. Linux `hnsctl` has these controls (`host stop|restart`, `inject endpoint`),
//! but while kube-proxy.exe runs it cannot use them safely: under Wine the emulator's lock is
//! `LockFileEx`, kept by the wineserver, which Linux `flock` does not see. Built for Windows
//! and run under the node's Wine, this takes the lock kube-proxy's calls take.
//!
//! ```text
//! hns-drift stop                          the HNS service stops: every call fails until a
//!                                         restart
//! hns-drift restart                       HNS restarts and restores every object under its
//!                                         ID, as current builds do
//! hns-drift endpoint NETWORK IP NAME [--remote]
//!                                         an endpoint named NAME holding IP on NETWORK (a
//!                                         name or GUID), whoever holds it already; prints
//!                                         its GUID
//! ```
//!
//! The state is `HCN_EMULATOR_STATE`'s, as for every process of the node. Exit status 1 with
//! the reason on stderr when the emulator refuses. Test-only, never shipped.

use std::process::ExitCode;

use hns::Guid;
use hns_emulator::{Emulator, Engine, Injection, Outage};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(output) => {
            println!("{output}");
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("hns-drift: {why}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<String, String> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let engine = || {
        let root = hns_emulator::state_root_from_env().map_err(|error| error.to_string())?;
        Engine::open(&root).map_err(|failure| failure.to_string())
    };
    let outage = |outage| -> Result<String, String> {
        let dropped = engine()?
            .suffer(outage)
            .map_err(|failure| failure.to_string())?;
        Ok(format!(
            "dropped {} endpoints, {} namespaces, {} networks",
            dropped.endpoints, dropped.namespaces, dropped.networks
        ))
    };
    match args.as_slice() {
        ["stop"] => outage(Outage::Stop),
        ["restart"] => outage(Outage::Restart),
        ["endpoint", network, ip, name, rest @ ..] => {
            let remote = match rest {
                [] => false,
                ["--remote"] => true,
                _ => return Err(format!("unexpected {rest:?} after the endpoint's name")),
            };
            let injection = Injection::Endpoint {
                id: Guid::ZERO,
                network: network_id(network)?,
                name: (*name).to_owned(),
                ip: ip
                    .parse()
                    .map_err(|error| format!("{ip:?} is not an address: {error}"))?,
                remote,
            };
            let id = engine()?
                .inject(&injection)
                .map_err(|failure| failure.to_string())?;
            Ok(id.to_string())
        }
        _ => {
            Err("usage: hns-drift stop | restart | endpoint NETWORK IP NAME [--remote]".to_owned())
        }
    }
}

/// `network`'s GUID: itself, or the network HNS holds under that name.
fn network_id(network: &str) -> Result<Guid, String> {
    if let Ok(id) = network.parse() {
        return Ok(id);
    }
    let client = Emulator::client_from_env().map_err(|error| error.to_string())?;
    client
        .find_network_by_name(network)
        .map(|found| found.id())
        .map_err(|error| error.to_string())
}
