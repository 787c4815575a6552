//! `cni-win doctor`: a test per finding, each on an emulated node broken in one way.

use std::fs;

use cni_win::doctor::{Finding, Report, Severity, diagnose};
use cni_win::paths::NodePaths;
use cni_win_conformance::node::stub_plugin;
use cni_win_core::platform::ConnectError;
use hns::schema::EndpointFlags;
use hns::{Guid, WindowsRelease};

use crate::support::doctor::Doctor;
use crate::support::{ScratchNode, problems};

/// A node with `cbr0` and win-bridge's stand-in.
fn doctor() -> Doctor<ScratchNode> {
    Doctor::new(ScratchNode::new(), "win-bridge")
}

fn evidence(report: &Report, check: &str) -> String {
    report
        .findings
        .iter()
        .find(|f| f.check.contains(check))
        .map(|f| f.evidence.clone())
        .unwrap_or_default()
}

#[test]
fn a_healthy_node_passes_everything() {
    let doctor = doctor();
    let ns = doctor.node.namespace();
    let ip = doctor.node.reserve("live");
    let id = doctor.node.ours("live", &ip);
    doctor.node.client.attach_endpoint(ns, id).unwrap();
    let report = doctor.report();
    assert_eq!(problems(&report), [], "{report}");
    assert!(report.healthy);
    assert!(evidence(&report, "HNS reachable").contains("version"));
    assert!(evidence(&report, "store").contains("1 endpoint(s)"));
}

/// kube-proxy's source VIP, reserved by running host-local directly and held by
/// kube-proxy's own nameless endpoint, is not a stale reservation and not a pod's address.
#[test]
fn the_source_vip_and_its_endpoint_are_not_findings() {
    let doctor = doctor();
    for (container_id, ifname) in [("dummy", "dummy"), ("kube-proxy", "source-vip")] {
        let vip = doctor.node.reserve_as(container_id, ifname);
        doctor
            .node
            .endpoint(hns::Guid::ZERO, "", &vip, EndpointFlags::NONE);
    }
    let report = doctor.report();
    assert_eq!(problems(&report), [], "{report}");
}

/// doctor reads the node once: on a node with one network and three pods its run costs the
/// snapshot's raw HCN calls (version 1, networks 1 + 2, endpoints 1 + 2 x 3, namespaces 1, load
/// balancers 1 = 13), where it cost 34 (47 with closes) when each check asked HNS itself.
#[test]
fn a_run_on_a_three_pod_node_reads_hns_once() {
    let doctor = doctor();
    for pod in ["a", "b", "c"] {
        let ns = doctor.node.namespace();
        let ip = doctor.node.reserve(pod);
        let id = doctor.node.ours(pod, &ip);
        doctor.node.client.attach_endpoint(ns, id).unwrap();
    }
    doctor.node.calls();
    let report = doctor.report();
    assert_eq!(problems(&report), [], "{report}");
    let (calls, with_closes) = doctor.node.calls();
    println!("doctor on a three-pod node: {calls} raw HCN calls ({with_closes} with closes)");
    assert!(calls <= 18, "{calls} raw HCN calls");
    assert_eq!((calls, with_closes), (13, 17));
}

#[test]
fn hns_unreachable_fails() {
    let doctor = doctor();
    let settings = NodePaths::with_bin_dir(doctor.node.conf_dir(), doctor.bin());
    let unreachable = ConnectError::Unreachable(hns::HnsError::new(
        hns::ErrorKind::Backend,
        "HNS is not running",
    ));
    let report = diagnose(Err(&unreachable), &settings);
    assert!(!report.healthy);
    assert_eq!(report.findings[0].severity, Severity::Fail);
    assert!(report.findings[0].fix.contains("hns"));
}

#[test]
fn a_missing_network_fails_readiness() {
    let doctor = doctor();
    let id = doctor.node.network_id();
    doctor.node.client.delete_network(id).unwrap();
    let report = doctor.report();
    assert_eq!(
        problems(&report),
        [("network \"cbr0\": ready".to_owned(), Severity::Fail)],
        "{report}"
    );
    assert!(evidence(&report, "ready").contains("does not exist"));
}

#[test]
fn a_config_the_plugin_refuses_fails_naming_the_key() {
    let doctor = doctor();
    fs::write(
        doctor.node.conf_dir().join("10-cbr0.conf"),
        br#"{"cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
             "ipam": {"type": "host-local", "subnet": "10.244.1.0/33"}}"#,
    )
    .unwrap();
    fs::write(doctor.node.conf_dir().join("20-broken.conflist"), b"{").unwrap();
    let report = doctor.report();
    let found = problems(&report);
    assert!(
        found.contains(&("network \"cbr0\": config".to_owned(), Severity::Fail)),
        "{report}"
    );
    assert!(
        found.contains(&("config directory".to_owned(), Severity::Fail)),
        "{report}"
    );
    assert!(evidence(&report, ": config").contains("subnet"), "{report}");
    assert!(!report.healthy);
}

/// A Flannel-native config whose `ipam` section leaves the type and ranges to subnet.env, as
/// ADD accepts it, is reviewed as ADD runs it: not refused for the type subnet.env supplies.
#[test]
fn a_flannel_native_config_is_reviewed_as_subnet_env_completes_it() {
    let doctor = doctor();
    let dir = doctor.node.dir();
    let subnet_env = dir.join("subnet.env");
    fs::write(
        &subnet_env,
        "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n",
    )
    .unwrap();
    let config = serde_json::json!({
        "cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
        "subnetFile": subnet_env, "dataDir": dir.join("flannel"),
        "ipam": {"dataDir": dir.join("ipam")}
    });
    fs::write(
        doctor.node.conf_dir().join("10-cbr0.conf"),
        serde_json::to_vec(&config).unwrap(),
    )
    .unwrap();
    let report = doctor.report();
    assert!(
        !problems(&report)
            .iter()
            .any(|(check, _)| check == "network \"cbr0\": config"),
        "{report}"
    );
    assert!(report.healthy, "{report}");
}

/// A full range fails new pods, not the node: STATUS stays ready and doctor warns with
/// the fix.
#[test]
fn a_full_range_is_a_warning_not_a_readiness_failure() {
    let doctor = doctor();
    // The range is made one address wide: the second pod's (the first gets the win-bridge
    // pod gateway, which the plugin never hands out).
    let mut ip = String::new();
    for pod in ["first", "live"] {
        let ns = doctor.node.namespace();
        ip = doctor.node.reserve(pod);
        let id = doctor.node.ours(pod, &ip);
        doctor.node.client.attach_endpoint(ns, id).unwrap();
    }
    let path = doctor.node.conf_dir().join("10-cbr0.conf");
    let mut config: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    config["ipam"]["rangeStart"] = ip.as_str().into();
    config["ipam"]["rangeEnd"] = ip.as_str().into();
    fs::write(&path, serde_json::to_vec(&config).unwrap()).unwrap();
    let report = doctor.report();
    assert_eq!(
        problems(&report),
        [(
            "network \"cbr0\": free addresses".to_owned(),
            Severity::Warn
        )],
        "{report}"
    );
    let found = evidence(&report, "free addresses");
    assert!(found.contains("all 1 are reserved"), "{found}");
    let finding = report.findings.iter().find(|f| f.check.contains("free"));
    assert!(finding.unwrap().fix.contains("cni-win sweep --apply"));
}

#[test]
fn policy_keys_hns_ignores_are_warnings_naming_the_entry_and_the_key() {
    let doctor = doctor();
    fs::write(
        doctor.node.conf_dir().join("10-cbr0.conf"),
        br#"{"cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
             "ipam": {"type": "host-local", "subnet": "10.244.1.0/24"},
             "policies": [{"name": "EndpointPolicy", "value": {"type": "OutBoundNAT",
                 "settings": {"exceptionList": ["172.30.0.0/16"], "needEncap": false}}}]}"#,
    )
    .unwrap();
    let report = doctor.report();
    let warnings: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.check == "network \"cbr0\": policy keys")
        .collect();
    let evidence: Vec<&str> = warnings.iter().map(|f| f.evidence.as_str()).collect();
    assert_eq!(
        evidence,
        [
            "policies[0]: `exceptionList` is not a V2 OutBoundNAT key; HNS ignores it; did you mean `Exceptions`?",
            "policies[0]: `needEncap` is not a V2 OutBoundNAT key; HNS ignores it (its keys: VirtualIP, Exceptions, Destinations, Flags, MaxPortPoolUsage)",
        ],
        "{report}"
    );
    assert!(warnings.iter().all(|f| f.severity == Severity::Warn));
    assert!(report.healthy, "{report}");
}

/// HNS makes an endpoint with ACLs default-deny on Windows Server 2025 and, likely, on Windows
/// Server 2022's L2Bridge and Overlay networks once an ACL blocks (azure-container-networking
/// PR #2617): a config's ACLs without allow-alls are a warning on every build, without asking
/// HNS which build it runs on.
#[test]
fn own_acls_without_an_allow_all_fallback_warn_on_every_build() {
    let doctor = doctor();
    let config = |policies: &str| {
        format!(
            r#"{{"cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
                 "ipam": {{"type": "host-local", "subnet": "10.244.1.0/24"}},
                 "policies": [{policies}]}}"#
        )
    };
    let acl = |settings: &str| {
        format!(
            r#"{{"name": "EndpointPolicy", "value": {{"Type": "ACL", "Settings": {settings}}}}}"#
        )
    };
    let block_imds = acl(
        r#"{"Action": "Block", "Direction": "Out", "RemoteAddresses": "169.254.169.254/32", "Priority": 200}"#,
    );
    let allow_in =
        acl(r#"{"Action": "Allow", "Direction": "In", "Protocols": "256", "Priority": 65500}"#);
    let allow_out = acl(r#"{"action": "Allow", "direction": "Out", "priority": 65000}"#);
    let conf = doctor.node.conf_dir().join("10-cbr0.conf");
    let fallback_finding = |report: &Report| {
        report
            .findings
            .iter()
            .find(|f| f.check == "network \"cbr0\": ACL fallback")
            .map(|f| (f.severity, f.evidence.clone()))
    };

    fs::write(&conf, config(&block_imds)).unwrap();
    for release in [WindowsRelease::SERVER_2022, WindowsRelease::SERVER_2025] {
        doctor.node.engine.set_release(release).unwrap();
        doctor.node.engine.reset_stats().unwrap();
        let report = doctor.report();
        let (verdict, evidence) = fallback_finding(&report).expect("a finding");
        assert_eq!(verdict, Severity::Warn);
        assert!(
            evidence.contains("no allow-all rule In and Out")
                && evidence.contains("Windows Server 2022's L2Bridge"),
            "{evidence}"
        );
        assert!(report.healthy, "{report}");
        let calls = doctor.node.engine.stats().unwrap();
        assert!(
            !calls.contains_key("RtlGetVersion"),
            "the build is not asked: {calls:?}"
        );
    }

    fs::write(&conf, config(&format!("{block_imds}, {allow_in}"))).unwrap();
    let (_, evidence) = fallback_finding(&doctor.report()).expect("a finding");
    assert!(evidence.contains("no allow-all rule Out"), "{evidence}");

    fs::write(
        &conf,
        config(&format!("{block_imds}, {allow_in}, {allow_out}")),
    )
    .unwrap();
    assert_eq!(fallback_finding(&doctor.report()), None);
}

/// One fault, one FAIL: the plugins' STATUS refuses a range outside the network's subnets,
/// and doctor reports STATUS's verdict with both subnets named, not a check of its own.
#[test]
fn a_range_outside_the_hns_subnet_fails_once() {
    let doctor = doctor();
    fs::write(
        doctor.node.conf_dir().join("10-cbr0.conf"),
        br#"{"cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
             "ipam": {"type": "host-local", "subnet": "10.244.9.0/24"}}"#,
    )
    .unwrap();
    let report = doctor.report();
    assert_eq!(
        problems(&report),
        [("network \"cbr0\": ready".to_owned(), Severity::Fail)],
        "{report}"
    );
    let evidence = evidence(&report, "ready");
    assert!(
        evidence.contains("10.244.9.0/24") && evidence.contains("10.244.1.0/24"),
        "{evidence}"
    );
    let finding = report.findings.iter().find(|f| f.check.ends_with("ready"));
    assert!(finding.unwrap().fix.contains("ipam subnet"), "{report}");
}

#[test]
fn plugins_of_one_release_pass_and_a_mixed_bin_dir_fails_naming_each() {
    let doctor = doctor();
    let bin = doctor.bin();
    stub_plugin(
        &bin,
        "win-bridge",
        "CNI win-bridge plugin 0.1.0 (commit aaaaaaaaaaaa)",
    );
    stub_plugin(
        &bin,
        "host-local",
        "CNI host-local plugin 0.1.0 (commit aaaaaaaaaaaa)",
    );
    let report = doctor.report();
    assert_eq!(problems(&report), [], "{report}");
    assert!(evidence(&report, "one release").contains("cni-win 0.1.0 (commit aaaaaaaaaaaa)"));

    // The reference's host-local left beside ours.
    stub_plugin(&bin, "host-local", "CNI host-local plugin v1.6.2");
    let report = doctor.report();
    assert_eq!(
        problems(&report),
        [("binaries are one release".to_owned(), Severity::Fail)],
        "{report}"
    );
    let evidence = evidence(&report, "one release");
    assert!(
        evidence.contains("host-local: not cni-win (CNI host-local plugin v1.6.2)")
            && evidence.contains("win-bridge: cni-win 0.1.0"),
        "{evidence}"
    );
}

#[test]
fn a_missing_plugin_binary_fails() {
    let doctor = doctor();
    fs::remove_file(doctor.bin().join("win-bridge")).unwrap();
    let report = doctor.report();
    assert_eq!(
        problems(&report),
        [("binary win-bridge".to_owned(), Severity::Fail)],
        "{report}"
    );
}

#[test]
fn an_unknown_plugin_type_is_named() {
    let doctor = doctor();
    fs::write(
        doctor.node.conf_dir().join("20-typo.conflist"),
        br#"{"cniVersion": "1.1.0", "name": "vxlan0", "plugins": [{"type": "win-overlya"}]}"#,
    )
    .unwrap();
    let report = doctor.report();
    assert_eq!(
        problems(&report),
        [("binary win-overlya".to_owned(), Severity::Fail)],
        "{report}"
    );
    assert!(evidence(&report, "win-overlya").contains("plugin type \"win-overlya\""));
}

#[test]
fn what_sweep_would_remove_is_a_warning() {
    let doctor = doctor();
    doctor.node.reserve("lost");
    let ip = doctor.node.reserve("crashed");
    doctor.node.ours("crashed", &ip);
    let report = doctor.report();
    assert_eq!(
        problems(&report),
        [
            ("network \"cbr0\": stale".to_owned(), Severity::Warn),
            ("network \"cbr0\": stale".to_owned(), Severity::Warn)
        ],
        "{report}"
    );
    assert!(report.healthy, "warnings alone leave the node healthy");
    assert!(report.to_string().contains("cni-win sweep --apply"));
}

#[test]
fn an_endpoint_without_reservation_is_a_warning() {
    let doctor = doctor();
    let ns = doctor.node.namespace();
    let id = doctor.node.ours("orphan", "10.244.1.50");
    doctor.node.client.attach_endpoint(ns, id).unwrap();
    let report = doctor.report();
    assert_eq!(
        problems(&report),
        [(
            "network \"cbr0\": drift endpoint-without-reservation".to_owned(),
            Severity::Warn
        )],
        "{report}"
    );
    assert!(evidence(&report, "without-reservation").contains("10.244.1.50"));
}

#[test]
fn two_endpoints_holding_one_ip_fail() {
    let doctor = doctor();
    let ns = doctor.node.namespace();
    let ip = doctor.node.reserve("pod");
    let id = doctor.node.ours("pod", &ip);
    doctor.node.client.attach_endpoint(ns, id).unwrap();
    // Another network's endpoint on the same address (HNS checks per network).
    doctor
        .node
        .client
        .create_network(
            Guid::ZERO,
            &cni_win_conformance::node::network_settings(
                "other",
                "L2Bridge",
                &[("10.244.1.0/24", "10.244.1.1")],
            ),
        )
        .unwrap();
    let other = doctor.node.client.find_network_by_name("other").unwrap();
    let settings = doctor
        .node
        .client
        .open_endpoint(id)
        .unwrap()
        .into_properties();
    let copy = hns::schema::HostComputeEndpoint {
        name: "intruder".to_owned(),
        ip_configurations: settings.ip_configurations.clone(),
        routes: settings.routes.clone(),
        ..Default::default()
    };
    other.create_endpoint(Guid::ZERO, &copy).unwrap();
    let report = doctor.report();
    assert!(
        problems(&report).contains(&(
            "network \"cbr0\": drift duplicate-address-foreign".to_owned(),
            Severity::Fail
        )),
        "{report}"
    );
    assert!(!report.healthy);
}

#[test]
fn a_remote_endpoint_holding_a_local_pod_ip_fails() {
    let doctor = doctor();
    let ip = doctor.node.reserve("pod");
    doctor.node.endpoint(
        Guid::from_u128(5),
        "stale-remote",
        &ip,
        EndpointFlags::REMOTE_ENDPOINT,
    );
    let report = doctor.report();
    let found = problems(&report);
    assert!(
        found.contains(&(
            "network \"cbr0\": drift remote-endpoint-in-pod-subnet".to_owned(),
            Severity::Fail
        )),
        "{report}"
    );
    assert!(!report.healthy);
}

/// A config directory others may write is a warning naming who and the fix: whoever may
/// write it decides what every pod is attached with.
#[test]
fn a_config_directory_others_may_write_is_a_warning() {
    use std::os::unix::fs::PermissionsExt;
    let doctor = doctor();
    let conf_dir = doctor.node.conf_dir();
    fs::set_permissions(&conf_dir, fs::Permissions::from_mode(0o777)).unwrap();
    let report = doctor.report();
    let finding = report
        .findings
        .iter()
        .find(|f| f.check == "config directory: who may write")
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(finding.severity, Severity::Warn, "{report}");
    assert!(
        finding.evidence.contains("mode 777") && finding.fix.contains("icacls"),
        "{finding:?}"
    );
    fs::set_permissions(&conf_dir, fs::Permissions::from_mode(0o755)).unwrap();
    assert!(
        evidence(&doctor.report(), "config directory: who may write")
            .contains("only administrators")
    );
}
