//! Policies as the field writes them, through a pod's whole life (ADD, CHECK, DEL) on an
//! emulated node, asserted on what HNS received: sdnbridge-style `AdditionalArgs` whose
//! envelope (`Name`/`Value`, `Type`/`Settings`) and settings keys come in any case, with a V1
//! `ExceptionList` inside V2 settings (sent to HNS as written, as the reference sends it, and
//! not merged) and an ACL in windows-container-networking's example shape.
#![cfg(not(windows))] // the HCN emulator these tests run on is Linux-only

mod common;

use std::path::Path;

use cni_win_conformance::node::load_json;
use cni_win_conformance::node::policy::{nat, route};
use serde_json::json;

#[test]
fn additional_args_in_any_case_with_a_v1_key_inside_v2_settings() {
    let node = common::node("any-case");
    let config = node.with_data_dir(load_json(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/field/sdnbridge-additional-args-any-case.json"),
    ));
    let (endpoint, log) = node.pod_life_cycle(&config);
    assert_eq!(
        endpoint["Policies"],
        json!([
            {"Type": "OutBoundNAT", "Settings": {"ExceptionList": ["10.96.0.0/12"]}},
            route("10.96.0.0/12"),
            {"Type": "ACL", "Settings": {"Protocols": "6", "Action": "Allow", "Direction": "In", "RemoteAddresses": "10.0.0.0/8", "LocalPorts": "80", "Priority": 200}},
            nat(&["10.127.130.0/24", "10.244.0.0/16"])
        ])
    );
    assert!(
        log.contains("AdditionalArgs[0]: `ExceptionList` is not a V2 OutBoundNAT key; HNS ignores it; did you mean `Exceptions`?"),
        "{log}"
    );
}
