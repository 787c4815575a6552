//! `node-lane`: a Windows node as a whole, on the HCN emulator. The real kube-apiserver (and
//! etcd) on loopback, the real kube-proxy.exe under Wine, the network made as flanneld makes
//! it, and cni-win's `.exe` plugins attaching pods as containerd does; then Services through the
//! API, judged by the load balancers kube-proxy programs into HNS. Prints one table; exit
//! status 1 when a check failed, 2 for a usage error.
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

use hns::schema::{IpPrefix, MacAddress};
use node_lane::control_plane::ControlPlane;

use lane::Lane;
use report::Report;
use stories::STORIES;

const USAGE: &str = "\
usage: node-lane --kube-bin DIR --windows-bin DIR --linux-bin DIR --scratch DIR --node-ip CIDR
                 --node-mac MAC [--only STORY]

  --kube-bin DIR      kube-apiserver and kubectl (Linux) and kube-proxy.exe
  --windows-bin DIR   cni-win's .exe files, hnsctl.exe and flannel-hns.exe with the emulator DLLs
  --linux-bin DIR     cni-win's Linux build (the agent the truth tables run)
  --scratch DIR       emptied, then used for the control plane's and each node's state
  --node-ip CIDR      the host adapter's address and prefix, e.g. 192.168.1.10/24
  --node-mac MAC      the host adapter's MAC (kube-proxy's host MAC)
  --only STORY        tells one story: overlay (Flannel vxlan), l2bridge (Flannel host-gw),
                      netpol (host-gw with cni-win's NetworkPolicy agent) or
                      netpol-tables (the NetworkPolicy truth tables through the API server)";

struct Options {
    kube_bin: PathBuf,
    windows_bin: PathBuf,
    linux_bin: PathBuf,
    scratch: PathBuf,
    node_address: IpPrefix,
    node_mac: MacAddress,
    only: Option<String>,
}

fn options() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let (mut kube_bin, mut windows_bin, mut linux_bin, mut scratch) = (None, None, None, None);
    let (mut node_address, mut node_mac, mut only) = (None, None, None);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--kube-bin" => kube_bin = Some(PathBuf::from(value)),
            "--windows-bin" => windows_bin = Some(PathBuf::from(value)),
            "--linux-bin" => linux_bin = Some(PathBuf::from(value)),
            "--scratch" => scratch = Some(PathBuf::from(value)),
            "--node-ip" => {
                node_address = Some(value.parse().map_err(|e| format!("--node-ip: {e}"))?)
            }
            "--node-mac" => node_mac = Some(value.parse().map_err(|e| format!("--node-mac: {e}"))?),
            "--only" if STORIES.iter().any(|story| story.name == value) => only = Some(value),
            _ => return Err(format!("unknown argument {flag} {value}")),
        }
    }
    Ok(Options {
        kube_bin: kube_bin.ok_or("--kube-bin is required")?,
        windows_bin: windows_bin.ok_or("--windows-bin is required")?,
        linux_bin: linux_bin.ok_or("--linux-bin is required")?,
        scratch: scratch.ok_or("--scratch is required")?,
        node_address: node_address.ok_or("--node-ip is required")?,
        node_mac: node_mac.ok_or("--node-mac is required")?,
        only,
    })
}

fn main() -> ExitCode {
    let options = match options() {
        Ok(options) => options,
        Err(why) => {
            eprintln!("node-lane: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    if options.scratch.exists()
        && let Err(error) = std::fs::remove_dir_all(&options.scratch)
    {
        eprintln!(
            "node-lane: cannot empty {}: {error}",
            options.scratch.display()
        );
        return ExitCode::FAILURE;
    }
    let mut report = Report::default();
    let node_ip = options.node_address.ip().to_string();
    match ControlPlane::start(
        &options.kube_bin,
        &options.scratch.join("control-plane"),
        &node_ip,
    ) {
        Ok(control_plane) => {
            let lane = Lane {
                kube_bin: options.kube_bin,
                windows_bin: options.windows_bin,
                cni_win: options.linux_bin.join("cni-win"),
                scratch: options.scratch,
                flanneld: PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("../../hns-emulator/tests/data"),
                node_address: options.node_address,
                node_ip,
                node_mac: options.node_mac,
                control_plane,
            };
            report.record(
                "control plane starts, nodes registered",
                lane.register_nodes(),
            );
            let chosen = STORIES.iter().filter(|story| {
                options
                    .only
                    .as_deref()
                    .is_none_or(|only| only == story.name)
            });
            for story in chosen {
                report.begin(story.name);
                (story.tell)(&lane, &mut report);
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
