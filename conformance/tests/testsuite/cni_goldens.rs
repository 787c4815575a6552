//! The harness's layout rules and the `cni` crate's conversions must agree: every golden result
//! the `cni` crate prints (one per spec version) passes the harness's independent check.

use conformance::schema::{SPEC_VERSIONS, result_violations};
use std::path::PathBuf;

#[test]
fn every_cni_golden_result_passes_the_layout_check() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../cni/tests/golden");
    for version in SPEC_VERSIONS {
        let path = dir.join(format!("dual-stack.{version}.json"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        let result: serde_json::Value = serde_json::from_str(&text).unwrap();
        let problems = result_violations(&result, version);
        assert!(problems.is_empty(), "{version}: {problems:?}");
    }
}
