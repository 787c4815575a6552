//! The protocol and HNS catalogues against the real `win-bridge`, each case on a fresh HCN
//! emulator host with Flannel host-gw's L2Bridge network made with `hnsctl`.

use std::path::Path;

use conformance::hns::L2BRIDGE_NETWORK;
use conformance::node::assert_catalogues_pass;

#[test]
fn win_bridge_passes_the_protocol_and_hns_catalogues_on_the_emulator() {
    assert_catalogues_pass(
        Path::new(env!("CARGO_BIN_EXE_win-bridge")),
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/conformance.json"),
        L2BRIDGE_NETWORK,
    );
}
