//! The protocol and HNS catalogues against the real `win-bridge`, each case on a fresh HCN
//! emulator host with Flannel host-gw's L2Bridge network made with `hnsctl`.
#![cfg(not(windows))] // the HCN emulator these tests run on is Linux-only

use std::path::Path;

use cni_win_conformance::hns::L2BRIDGE_NETWORK;
use cni_win_conformance::node::assert_catalogues_pass;

#[test]
fn win_bridge_passes_the_protocol_and_hns_catalogues_on_the_emulator() {
    assert_catalogues_pass(
        Path::new(env!("CARGO_BIN_EXE_win-bridge")),
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/conformance.json"),
        L2BRIDGE_NETWORK,
    );
}
