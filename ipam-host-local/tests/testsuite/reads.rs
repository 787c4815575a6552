//! What only reads the store (STATUS, the pool's usage, the reservations the node tools judge)
//! creates nothing and writes nothing, yet reads under the lock whenever there is one.

use crate::common::{Scratch, host_local, ip};
use cni::ErrorCode;
use ipam_host_local::HostLocal;
use ipam_host_local::layout::{Content, Owner};
use serde_json::json;
use std::collections::BTreeSet;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

/// Every name under `dir`, relative to it.
fn tree(dir: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(next) = pending.pop() {
        for entry in fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if fs::symlink_metadata(&path).unwrap().is_dir() {
                pending.push(path.clone());
            }
            found.insert(path.strip_prefix(dir).unwrap().to_owned());
        }
    }
    found
}

/// Every read a command that does not allocate makes.
fn read_every_way(ipam: &HostLocal) {
    ipam.status().unwrap();
    ipam.usage().unwrap();
    ipam.reservations().unwrap();
}

/// A store that does not exist holds nothing, and reading it makes neither `dataDir` nor the
/// network's directory.
#[test]
fn reads_create_no_store() {
    let dir = Scratch::new("reads-no-store");
    let data_dir = dir.path().join("absent");
    let ipam = host_local(&data_dir, json!({"subnet": "10.0.0.0/24"}));
    assert_eq!(ipam.status(), Ok(Vec::new()));
    assert_eq!(ipam.usage().unwrap()[0].free(), 253);
    assert_eq!(ipam.reservations(), Ok(Vec::new()));
    assert!(!data_dir.exists());
    // Nor when dataDir exists without the network's directory.
    fs::create_dir(&data_dir).unwrap();
    read_every_way(&ipam);
    assert_eq!(tree(&data_dir), BTreeSet::new());
}

/// A store as the reference leaves it (reservation files and `lock`, no index), and one whose
/// `lock` an operator removed: read as it is, nothing added.
#[test]
fn reads_add_nothing_to_a_store() {
    for with_lock in [true, false] {
        let dir = Scratch::new("reads-reference-store");
        let ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/24"}));
        let net = ipam.network_dir().to_path_buf();
        fs::create_dir_all(&net).unwrap();
        if with_lock {
            fs::write(net.join("lock"), "").unwrap();
        }
        fs::write(net.join("10.0.0.2"), "a\r\neth0").unwrap();
        fs::write(net.join("last_reserved_ip.0"), "10.0.0.2").unwrap();
        let before = tree(&net);
        read_every_way(&ipam);
        assert_eq!(tree(&net), before, "with lock: {with_lock}");
        assert_eq!(
            ipam.reservations().unwrap(),
            [(
                ip("10.0.0.2"),
                Content::Owned(Owner::attachment("a", "eth0"))
            )]
        );
        assert_eq!(ipam.usage().unwrap()[0].reserved, 1);
    }
}

/// A store our ADD wrote (with its index) is read as it is: the index is neither used nor
/// touched, whatever state it is in.
#[test]
fn reads_leave_a_stale_index_as_it_is() {
    let dir = Scratch::new("reads-stale-index");
    let ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/24"}));
    ipam.allocate("a", "eth0").unwrap();
    let net = ipam.network_dir().to_path_buf();
    // The reference's ADD, behind the index's back: a writer would rebuild the index now.
    fs::write(net.join("10.0.0.9"), "b\r\neth0").unwrap();
    let stamp = fs::read(net.join(".cni-win").join("stamp")).unwrap();
    let before = tree(&net);
    read_every_way(&ipam);
    assert_eq!(tree(&net), before);
    assert_eq!(fs::read(net.join(".cni-win").join("stamp")).unwrap(), stamp);
    assert_eq!(ipam.usage().unwrap()[0].reserved, 2);
}

/// A writer that died between creating a reservation file and writing it leaves it empty; ADD
/// reclaims it before it calls a set exhausted, so STATUS counts it as free.
#[test]
fn status_counts_a_writers_empty_leftover_as_free() {
    let dir = Scratch::new("reads-leftover");
    // 10.0.0.2 is the only address a /30 hands out (.1 is the gateway).
    let ipam = host_local(
        dir.path(),
        json!({"subnet": "10.0.0.0/30", "notReadyWhenFull": true}),
    );
    let net = ipam.network_dir().to_path_buf();
    fs::create_dir_all(&net).unwrap();
    fs::write(net.join("lock"), "").unwrap();
    fs::write(net.join("10.0.0.2"), "").unwrap();
    assert_eq!(ipam.status(), Ok(Vec::new()));
    assert_eq!(
        ipam.allocate("a", "eth0").unwrap().result().ips[0]
            .address
            .ip(),
        ip("10.0.0.2")
    );
    assert_eq!(ipam.status().unwrap_err().code(), ErrorCode::NotAvailable);
}

/// A read takes the lock a writer holds, within the store's deadline: it never reads a
/// writer's half-done work.
#[test]
fn reads_wait_for_the_lock() {
    let dir = Scratch::new("reads-lock");
    let ipam = host_local(
        dir.path(),
        json!({"subnet": "10.0.0.0/24", "lockTimeoutSeconds": 0.2}),
    );
    ipam.allocate("a", "eth0").unwrap();
    let writer = File::open(ipam.network_dir().join("lock")).unwrap();
    writer.lock().unwrap();
    let err = ipam.reservations().unwrap_err();
    assert_eq!(err.code(), ErrorCode::TryAgainLater);
    assert!(err.msg().contains("lock"), "{}", err.msg());
    assert_eq!(ipam.status().unwrap_err().code(), ErrorCode::NotAvailable);
    writer.unlock().unwrap();
    assert_eq!(ipam.reservations().unwrap().len(), 1);
}

/// A network directory or `lock` that is a link refuses a read as it refuses a writer: nothing
/// is read through it.
#[cfg(unix)]
#[test]
fn reads_never_follow_a_link() {
    let dir = Scratch::new("reads-links");
    let outside = dir.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("10.0.0.2"), "a\r\neth0").unwrap();
    let ipam = host_local(&dir.path().join("data"), json!({"subnet": "10.0.0.0/24"}));
    fs::create_dir_all(dir.path().join("data")).unwrap();
    std::os::unix::fs::symlink(&outside, ipam.network_dir()).unwrap();
    assert_eq!(ipam.reservations().unwrap_err().code(), ErrorCode::Io);

    fs::remove_file(ipam.network_dir()).unwrap();
    fs::create_dir(ipam.network_dir()).unwrap();
    std::os::unix::fs::symlink(outside.join("10.0.0.2"), ipam.network_dir().join("lock")).unwrap();
    let err = ipam.usage().unwrap_err();
    assert_eq!(err.code(), ErrorCode::Io);
    assert!(err.msg().contains("not a regular file"), "{}", err.msg());
}
