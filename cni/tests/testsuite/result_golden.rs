//! Golden files for every result conversion: the spec's layouts, printed and parsed.

use cni::{Dns, Interface, IpConfig, Route, Success, Version};
use serde_json::Value;
use std::path::PathBuf;

fn golden(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn dual_stack() -> Success {
    Success {
        interfaces: vec![Interface {
            name: "eth0".into(),
            mac: Some("0E-2A-0A-F4-01-05".into()),
            mtu: Some(1450),
            sandbox: Some("8a3d0d5e-7f0a-4cbb-9b37-0f0f4c1c2b3a".into()),
            ..Interface::default()
        }],
        ips: vec![
            IpConfig {
                address: "10.244.1.5/24".parse().unwrap(),
                gateway: Some("10.244.1.2".parse().unwrap()),
                interface: Some(0),
            },
            IpConfig {
                address: "fd00:10:244:1::5/64".parse().unwrap(),
                gateway: Some("fd00:10:244:1::2".parse().unwrap()),
                interface: Some(0),
            },
        ],
        routes: vec![
            Route::new(
                "0.0.0.0/0".parse().unwrap(),
                Some("10.244.1.2".parse().unwrap()),
            ),
            Route {
                mtu: Some(1400),
                table: Some(100),
                scope: Some(0),
                ..Route::new("::/0".parse().unwrap(), None)
            },
        ],
        dns: Dns {
            nameservers: vec!["10.96.0.10".into()],
            domain: Some("cluster.local".into()),
            search: vec!["svc.cluster.local".into()],
            options: vec!["ndots:5".into()],
        },
    }
}

#[test]
fn prints_every_version_as_its_golden_file() {
    for version in Version::ALL {
        let printed = dual_stack().to_value(version).unwrap();
        assert_eq!(
            printed,
            golden(&format!("dual-stack.{version}.json")),
            "version {version}"
        );
    }
}

#[test]
fn every_golden_reads_back_and_prints_identically_in_its_own_version() {
    for version in Version::ALL {
        let file = golden(&format!("dual-stack.{version}.json"));
        let parsed = Success::from_value(&file, Version::V1_1_0).unwrap();
        assert_eq!(parsed.to_value(version).unwrap(), file, "version {version}");
    }
}

#[test]
fn up_conversion_from_0_4_0_loses_only_the_1_1_0_interface_fields() {
    let parsed = Success::from_value(&golden("dual-stack.0.4.0.json"), Version::V1_1_0).unwrap();
    let mut expected = dual_stack();
    expected.interfaces[0].mtu = None;
    assert_eq!(parsed, expected);
}

#[test]
fn legacy_results_read_as_ips_and_appended_routes() {
    let parsed = Success::from_value(&golden("parse-legacy.0.2.0.json"), Version::V1_1_0).unwrap();
    assert_eq!(
        parsed.to_value(Version::V1_1_0).unwrap(),
        golden("parse-legacy.0.2.0.as-1.1.0.json")
    );
}

#[test]
fn an_ipam_result_converts_up_and_down() {
    let parsed = Success::from_value(&golden("parse-ipam.0.3.1.json"), Version::V1_1_0).unwrap();
    assert_eq!(
        parsed.to_value(Version::V1_1_0).unwrap(),
        golden("parse-ipam.0.3.1.as-1.1.0.json")
    );
    assert_eq!(
        parsed.to_value(Version::V0_1_0).unwrap(),
        golden("parse-ipam.0.3.1.as-0.1.0.json")
    );
}

#[test]
fn a_result_without_cni_version_is_read_in_the_callers_version() {
    let mut legacy = golden("parse-legacy.0.2.0.json");
    legacy.as_object_mut().unwrap().remove("cniVersion");
    let parsed = Success::from_value(&legacy, Version::V0_2_0).unwrap();
    assert_eq!(parsed.ips.len(), 2);
    // Read as 1.0.0, the same document has no `ips` and so no addresses.
    let as_v1 = Success::from_value(&legacy, Version::V1_0_0).unwrap();
    assert!(as_v1.ips.is_empty());
}
