//! The node tools that only read the node create nothing on it: doctor, a sweep that removes
//! nothing and the support bundle read each network's host-local store, and a store that does
//! not exist must stay absent (a store made where none was is how a Linux run that took a
//! Windows `dataDir` for a relative path left one in its working directory), while one that
//! exists gets no file it did not have.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cni_win::node::Node;
use cni_win::paths::NodePaths;
use cni_win::shutdown::Shutdown;
use cni_win::support_bundle::{self, Plan};
use cni_win::sweep::{self, AttachmentLocks};

use crate::support::doctor::Doctor;
use crate::support::{ScratchNode, problems};

/// Every file and directory under `dir`, relative to it, but the emulator's state (HNS's
/// files, which a read of HNS may touch as HNS's own bookkeeping would).
fn tree(dir: &Path, state: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(next) = pending.pop() {
        for entry in fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path == state {
                continue;
            }
            if fs::symlink_metadata(&path).unwrap().is_dir() {
                pending.push(path.clone());
            }
            found.insert(path.strip_prefix(dir).unwrap().to_owned());
        }
    }
    found
}

/// doctor, a dry-run sweep, a sweep with `--apply` that finds nothing to remove, and the
/// support bundle, each on `doctor`'s node as it is.
fn read_every_way(doctor: &Doctor<ScratchNode>) {
    let node = &doctor.node;
    let paths = NodePaths::with_bin_dir(node.conf_dir(), doctor.bin());
    doctor.report();
    for apply in [false, true] {
        let read = Node::read(Ok(&node.client), &paths, None);
        let pass = sweep::sweep_node(
            Some(&node.client),
            &read,
            &AttachmentLocks,
            apply,
            &Shutdown::new(),
        )
        .unwrap();
        assert!(pass.stale.is_empty(), "{pass:?}");
    }
    let settings = support_bundle::Settings {
        paths,
        subnet_file: node.dir().join("subnet.env"),
        log_tail_bytes: 1000,
        step_timeout: Duration::from_secs(10),
        timeout: Duration::from_secs(60),
        max_bytes: 1024 * 1024,
    };
    Plan::new(&settings).collect(Ok(node.new_client()));
}

/// A node whose pods have never had an address: `cbr0`'s store does not exist, and after
/// every read it still does not (nor anything else new under the node's directories).
#[test]
fn reading_a_node_creates_no_store() {
    let doctor = Doctor::new(ScratchNode::new(), "win-bridge");
    let node = &doctor.node;
    let store = node.emulated().ipam_dir();
    assert!(!store.exists());
    let before = tree(node.dir(), &node.state());

    read_every_way(&doctor);

    assert!(
        !store.exists(),
        "a read created {}: {:?}",
        store.display(),
        tree(&store, &node.state())
    );
    assert_eq!(tree(node.dir(), &node.state()), before);
    // What doctor says of a store that is not there: nothing reserved, nothing wrong.
    assert_eq!(problems(&doctor.report()), []);
}

/// A store as the reference host-local leaves it (a reservation and `lock`, no cni-win index):
/// the reads read it under its lock and add nothing to it.
#[test]
fn reading_a_node_adds_nothing_to_a_store() {
    let doctor = Doctor::new(ScratchNode::new(), "win-bridge");
    let node = &doctor.node;
    let network_dir = node.emulated().ipam_dir().join("cbr0");
    fs::create_dir_all(&network_dir).unwrap();
    fs::write(network_dir.join("lock"), "").unwrap();
    fs::write(network_dir.join("10.244.1.7"), "kube-proxy\r\nsource-vip").unwrap();
    let before = tree(node.dir(), &node.state());

    read_every_way(&doctor);

    assert_eq!(tree(node.dir(), &node.state()), before);
    assert_eq!(node.reserved(), BTreeSet::from(["10.244.1.7".to_owned()]));
}

/// What made the store committed at the repository's root: a conflist written for a Windows
/// node (`"dataDir": "Z:\\..."`) read on Linux, where that is a relative path. The tools refuse
/// the config naming the key (doctor fails it, the sweep reports it) and make nothing under
/// their working directory.
#[test]
fn a_conflist_with_windows_paths_read_on_linux_creates_nothing_in_the_working_directory() {
    let doctor = Doctor::new(ScratchNode::new(), "win-bridge");
    let node = &doctor.node;
    let data_dir = r"Z:\cni-win-tests\read-only\ipam";
    let config = serde_json::json!({
        "cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
        "ipam": {"type": "host-local", "subnet": "10.244.1.0/24", "dataDir": data_dir}
    });
    fs::write(
        node.conf_dir().join("10-cbr0.conf"),
        serde_json::to_vec(&config).unwrap(),
    )
    .unwrap();
    let cwd = std::env::current_dir().unwrap();

    let report = doctor.report();
    let refused = report
        .findings
        .iter()
        .find(|finding| finding.evidence.contains("ipam.dataDir: "))
        .unwrap_or_else(|| panic!("no finding names ipam.dataDir: {report}"));
    assert_ne!(
        refused.severity,
        cni_win::doctor::Severity::Pass,
        "{report}"
    );
    let read = Node::read(
        Ok(&node.client),
        &NodePaths::with_bin_dir(node.conf_dir(), doctor.bin()),
        None,
    );
    let pass = sweep::sweep_node(
        Some(&node.client),
        &read,
        &AttachmentLocks,
        false,
        &Shutdown::new(),
    )
    .unwrap();
    assert!(
        pass.errors
            .iter()
            .any(|error| error.contains("ipam.dataDir: ")),
        "{pass:?}"
    );
    read_every_way(&doctor);

    assert!(
        !cwd.join(data_dir).exists(),
        "{} was made",
        cwd.join(data_dir).display()
    );
    assert!(!node.emulated().ipam_dir().exists());
}
