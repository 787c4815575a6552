//! `cni-win support-bundle` on an emulated node with a pod, Flannel's subnet.env, a store, a
//! plugin log (rotated once), an install record, planted secrets, a link and a FIFO.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use cni_win::paths::NodePaths;
use cni_win::record::InstallRecord;
use cni_win::support_bundle::{Bundle, MANIFEST, Outcome, Plan, Settings};
use cni_win_conformance::node::stub_plugin;
use cni_win_core::platform::ConnectError;
use serde_json::{Value, json};

use crate::support::ScratchNode;
use crate::support::doctor::about;

/// Every value planted where a secret is kept: none may reach the bundle.
const SECRETS: [&str; 6] = [
    "PLANTED-ETCD-PASSWORD",
    "PLANTED-CONFIG-TOKEN",
    "PLANTED-KUBECONFIG-TOKEN",
    "PLANTED-CLIENT-KEY",
    "PLANTED-PEM-BODY",
    "PLANTED-LOG-PASSWORD",
];
/// What a link in the config directory points at: never read.
const OUTSIDE: &str = "OUTSIDE-THE-CONF-DIR";

struct Scene {
    node: ScratchNode,
    bin: tempfile::TempDir,
    outside: tempfile::TempDir,
    log: PathBuf,
    subnet_file: PathBuf,
    pod_ip: String,
}

impl Scene {
    fn new() -> Scene {
        let node = ScratchNode::new();
        let conf = node.conf_dir();
        let log = node.dir().join("logs").join("cni.log");
        fs::create_dir_all(log.parent().unwrap()).unwrap();
        let ipam_dir = node.dir().join("ipam");
        fs::write(
            conf.join("10-cbr0.conf"),
            serde_json::to_vec(&json!({
                "cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge", "logFile": log,
                "ipam": {"type": "host-local", "subnet": "10.244.1.0/24", "dataDir": ipam_dir}
            }))
            .unwrap(),
        )
        .unwrap();
        fs::write(
            conf.join("30-calico.conflist"),
            serde_json::to_vec(&json!({
                "cniVersion": "0.3.1", "name": "k8s-pod-network", "plugins": [{
                    "type": "calico", "etcd_password": SECRETS[0],
                    "policy": {"type": "k8s", "k8s_auth_token": SECRETS[1]},
                    "kubernetes": {"kubeconfig": conf.join("calico-kubeconfig")}
                }]
            }))
            .unwrap(),
        )
        .unwrap();
        fs::write(
            conf.join("calico-kubeconfig"),
            format!(
                "apiVersion: v1\nkind: Config\nusers:\n- name: calico\n  user:\n    token: {}\n    \
                 client-key-data: {}\n",
                SECRETS[2], SECRETS[3]
            ),
        )
        .unwrap();
        fs::create_dir(conf.join("multus.d")).unwrap();
        fs::write(
            conf.join("multus.d").join("multus.kubeconfig"),
            format!(
                "users:\n- name: multus\n  user:\n    client-key: |\n      \
                 -----BEGIN EC PRIVATE KEY-----\n      {}\n      -----END EC PRIVATE KEY-----\n",
                SECRETS[4]
            ),
        )
        .unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("elsewhere.conflist");
        fs::write(&target, OUTSIDE).unwrap();
        std::os::unix::fs::symlink(&target, conf.join("50-link.conflist")).unwrap();
        let fifo = conf.join("60-fifo.conf");
        assert!(
            Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );

        let subnet_file = node.dir().join("subnet.env");
        fs::write(
            &subnet_file,
            "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\nFLANNEL_MTU=1450\n",
        )
        .unwrap();
        // The rotated file first (30 lines of 100 bytes), then the current one (3000 bytes).
        fs::write(source_rotated(&log), ("r".repeat(99) + "\n").repeat(30)).unwrap();
        let line = format!("ADD stdin={{\"password\":\"{}\"}}\n", SECRETS[5]);
        fs::write(&log, line.clone() + &"c".repeat(2999 - line.len()) + "\n").unwrap();

        let bin = tempfile::tempdir().unwrap();
        stub_plugin(bin.path(), "win-bridge", &about("win-bridge"));
        stub_plugin(bin.path(), "host-local", &about("host-local"));
        // hnsctl hangs when asked its version.
        hanging(bin.path(), "hnsctl");
        InstallRecord {
            written_by: "cni-win 0.1.0".to_owned(),
            files: Vec::new(),
        }
        .save(bin.path())
        .unwrap();

        let ns = node.namespace();
        let pod_ip = node.reserve("pod-a");
        let endpoint = node.ours("pod-a", &pod_ip);
        node.client.attach_endpoint(ns, endpoint).unwrap();
        Scene {
            node,
            bin,
            outside,
            log,
            subnet_file,
            pod_ip,
        }
    }

    fn settings(&self) -> Settings {
        Settings {
            paths: NodePaths::with_bin_dir(self.node.conf_dir(), self.bin.path().to_owned()),
            subnet_file: self.subnet_file.clone(),
            log_tail_bytes: 4000,
            step_timeout: Duration::from_secs(2),
            timeout: Duration::from_secs(120),
            max_bytes: 64 * 1024 * 1024,
        }
    }

    fn collect(&self, settings: &Settings) -> Bundle {
        Plan::new(settings).collect(Ok(self.node.new_client()))
    }
}

fn source_rotated(log: &Path) -> PathBuf {
    log.with_file_name("cni.1.log")
}

fn hanging(bin: &Path, name: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = bin.join(name);
    fs::write(&path, "#!/bin/sh\nexec sleep 30\n").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// The zip at `path`, entry by entry, read back with the zip crate.
fn unzip(path: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut archive = zip::ZipArchive::new(fs::File::open(path).unwrap()).unwrap();
    (0..archive.len())
        .map(|index| {
            let mut file = archive.by_index(index).unwrap();
            let name = file.name().unwrap().into_owned();
            let mut bytes = Vec::new();
            file.read_to_end(&mut bytes).unwrap();
            (name, bytes)
        })
        .collect()
}

/// `prefix` followed by `path`'s components, as the bundle names a file from the node.
fn mirrored(prefix: &str, path: &Path) -> String {
    format!("{prefix}{}", path.display())
}

fn json(entries: &BTreeMap<String, Vec<u8>>, name: &str) -> Value {
    serde_json::from_slice(entries.get(name).unwrap_or_else(|| panic!("no {name}"))).unwrap()
}

fn step<'m>(manifest: &'m Value, name: &str) -> &'m Value {
    manifest["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|step| step["name"] == name)
        .unwrap_or_else(|| panic!("no step {name}: {manifest:#}"))
}

#[test]
fn the_bundle_holds_every_item_and_no_secret() {
    let scene = Scene::new();
    let bundle = scene.collect(&scene.settings());
    let out = tempfile::tempdir().unwrap();
    let zip_path = out.path().join("bundle.zip");
    bundle.publish(&zip_path).unwrap();
    let entries = unzip(&zip_path);
    let mut listing = String::new();
    for (name, bytes) in &entries {
        listing.push_str(&format!("{:>8}  {name}\n", bytes.len()));
    }
    eprintln!(
        "bundle ({} bytes zipped):\n{listing}",
        fs::metadata(&zip_path).unwrap().len()
    );

    // Versions of the installed binaries, from the bin directory's own files.
    let bridge = json(&entries, "binaries/win-bridge.json");
    assert_eq!(
        bridge["version"]["stdout"],
        "CNI win-bridge plugin 0.1.0 (commit aaaaaaaaaaaa)"
    );
    assert_eq!(bridge["sha256"].as_str().unwrap().len(), 64);
    assert!(bridge["size"].as_u64().unwrap() > 0);
    // A binary that hangs is killed at the step's deadline and recorded; the bundle goes on.
    let manifest = json(&entries, MANIFEST);
    let hnsctl = step(&manifest, "binary hnsctl");
    assert_eq!(hnsctl["outcome"], "timed_out", "{hnsctl:#}");
    assert!(json(&entries, "binaries/hnsctl.json")["version"]["timed_out_after_ms"].is_u64());
    assert_eq!(step(&manifest, "binary win-overlay")["outcome"], "failed");

    // The node, HNS and doctor.
    let hns = json(&entries, "node/hns.json");
    assert!(hns["hns_version"]["Major"].is_u64(), "{hns}");
    assert!(hns["windows_build"].is_u64(), "{hns}");
    assert!(json(&entries, "doctor.json")["findings"].is_array());
    let networks = json(&entries, "hns/networks.json");
    assert_eq!(networks[0]["Name"], "cbr0", "{networks:#}");
    let endpoints = json(&entries, "hns/endpoints.json");
    assert_eq!(
        endpoints[0]["IpConfigurations"][0]["IpAddress"], scene.pod_ip,
        "{endpoints:#}"
    );
    assert_eq!(
        json(&entries, "hns/namespaces.json")
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert!(json(&entries, "hns/load-balancers.json").is_array());

    // The config directory (subdirectories too), redacted; the link and FIFO not read.
    for name in [
        "conf/10-cbr0.conf",
        "conf/30-calico.conflist",
        "conf/calico-kubeconfig",
        "conf/multus.d/multus.kubeconfig",
    ] {
        assert!(entries.contains_key(name), "no {name}");
    }
    assert!(
        !entries
            .keys()
            .any(|name| name.contains("50-link") || name.contains("60-fifo"))
    );
    let skipped: Vec<String> = manifest["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                s["path"].as_str().unwrap(),
                s["why"].as_str().unwrap()
            )
        })
        .collect();
    for (file, kind) in [("50-link.conflist", "(link)"), ("60-fifo.conf", "(FIFO)")] {
        assert!(
            skipped.iter().any(|s| s.contains(file) && s.contains(kind)),
            "{skipped:#?}"
        );
    }

    // subnet.env, the store's reservation files, the log's tail into its rotation, the record.
    assert!(entries.contains_key(&mirrored("flannel", &scene.subnet_file)));
    let store = scene.node.dir().join("ipam").join("cbr0");
    let reservation = &entries[&mirrored("stores", &store.join(&scene.pod_ip))];
    assert!(reservation.starts_with(b"pod-a"), "{reservation:?}");
    assert!(
        !entries
            .keys()
            .any(|name| name.contains(ipam_host_local::INDEX_DIR))
    );
    let current = &entries[&mirrored("logs", &scene.log)];
    // All of the current file (shorter than the tail; its secret redacted), then the rest.
    assert!(current.starts_with(b"ADD stdin=") && current.ends_with(b"c\n"));
    let rotated = &entries[&mirrored("logs", &source_rotated(&scene.log))];
    assert_eq!(rotated.len(), 1000, "the tail continues into cni.1.log");
    assert!(rotated.iter().all(|b| *b == b'r' || *b == b'\n'));
    assert!(entries.contains_key(&mirrored(
        "install-record",
        &InstallRecord::path(scene.bin.path())
    )));

    // No secret anywhere, nothing from outside; the manifest says where it redacted.
    for (name, bytes) in &entries {
        let text = String::from_utf8_lossy(bytes);
        for secret in SECRETS.iter().chain([&OUTSIDE]) {
            assert!(!text.contains(secret), "{secret} in {name}:\n{text}");
        }
    }
    let redacted: Vec<String> = manifest["redacted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["entry"].as_str().unwrap(),
                r["at"].as_str().unwrap()
            )
        })
        .collect();
    for expected in [
        "conf/30-calico.conflist /plugins/0/etcd_password",
        "conf/30-calico.conflist /plugins/0/policy/k8s_auth_token",
        "conf/calico-kubeconfig line 6: token",
        "conf/calico-kubeconfig line 7: client-key-data",
        "conf/multus.d/multus.kubeconfig line 4: client-key",
    ] {
        assert!(
            redacted.contains(&expected.to_owned()),
            "{expected}: {redacted:#?}"
        );
    }
    assert!(
        redacted
            .iter()
            .any(|r| r.starts_with("logs/") && r.ends_with("password")),
        "{redacted:#?}"
    );
    drop(scene.outside);
}

#[test]
fn the_size_cap_bounds_the_bundle_and_says_what_was_left_out() {
    let scene = Scene::new();
    let settings = Settings {
        max_bytes: 6000,
        ..scene.settings()
    };
    let bundle = scene.collect(&settings);
    let total: usize = bundle
        .entries
        .iter()
        .filter(|entry| entry.name != MANIFEST)
        .map(|entry| entry.bytes.len())
        .sum();
    assert!(total <= 6000, "{total}");
    let dropped: Vec<_> = bundle
        .manifest
        .skipped
        .iter()
        .filter(|s| s.why.contains("size cap of 6000 bytes"))
        .collect();
    assert!(!dropped.is_empty(), "{:#?}", bundle.manifest.skipped);
    assert!(
        bundle
            .entries
            .iter()
            .all(|e| !dropped.iter().any(|d| d.path == e.name))
    );
}

#[test]
fn an_unreachable_hns_is_recorded_and_the_rest_collected() {
    let scene = Scene::new();
    let unreachable = ConnectError::Unreachable(hns::HnsError::new(
        hns::ErrorKind::Backend,
        "HNS is not running",
    ));
    let why = cni_win::chain(&unreachable);
    assert!(why.contains("HNS is not running"), "{why}");
    let bundle = Plan::new(&scene.settings()).collect(Err(unreachable));
    let steps = &bundle.manifest.steps;
    let hns_steps: Vec<_> = steps
        .iter()
        .filter(|s| s.name.starts_with("HNS "))
        .collect();
    assert_eq!(hns_steps.len(), 4);
    for step in hns_steps {
        assert_eq!(step.outcome, Outcome::Failed);
        assert_eq!(step.error.as_deref(), Some(why.as_str()));
    }
    let doctor = steps.iter().find(|s| s.name == "doctor").unwrap();
    assert_eq!(
        doctor.outcome,
        Outcome::Ok,
        "doctor reports HNS unreachable itself"
    );
    let config = steps
        .iter()
        .find(|s| s.name == "CNI config directory")
        .unwrap();
    assert_eq!(config.outcome, Outcome::Ok);
    let out = tempfile::tempdir().unwrap();
    bundle.publish(&out.path().join("b.zip")).unwrap();
    assert!(unzip(&out.path().join("b.zip")).contains_key("doctor.json"));
}

#[test]
fn the_bundle_never_replaces_a_file() {
    let scene = Scene::new();
    let unreachable =
        ConnectError::Unreachable(hns::HnsError::new(hns::ErrorKind::Backend, "no HNS"));
    let bundle = Plan::new(&scene.settings()).collect(Err(unreachable));
    let out = tempfile::tempdir().unwrap();
    let existing = out.path().join("taken.zip");
    fs::write(&existing, "mine").unwrap();
    let error = bundle.publish(&existing).unwrap_err().to_string();
    assert!(error.contains("already exists"), "{error}");
    assert_eq!(fs::read(&existing).unwrap(), b"mine");
    assert_eq!(
        fs::read_dir(out.path()).unwrap().count(),
        1,
        "no scratch file left"
    );
}

fn command(scene: &Scene, output: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cni-win"));
    command
        .arg("support-bundle")
        .arg("--conf-dir")
        .arg(scene.node.conf_dir())
        .arg("--bin-dir")
        .arg(scene.bin.path())
        .arg("--subnet-file")
        .arg(&scene.subnet_file)
        .args(["--step-timeout", "2", "--output"])
        .arg(output)
        .env("HCN_EMULATOR_STATE", scene.node.state());
    command
}

#[test]
fn dry_run_lists_the_sources_and_writes_nothing() {
    let scene = Scene::new();
    let out = tempfile::tempdir().unwrap();
    let output = out.path().join("bundle.zip");
    let run = command(&scene, &output).arg("--dry-run").output().unwrap();
    assert!(run.status.success(), "{run:?}");
    let stdout = String::from_utf8(run.stdout).unwrap();
    for listed in [
        scene.node.conf_dir().display().to_string(),
        scene.log.display().to_string(),
        scene.subnet_file.display().to_string(),
        scene
            .node
            .dir()
            .join("ipam")
            .join("cbr0")
            .display()
            .to_string(),
        "HNS networks".to_owned(),
        "limits: each step 2s".to_owned(),
    ] {
        assert!(stdout.contains(&listed), "{listed} not in:\n{stdout}");
    }
    assert_eq!(fs::read_dir(out.path()).unwrap().count(), 0, "{stdout}");
}

#[test]
fn the_command_writes_the_zip_and_reports_each_step() {
    let scene = Scene::new();
    let out = tempfile::tempdir().unwrap();
    let output = out.path().join("bundle.zip");
    let run = command(&scene, &output).output().unwrap();
    let stdout = String::from_utf8(run.stdout).unwrap();
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.contains("[TIMED OUT] binary hnsctl"), "{stdout}");
    assert!(stdout.contains("[ok] HNS endpoints"), "{stdout}");
    let entries = unzip(&output);
    assert!(entries.contains_key("hns/endpoints.json") && entries.contains_key(MANIFEST));
    // Once written, never overwritten.
    let again = command(&scene, &output).output().unwrap();
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
}

/// However many steps hang, the bundle ends at its overall deadline: the step running then is
/// cut short, and the steps left are recorded as not run.
#[test]
fn the_bundle_keeps_its_overall_deadline() {
    let scene = Scene::new();
    let settings = Settings {
        timeout: Duration::from_millis(1500),
        step_timeout: Duration::from_secs(20),
        ..scene.settings()
    };
    let bundle = scene.collect(&settings);
    let manifest = serde_json::to_value(&bundle.manifest).unwrap();
    // hnsctl's --version hangs: killed when the bundle's time ran out, not at its own 20 s.
    let hnsctl = step(&manifest, "binary hnsctl");
    assert_eq!(hnsctl["outcome"], "timed_out", "{hnsctl:#}");
    assert!(
        hnsctl["duration_ms"].as_u64().unwrap() < 10_000,
        "{hnsctl:#}"
    );
    let doctor = step(&manifest, "doctor");
    assert_eq!(doctor["outcome"], "timed_out", "{doctor:#}");
    assert!(
        doctor["error"].as_str().unwrap().contains("not run"),
        "{doctor:#}"
    );
    assert_eq!(manifest["limits"]["timeout_ms"], 1500);
    assert!(
        bundle
            .entries
            .iter()
            .any(|entry| entry.name == "manifest.json")
    );
}

/// The bundle's view of HNS drift: every drift of doctor's read, with whose it is, what to do
/// and whether the daemon's `--apply` repairs it.
#[test]
fn the_bundle_holds_the_hns_drift_with_whose_it_is() {
    let scene = Scene::new();
    scene
        .node
        .inject_endpoint(hns::Guid::ZERO, "stale-lease", "10.244.1.200", true);
    let out = tempfile::tempdir().unwrap();
    let zip_path = out.path().join("bundle.zip");
    scene.collect(&scene.settings()).publish(&zip_path).unwrap();
    let drift = json(&unzip(&zip_path), "hns-drift.json");
    let stale = drift
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["reason"] == "remote-endpoint-in-pod-subnet")
        .unwrap_or_else(|| panic!("{drift:#}"));
    assert_eq!(stale["network"], "cbr0");
    assert!(stale["object"].as_str().unwrap().contains("10.244.1.200"));
    assert!(stale["whose"].as_str().unwrap().contains("kube-proxy"));
    assert_eq!(stale["repairedWithApply"], false);
}
