//! The whole protocol catalogue against the real `win-bridge`, each case on a fresh HCN
//! emulator host made with `hnsctl` (the conformance crate's HNS fixture).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use conformance::hns::{HnsFixture, L2BRIDGE_NETWORK};
use conformance::{Harness, Verdict, cases};

const PLUGIN: &str = env!("CARGO_BIN_EXE_win-bridge");

/// `hnsctl` from the same target directory, built first if this test run did not build it.
fn hnsctl() -> PathBuf {
    let dir = Path::new(PLUGIN)
        .parent()
        .expect("the plugin has a directory");
    let path = dir.join(format!("hnsctl{}", std::env::consts::EXE_SUFFIX));
    if !path.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", "hns", "--bin", "hnsctl"])
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building hnsctl failed");
    }
    path
}

#[test]
fn win_bridge_passes_the_protocol_catalogue_on_the_emulator() {
    let template_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/conformance.json");
    let template = serde_json::from_str(&std::fs::read_to_string(template_path).unwrap()).unwrap();
    let fixture = HnsFixture::new(hnsctl(), L2BRIDGE_NETWORK).unwrap();
    let harness = Harness::new(PLUGIN)
        .with_fixture(Arc::new(fixture))
        .with_config_template(template)
        .unwrap();
    let catalogue = cases::protocol();
    let report = harness.run(&catalogue, "");
    assert_eq!(report.fixture, "hns");
    assert!(
        report.cases.iter().all(|c| c.verdict == Verdict::Pass),
        "{}",
        report.table()
    );
}
