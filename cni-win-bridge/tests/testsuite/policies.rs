//! Policies as the field writes them, through a pod's whole life (ADD, CHECK, DEL) on an
//! emulated node, asserted on what HNS received: sdnbridge-style `AdditionalArgs` whose
//! envelope (`Name`/`Value`, `Type`/`Settings`) and settings keys come in any case, with a V1
//! `ExceptionList` inside V2 settings (sent to HNS as written, as the reference sends it, and
//! not merged) and an ACL in windows-container-networking's example shape (sent as written,
//! without a fallback: the user's own ACLs are theirs, with the Host-layer allow-alls Calico and
//! Azure NPM write beside switch rules); the ACLs `allowAclPortMapping` writes, with their
//! allow-all fallback and the Host-layer pair.

use std::path::Path;

use cni_win_conformance::node::load_json;
use cni_win_conformance::node::policy::{nat, route};
use hns::schema::{EndpointPolicy, ModifyRequest, RequestType};
use serde_json::json;

#[test]
fn additional_args_in_any_case_with_a_v1_key_inside_v2_settings() {
    let node = crate::node("any-case");
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
            nat(&["10.127.130.0/24", "10.244.0.0/16"]),
            host_allow_all("In"),
            host_allow_all("Out")
        ])
    );
    assert!(
        log.contains("AdditionalArgs[0]: `ExceptionList` is not a V2 OutBoundNAT key; HNS ignores it; did you mean `Exceptions`?"),
        "{log}"
    );
}

/// The Host-layer allow-all of `direction`, as Calico and Azure NPM write it.
fn host_allow_all(direction: &str) -> serde_json::Value {
    json!({"Type": "ACL", "Settings": {"Protocols": "256", "Action": "Allow", "Direction": direction, "RuleType": "Host"}})
}

/// Windows Server 2025 makes an endpoint with any ACL default-deny (and Windows Server 2022's
/// L2Bridge, likely, once an ACL blocks), so the ACL `allowAclPortMapping` writes for a mapped
/// port comes with allow-all rules In and Out at the lowest precedence: the pod keeps its other
/// traffic on every build; and, as every switch ACL, with the Host-layer allow-alls. CHECK
/// holds the endpoint to them.
#[test]
fn acls_for_mapped_ports_come_with_an_allow_all_fallback_that_check_requires() {
    let node = crate::node("acl-fallback");
    let mut config = crate::config(&node, "1.0.0");
    config["optionalFlags"] = json!({"allowAclPortMapping": true, "localRoutedPortMapping": true});
    config["runtimeConfig"] =
        json!({"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]});
    let allow_all = |direction: &str| json!({"Type": "ACL", "Settings": {"Protocols": "256", "Action": "Allow", "Direction": direction, "RuleType": "Switch", "Priority": 65500}});
    let (endpoint, _) = node.pod_life_cycle(&config);
    assert_eq!(
        endpoint["Policies"],
        json!([
            route("10.96.0.0/12"),
            nat(&["10.244.0.0/16", "10.96.0.0/12"]),
            {"Type": "PortMapping", "Settings": {"Protocol": 6, "InternalPort": 80, "ExternalPort": 8080, "Flags": 1}},
            {"Type": "ACL", "Settings": {"Protocols": "6", "Action": "Allow", "Direction": "In", "LocalPorts": "80", "RuleType": "Switch"}},
            allow_all("In"),
            allow_all("Out"),
            host_allow_all("In"),
            host_allow_all("Out")
        ])
    );

    // An endpoint without the fallback (one made without it, or edited since) fails CHECK; the
    // Host-layer allow-alls are a precaution CHECK does not hold it to.
    let netns = node.namespace();
    config["prevResult"] = node.add("pod", &netns, &config).result();
    let endpoint = node.endpoint("pod_cbr0");
    let fallback: Vec<EndpointPolicy> = endpoint.policies[4..].to_vec();
    let client = node.client();
    client
        .open_endpoint(endpoint.id)
        .unwrap()
        .modify(&ModifyRequest::policies(RequestType::Remove, fallback))
        .unwrap();
    let msg = node.check("pod", &netns, &config).error(113);
    assert!(
        msg.contains(r#""Direction":"In","Priority":65500"#)
            && msg.contains(r#""Direction":"Out","Priority":65500"#)
            && !msg.contains(r#""RuleType":"Host""#),
        "{msg}"
    );
    node.del("pod", Some(&netns), &config).silent();
}
