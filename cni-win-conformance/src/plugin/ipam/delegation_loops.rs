//! An `ipam.type` that leads back into an HNS plugin must fail at once (code 7 naming the
//! chain) for every command, never exec itself without end, and leave no process behind.
//!
//! Each call runs as the leader of its own process group, so whatever it spawned can be
//! counted after it returns and, if it never does, killed by the watchdog.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::node::Node;
use crate::plugin::Plugin;

/// A runaway chain is killed after this long; a refused one returns in milliseconds (the
/// elapsed time of each call is printed).
const WATCHDOG: Duration = Duration::from_secs(10);

/// What one bounded call returned.
#[derive(Debug)]
struct Outcome {
    status: Option<i32>,
    stdout: String,
    /// Processes of the call's group still alive once it returned.
    left_behind: Vec<String>,
}

/// Runs the plugin for `command` of `pod/eth0` in `netns` with `config` on `node`, as its own
/// process group.
fn run_bounded(
    plugin: &Plugin,
    node: &Node,
    command: &str,
    netns: &str,
    config: &Value,
) -> Outcome {
    let mut child = Command::new(plugin.binary)
        .env_clear()
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", "pod")
        .env("CNI_IFNAME", "eth0")
        .env("CNI_NETNS", netns)
        .env("CNI_PATH", node.bin_dir())
        .env(crate::hns::STATE_ENV, node.state())
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let group = child.id();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(config.to_string().as_bytes())
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > WATCHDOG {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{group}")])
                .status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    eprintln!(
        "{command} returned {status:?} in {:.0} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
    let left_behind = group_members(group);
    if !left_behind.is_empty() {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{group}")])
            .status();
    }
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut stdout).unwrap();
    Outcome {
        status,
        stdout,
        left_behind,
    }
}

/// The live processes whose process group is `group` (`/proc/<pid>/stat` field 5).
fn group_members(group: u32) -> Vec<String> {
    let Ok(listing) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    listing
        .filter_map(|entry| {
            let stat = std::fs::read_to_string(entry.ok()?.path().join("stat")).ok()?;
            let name_end = stat.rfind(')')?;
            // After the name: state, ppid, pgrp. A zombie has exited already.
            let fields: Vec<&str> = stat[name_end + 2..].split(' ').collect();
            let member = fields.first() != Some(&"Z") && fields.get(2)? == &group.to_string();
            member.then(|| stat[..=name_end].to_owned())
        })
        .collect()
}

/// `CNI_PATH` holds the plugin under `names` (links to the binary, as an operator's copies).
fn install_as(plugin: &Plugin, node: &Node, names: &[&str]) {
    let bin = node.bin_dir();
    std::fs::create_dir_all(&bin).unwrap();
    for name in names {
        std::os::unix::fs::symlink(Path::new(plugin.binary), bin.join(name)).unwrap();
    }
}

/// The plain config with `ipam.type` replaced.
fn looping(plugin: &Plugin, node: &Node, ipam_type: &str) -> Value {
    let mut config = plugin.config(node, "1.1.0");
    config["ipam"]["type"] = json!(ipam_type);
    config
}

/// Asserts code 7 naming `needles`, returned with nothing left running.
fn assert_refused(outcome: &Outcome, needles: &[&str]) {
    assert!(outcome.left_behind.is_empty(), "{outcome:?}");
    assert_eq!(outcome.status, Some(1), "{outcome:?}");
    let error: Value = serde_json::from_str(&outcome.stdout).unwrap();
    assert_eq!(error["code"], 7, "{error}");
    let msg = error["msg"].as_str().unwrap();
    for needle in needles {
        assert!(msg.contains(needle), "{msg:?} lacks {needle:?}");
    }
}

/// `ipam.type` naming either HNS plugin, in any case and with `.exe`, is refused by every
/// command before anything runs.
pub fn an_ipam_type_naming_an_hns_plugin_is_refused_for_every_command(plugin: &Plugin) {
    let node = plugin.node("loop-names");
    let names = ["win-bridge", "win-overlay", "WIN-Bridge.exe"];
    install_as(plugin, &node, &names);
    let netns = node.namespace();
    for ipam_type in names {
        let config = looping(plugin, &node, ipam_type);
        let mut check = config.clone();
        check["prevResult"] = json!({"cniVersion": "1.1.0", "ips": [{"address": "10.244.1.3/24"}]});
        for (command, config) in [
            ("ADD", &config),
            ("DEL", &config),
            ("CHECK", &check),
            ("GC", &config),
            ("STATUS", &config),
        ] {
            let outcome = run_bounded(plugin, &node, command, &netns, config);
            assert_refused(&outcome, &[&format!("ipam.type \"{ipam_type}\"")]);
        }
    }
    assert!(node.endpoints(plugin.network).is_empty());
    assert!(node.reservations(plugin.network).is_empty());
}

/// A renamed copy of the plugin as its IPAM runs itself until the delegation depth bound,
/// which names the chain, for every command.
pub fn a_renamed_copy_of_the_plugin_as_ipam_stops_at_the_depth_bound(plugin: &Plugin) {
    let node = plugin.node("loop-depth");
    install_as(plugin, &node, &["ipam-loop"]);
    let netns = node.namespace();
    // CHECK delegates only once the endpoint is there and matches prevResult.
    let result = node
        .add("pod", &netns, &plugin.config(&node, "1.1.0"))
        .result();
    let config = looping(plugin, &node, "ipam-loop");
    let mut check = config.clone();
    check["prevResult"] = result;
    let chain = format!("{} → ipam-loop → ipam-loop", plugin.name);
    for (command, config) in [
        ("CHECK", &check),
        // DEL deletes the endpoint, then asks IPAM; ADD then finds none to adopt and asks too.
        ("DEL", &config),
        ("ADD", &config),
        ("GC", &config),
        ("STATUS", &config),
    ] {
        let outcome = run_bounded(plugin, &node, command, &netns, config);
        assert_refused(&outcome, &[&chain]);
    }
}
