//! `node-lane`: a Windows node as a whole, on the HCN emulator. The real kube-apiserver (and
//! etcd) on loopback, the real kube-proxy.exe under Wine, the network made as flanneld makes
//! it, and cni-win's `.exe` plugins attaching pods as containerd does; then the stories
//! ([`stories::STORIES`]: Services judged by the load balancers kube-proxy programs into HNS,
//! cni-win's NetworkPolicy agent against the API server), each check a row. Prints one table;
//! exit status 1 when a check failed, 2 for a usage error.
//!
//! `scripts/node-lane` builds the Kubernetes binaries (once per version), stages the `.exe`
//! files with the emulator DLLs, sets up Wine and a network namespace whose adapter holds the
//! node's address, and runs this inside it.
#![forbid(unsafe_code)]

mod lane;
mod node;
mod report;
mod stories;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser as _;
use clap::builder::{PossibleValue, PossibleValuesParser};
use hns::schema::MacAddress;
use node_lane::cli::HarnessArgs;

use lane::Lane;
use report::Report;
use stories::STORIES;

/// A Windows node as a whole on the HCN emulator: the real kube-apiserver and kube-proxy.exe
/// beside cni-win's .exe files under Wine.
#[derive(Debug, clap::Parser)]
#[command(name = "node-lane")]
struct Args {
    #[command(flatten)]
    harness: HarnessArgs,
    /// cni-win's .exe files, hnsctl.exe, flannel-hns.exe and hns-drift.exe with the emulator DLLs
    #[arg(long, value_name = "DIR")]
    windows_bin: PathBuf,
    /// The network namespace adapter's MAC (kube-proxy's host MAC)
    #[arg(long, value_name = "MAC")]
    node_mac: MacAddress,
    /// Tells only these stories, in the lane's order (repeat the flag or separate names with
    /// commas); every story without it
    #[arg(long, value_name = "STORY", value_delimiter = ',', value_parser = story_names())]
    only: Vec<String>,
}

/// `--only`'s values: the stories' names, each with what it shows.
fn story_names() -> PossibleValuesParser {
    PossibleValuesParser::new(
        STORIES
            .iter()
            .map(|story| PossibleValue::new(story.name).help(story.about)),
    )
}

fn main() -> ExitCode {
    let args = Args::parse();
    let started = Instant::now();
    let mut report = Report::default();
    match args.harness.start_control_plane() {
        Ok(control_plane) => {
            let lane = Lane {
                node_address: args.harness.node_ip,
                node_ip: args.harness.node_ip.ip().to_string(),
                kube_bin: args.harness.kube_bin,
                cni_win: args.harness.cni_win,
                scratch: args.harness.scratch,
                windows_bin: args.windows_bin,
                node_mac: args.node_mac,
                control_plane,
            };
            report.record(
                "control plane starts, nodes registered",
                lane.register_nodes(),
            );
            for story in stories::chosen(&args.only) {
                let told = Instant::now();
                report.begin(story.name);
                (story.tell)(&lane, &mut report);
                eprintln!(
                    "node-lane: [{}] told in {} s",
                    story.name,
                    told.elapsed().as_secs()
                );
            }
        }
        Err(why) => report.record("control plane starts", Err(why)),
    }
    println!("{}", report.table());
    println!("node lane: {} s", started.elapsed().as_secs());
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;
    use clap::error::ErrorKind;

    use super::*;

    /// Every flag the lane requires, as `scripts/node-lane` passes them.
    const REQUIRED: [&str; 13] = [
        "node-lane",
        "--kube-bin",
        "kube",
        "--cni-win",
        "cni-win",
        "--scratch",
        "scratch",
        "--node-ip",
        "192.168.1.10/24",
        "--windows-bin",
        "stage",
        "--node-mac",
        "00:15:5d:0a:01:0a",
    ];

    fn parse(more: &[&str]) -> Result<Args, clap::Error> {
        Args::try_parse_from(REQUIRED.iter().chain(more))
    }

    #[test]
    fn the_flags_are_consistent() {
        Args::command().debug_assert();
    }

    #[test]
    fn only_takes_story_names_repeated_or_comma_separated() {
        let args = parse(&["--only", "overlay,netpol", "--only", "netpol-tables"]).unwrap();
        assert_eq!(args.only, ["overlay", "netpol", "netpol-tables"]);
        assert!(parse(&[]).unwrap().only.is_empty());
    }

    #[test]
    fn an_unknown_story_is_a_usage_error_naming_every_story() {
        let error = parse(&["--only", "overlay,kube-proxy"]).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidValue);
        assert_eq!(error.exit_code(), 2);
        let text = error.to_string();
        for story in STORIES {
            assert!(text.contains(story.name), "{text}");
        }
    }
}
