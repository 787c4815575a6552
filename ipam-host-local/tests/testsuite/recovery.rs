//! Crash points and damaged stores: whatever a crash leaves, the next operation or GC ends with
//! a consistent store and no address that cannot be freed.

use crate::common::{Scratch, host_local, ip, reservations};
use cni::GcAttachment;
use ipam_host_local::layout::Owner;
use ipam_host_local::{HostLocal, INDEX_DIR, POOL_EXHAUSTED, Retention};
use serde_json::json;
use std::fs;
use std::net::IpAddr;
use std::path::PathBuf;

fn small_pool(dir: &Scratch) -> HostLocal {
    // .2 to .6 (five addresses; .1 is the gateway, .7 the broadcast).
    host_local(dir.path(), json!({"subnet": "10.0.0.0/29"}))
}

fn index(ipam: &HostLocal) -> PathBuf {
    ipam.network_dir().join(INDEX_DIR)
}

fn address_of(ipam: &HostLocal, id: &str) -> IpAddr {
    ipam.allocate(id, "eth0").unwrap().result().ips[0]
        .address
        .ip()
}

/// Lets the directory's modification time move on (timestamps are coarse), so a change made
/// behind our back is visible in it.
fn next_tick() {
    std::thread::sleep(std::time::Duration::from_millis(30));
}

/// The index entry of `id`/eth0 for `address`, wherever its bucket is.
fn entry_of(ipam: &HostLocal, id: &str, address: &str) -> PathBuf {
    let name = entry_name(id, address);
    for bucket in fs::read_dir(index(ipam).join("attachments")).unwrap() {
        let path = bucket.unwrap().path().join(&name);
        if path.exists() {
            return path;
        }
    }
    panic!("no index entry {name}");
}

/// The name of `id`/eth0's index entry for `address`.
fn entry_name(id: &str, address: &str) -> String {
    format!("{}@{address}", Owner::attachment(id, "eth0").key())
}

/// Every file under the index's attachments directory.
fn entries(ipam: &HostLocal) -> Vec<String> {
    let mut names = Vec::new();
    for bucket in fs::read_dir(index(ipam).join("attachments")).unwrap() {
        for entry in fs::read_dir(bucket.unwrap().path()).unwrap() {
            names.push(entry.unwrap().file_name().into_string().unwrap());
        }
    }
    names.sort();
    names
}

#[test]
fn an_index_entry_without_reservation_is_dropped() {
    // Crash after the reservation file was written under its index name, before the commit
    // link: the entry names an address nobody reserved.
    let dir = Scratch::new("intent");
    let ipam = small_pool(&dir);
    let a = ipam.allocate("a", "eth0").unwrap();
    let bucket = entry_of(&ipam, "a", "10.0.0.2")
        .parent()
        .unwrap()
        .to_path_buf();
    fs::write(bucket.join(entry_name("a", "10.0.0.5")), "a\r\neth0").unwrap();

    let again = ipam.allocate("a", "eth0").unwrap();
    assert!(again.already_held());
    assert_eq!(
        again.result(),
        a.result(),
        "the uncommitted entry is not a reservation"
    );
    ipam.check("a", "eth0", a.result()).unwrap();
    assert_eq!(entries(&ipam), [entry_name("a", "10.0.0.2")]);
    // The address is still free for others.
    ipam.allocate("b", "eth0").unwrap();
    ipam.allocate("c", "eth0").unwrap();
    ipam.allocate("d", "eth0").unwrap();
    assert_eq!(address_of(&ipam, "e"), ip("10.0.0.6"));
    ipam.release("a", "eth0").unwrap();
    let a_key = Owner::attachment("a", "eth0").key();
    assert!(!entries(&ipam).iter().any(|e| e.starts_with(&a_key)));
}

#[test]
fn a_lost_index_is_rebuilt_and_del_still_frees() {
    let dir = Scratch::new("lost-index");
    let ipam = small_pool(&dir);
    let held = address_of(&ipam, "a");
    address_of(&ipam, "b");
    fs::remove_dir_all(index(&ipam)).unwrap();
    ipam.release("a", "eth0").unwrap();
    assert!(!reservations(ipam.network_dir()).contains_key(&held.to_string()));
    assert!(ipam.allocate("b", "eth0").unwrap().already_held());
}

#[test]
fn a_corrupt_stamp_or_map_costs_a_rebuild_not_a_reservation() {
    let dir = Scratch::new("corrupt-index");
    let ipam = small_pool(&dir);
    address_of(&ipam, "a");
    fs::write(index(&ipam).join("stamp"), "garbage").unwrap();
    assert!(ipam.allocate("a", "eth0").unwrap().already_held());

    // A map claiming the set is full: the rebuild before "exhausted" finds the truth.
    let map = index(&ipam).join("occupancy.0");
    let mut bytes = fs::read(&map).unwrap();
    let header = bytes.len() - 1;
    bytes[header] = 0xff;
    fs::write(&map, &bytes).unwrap();
    assert_eq!(address_of(&ipam, "b"), ip("10.0.0.3"));

    // A map claiming everything is free: failed links correct it, and no address is doubled.
    fs::write(&map, b"cni-win occupancy v1\n\0").unwrap();
    let mut seen: Vec<IpAddr> = ["c", "d", "e"]
        .iter()
        .map(|id| address_of(&ipam, id))
        .collect();
    seen.sort();
    assert_eq!(seen, [ip("10.0.0.4"), ip("10.0.0.5"), ip("10.0.0.6")]);
    assert_eq!(
        ipam.allocate("f", "eth0").unwrap_err().code(),
        POOL_EXHAUSTED
    );
    assert_eq!(reservations(ipam.network_dir()).len(), 5);
}

#[test]
fn an_empty_reservation_file_never_blocks_the_pool() {
    let dir = Scratch::new("empty");
    let ipam = small_pool(&dir);
    for id in ["a", "b", "c", "d"] {
        address_of(&ipam, id);
    }
    // A writer crashed between creating .6 and writing it (the reference's known failure).
    fs::write(ipam.network_dir().join("10.0.0.6"), "").unwrap();
    assert_eq!(address_of(&ipam, "e"), ip("10.0.0.6"));
    assert_eq!(reservations(ipam.network_dir())["10.0.0.6"], "e\r\neth0");
}

#[test]
fn a_corrupt_reservation_file_is_reclaimed_by_gc() {
    let dir = Scratch::new("corrupt-file");
    let ipam = small_pool(&dir);
    for id in ["a", "b", "c", "d"] {
        address_of(&ipam, id);
    }
    fs::write(ipam.network_dir().join("10.0.0.6"), "\u{0}\u{1}junk junk").unwrap();
    assert_eq!(
        ipam.allocate("e", "eth0").unwrap_err().code(),
        POOL_EXHAUSTED
    );
    let valid: Vec<GcAttachment> = ["a", "b", "c", "d"]
        .iter()
        .map(|id| GcAttachment {
            container_id: id.to_string(),
            ifname: "eth0".into(),
        })
        .collect();
    ipam.gc(&Retention::attachments(&valid)).unwrap();
    assert_eq!(address_of(&ipam, "e"), ip("10.0.0.6"));
}

#[test]
fn gc_leaves_only_entries_of_live_reservations() {
    let dir = Scratch::new("leftovers");
    let ipam = small_pool(&dir);
    address_of(&ipam, "a");
    address_of(&ipam, "b");
    let bucket = entry_of(&ipam, "a", "10.0.0.2")
        .parent()
        .unwrap()
        .to_path_buf();
    // Leftovers of crashed writers: an uncommitted reservation file, a stray entry.
    fs::write(bucket.join(entry_name("a", "10.0.0.6")), "a\r\neth0").unwrap();
    fs::write(bucket.join(entry_name("zz", "10.0.0.5")), "zz\r\neth0").unwrap();
    ipam.gc(&Retention::attachments(&[GcAttachment {
        container_id: "a".into(),
        ifname: "eth0".into(),
    }]))
    .unwrap();
    assert_eq!(entries(&ipam), [entry_name("a", "10.0.0.2")]);
    assert!(ipam.allocate("a", "eth0").unwrap().already_held());
}

#[test]
fn reservations_removed_behind_our_back_leave_a_consistent_store() {
    let dir = Scratch::new("operator-rm");
    let ipam = small_pool(&dir);
    for id in ["a", "b", "c", "d", "e"] {
        address_of(&ipam, id);
    }
    next_tick();
    // An operator clears the leases at boot, as the reference's maintainers advise.
    for name in reservations(ipam.network_dir()).keys() {
        fs::remove_file(ipam.network_dir().join(name)).unwrap();
    }
    ipam.status().unwrap();
    let a = ipam.allocate("a", "eth0").unwrap();
    assert!(!a.already_held());
    ipam.release("b", "eth0").unwrap();
    assert_eq!(reservations(ipam.network_dir()).len(), 1);
}

#[test]
fn a_changed_config_rebuilds_the_map() {
    let dir = Scratch::new("reconfig");
    let ipam = small_pool(&dir);
    address_of(&ipam, "a");
    let wider = host_local(dir.path(), json!({"subnet": "10.0.0.0/28"}));
    assert_eq!(
        wider.allocate("b", "eth0").unwrap().result().ips[0]
            .address
            .to_string(),
        "10.0.0.3/28"
    );
    assert!(wider.allocate("a", "eth0").unwrap().already_held());
}
