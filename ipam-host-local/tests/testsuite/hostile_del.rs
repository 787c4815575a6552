//! Teardown never blocks on a config that changed after ADD: the `host-local` binary, after an
//! ADD with a valid config, is given DEL with every hostile variant of it
//! ([`conformance::hostile`]: each key at every depth removed, or of the wrong kind, or of the
//! right kind and wrong). DEL needs only what locates the attachment's reservations: the
//! network's `name` and the store's `ipam.dataDir` (and the `cniVersion` to answer in). With
//! anything else wrong it must return 0 and leave no reservation; with one of those wrong it
//! may fail, with a CNI error, never a crash.

use crate::common::{Scratch, reservations, spawn_in, wait};
use conformance::hostile::{Variant, variants};
use serde_json::{Value, json};
use std::path::Path;

/// What identifies the reservations of an attachment; a variant that breaks one of these may
/// make DEL fail (or release from another store).
const IDENTIFYING: &[&str] = &["cniVersion", "name", "ipam", "ipam.dataDir"];

/// A config with every key host-local reads: both range sets with every range key, the legacy
/// keys, routes, resolvConf, the lock deadline, requested addresses from both sources, and
/// the base keys.
fn config(dir: &Path) -> Value {
    std::fs::write(dir.join("resolv.conf"), "nameserver 10.96.0.10\n").unwrap();
    json!({
        "cniVersion": "1.0.0", "name": "net", "type": "win-bridge", "ipMasq": true,
        "logLevel": "warn", "logFile": dir.join("host-local.log"),
        "dns": {"nameservers": ["10.96.0.10"]},
        "ipam": {
            "type": "host-local",
            "subnet": "10.244.2.0/24", "rangeStart": "10.244.2.10", "rangeEnd": "10.244.2.20",
            "gateway": "10.244.2.1",
            "ranges": [
                [{"subnet": "10.244.1.0/24", "rangeStart": "10.244.1.10",
                  "rangeEnd": "10.244.1.200", "gateway": "10.244.1.1"}],
                [{"subnet": "fd00:10:244:1::/64"}]
            ],
            "routes": [{"dst": "0.0.0.0/0", "gw": "10.244.1.1"}],
            "dataDir": dir.join("ipam"),
            "resolvConf": dir.join("resolv.conf"),
            "lockTimeoutSeconds": 10
        },
        "args": {"cni": {"ips": ["10.244.1.50"]}},
        "runtimeConfig": {"ips": ["fd00:10:244:1::50"]}
    })
}

/// How one variant's DEL went.
enum Verdict {
    /// DEL returned 0 and nothing of the attachment is left.
    Clean,
    /// DEL failed (or left a reservation) with a variant that breaks no identifying key.
    Blocked(String),
    /// A variant that breaks an identifying key: any CNI answer is acceptable.
    Identifying,
}

#[test]
fn del_releases_by_attachment_whatever_else_the_config_gets_wrong() {
    let scratch = Scratch::new("hostile-del");
    let dir = scratch.path();
    let good = config(dir);
    let store = dir.join("ipam").join("net");
    let run = |command: &str, config: &Value| wait(spawn_in(dir, command, "pod", config, &[]));
    // An unset ipam.dataDir is the node's default store, which a test leaves alone.
    let mut all = variants(&good);
    all.retain(|variant| !variant.unsets("ipam.dataDir"));
    let mut identifying = 0;
    let mut blocked = Vec::new();
    for variant in &all {
        let added = run("ADD", &good);
        assert!(added.success, "ADD with the good config: {added:?}");
        assert_eq!(reservations(&store).len(), 3, "one address per range set");
        let deleted = run("DEL", &variant.config);
        // Whatever the variant, a CNI answer: 0, or 1 with an error object (never a crash).
        assert!(
            deleted.success || deleted.json()["code"].as_u64().is_some_and(|c| c != 999),
            "{} = {}: {deleted:?}",
            variant.path,
            variant.change
        );
        match judge(variant, deleted.success, reservations(&store).is_empty()) {
            Verdict::Clean => {}
            Verdict::Identifying => identifying += 1,
            Verdict::Blocked(why) => blocked.push(format!(
                "{} = {}: {why}: {}",
                variant.path, variant.change, deleted.stdout
            )),
        }
        // Whatever happened, the good config cleans up for the next variant.
        let cleanup = run("DEL", &good);
        assert!(cleanup.success, "{cleanup:?}");
        assert!(reservations(&store).is_empty(), "{}", variant.path);
    }
    eprintln!(
        "host-local: {} hostile DEL inputs, {identifying} of them breaking an identifying key; \
         {} failed although DEL needs nothing they break",
        all.len(),
        blocked.len()
    );
    assert!(blocked.is_empty(), "{}", blocked.join("\n"));
}

fn judge(variant: &Variant, succeeded: bool, nothing_left: bool) -> Verdict {
    if variant.changes_any(IDENTIFYING) {
        return Verdict::Identifying;
    }
    match (succeeded, nothing_left) {
        (true, true) => Verdict::Clean,
        (true, false) => Verdict::Blocked("returned 0 but left a reservation".to_owned()),
        (false, _) => Verdict::Blocked("failed".to_owned()),
    }
}
