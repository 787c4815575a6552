//! The `host-local` binary, run as a runtime runs it: environment, config on stdin, result or
//! error JSON on stdout.

use crate::common::{Scratch, net_conf, reservations};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::fs;
use std::path::Path;
use std::process::Child;

fn spawn(command: &str, id: &str, conf: &Value) -> Child {
    crate::common::spawn(command, id, conf, &[])
}

/// Exit success and the stdout JSON (Null when stdout is empty).
fn finish(child: Child) -> (bool, Value) {
    let output = crate::common::wait(child);
    (output.success, output.json())
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
    // A /30 holds one address, now taken: new attachments fail, the node stays ready unless
    // the config opts in.
    assert_eq!(run("STATUS", "", &base), (true, Value::Null));
    let mut strict = base.clone();
    strict["ipam"]["notReadyWhenFull"] = json!(true);
    let (ok, status) = run("STATUS", "", &strict);
    assert!(!ok, "{status}");
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
    // Without prevResult, as the reference: the attachment must hold a reservation.
    assert_eq!(run("CHECK", "a", &base), (true, Value::Null));
    let (ok, nothing_held) = run("CHECK", "b", &base);
    assert!(!ok);
    assert_eq!(nothing_held["code"], 102, "{nothing_held}");

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

/// The plugin's own log under load: 100 ADDs at once logging to one file with a 2 KiB cap
/// (each warns that the config's `type` is not text, which host-local ignores).
/// Every line is whole and tagged with its pod, no file passes the cap, the rotated files are
/// the only ones beside the log (and its lock), and every pod's lines are there.
#[test]
fn a_hundred_adds_at_once_keep_the_log_whole_and_under_its_cap() {
    let dir = Scratch::new("bin-log-rotation");
    let log = dir.path().join("log").join("cni.log");
    let mut base = conf(dir.path(), "1.0.0", json!({"subnet": "10.20.0.0/16"}));
    base["logFile"] = json!(log);
    base["logLevel"] = json!("debug");
    base["type"] = json!(5);
    base["logFileMaxMiB"] = json!(0.002);
    base["logFileKeep"] = json!(cni::logging::MAX_KEEP);
    let cap = cni::logging::Rotation::of_mib(0.002, 1)
        .unwrap()
        .max_bytes();
    let pods = 100;
    let children: Vec<Child> = (0..pods)
        .map(|i| spawn("ADD", &format!("pod{i}"), &base))
        .collect();
    for child in children {
        let (ok, result) = finish(child);
        assert!(ok, "{result}");
    }

    let files = cni::logging::files_newest_first(&log);
    let mut names: Vec<_> = fs::read_dir(log.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let mut expected = files.clone();
    expected.push(cni::logging::lock_path(&log));
    expected.sort();
    assert_eq!(names, expected);
    assert!(files.len() > 2, "rotated: {files:?}");
    let mut logged = HashSet::new();
    for file in &files {
        let text = fs::read_to_string(file).unwrap();
        assert!(
            text.len() as u64 <= cap,
            "{} is {} bytes",
            file.display(),
            text.len()
        );
        for line in text.lines() {
            let well_formed = line
                .split_once(" [")
                .and_then(|(time, rest)| (!time.contains(' ')).then_some(rest))
                .and_then(|rest| rest.split_once("] ADD pod"))
                .and_then(|(level, rest)| {
                    ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"]
                        .contains(&level)
                        .then_some(rest)
                })
                .and_then(|rest| rest.split_once("/eth0: "))
                .and_then(|(pod, _)| pod.parse::<u32>().ok());
            let pod = well_formed.unwrap_or_else(|| panic!("malformed line: {line:?}"));
            logged.insert(pod);
        }
    }
    assert_eq!(logged.len(), pods, "every pod's ADD logged");
}

/// Waits at most `limit` for `child`; kills it and fails the test when it hangs.
fn finish_within(mut child: Child, limit: std::time::Duration, what: &str) -> (bool, Value) {
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{what} still waits after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    finish(child)
}

/// Class 8: a lock held elsewhere makes ADD and DEL fail with 11 naming the lock (and its
/// holder), STATUS with 50, once the configured deadline passes; never an endless wait.
#[test]
fn a_lock_held_elsewhere_has_a_deadline() {
    let dir = Scratch::new("bin-lock");
    let mut base = conf(dir.path(), "1.1.0", json!({"subnet": "10.0.0.0/24"}));
    let (ok, added) = run("ADD", "a", &base);
    assert!(ok, "{added}");
    let lock_path = dir.path().join("net").join("lock");
    // Another process (this test's) holds the lock, as the reference's go-filemutex would.
    let holder = fs::File::open(&lock_path).unwrap();
    holder.lock().unwrap();
    let limit = std::time::Duration::from_secs(10);
    base["ipam"]["lockTimeoutSeconds"] = json!(1);
    for (command, code) in [("ADD", 11), ("DEL", 11), ("STATUS", 50)] {
        let (ok, error) = finish_within(spawn(command, "b", &base), limit, command);
        assert!(!ok, "{command}");
        assert_eq!(error["code"], code, "{command}: {error}");
        let msg = error["msg"].as_str().unwrap();
        assert!(msg.contains(&lock_path.display().to_string()), "{msg}");
        #[cfg(target_os = "linux")]
        assert!(
            msg.contains(&format!("process {}", std::process::id())),
            "{msg}"
        );
    }
    // cni-win's one precedence rule: the config key wins over the environment variable, which
    // applies to a config without the key.
    let child = crate::common::spawn(
        "ADD",
        "b",
        &base,
        &[("CNI_WIN_HOST_LOCAL_LOCK_TIMEOUT_SECONDS", "600")],
    );
    let (ok, error) = finish_within(child, limit, "ADD with the config's deadline");
    assert!(!ok);
    assert_eq!(error["code"], 11, "{error}");
    base["ipam"]
        .as_object_mut()
        .unwrap()
        .remove("lockTimeoutSeconds");
    let child = crate::common::spawn(
        "ADD",
        "b",
        &base,
        &[("CNI_WIN_HOST_LOCAL_LOCK_TIMEOUT_SECONDS", "1")],
    );
    let (ok, error) = finish_within(child, limit, "ADD with the environment's deadline");
    assert!(!ok);
    assert_eq!(error["code"], 11, "{error}");
    holder.unlock().unwrap();
    let (ok, error) = run("DEL", "a", &base);
    assert!(ok, "{error}");
}

/// The lock deadline's variable without its unit still sets the deadline when the one with it
/// is not set, and the command says which name to set instead.
#[test]
fn the_lock_deadline_variable_without_its_unit_is_read_with_a_warning() {
    let dir = Scratch::new("bin-lock-unitless");
    let base = conf(dir.path(), "1.1.0", json!({"subnet": "10.0.0.0/24"}));
    let (ok, added) = run("ADD", "a", &base);
    assert!(ok, "{added}");
    let holder = fs::File::open(dir.path().join("net").join("lock")).unwrap();
    holder.lock().unwrap();
    let child = crate::common::spawn(
        "ADD",
        "b",
        &base,
        &[("CNI_WIN_HOST_LOCAL_LOCK_TIMEOUT", "1")],
    );
    let started = std::time::Instant::now();
    let output = crate::common::wait(child);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "the deadline of 1 s was not read"
    );
    assert!(!output.success);
    assert_eq!(output.json()["code"], 11, "{}", output.stdout);
    assert!(
        output.stderr.contains(
            "CNI_WIN_HOST_LOCAL_LOCK_TIMEOUT is read as CNI_WIN_HOST_LOCAL_LOCK_TIMEOUT_SECONDS"
        ),
        "{}",
        output.stderr
    );
    holder.unlock().unwrap();
}

/// Class 8: `resolvConf` naming a FIFO or an endless device is refused at once, naming it.
#[cfg(unix)]
#[test]
fn resolv_conf_must_be_a_small_regular_file() {
    let dir = Scratch::new("bin-resolv");
    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let big = dir.path().join("big");
    fs::write(&big, vec![b'#'; 4 << 20]).unwrap();
    for path in [fifo.as_path(), Path::new("/dev/zero"), big.as_path()] {
        let base = conf(
            dir.path(),
            "1.1.0",
            json!({"subnet": "10.0.0.0/24", "resolvConf": path}),
        );
        let (ok, error) = finish_within(
            spawn("ADD", "a", &base),
            std::time::Duration::from_secs(10),
            "ADD",
        );
        assert!(!ok);
        let msg = error["msg"].as_str().unwrap();
        assert!(msg.contains("resolvConf"), "{msg}");
        assert!(msg.contains(&path.display().to_string()), "{msg}");
    }
    assert!(reservations(&dir.path().join("net")).is_empty());
}

/// Class 4: an ifname with control characters round-trips through the binary: a repeated
/// ADD returns the same address, DEL frees it.
#[test]
fn control_characters_in_the_ifname_round_trip() {
    let dir = Scratch::new("bin-ifname");
    let base = conf(dir.path(), "1.1.0", json!({"subnet": "10.0.0.0/24"}));
    for ifname in ["e\u{1}", "e\u{7f}", "e\u{1b}[31m", "e\u{81}"] {
        let env = [("CNI_IFNAME", ifname)];
        let (ok, first) = finish(crate::common::spawn("ADD", "a", &base, &env));
        assert!(ok, "{first}");
        let (ok, again) = finish(crate::common::spawn("ADD", "a", &base, &env));
        assert!(ok, "{again}");
        assert_eq!(first["ips"], again["ips"], "{ifname:?}");
        let (ok, error) = finish(crate::common::spawn("DEL", "a", &base, &env));
        assert!(ok, "{error}");
        assert!(
            reservations(&dir.path().join("net")).is_empty(),
            "{ifname:?}"
        );
    }
}

/// Class 3 (process level): GC with the index directory replaced by a link to a directory
/// outside the store deletes nothing there.
#[cfg(unix)]
#[test]
fn gc_never_empties_a_linked_directory() {
    let dir = Scratch::new("bin-gc-link");
    let base = conf(dir.path(), "1.1.0", json!({"subnet": "10.0.0.0/24"}));
    let (ok, added) = run("ADD", "a", &base);
    assert!(ok, "{added}");
    let outside = dir.path().join("outside");
    fs::create_dir_all(outside.join("00")).unwrap();
    fs::write(outside.join("00").join("precious"), "keep me").unwrap();
    let attachments = dir.path().join("net").join(".cni-win").join("attachments");
    fs::remove_dir_all(&attachments).unwrap();
    std::os::unix::fs::symlink(&outside, &attachments).unwrap();
    let mut gc = base.clone();
    gc["cni.dev/valid-attachments"] = json!([{"containerID": "a", "ifname": "eth0"}]);
    let (ok, error) = run("GC", "", &gc);
    assert!(ok, "{error}");
    assert_eq!(
        fs::read_to_string(outside.join("00").join("precious")).unwrap(),
        "keep me"
    );
    assert_eq!(run("DEL", "a", &base), (true, Value::Null));
    assert!(reservations(&dir.path().join("net")).is_empty());
}

/// Class 5 (process level): DEL with the same input as a refused ADD (a requested address in
/// no range) succeeds and frees the attachment, as the runtime's teardown needs.
#[test]
fn del_succeeds_with_the_requests_add_refused() {
    let dir = Scratch::new("bin-del-requested");
    let base = conf(dir.path(), "1.1.0", json!({"subnet": "10.0.0.0/24"}));
    let (ok, added) = run("ADD", "a", &base);
    assert!(ok, "{added}");
    let env = [("CNI_ARGS", "IgnoreUnknown=1;IP=10.9.9.9")];
    let (ok, refused) = finish(crate::common::spawn("ADD", "a", &base, &env));
    assert!(!ok);
    assert_eq!(refused["code"], 7, "{refused}");
    let (ok, error) = finish(crate::common::spawn("DEL", "a", &base, &env));
    assert!(ok, "{error}");
    assert!(reservations(&dir.path().join("net")).is_empty());
}

/// host-local delegates to nothing, so it cannot loop: a config whose `ipam.type` names
/// host-local itself (as a config with `"type": "host-local"` at the top does) is run, not
/// refused as a delegation loop.
#[test]
fn an_ipam_type_naming_host_local_itself_is_no_loop() {
    let dir = Scratch::new("bin-own-type");
    let mut base = conf(dir.path(), "1.0.0", json!({"subnet": "10.0.0.0/24"}));
    base["type"] = json!("host-local");
    let (ok, added) = run("ADD", "a", &base);
    assert!(ok, "{added}");
    assert_eq!(added["ips"][0]["address"], "10.0.0.2/24");
    assert_eq!(run("DEL", "a", &base), (true, Value::Null));
    assert!(reservations(&dir.path().join("net")).is_empty());
}

/// Class 5 (process level): a DEL whose config ADD would refuse says in the log what it
/// ignored, naming the key, and releases by attachment.
#[test]
fn del_says_what_it_ignored() {
    let dir = Scratch::new("bin-del-ignored");
    let base = conf(dir.path(), "1.1.0", json!({"subnet": "10.0.0.0/24"}));
    let (ok, added) = run("ADD", "a", &base);
    assert!(ok, "{added}");
    let mut edited = base.clone();
    edited["ipam"]["rangeEnd"] = json!("10.9.9.9");
    let deleted = crate::common::wait(spawn("DEL", "a", &edited));
    assert!(deleted.success, "{deleted:?}");
    assert!(
        deleted.stderr.contains("DEL ignores") && deleted.stderr.contains("ipam.rangeEnd"),
        "{}",
        deleted.stderr
    );
    assert!(reservations(&dir.path().join("net")).is_empty());
}

/// A `dataDir` the binary would take relative to its working directory (on Linux, a Windows
/// path is one): ADD, DEL, CHECK and STATUS refuse it with code 7 naming it, and nothing is
/// made where the binary runs. An absolute one works.
#[test]
fn a_data_dir_that_is_not_rooted_is_refused_and_nothing_is_made_in_the_working_directory() {
    let scratch = Scratch::new("bin-relative-data-dir");
    let cwd = scratch.path();
    let mut relative = vec!["ipam".to_owned()];
    if !cfg!(windows) {
        relative.push(r"Z:\node\ipam".to_owned());
    }
    for data_dir in relative {
        let mut conf = conf(cwd, "1.1.0", json!({"subnet": "10.0.0.0/24"}));
        conf["ipam"]["dataDir"] = json!(data_dir);
        for command in ["ADD", "CHECK", "DEL", "STATUS"] {
            let output =
                crate::common::wait(crate::common::spawn_in(cwd, command, "a", &conf, &[]));
            assert!(!output.success, "{command} with {data_dir}: {output:?}");
            let error = output.json();
            assert_eq!(error["code"], 7, "{command}: {error}");
            let msg = error["msg"].as_str().unwrap();
            assert!(msg.starts_with("ipam.dataDir: "), "{command}: {msg}");
        }
        let made: Vec<_> = fs::read_dir(cwd)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(made.is_empty(), "{data_dir}: {made:?}");
    }
    let absolute = conf(
        &cwd.join("store"),
        "1.1.0",
        json!({"subnet": "10.0.0.0/24"}),
    );
    assert!(run("ADD", "a", &absolute).0);
    assert_eq!(reservations(&cwd.join("store").join("net")).len(), 1);
}
