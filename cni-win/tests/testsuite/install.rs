//! `cni-win install` and `uninstall` run as an operator runs them, on a node whose plugin and
//! config directories they create.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cni_win_conformance::node::Node;
use serde_json::Value;
use sha2::{Digest, Sha256};

const BINARIES: [&str; 5] = [
    "win-bridge",
    "win-overlay",
    "host-local",
    "hnsctl",
    "cni-win",
];

/// A node made by cni-win-conformance's builder with nothing in it, and a release directory
/// beside its (not yet existing) plugin and config directories.
struct ReleaseNode {
    /// Its scratch directory lives as long as this.
    _node: Node,
    source: PathBuf,
    bin: PathBuf,
    conf: PathBuf,
}

fn exe(name: &str) -> String {
    format!("{name}{}", std::env::consts::EXE_SUFFIX)
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl ReleaseNode {
    /// A release directory holding stand-ins for the binaries (install copies bytes; what
    /// they are does not matter) and their SHA256SUMS.
    fn new(release: &str) -> ReleaseNode {
        let node = Node::builder("install").build();
        let source = node.dir().join("release");
        fs::create_dir(&source).unwrap();
        let node = ReleaseNode {
            source,
            bin: node.bin_dir(),
            conf: node.conf_dir(),
            _node: node,
        };
        node.release(release);
        node
    }

    fn release(&self, release: &str) {
        let mut sums = String::new();
        for binary in BINARIES {
            let bytes = format!("{binary} {release}");
            fs::write(self.source.join(exe(binary)), &bytes).unwrap();
            sums.push_str(&format!("{}  {}\n", sha256(bytes.as_bytes()), exe(binary)));
        }
        fs::write(self.source.join("SHA256SUMS"), sums).unwrap();
    }

    fn cni_win(&self, args: &[&str]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_cni-win"));
        command.args(args);
        if args[0] == "install" {
            command
                .arg("--source")
                .arg(&self.source)
                .arg("--conf-dir")
                .arg(&self.conf);
        }
        command.arg("--bin-dir").arg(&self.bin).output().unwrap()
    }

    fn install(&self, extra: &[&str]) -> String {
        let mut args = vec!["install", "--conflist", "flannel-vxlan"];
        args.extend(extra);
        ok(self.cni_win(&args))
    }

    fn conflist(&self) -> PathBuf {
        self.conf.join("10-cni-win.conflist")
    }

    /// Every file under the node's two directories, with its contents.
    fn files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files = Vec::new();
        for dir in [&self.bin, &self.conf] {
            let Ok(entries) = fs::read_dir(dir) else {
                continue;
            };
            for entry in entries {
                let path = entry.unwrap().path();
                files.push((path.clone(), fs::read(&path).unwrap()));
            }
        }
        files.sort();
        files
    }
}

fn ok(output: Output) -> String {
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "failed:\n{stdout}\n{stderr}");
    stdout
}

fn failed(output: Output) -> String {
    assert!(
        !output.status.success(),
        "succeeded: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    String::from_utf8(output.stderr).unwrap()
}

#[test]
fn installs_binaries_and_a_linted_conflist_then_changes_nothing() {
    let node = ReleaseNode::new("v1");
    let stdout = node.install(&["--set", "serviceCidr=10.100.0.0/16"]);
    for binary in BINARIES {
        assert_eq!(
            fs::read(node.bin.join(exe(binary))).unwrap(),
            format!("{binary} v1").as_bytes()
        );
    }
    let conflist: Value = serde_json::from_slice(&fs::read(node.conflist()).unwrap()).unwrap();
    assert_eq!(conflist["cniVersion"], "1.1.0");
    assert_eq!(conflist["plugins"][0]["type"], "win-overlay");
    assert_eq!(
        conflist["plugins"][0]["policies"][1]["value"]["Settings"]["DestinationPrefix"],
        "10.100.0.0/16"
    );
    assert!(
        stdout.contains("[plugins.\"io.containerd.grpc.v1.cri\".cni]"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("bin_dirs = ['{}']", node.bin.display())),
        "{stdout}"
    );

    let before = node.files();
    let again = node.install(&["--set", "serviceCidr=10.100.0.0/16"]);
    assert!(again.contains("nothing to do"), "{again}");
    assert_eq!(node.files(), before);
}

#[test]
fn dry_run_changes_nothing_and_says_what_it_would_do() {
    let node = ReleaseNode::new("v1");
    let stdout = node.install(&["--dry-run"]);
    assert!(stdout.contains("would install"), "{stdout}");
    assert!(!node.bin.exists() && !node.conf.exists());
}

#[test]
fn a_binary_that_does_not_match_sha256sums_stops_the_install() {
    let node = ReleaseNode::new("v1");
    fs::write(node.source.join(exe("host-local")), "tampered").unwrap();
    let stderr = failed(node.cni_win(&["install", "--conflist", "flannel-host-gw"]));
    assert!(stderr.contains("SHA256SUMS says"), "{stderr}");
    assert!(node.files().is_empty());
}

#[test]
fn a_setting_the_plugins_refuse_writes_nothing() {
    let node = ReleaseNode::new("v1");
    let stderr =
        failed(node.cni_win(&["install", "--conflist", "flannel-vxlan", "--set", "vni=100"]));
    assert!(stderr.contains("win-overlay refuses it"), "{stderr}");
    assert!(node.files().is_empty());
}

#[test]
fn upgrades_then_uninstall_restores_what_was_there_and_removes_the_rest() {
    let node = ReleaseNode::new("v1");
    fs::create_dir_all(&node.bin).unwrap();
    fs::create_dir_all(&node.conf).unwrap();
    fs::write(node.bin.join(exe("win-bridge")), "reference win-bridge").unwrap();
    fs::write(node.bin.join(exe("flannel")), "reference flannel").unwrap();
    fs::write(node.conf.join("0-containerd-nat.json"), "{}").unwrap();

    let stdout = node.install(&[]);
    assert!(
        stdout.contains("replace a file install did not write"),
        "{stdout}"
    );
    assert!(
        stdout.contains("0-containerd-nat.json sorts before"),
        "{stdout}"
    );
    node.release("v2");
    let stdout = node.install(&[]);
    assert!(
        stdout.contains("replace the earlier install's copy"),
        "{stdout}"
    );
    assert_eq!(
        fs::read(node.bin.join(exe("hnsctl"))).unwrap(),
        b"hnsctl v2"
    );

    // Someone edits the conflist after install: it is theirs now.
    fs::write(node.conflist(), "{\"edited\": true}").unwrap();
    let stdout = ok(node.cni_win(&["uninstall", "--dry-run"]));
    assert!(stdout.contains("would restore"), "{stdout}");
    ok(node.cni_win(&["uninstall"]));
    let mut left: Vec<_> = node
        .files()
        .into_iter()
        .map(|(path, bytes)| {
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                String::from_utf8(bytes).unwrap(),
            )
        })
        .collect();
    left.sort();
    assert_eq!(
        left,
        vec![
            ("0-containerd-nat.json".to_owned(), "{}".to_owned()),
            (
                "10-cni-win.conflist".to_owned(),
                "{\"edited\": true}".to_owned()
            ),
            (exe("flannel"), "reference flannel".to_owned()),
            (exe("win-bridge"), "reference win-bridge".to_owned()),
        ]
    );
    assert!(ok(node.cni_win(&["uninstall"])).contains("nothing to do"));
}

#[test]
fn a_release_without_sha256sums_installs_with_a_note() {
    let node = ReleaseNode::new("v1");
    fs::remove_file(node.source.join("SHA256SUMS")).unwrap();
    let stdout = node.install(&[]);
    assert!(stdout.contains("no SHA256SUMS"), "{stdout}");
    assert!(node.bin.join(exe("cni-win")).is_file());
}

#[test]
fn a_missing_binary_is_named() {
    let node = ReleaseNode::new("v1");
    fs::remove_file(node.source.join(exe("win-overlay"))).unwrap();
    let stderr = failed(node.cni_win(&["install", "--conflist", "flannel-vxlan"]));
    assert!(stderr.contains(&exe("win-overlay")), "{stderr}");
    assert!(!Path::new(&node.bin).exists());
}
