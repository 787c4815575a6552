//! The protocol and HNS catalogues against the real `win-overlay`, each case on a fresh HCN
//! emulator host with Flannel vxlan's Overlay network made with `hnsctl network create --type
//! Overlay --vni 4096 --vxlan-port 4789 --provider-address ...`.
#![cfg(not(windows))] // the HCN emulator these tests run on is Linux-only

use std::path::Path;

use cni_win_conformance::hns::OVERLAY_NETWORK;
use cni_win_conformance::node::assert_catalogues_pass;

#[test]
fn win_overlay_passes_the_protocol_and_hns_catalogues_on_the_emulator() {
    assert_catalogues_pass(
        Path::new(env!("CARGO_BIN_EXE_win-overlay")),
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/conformance.json"),
        OVERLAY_NETWORK,
    );
}
