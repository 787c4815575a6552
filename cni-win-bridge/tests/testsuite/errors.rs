//! Every error the plugin documents, through the real binary: its code and what it names.

use std::collections::BTreeMap;

use cni_win_conformance::node::Call;
use hns::HnsVersion;
use serde_json::json;

use crate::{NETWORK, config};

#[test]
fn docker_style_netns_is_refused_for_add_but_del_still_cleans_up() {
    let node = crate::node("docker");
    let config = config(&node, "1.0.0");
    for netns in ["none", "container:abc123", "not-a-guid"] {
        let msg = node.add("pod", netns, &config).error(4);
        assert!(msg.contains("CNI_NETNS"), "{msg}");
    }
    let msg = node.add("pod", "none", &config).error(4);
    assert!(msg.contains("dockershim"), "{msg}");
    node.add("pod", &node.namespace(), &config).result();
    node.del("pod", Some("none"), &config).silent();
    assert!(node.endpoints(NETWORK).is_empty() && node.reservations(NETWORK).is_empty());
}

#[test]
fn bad_policies_and_port_mappings_are_named() {
    let node = crate::node("bad-input");
    let netns = node.namespace();
    let cases = [
        (
            json!({"policies": [{"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT"}},
                            {"name": "EndpointPolicy", "value": "not a policy"}]}),
            "policies[1]",
        ),
        (
            json!({"AdditionalArgs": [{"Name": "EndpointPolicy", "Value": {"Settings": {"Exceptions": ["10.0.0.0/8"]}}}]}),
            r#"AdditionalArgs[0].value: policy needs a string "Type""#,
        ),
        (
            json!({"policies": [{"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT", "ExceptionList": ["10.0.0.0/33"]}}]}),
            "10.0.0.0/33",
        ),
        (
            json!({"policies": [{"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["x"]}}}]}),
            "policies[0]",
        ),
        (
            json!({"policies": [{"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.0.0.5"]}}}]}),
            r#"policies[0] OutBoundNAT exception: "10.0.0.5" is not a CIDR (expected e.g. 10.244.0.0/16)"#,
        ),
        (
            json!({"policies": [{"name": "EndpointPolicy", "value": {"Type": "ProviderAddress", "Settings": {"ProviderAddress": "10.0.0"}}}]}),
            "ProviderAddress: invalid IP address syntax",
        ),
        (
            json!({"policies": [{"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.0.0.0/33"]}}}]}),
            r#"does not have the V2 settings HNS accepts for its type: Exceptions[0]: "10.0.0.0/33" is neither an IP address nor a CIDR prefix"#,
        ),
        (json!({"ipMasqNetwork": "10.244.0.0"}), "ipMasqNetwork"),
        (
            json!({"dns": {"nameservers": ["10.96.0.10", "kube-dns"]}}),
            r#"dns.nameservers[1]: "kube-dns" is not an IP address"#,
        ),
        (
            json!({"runtimeConfig": {"dns": {"servers": ["10.96.0.300"]}}}),
            r#"runtimeConfig.dns.servers[0]: "10.96.0.300" is not an IP address"#,
        ),
        (
            json!({"policies": [
            {"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.0.0.0/8"]}}},
            {"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT", "Settings": {"VirtualIP": "10.127.130.38", "Exceptions": ["10.1.0.0/16"]}}}]}),
            "policies[1]: OutBoundNAT differs from policies[0]",
        ),
        (
            json!({"runtimeConfig": {"portMappings": [{"hostPort": 80, "containerPort": 80, "protocol": "sctp"}]}}),
            "runtimeConfig.portMappings[0].protocol",
        ),
        (
            json!({"runtimeConfig": {"portMappings": [{"hostPort": 80, "containerPort": 80, "protocol": "tcp", "hostIP": "x"}]}}),
            "hostIP",
        ),
        (json!({"ipam": null}), "ipam"),
    ];
    for (overrides, needle) in cases {
        let mut config = config(&node, "1.0.0");
        for (key, value) in overrides.as_object().unwrap() {
            if value.is_null() {
                config.as_object_mut().unwrap().remove(key);
            } else {
                config[key] = value.clone();
            }
        }
        let reply = node.add("pod", &netns, &config);
        assert_eq!(reply.status, Some(1), "{needle}: {reply:?}");
        let msg = reply.error(7);
        assert!(msg.contains(needle), "{needle}: {msg}");
    }
    assert!(node.endpoints(NETWORK).is_empty() && node.reservations(NETWORK).is_empty());
}

#[test]
fn hns_rejecting_a_user_policy_is_invalid_config_naming_it() {
    let node = crate::node("hns-rejects");
    let mut config = config(&node, "1.0.0");
    config["policies"] =
        json!([{"name": "EndpointPolicy", "value": {"Type": "NoSuchPolicy", "Settings": {}}}]);
    let reply = node.add("pod", &node.namespace(), &config);
    let msg = reply.error(7);
    assert!(msg.contains("policies[0]"), "{msg}");
    assert!(
        reply.json()["details"]
            .as_str()
            .unwrap()
            .contains("HRESULT 0x803B"),
        "{reply:?}"
    );
    assert!(node.endpoints(NETWORK).is_empty() && node.reservations(NETWORK).is_empty());
}

#[test]
fn loopback_dsr_needs_a_capable_hns_and_costs_one_call() {
    let node = crate::node("dsr");
    let mut config = config(&node, "1.0.0");
    config["optionalFlags"] = json!({"loopbackDSR": true});
    node.engine().set_version(HnsVersion::new(10, 1)).unwrap();
    let msg = node.add("pod", &node.namespace(), &config).error(112);
    assert!(msg.contains("loopbackDSR") && msg.contains("10.2"), "{msg}");
    assert!(node.reservations(NETWORK).is_empty());
    node.engine().set_version(HnsVersion::new(13, 2)).unwrap();
    let netns = node.namespace();
    node.calls();
    let result = node.add("pod", &netns, &config).result();
    assert_eq!(node.calls(), (8, 11));
    let ip = result["ips"][0]["address"]
        .as_str()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let endpoint = node.endpoint("pod_cbr0");
    let dsr = serde_json::to_value(endpoint.policies.last().unwrap()).unwrap();
    assert_eq!(
        dsr,
        json!({"Type": "OutBoundNAT", "Settings": {"Destinations": [ip]}})
    );
}

#[test]
fn an_unreachable_hns_is_try_again_for_add_and_not_available_for_status() {
    let node = crate::node("unreachable");
    let config = config(&node, "1.1.0");
    let unset = BTreeMap::from([(cni_win_conformance::hns::STATE_ENV, String::new())]);
    let call = |command| Call {
        command,
        container_id: "pod",
        ifname: "eth0",
        netns: Some("5f3f8c1e-0b49-4b36-9a0e-6f1c2b3d4e5f"),
        config: &config,
    };
    let msg = node.run_with(&call("ADD"), &unset).error(11);
    assert!(msg.contains("HCN_EMULATOR_STATE"), "{msg}");
    node.run_with(&call("STATUS"), &unset).error(50);
}

#[test]
fn check_names_every_difference() {
    let node = crate::node("check");
    let mut config = config(&node, "1.0.0");
    let netns = node.namespace();
    let result = node.add("pod", &netns, &config).result();
    config["prevResult"] = result.clone();
    node.check("pod", &netns, &config).silent();

    let mut wrong = config.clone();
    wrong["prevResult"]["ips"][0]["address"] = json!("10.244.1.99/24");
    wrong["prevResult"]["interfaces"][0]["mac"] = json!("00-11-22-33-44-55");
    let msg = node.check("pod", &node.namespace(), &wrong).error(113);
    for needle in ["10.244.1.99", "00-11-22-33-44-55", "namespace"] {
        assert!(msg.contains(needle), "{needle}: {msg}");
    }
    let mut more = config.clone();
    more["ipMasqNetwork"] = json!("10.250.0.0/16");
    let msg = node.check("pod", &netns, &more).error(113);
    assert!(
        msg.contains("10.250.0.0/16") && msg.contains("missing"),
        "{msg}"
    );
    let mut none = config.clone();
    none.as_object_mut().unwrap().remove("prevResult");
    node.check("pod", &netns, &none).error(7);
}

#[test]
fn status_excludes_the_pod_gateway_as_add_does() {
    // A /29 from x.1: gateway .1 (host-local's) and .2 (the pod gateway) are never handed
    // out, so .3-.6 are the only addresses ADD can give. With notReadyWhenFull, STATUS fails
    // exactly when ADD would.
    let node = crate::node("status-small");
    let mut config = config(&node, "1.1.0");
    config["ipam"]["subnet"] = json!("10.244.1.0/29");
    config["ipam"]["notReadyWhenFull"] = json!(true);
    let status = || node.run(&Call::network("STATUS", &config));
    for pod in ["a", "b", "c"] {
        node.add(pod, &node.namespace(), &config).result();
    }
    status().silent();
    node.add("d", &node.namespace(), &config).result();
    let msg = status().error(50);
    assert!(msg.contains("10.244.1.0/29"), "{msg}");
    node.add("e", &node.namespace(), &config).error(100);
    node.del("d", None, &config).silent();
    status().silent();
}

/// containerd 2.x polls STATUS and takes the node NotReady on a failure, evicting its pods: a
/// full range must fail new pods (code 100), never the node.
#[test]
fn a_full_range_leaves_status_ready_and_says_so_in_the_log() {
    let node = crate::node("status-full");
    let mut config = config(&node, "1.1.0");
    config["ipam"]["rangeStart"] = json!("10.244.1.10");
    config["ipam"]["rangeEnd"] = json!("10.244.1.10");
    node.add("only", &node.namespace(), &config).result();
    node.add("more", &node.namespace(), &config).error(100);
    let status = node.run(&Call::network("STATUS", &config));
    assert!(
        status.stderr.contains("no free address") && status.stderr.contains("notReadyWhenFull"),
        "{}",
        status.stderr
    );
    status.silent();
}
