//! The protocol and HNS catalogues against the real `win-bridge`, each case on a fresh HCN
//! emulator host with Flannel host-gw's L2Bridge network made with `hnsctl`.

use std::path::Path;

use conformance::Verdict;
use conformance::hns::L2BRIDGE_NETWORK;
use conformance::node::run_catalogues;

#[test]
fn win_bridge_passes_the_protocol_and_hns_catalogues_on_the_emulator() {
    let template_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/conformance.json");
    let template = serde_json::from_str(&std::fs::read_to_string(template_path).unwrap()).unwrap();
    let report = run_catalogues(
        Path::new(env!("CARGO_BIN_EXE_win-bridge")),
        template,
        L2BRIDGE_NETWORK,
    );
    eprint!("{}", report.table());
    assert!(report.cases.iter().any(|c| c.id.starts_with("hns.")));
    assert!(
        report.cases.iter().all(|c| c.verdict == Verdict::Pass),
        "{}",
        report.table()
    );
}
