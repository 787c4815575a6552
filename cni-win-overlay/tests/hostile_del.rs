//! Teardown never blocks on a config that changed after ADD (see win-bridge's test of the
//! same name, whose runner this uses): after an ADD with a valid win-overlay config, DEL with
//! every hostile variant of it returns 0 and leaves nothing, unless the variant changes what
//! identifies the attachment's state (`cniVersion`, `name`, `ipam`, `ipam.type`,
//! `ipam.dataDir`); those may fail, with a CNI error, never a crash.
#![cfg(not(windows))] // the HCN emulator these tests run on is Linux-only

mod common;

use cni_win_conformance::node::Variant;
use common::{NETWORK, Node};
use serde_json::{Value, json};

const IDENTIFYING: &[&str] = &["cniVersion", "name", "ipam", "ipam.type", "ipam.dataDir"];

/// A win-overlay config with its own keys and the ones both plugins read, for the `pod`th pod
/// (host ports differ).
fn config(node: &Node, pod: usize) -> Value {
    json!({
        "cniVersion": "1.0.0", "name": NETWORK, "type": "win-overlay", "apiVersion": 2,
        "capabilities": {"portMappings": true, "dns": true},
        "ipMasq": true, "endpointMacPrefix": "0E-2A", "vni": 4096, "vxlanPort": 4789,
        "hnsTimeoutSeconds": 20,
        "ipam": {
            "type": "host-local",
            "subnet": "10.244.1.0/24", "rangeStart": "10.244.1.10", "rangeEnd": "10.244.1.200",
            "dataDir": node.ipam_dir()
        },
        "dns": {"nameservers": ["10.96.0.10"]},
        "policies": [
            {"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT",
                "Settings": {"Exceptions": ["10.244.0.0/16", "10.96.0.0/12"]}}}
        ],
        "runtimeConfig": {
            "portMappings": [{"hostPort": 8080 + pod, "containerPort": 80, "protocol": "tcp"}]
        }
    })
}

#[test]
fn del_tears_down_whatever_else_the_config_gets_wrong() {
    let node = common::node("hostile-del");
    // An unset ipam.dataDir is the node's default store, which a test leaves alone.
    let every = |variant: &Variant| !variant.unsets("ipam.dataDir");
    let report = node.del_with_every_variant(
        &|pod| config(&node, pod),
        NETWORK,
        &every,
        IDENTIFYING,
        &|_| None,
    );
    eprintln!(
        "win-overlay: {} hostile DEL inputs, {} of them changing an identifying key; {} failed \
         or left something although DEL needs nothing they change",
        report.inputs,
        report.identifying,
        report.blocked.len()
    );
    assert!(report.blocked.is_empty(), "{}", report.blocked.join("\n"));
}
