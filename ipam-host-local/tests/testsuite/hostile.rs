//! The store on a hostile node: mixed callers, odd attachment names, requested addresses DEL
//! cannot honour, damaged hints, planted links and special files, locks held elsewhere, file
//! modes. Each test names the class of failure it guards against.

use crate::common::{Scratch, host_local, host_local_with, ip, reservations};
use cni::{ErrorCode, GcAttachment};
use ipam_host_local::{HostLocal, INDEX_DIR, Retention, Teardown};
use serde_json::json;
use std::fs;
use std::path::{Path, PathBuf};

fn first_ip(ipam: &HostLocal, id: &str, ifname: &str) -> std::net::IpAddr {
    ipam.allocate(id, ifname).unwrap().result().ips[0]
        .address
        .ip()
}

/// A file planted in the index that only a rebuild (which empties the index) removes.
fn plant_rebuild_marker(ipam: &HostLocal) -> PathBuf {
    let marker = ipam
        .network_dir()
        .join(INDEX_DIR)
        .join("attachments")
        .join("00")
        .join("rebuild-marker");
    fs::write(&marker, "marker file").unwrap();
    marker
}

/// Class 2: the caller's exclusions (win-bridge's pod gateway at ADD only) do not change what
/// identifies the store, so ADD after DEL after ADD never rebuilds the index.
#[test]
fn exclusions_never_force_a_rebuild() {
    let dir = Scratch::new("exclusions-rebuild");
    let ipam = json!({"subnet": "10.0.0.0/24"});
    let mut add = host_local(dir.path(), ipam.clone());
    add.exclude(&[ip("10.0.0.2")]);
    let other = host_local(dir.path(), ipam);
    assert_eq!(first_ip(&add, "a", "eth0"), ip("10.0.0.3"));
    let marker = plant_rebuild_marker(&add);
    other.release("a", "eth0").unwrap();
    assert_eq!(first_ip(&add, "b", "eth0"), ip("10.0.0.4"));
    other.status().unwrap();
    other.release("b", "eth0").unwrap();
    assert!(
        marker.exists(),
        "a caller without exclusions rebuilt the index"
    );
    // Excluded addresses are still never handed out by the excluding caller.
    assert!(reservations(add.network_dir()).is_empty());
}

/// Class 4: every container ID and ifname `cni` validation accepts round-trips through the
/// store: control characters in the ifname, very long IDs in either case.
#[test]
fn every_accepted_attachment_name_round_trips() {
    let dir = Scratch::new("names");
    let ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/24"}));
    let long_upper = "A".repeat(300);
    let long_lower = "a".repeat(1000);
    let cases: Vec<(&str, &str)> = vec![
        ("c1", "e\u{1}"),
        ("c2", "e\u{7f}"),
        ("c3", "e\u{1b}[31m"),
        ("c4", "e\u{81}"),
        (&long_upper, "eth0"),
        (&long_lower, "eth0"),
        ("c5", "\u{1}\u{2}\u{3}\u{4}\u{5}\u{6}\u{7}\u{8}"),
    ];
    for (id, ifname) in &cases {
        cni::validate::container_id(id).unwrap();
        cni::validate::ifname(ifname).unwrap();
        let first = ipam.allocate(id, ifname).unwrap();
        assert!(!first.already_held(), "{id:?} {ifname:?}");
        let again = ipam.allocate(id, ifname).unwrap();
        assert!(
            again.already_held(),
            "repeated ADD of {ifname:?} allocated again"
        );
        assert_eq!(again.result(), first.result());
        ipam.check(id, ifname, first.result()).unwrap();
    }
    // GC told they are all valid keeps them all.
    let valid: Vec<GcAttachment> = cases
        .iter()
        .map(|(id, ifname)| GcAttachment {
            container_id: (*id).to_owned(),
            ifname: (*ifname).to_owned(),
        })
        .collect();
    ipam.gc(&Retention::attachments(&valid)).unwrap();
    assert_eq!(reservations(ipam.network_dir()).len(), cases.len());
    for (id, ifname) in &cases {
        ipam.release(id, ifname).unwrap();
    }
    assert!(reservations(ipam.network_dir()).is_empty());
}

/// Class 5: DEL releases by attachment whatever the requested addresses say, and after the
/// ranges changed.
#[test]
fn del_succeeds_whatever_was_requested() {
    let dir = Scratch::new("del-requested");
    let subnet = json!({"subnet": "10.0.0.0/24"});
    let plain = host_local(dir.path(), subnet.clone());
    plain.allocate("a", "eth0").unwrap();
    let requests = [
        (json!({}), "IP=10.9.9.9"),
        (json!({"runtimeConfig": {"ips": ["10.0.0.1"]}}), ""),
        (json!({"args": {"cni": {"ips": ["10.0.0.300"]}}}), ""),
        (
            json!({"args": {"cni": {"ips": ["10.0.0.5", "10.0.0.6"]}}}),
            "",
        ),
    ];
    for (extra, cni_args) in &requests {
        let conf = crate::common::net_conf(dir.path(), subnet.clone(), extra.clone());
        let conf = cni::NetConf::parse(conf.to_string().as_bytes()).unwrap();
        let args = cni::CniArgs::parse(cni_args).unwrap();
        let ipam = HostLocal::from_conf(&conf, &args).expect("DEL input is accepted");
        assert_eq!(
            ipam.allocate("b", "eth0").unwrap_err().code(),
            ErrorCode::InvalidConfig,
            "ADD still refuses {extra} {cni_args}"
        );
        ipam.release("a", "eth0").unwrap();
        assert!(reservations(ipam.network_dir()).is_empty());
        plain.allocate("a", "eth0").unwrap();
    }
    // The ranges changed since ADD: DEL still frees the attachment.
    let moved = host_local_with(dir.path(), json!({"subnet": "10.1.0.0/24"}), json!({}), "");
    moved.release("a", "eth0").unwrap();
    assert!(reservations(moved.network_dir()).is_empty());
}

/// Class 5: a DEL's config may have changed in any way since ADD. `Teardown` releases by
/// attachment as long as the store can be found: with ranges ADD would refuse, and even with
/// none; it refuses only without a store's location.
#[test]
fn teardown_needs_only_the_store() {
    let dir = Scratch::new("teardown");
    let ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/24"}));
    let teardown = |ipam: serde_json::Value| {
        let conf = crate::common::net_conf(dir.path(), ipam, json!({}));
        let conf = cni::NetConf::parse(conf.to_string().as_bytes()).unwrap();
        Teardown::from_conf(&conf, &cni::CniArgs::default())
    };
    for refused_by_add in [
        json!({"subnet": "10.0.0.0/24", "rangeEnd": "10.9.0.1"}),
        json!({"ranges": [{"subnet": "10.0.0.0/24"}]}),
        json!({"subnet": "10.0.0.0/24", "resolvConf": 7, "lockTimeoutSeconds": "x"}),
        json!({}),
    ] {
        ipam.allocate("a", "eth0").unwrap();
        let del = teardown(refused_by_add.clone()).expect("the store is found");
        del.release("a", "eth0").unwrap();
        assert!(
            reservations(del.network_dir()).is_empty(),
            "{refused_by_add}"
        );
    }
    let mut no_store = crate::common::net_conf(dir.path(), json!({}), json!({}));
    no_store["ipam"]["dataDir"] = json!(7);
    let conf = cni::NetConf::parse(no_store.to_string().as_bytes()).unwrap();
    let err = Teardown::from_conf(&conf, &cni::CniArgs::default()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidConfig);
    assert!(err.msg().starts_with("ipam.dataDir"), "{}", err.msg());
    no_store.as_object_mut().unwrap().remove("ipam");
    let conf = cni::NetConf::parse(no_store.to_string().as_bytes()).unwrap();
    let err = Teardown::from_conf(&conf, &cni::CniArgs::default()).unwrap_err();
    assert!(err.msg().starts_with("ipam is missing"), "{}", err.msg());
}

/// A DEL on a store that does not exist has nothing to release and creates nothing.
#[test]
fn teardown_creates_no_store() {
    let dir = Scratch::new("teardown-no-store");
    let conf = crate::common::net_conf(&dir.path().join("absent"), json!({}), json!({}));
    let conf = cni::NetConf::parse(conf.to_string().as_bytes()).unwrap();
    let teardown = Teardown::from_conf(&conf, &cni::CniArgs::default()).unwrap();
    teardown.release("a", "eth0").unwrap();
    assert!(!dir.path().join("absent").exists());
}

/// Damage one hint at a time and check every command still works and the hint heals.
fn damage(path: &Path, how: &str) {
    let _ = fs::remove_file(path);
    let _ = fs::remove_dir_all(path);
    match how {
        "empty" => fs::write(path, "").unwrap(),
        "garbage" => fs::write(path, [0xffu8, 0, 7, b'x', b'\n', 0x80]).unwrap(),
        "truncated" => fs::write(path, "cni-win").unwrap(),
        "directory" => {
            fs::create_dir_all(path.join("inner")).unwrap();
            fs::write(path.join("inner").join("f"), "x y").unwrap();
        }
        other => panic!("{other}"),
    }
}

/// Class 7: a damaged hint (last_reserved_ip, occupancy map, stamp, bucket, index entry)
/// never blocks ADD, DEL, CHECK, GC or STATUS; it heals from the reservation files.
#[test]
fn damaged_hints_heal() {
    for how in ["empty", "garbage", "truncated", "directory"] {
        for target in [
            "last_reserved_ip.0",
            ".cni-win/occupancy.0",
            ".cni-win/stamp",
            "bucket",
            "entry",
            ".cni-win/attachments",
            ".cni-win",
        ] {
            let dir = Scratch::new("hints");
            let ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/24"}));
            let a = ipam.allocate("a", "eth0").unwrap();
            let net = ipam.network_dir().to_path_buf();
            let path = match target {
                "bucket" | "entry" => {
                    let found = find_entry(&net, "10.0.0.2");
                    if target == "entry" {
                        found
                    } else {
                        found.parent().unwrap().to_path_buf()
                    }
                }
                relative => net.join(relative),
            };
            damage(&path, how);
            let context = format!("{target} {how}");
            ipam.check("a", "eth0", a.result())
                .unwrap_or_else(|e| panic!("CHECK with {context}: {e}"));
            ipam.status()
                .unwrap_or_else(|e| panic!("STATUS with {context}: {e}"));
            let b = ipam
                .allocate("b", "eth0")
                .unwrap_or_else(|e| panic!("ADD with {context}: {e}"));
            assert_ne!(b.result().ips[0].address.ip(), ip("10.0.0.2"), "{context}");
            ipam.release("a", "eth0")
                .unwrap_or_else(|e| panic!("DEL with {context}: {e}"));
            assert!(!net.join("10.0.0.2").exists(), "DEL with {context} leaked");
            ipam.gc(&Retention::default())
                .unwrap_or_else(|e| panic!("GC with {context}: {e}"));
            assert!(reservations(&net).is_empty(), "{context}");
        }
    }
}

/// The index entry that is a name of `address`'s reservation file.
fn find_entry(net: &Path, address: &str) -> PathBuf {
    let attachments = net.join(INDEX_DIR).join("attachments");
    for bucket in fs::read_dir(attachments).unwrap() {
        for entry in fs::read_dir(bucket.unwrap().path()).unwrap() {
            let entry = entry.unwrap();
            if entry
                .file_name()
                .to_str()
                .unwrap()
                .ends_with(&format!("@{address}"))
            {
                return entry.path();
            }
        }
    }
    panic!("no entry for {address}");
}

/// Class 6: every prefix length is handled without overflow (this runs in debug, where an
/// overflow panics); the too-small ones are refused naming the subnet key.
#[test]
fn every_prefix_length_is_handled() {
    let dir = Scratch::new("prefixes");
    for (base, width) in [("0.0.0.0", 32u8), ("::", 128)] {
        for prefix in 0..=width {
            let conf = crate::common::net_conf(
                dir.path(),
                json!({"ranges": [[{"subnet": format!("{base}/{prefix}")}]]}),
                json!({}),
            );
            let conf = cni::NetConf::parse(conf.to_string().as_bytes()).unwrap();
            match HostLocal::from_conf(&conf, &cni::CniArgs::default()) {
                Ok(ipam) => {
                    assert!(prefix + 2 <= width, "{base}/{prefix} accepted");
                    let range = &ipam.config().range_sets[0].ranges()[0];
                    assert_eq!(range.subnet.prefix(), prefix);
                }
                Err(e) => {
                    assert!(prefix + 2 > width, "{base}/{prefix}: {e}");
                    assert!(e.msg().contains("ipam.ranges[0][0].subnet"), "{e}");
                }
            }
        }
    }
    // ::/0 allocates like any other range.
    let ipam = host_local(dir.path(), json!({"ranges": [[{"subnet": "::/0"}]]}));
    assert_eq!(first_ip(&ipam, "a", "eth0"), ip("::2"));
    ipam.release("a", "eth0").unwrap();
}

/// Class 3: a planted link anywhere in the store is never followed: nothing outside is read,
/// written, created or deleted, and no foreign content is echoed.
#[cfg(unix)]
#[test]
fn planted_links_are_never_followed() {
    use std::os::unix::fs::symlink;
    for target in [
        "lock",
        "last_reserved_ip.0",
        "10.0.0.3",
        ".cni-win",
        ".cni-win/attachments",
        ".cni-win/stamp",
        ".cni-win/occupancy.0",
        "bucket",
        "entry",
    ] {
        let dir = Scratch::new("links");
        let outside = dir.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        let secret_file = outside.join("secret");
        fs::write(&secret_file, "SECRET-TOKEN rest").unwrap();
        let ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/24"}));
        ipam.allocate("a", "eth0").unwrap();
        let net = ipam.network_dir().to_path_buf();
        let path = match target {
            "bucket" => find_entry(&net, "10.0.0.2").parent().unwrap().to_path_buf(),
            "entry" => find_entry(&net, "10.0.0.2"),
            relative => net.join(relative),
        };
        let _ = fs::remove_file(&path);
        let _ = fs::remove_dir_all(&path);
        let pointee = match target {
            ".cni-win" | ".cni-win/attachments" | "bucket" => &outside,
            _ => &secret_file,
        };
        symlink(pointee, &path).unwrap();

        let mut messages = Vec::new();
        let mut record = |r: Result<(), cni::Error>| {
            if let Err(e) = r {
                messages.push(e.msg().to_owned());
            }
        };
        record(ipam.allocate("b", "eth0").map(|_| ()));
        record(ipam.status().map(drop));
        record(ipam.release("a", "eth0"));
        record(ipam.release("b", "eth0"));
        record(ipam.gc(&Retention::default()));
        let listing: Vec<_> = fs::read_dir(&outside)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(
            listing,
            ["secret"],
            "{target}: the outside directory changed"
        );
        assert_eq!(
            fs::read_to_string(&secret_file).unwrap(),
            "SECRET-TOKEN rest",
            "{target}: the outside file changed"
        );
        for message in &messages {
            assert!(!message.contains("SECRET"), "{target}: {message}");
        }
        if target == "lock" {
            assert!(
                messages.iter().all(|m| m.contains("lock")),
                "{target}: {messages:?}"
            );
        } else {
            assert!(messages.is_empty(), "{target}: {messages:?}");
        }
    }
}

/// Class 9: every file the store creates is readable by its owner only, as the reference's.
#[cfg(unix)]
#[test]
fn store_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Scratch::new("modes");
    let ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/24"}));
    ipam.allocate("a", "eth0").unwrap();
    let net = ipam.network_dir();
    for name in ["10.0.0.2", "last_reserved_ip.0", "lock"] {
        let mode = fs::metadata(net.join(name)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{name}: {mode:o}");
    }
    let mut stack = vec![net.join(INDEX_DIR)];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let mode = entry.metadata().unwrap().permissions().mode() & 0o077;
            assert_eq!(mode, 0, "{}", entry.path().display());
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            }
        }
    }
}
