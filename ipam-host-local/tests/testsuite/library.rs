//! The library API: allocation rules, idempotency, CHECK, GC, STATUS and the reference's store.

use crate::common::{Scratch, host_local, host_local_with, ip, reference_release, reservations};
use cni::{ErrorCode, GcAttachment, IpConfig, Success};
use ipam_host_local::{
    ADDRESS_UNAVAILABLE, INDEX_DIR, POOL_EXHAUSTED, RESERVATION_MISMATCH, Retention,
};
use serde_json::json;
use std::fs;
use std::net::IpAddr;

fn addresses(success: &Success) -> Vec<String> {
    success.ips.iter().map(|c| c.address.to_string()).collect()
}

fn first_ip(success: &Success) -> IpAddr {
    success.ips[0].address.ip()
}

fn attachment(id: &str, ifname: &str) -> GcAttachment {
    GcAttachment {
        container_id: id.into(),
        ifname: ifname.into(),
    }
}

#[test]
fn allocates_round_robin_skipping_the_gateway() {
    let dir = Scratch::new("round-robin");
    let ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/29"}));
    let a = ipam.allocate("a", "eth0").unwrap();
    assert_eq!(addresses(a.result()), ["10.0.0.2/29"]);
    assert_eq!(a.result().ips[0].gateway, Some(ip("10.0.0.1")));
    assert_eq!(a.created(), [ip("10.0.0.2")]);
    let b = ipam.allocate("b", "eth0").unwrap();
    assert_eq!(first_ip(b.result()), ip("10.0.0.3"));
    // A released address is not reused at once: allocation continues after the last one.
    ipam.release("a", "eth0").unwrap();
    let c = ipam.allocate("c", "eth0").unwrap();
    assert_eq!(first_ip(c.result()), ip("10.0.0.4"));
    let files = reservations(ipam.network_dir());
    assert_eq!(files["10.0.0.3"], "b\r\neth0");
    assert_eq!(files["10.0.0.4"], "c\r\neth0");
    assert!(!files.contains_key("10.0.0.2"));
    assert_eq!(
        fs::read_to_string(ipam.network_dir().join("last_reserved_ip.0")).unwrap(),
        "10.0.0.4"
    );
}

#[test]
fn repeated_add_returns_the_held_address_and_says_so() {
    let dir = Scratch::new("repeat");
    let ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/24"}));
    let first = ipam.allocate("a", "eth0").unwrap();
    assert!(!first.already_held());
    let again = ipam.allocate("a", "eth0").unwrap();
    assert!(again.already_held());
    assert!(again.created().is_empty());
    assert_eq!(again.result(), first.result());
    // Another interface of the same container is another attachment.
    let second_if = ipam.allocate("a", "eth1").unwrap();
    assert_ne!(first_ip(second_if.result()), first_ip(first.result()));
    assert_eq!(reservations(ipam.network_dir()).len(), 2);
}

#[test]
fn undo_gives_back_only_what_the_call_reserved() {
    let dir = Scratch::new("undo");
    let ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/24"}));
    let first = ipam.allocate("a", "eth0").unwrap();
    let repeat = ipam.allocate("a", "eth0").unwrap();
    ipam.undo(&repeat).unwrap();
    assert_eq!(
        reservations(ipam.network_dir()).keys().collect::<Vec<_>>(),
        ["10.0.0.2"],
        "undoing a repeated ADD must not free the attachment's address"
    );
    ipam.undo(&first).unwrap();
    assert!(reservations(ipam.network_dir()).is_empty());
}

#[test]
fn del_is_idempotent() {
    let dir = Scratch::new("del");
    let ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/24"}));
    ipam.release("never-added", "eth0").unwrap();
    ipam.allocate("a", "eth0").unwrap();
    ipam.allocate("b", "eth0").unwrap();
    ipam.release("a", "eth0").unwrap();
    ipam.release("a", "eth0").unwrap();
    let files = reservations(ipam.network_dir());
    assert_eq!(files.keys().collect::<Vec<_>>(), ["10.0.0.3"]);
    assert!(ipam.network_dir().join("lock").exists());
}

#[test]
fn dual_stack_gets_one_address_per_set() {
    let dir = Scratch::new("dual");
    let ipam = host_local(
        dir.path(),
        json!({"ranges": [[{"subnet": "10.0.0.0/24"}], [{"subnet": "fd00::/64"}]],
               "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}]}),
    );
    let a = ipam.allocate("a", "eth0").unwrap();
    assert_eq!(addresses(a.result()), ["10.0.0.2/24", "fd00::2/64"]);
    assert_eq!(a.result().ips[1].gateway, Some(ip("fd00::1")));
    assert_eq!(a.result().routes.len(), 2);
    assert_eq!(a.created().len(), 2);
    let files = reservations(ipam.network_dir());
    let v6_name = if cfg!(windows) { "fd00__2" } else { "fd00::2" };
    assert_eq!(files[v6_name], "a\r\neth0");
    assert!(ipam.network_dir().join("last_reserved_ip.1").exists());
    ipam.release("a", "eth0").unwrap();
    assert!(reservations(ipam.network_dir()).is_empty());
}

#[test]
fn exhaustion_names_the_range_and_leaves_nothing_half_reserved() {
    let dir = Scratch::new("exhaust");
    // Set 0 is roomy, set 1 holds two addresses (.2 and .3; .1 is the gateway).
    let ipam = host_local(
        dir.path(),
        json!({"ranges": [[{"subnet": "10.0.0.0/24"}],
                          [{"subnet": "10.1.0.0/24", "rangeEnd": "10.1.0.3"}]]}),
    );
    ipam.allocate("a", "eth0").unwrap();
    ipam.allocate("b", "eth0").unwrap();
    let err = ipam.allocate("c", "eth0").unwrap_err();
    assert_eq!(err.code(), POOL_EXHAUSTED);
    assert_eq!(err.code().number(), 100);
    assert!(err.msg().contains("range set 1"), "{}", err.msg());
    assert!(err.msg().contains("10.1.0.0/24"), "{}", err.msg());
    assert!(err.msg().contains("all 2 addresses"), "{}", err.msg());
    // c's address from set 0 was rolled back.
    assert_eq!(reservations(ipam.network_dir()).len(), 4);
    let full = ipam.status().unwrap();
    assert_eq!(
        full.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [
            "range set 1 (10.1.0.0/24 (10.1.0.1-10.1.0.3, gateway 10.1.0.1)) has no free address: \
         all 2 are reserved"
        ]
    );
    ipam.release("a", "eth0").unwrap();
    assert_eq!(ipam.status().unwrap(), []);
    let c = ipam.allocate("c", "eth0").unwrap();
    assert_eq!(c.result().ips[1].address.ip(), ip("10.1.0.2"));
}

#[test]
fn wraps_across_the_ranges_of_a_set() {
    let dir = Scratch::new("wrap");
    let ipam = host_local(
        dir.path(),
        json!({"ranges": [[
            {"subnet": "10.0.0.0/24", "rangeStart": "10.0.0.10", "rangeEnd": "10.0.0.11"},
            {"subnet": "10.0.1.0/24", "rangeStart": "10.0.1.20", "rangeEnd": "10.0.1.21"}]]}),
    );
    let order: Vec<IpAddr> = ["a", "b", "c", "d"]
        .iter()
        .map(|id| first_ip(ipam.allocate(id, "eth0").unwrap().result()))
        .collect();
    assert_eq!(
        order,
        [
            ip("10.0.0.10"),
            ip("10.0.0.11"),
            ip("10.0.1.20"),
            ip("10.0.1.21")
        ]
    );
    ipam.release("b", "eth0").unwrap();
    ipam.release("a", "eth0").unwrap();
    // After the last address of the last range comes the first of the first range.
    assert_eq!(
        first_ip(ipam.allocate("e", "eth0").unwrap().result()),
        ip("10.0.0.10")
    );
    assert_eq!(
        first_ip(ipam.allocate("f", "eth0").unwrap().result()),
        ip("10.0.0.11")
    );
}

#[test]
fn requested_addresses_are_reserved_exactly_or_refused() {
    let dir = Scratch::new("requested");
    let ipam_conf = json!({"subnet": "10.0.0.0/24"});
    let wants = |how: serde_json::Value, env: &str| {
        host_local_with(dir.path(), ipam_conf.clone(), how, env)
    };
    let by_runtime = wants(json!({"runtimeConfig": {"ips": ["10.0.0.50/24"]}}), "");
    let a = by_runtime.allocate("a", "eth0").unwrap();
    assert_eq!(addresses(a.result()), ["10.0.0.50/24"]);
    // The same attachment asking again gets it back, not an error.
    assert!(by_runtime.allocate("a", "eth0").unwrap().already_held());
    // Someone else asking for it is refused, naming the holder.
    let err = by_runtime.allocate("b", "eth0").unwrap_err();
    assert_eq!(err.code(), ADDRESS_UNAVAILABLE);
    assert!(err.msg().contains("10.0.0.50"), "{}", err.msg());
    assert!(
        err.msg().contains("container a interface eth0"),
        "{}",
        err.msg()
    );
    // An attachment holding another address cannot switch by asking.
    let other = wants(json!({"args": {"cni": {"ips": ["10.0.0.60"]}}}), "");
    let err = other.allocate("a", "eth0").unwrap_err();
    assert_eq!(err.code(), ADDRESS_UNAVAILABLE);
    assert!(
        err.msg().contains("already holds 10.0.0.50"),
        "{}",
        err.msg()
    );
    // CNI_ARGS IP is honoured, but ignored when args.cni.ips is present.
    let by_env = wants(json!({}), "IgnoreUnknown=1;IP=10.0.0.70");
    assert_eq!(
        addresses(by_env.allocate("c", "eth0").unwrap().result()),
        ["10.0.0.70/24"]
    );
    let both = wants(
        json!({"args": {"cni": {"ips": ["10.0.0.80"]}}}),
        "IP=10.0.0.90",
    );
    assert_eq!(
        addresses(both.allocate("d", "eth0").unwrap().result()),
        ["10.0.0.80/24"]
    );
    // Requested addresses move the round-robin position, as the reference's.
    let plain = wants(json!({}), "");
    assert_eq!(
        addresses(plain.allocate("e", "eth0").unwrap().result()),
        ["10.0.0.81/24"]
    );
}

#[test]
fn check_names_every_difference() {
    let dir = Scratch::new("check");
    let ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/24"}));
    let a = ipam.allocate("a", "eth0").unwrap();
    ipam.check("a", "eth0", a.result()).unwrap();
    let b = ipam.allocate("b", "eth0").unwrap();

    let mut wrong = a.result().clone();
    wrong.ips[0].address = "10.0.0.3/24".parse().unwrap();
    let err = ipam.check("a", "eth0", &wrong).unwrap_err();
    assert_eq!(err.code(), RESERVATION_MISMATCH);
    assert!(
        err.msg().contains("prevResult lists 10.0.0.3, but container a interface eth0 holds no reservation for it (it is reserved by container b interface eth0)"),
        "{}",
        err.msg()
    );
    assert!(
        err.msg()
            .contains("holds 10.0.0.2, which prevResult does not list"),
        "{}",
        err.msg()
    );

    let mut prefix = a.result().clone();
    prefix.ips[0].address = "10.0.0.2/16".parse().unwrap();
    let err = ipam.check("a", "eth0", &prefix).unwrap_err();
    assert!(
        err.msg()
            .contains("prevResult gives 10.0.0.2/16 but 10.0.0.2's range is 10.0.0.0/24"),
        "{}",
        err.msg()
    );

    ipam.release("b", "eth0").unwrap();
    let err = ipam.check("b", "eth0", b.result()).unwrap_err();
    assert!(
        err.msg()
            .contains("holds no reservation for container b interface eth0"),
        "{}",
        err.msg()
    );

    let mut extra = a.result().clone();
    extra.ips.push(IpConfig {
        address: "fd00::2/64".parse().unwrap(),
        gateway: None,
        interface: None,
    });
    let err = ipam.check("a", "eth0", &extra).unwrap_err();
    assert!(
        err.msg().contains("prevResult lists fd00::2"),
        "{}",
        err.msg()
    );
}

#[test]
fn gc_keeps_valid_attachments_and_bookkeeping_and_removes_the_rest() {
    let dir = Scratch::new("gc");
    let ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/24"}));
    for id in ["a", "b", "c"] {
        ipam.allocate(id, "eth0").unwrap();
    }
    let net = ipam.network_dir();
    fs::write(net.join("10.0.0.100"), "legacy-kept").unwrap();
    fs::write(net.join("10.0.0.101"), "legacy-gone").unwrap();
    fs::write(net.join("10.0.0.102"), "").unwrap();
    fs::write(net.join("10.0.0.103"), "not a\r\nreservation\r\nfile").unwrap();
    fs::write(net.join("notes.txt"), "operator file").unwrap();

    ipam.gc(&Retention::attachments(&[
        attachment("a", "eth0"),
        attachment("legacy-kept", "eth9"),
    ]))
    .unwrap();
    let files = reservations(net);
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        ["10.0.0.100", "10.0.0.2"],
        "GC keeps a/eth0 and the legacy reservation of a valid container, nothing else"
    );
    for kept in ["lock", "last_reserved_ip.0", "notes.txt"] {
        assert!(net.join(kept).exists(), "{kept} must survive GC");
    }
    // The index follows: b's DEL finds nothing, a's DEL still works, a/eth0 is still held.
    assert!(ipam.allocate("a", "eth0").unwrap().already_held());
    ipam.release("b", "eth0").unwrap();

    ipam.gc(&Retention::default()).unwrap();
    assert!(
        reservations(net).is_empty(),
        "an empty list releases everything"
    );
    assert!(net.join("last_reserved_ip.0").exists());
    // The pool is whole again.
    assert!(!ipam.allocate("a", "eth0").unwrap().already_held());
}

#[test]
fn gc_never_releases_kube_proxys_source_vip() {
    let dir = Scratch::new("gc-source-vip");
    let ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/24"}));
    // kube-proxy's start scripts reserve its source VIP by running host-local directly:
    // sig-windows-tools, microsoft/SDN and k3s as `dummy`/`dummy`, RKE2 as
    // `kube-proxy`/`source-vip`; a pre-2018 host-local wrote the bare ID `dummy`.
    let mut kept = Vec::new();
    for (container_id, ifname) in [("dummy", "dummy"), ("kube-proxy", "source-vip")] {
        let vip = ipam.allocate(container_id, ifname).unwrap();
        kept.push(vip.result().ips[0].address.ip().to_string());
    }
    fs::write(ipam.network_dir().join("10.0.0.200"), "dummy").unwrap();
    kept.push("10.0.0.200".to_owned());
    ipam.allocate("pod", "eth0").unwrap();
    assert_eq!(
        Retention::default()
            .releasable(&ipam.reservations().unwrap())
            .into_iter()
            .map(|(ip, owner)| format!("{ip} {owner}"))
            .collect::<Vec<_>>(),
        ["10.0.0.4 container pod interface eth0"]
    );
    ipam.gc(&Retention::default()).unwrap();
    kept.sort();
    assert_eq!(
        reservations(ipam.network_dir())
            .into_keys()
            .collect::<Vec<_>>(),
        kept
    );
}

/// An address an HNS endpoint holds is never released, nor any other address of the
/// attachment holding it: kube-proxy's nameless endpoint on an address reserved under an
/// owner nobody knows, a remote endpoint, an endpoint GC could not delete.
#[test]
fn gc_keeps_every_address_of_an_attachment_an_endpoint_holds() {
    let dir = Scratch::new("gc-held");
    let ipam = host_local(
        dir.path(),
        json!({"ranges": [[{"subnet": "10.0.0.0/24"}], [{"subnet": "fd00::/64"}]]}),
    );
    let held = ipam.allocate("held", "eth0").unwrap();
    ipam.allocate("gone", "eth0").unwrap();
    let v4 = held.result().ips[0].address.ip();
    let retention = Retention::default().holding([v4]);
    let releasable = retention.releasable(&ipam.reservations().unwrap());
    assert_eq!(
        releasable
            .iter()
            .map(|(_, owner)| owner.to_string())
            .collect::<Vec<_>>(),
        ["container gone interface eth0"; 2]
    );
    ipam.gc(&retention).unwrap();
    let left: Vec<IpAddr> = reservations(ipam.network_dir())
        .into_keys()
        .map(|name| name.replace('_', ":").parse().unwrap())
        .collect();
    let mut expected: Vec<IpAddr> = held.result().ips.iter().map(|c| c.address.ip()).collect();
    expected.sort();
    let mut left = left;
    left.sort();
    assert_eq!(left, expected, "both of held/eth0's addresses stay");
}

#[test]
fn reads_a_store_written_by_the_reference() {
    let dir = Scratch::new("reference");
    let net = dir.path().join("net");
    fs::create_dir_all(&net).unwrap();
    fs::write(net.join("10.0.0.2"), "c1\r\neth0").unwrap();
    fs::write(net.join("10.0.0.3"), "legacy").unwrap();
    fs::write(net.join("10.0.0.4"), "c4\r\neth0\n").unwrap();
    fs::write(net.join("10.0.0.6"), "c6\r\neth0").unwrap();
    // Stale: the last reservation it names was released since.
    fs::write(net.join("last_reserved_ip.0"), "10.0.0.5").unwrap();
    fs::write(net.join("lock"), "").unwrap();

    let ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/29"}));
    // c1/eth0 already holds .2: a repeated ADD gets it back.
    let c1 = ipam.allocate("c1", "eth0").unwrap();
    assert!(c1.already_held());
    assert_eq!(first_ip(c1.result()), ip("10.0.0.2"));
    // A new attachment gets the one free address; .2-.4 and .6 are never handed out twice.
    let fresh = ipam.allocate("new", "eth0").unwrap();
    assert_eq!(first_ip(fresh.result()), ip("10.0.0.5"));
    assert_eq!(
        ipam.allocate("more", "eth0").unwrap_err().code(),
        POOL_EXHAUSTED
    );
    // DEL of the legacy container (any ifname) releases its ID-only file.
    ipam.release("legacy", "eth0").unwrap();
    ipam.release("c4", "eth0").unwrap();
    let files = reservations(&net);
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        ["10.0.0.2", "10.0.0.5", "10.0.0.6"]
    );
    assert_eq!(files["10.0.0.5"], "new\r\neth0");
}

#[test]
fn follows_changes_the_reference_makes_after_us() {
    let dir = Scratch::new("interleaved");
    let ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/24"}));
    ipam.allocate("ours", "eth0").unwrap();
    let net = ipam.network_dir().to_path_buf();
    // The reference's ADD: a reservation file and a rewritten last_reserved_ip.
    fs::write(net.join("10.0.0.3"), "theirs\r\neth0").unwrap();
    fs::write(net.join("last_reserved_ip.0"), "10.0.0.3").unwrap();
    assert_eq!(
        first_ip(ipam.allocate("next", "eth0").unwrap().result()),
        ip("10.0.0.4")
    );
    // Our DEL releases the reference's reservation.
    ipam.release("theirs", "eth0").unwrap();
    assert!(!net.join("10.0.0.3").exists());
    // The reference's DEL of ours (it walks our index too) leaves a consistent store.
    reference_release(&net, "ours", "eth0");
    assert!(!net.join("10.0.0.2").exists());
    assert!(!ipam.allocate("ours", "eth0").unwrap().already_held());
    ipam.check(
        "next",
        "eth0",
        ipam.allocate("next", "eth0").unwrap().result(),
    )
    .unwrap();
}

#[test]
fn index_files_never_look_like_reservations_to_the_reference() {
    let dir = Scratch::new("foreign-walk");
    let ipam = host_local(
        dir.path(),
        json!({"ranges": [[{"subnet": "10.0.0.0/24"}], [{"subnet": "fd00::/120"}]]}),
    );
    ipam.allocate("a", "eth0").unwrap();
    ipam.allocate("b", "eth0").unwrap();
    // Every file under our index directory is either a link to a live reservation (same
    // content) or something whose trimmed content contains whitespace, so the reference's
    // content matching can never take it for a reservation of some container.
    let mut stack = vec![ipam.network_dir().join(INDEX_DIR)];
    let live: Vec<String> = reservations(ipam.network_dir()).into_values().collect();
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
                continue;
            }
            let content = String::from_utf8_lossy(&fs::read(entry.path()).unwrap()).into_owned();
            let trimmed = content.trim();
            assert!(
                live.iter().any(|l| l == trimmed) || trimmed.contains(' '),
                "{} holds {trimmed:?}",
                entry.path().display()
            );
        }
    }
}

/// STATUS fails on a full range only when the config opts in (a failed STATUS takes a
/// containerd 2.x node NotReady and evicts its pods).
#[test]
fn status_fails_on_a_full_range_only_with_not_ready_when_full() {
    let dir = Scratch::new("not-ready-when-full");
    let lenient = host_local(dir.path(), json!({"subnet": "10.0.0.0/30"}));
    let strict = host_local(
        dir.path(),
        json!({"subnet": "10.0.0.0/30", "notReadyWhenFull": true}),
    );
    assert_eq!(strict.status(), Ok(Vec::new()));
    lenient.allocate("a", "eth0").unwrap();
    assert_eq!(lenient.status().unwrap().len(), 1);
    let err = strict.status().unwrap_err();
    assert_eq!(err.code(), ErrorCode::NotAvailable);
    assert!(
        err.msg().contains("range set 0") && err.msg().contains("notReadyWhenFull"),
        "{}",
        err.msg()
    );
}

#[test]
fn excluded_addresses_are_never_handed_out() {
    let dir = Scratch::new("excluded");
    let mut ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/29"}));
    // win-bridge's pod gateway (x.2) and the HNS subnet's gateway (x.1, already host-local's).
    ipam.exclude(&[ip("10.0.0.2"), ip("10.0.0.1")]);
    let mut handed_out = Vec::new();
    for id in ["a", "b", "c", "d"] {
        handed_out.push(first_ip(ipam.allocate(id, "eth0").unwrap().result()));
    }
    assert_eq!(
        handed_out,
        [
            ip("10.0.0.3"),
            ip("10.0.0.4"),
            ip("10.0.0.5"),
            ip("10.0.0.6")
        ]
    );
    let err = ipam.allocate("e", "eth0").unwrap_err();
    assert_eq!(err.code(), POOL_EXHAUSTED);
    assert!(err.msg().contains("all 4 addresses"), "{}", err.msg());
    // STATUS counts with the same exclusions: the set is full.
    assert_eq!(ipam.status().unwrap().len(), 1);
    // Releasing makes room again, still never at x.2.
    ipam.release("a", "eth0").unwrap();
    assert_eq!(
        first_ip(ipam.allocate("e", "eth0").unwrap().result()),
        ip("10.0.0.3")
    );
}

#[test]
fn a_requested_address_that_is_excluded_is_refused() {
    let dir = Scratch::new("requested-excluded");
    let mut ipam = host_local_with(
        dir.path(),
        json!({"subnet": "10.0.0.0/24"}),
        json!({}),
        "IP=10.0.0.2",
    );
    ipam.exclude(&[ip("10.0.0.2")]);
    let err = ipam.allocate("a", "eth0").unwrap_err();
    assert_eq!(err.code(), ADDRESS_UNAVAILABLE);
    assert!(err.msg().contains("10.0.0.2 is reserved"), "{}", err.msg());
    assert!(reservations(ipam.network_dir()).is_empty());
}

#[test]
fn usage_counts_what_each_range_set_can_still_hand_out() {
    let dir = Scratch::new("usage");
    // Set 0: .2-.6 of a /29 (.1 is the gateway) minus the excluded x.2: 4 usable. Set 1: fd00::2-fd00::5: 4 usable.
    let mut ipam = host_local(
        dir.path(),
        json!({"ranges": [[{"subnet": "10.0.0.0/29"}],
                          [{"subnet": "fd00::/64", "rangeEnd": "fd00::5"}]]}),
    );
    ipam.exclude(&[ip("10.0.0.2")]);
    let usage = |ipam: &ipam_host_local::HostLocal| {
        ipam.usage()
            .unwrap()
            .iter()
            .map(|pool| {
                let subnets: Vec<String> = pool.subnets.iter().map(ToString::to_string).collect();
                (subnets.join(","), pool.usable, pool.reserved, pool.free())
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        usage(&ipam),
        [
            ("10.0.0.0/29".to_owned(), 4, 0, 4),
            ("fd00::/64".to_owned(), 4, 0, 4)
        ]
    );
    ipam.allocate("a", "eth0").unwrap();
    ipam.allocate("b", "eth0").unwrap();
    // A file for an address outside every set, or for an excluded one, takes nothing of the pool.
    fs::write(ipam.network_dir().join("10.9.9.9"), "x\r\neth0").unwrap();
    fs::write(ipam.network_dir().join("10.0.0.2"), "y\r\neth0").unwrap();
    assert_eq!(
        usage(&ipam),
        [
            ("10.0.0.0/29".to_owned(), 4, 2, 2),
            ("fd00::/64".to_owned(), 4, 2, 2)
        ]
    );
    ipam.release("a", "eth0").unwrap();
    assert_eq!(usage(&ipam)[0], ("10.0.0.0/29".to_owned(), 4, 1, 3));
}
