//! The `host-local` binary, run as a runtime runs it: environment, config on stdin, result or
//! error JSON on stdout.

mod common;

use common::{Scratch, net_conf, reservations};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};

const BINARY: &str = env!("CARGO_BIN_EXE_host-local");

fn spawn(command: &str, id: &str, conf: &Value) -> Child {
    let mut child = Command::new(BINARY)
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", id)
        .env("CNI_IFNAME", "eth0")
        .env("CNI_NETNS", "ns")
        .env("CNI_PATH", "/opt/cni/bin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(conf.to_string().as_bytes()).unwrap();
    child
}

/// Exit success and the stdout JSON (Null when stdout is empty).
fn finish(child: Child) -> (bool, Value) {
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let value = if stdout.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&stdout).unwrap()
    };
    (output.status.success(), value)
}

fn run(command: &str, id: &str, conf: &Value) -> (bool, Value) {
    finish(spawn(command, id, conf))
}

fn conf(dir: &Path, version: &str, ipam: Value) -> Value {
    let mut conf = net_conf(dir, ipam, json!({}));
    conf["cniVersion"] = json!(version);
    conf
}

#[test]
fn add_prints_the_result_in_the_configs_version() {
    let dir = Scratch::new("bin-versions");
    let ipam = json!({"ranges": [[{"subnet": "10.0.0.0/24"}], [{"subnet": "fd00::/64"}]],
                      "routes": [{"dst": "0.0.0.0/0"}]});
    let (ok, v04) = run("ADD", "a", &conf(dir.path(), "0.4.0", ipam.clone()));
    assert!(ok, "{v04}");
    assert_eq!(v04["cniVersion"], "0.4.0");
    assert_eq!(
        v04["ips"][0],
        json!({"version": "4", "address": "10.0.0.2/24", "gateway": "10.0.0.1"})
    );
    assert_eq!(v04["ips"][1]["address"], "fd00::2/64");
    assert_eq!(v04["routes"], json!([{"dst": "0.0.0.0/0"}]));

    let (ok, v1) = run("ADD", "b", &conf(dir.path(), "1.1.0", ipam.clone()));
    assert!(ok, "{v1}");
    assert_eq!(
        v1["ips"][0],
        json!({"address": "10.0.0.3/24", "gateway": "10.0.0.1"})
    );

    // A repeated ADD prints the same addresses.
    let (ok, again) = run("ADD", "b", &conf(dir.path(), "1.1.0", ipam));
    assert!(ok);
    assert_eq!(again["ips"], v1["ips"]);
}

#[test]
fn every_command_works_through_the_binary() {
    let dir = Scratch::new("bin-commands");
    let ipam = json!({"subnet": "10.0.0.0/30"});
    let base = conf(dir.path(), "1.1.0", ipam);
    let (ok, added) = run("ADD", "a", &base);
    assert!(ok, "{added}");
    let (ok, status) = run("STATUS", "", &base);
    assert!(!ok, "a /30 holds one address, now taken");
    assert_eq!(status["code"], 50);
    let (ok, full) = run("ADD", "b", &base);
    assert!(!ok);
    assert_eq!(full["code"], 100, "{full}");
    assert!(
        full["msg"].as_str().unwrap().contains("10.0.0.0/30"),
        "{full}"
    );

    let mut check = base.clone();
    check["prevResult"] = added.clone();
    assert_eq!(run("CHECK", "a", &check), (true, Value::Null));
    let (ok, mismatch) = run("CHECK", "b", &check);
    assert!(!ok);
    assert_eq!(mismatch["code"], 102, "{mismatch}");
    let (ok, missing_prev) = run("CHECK", "a", &base);
    assert!(!ok);
    assert_eq!(missing_prev["code"], 7);

    let mut gc = base.clone();
    gc["cni.dev/valid-attachments"] = json!([{"containerID": "a", "ifname": "eth0"}]);
    assert_eq!(run("GC", "", &gc), (true, Value::Null));
    assert_eq!(reservations(&dir.path().join("net")).len(), 1);

    assert_eq!(run("DEL", "a", &base), (true, Value::Null));
    assert_eq!(run("DEL", "a", &base), (true, Value::Null));
    assert!(reservations(&dir.path().join("net")).is_empty());
    assert_eq!(run("STATUS", "", &base), (true, Value::Null));

    let (ok, invalid) = run(
        "ADD",
        "a",
        &conf(
            dir.path(),
            "1.1.0",
            json!({"ranges": [[{"subnet": "10.0.0.0/24", "rangeStart": "10.0.1.5"}]]}),
        ),
    );
    assert!(!ok);
    assert_eq!(invalid["code"], 7);
    assert!(
        invalid["msg"]
            .as_str()
            .unwrap()
            .contains("ipam.ranges[0][0].rangeStart"),
        "{invalid}"
    );
}

#[test]
fn thirty_two_processes_allocating_at_once_get_distinct_addresses() {
    let dir = Scratch::new("bin-concurrent");
    let base = conf(dir.path(), "1.0.0", json!({"subnet": "10.10.0.0/24"}));
    let children: Vec<Child> = (0..32)
        .map(|i| spawn("ADD", &format!("pod{i}"), &base))
        .collect();
    let mut addresses = HashSet::new();
    for child in children {
        let (ok, result) = finish(child);
        assert!(ok, "{result}");
        addresses.insert(result["ips"][0]["address"].as_str().unwrap().to_owned());
    }
    assert_eq!(addresses.len(), 32, "every process got its own address");
    let files = reservations(&dir.path().join("net"));
    assert_eq!(files.len(), 32);
    let owners: HashSet<&String> = files.values().collect();
    assert_eq!(owners.len(), 32);
}
