//! Every field config from the reference material, and every file in `examples/win-bridge`,
//! accepted by the real binary through a pod's ADD, CHECK and DEL, and producing the
//! documented endpoint (asserted on the JSON HNS received).
#![cfg(not(windows))] // the HCN emulator these tests run on is Linux-only

mod common;

use std::path::Path;

use cni_win_conformance::node::load_json;
use cni_win_conformance::node::policy::{dsr, nat, route};
use common::{NETWORK, example};
use serde_json::{Value, json};

fn field(name: &str) -> Value {
    load_json(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/field")
            .join(name),
    )
}

const DEFAULT_ROUTE: &str = r#"[{"NextHop":"10.244.1.2","DestinationPrefix":"0.0.0.0/0"}]"#;

fn assert_bridge_endpoint(endpoint: &Value, policies: Value) {
    assert_eq!(endpoint["Policies"], policies, "{endpoint:#}");
    assert_eq!(
        endpoint["Routes"],
        serde_json::from_str::<Value>(DEFAULT_ROUTE).unwrap()
    );
    assert_eq!(
        endpoint["IpConfigurations"],
        json!([{"IpAddress": "10.244.1.3", "PrefixLength": 24}])
    );
}

#[test]
fn reference_sample_v1_translates_v1_policies_and_adds_loopback_dsr() {
    let node = common::node("sample-v1");
    let endpoint = node
        .pod_life_cycle(&node.with_data_dir(field("reference-sample-v1.json")))
        .0;
    assert_bridge_endpoint(
        &endpoint,
        json!([
            route("11.0.0.0/8"),
            route("10.137.198.27/32"),
            nat(&["192.168.0.0/16", "11.0.0.0/8", "10.137.196.0/23"]),
            dsr("10.244.1.3")
        ]),
    );
    assert_eq!(
        endpoint["Dns"],
        json!({"Search": ["svc.cluster.local"], "ServerList": ["11.0.0.10"]})
    );
}

#[test]
fn reference_sample_v2_as_flannel_renders_it_merges_ip_masq_network() {
    let node = common::node("sample-v2");
    let endpoint = node
        .pod_life_cycle(&node.rendered_by_flannel(&field("reference-sample-v2.json"), "win-bridge"))
        .0;
    assert_bridge_endpoint(
        &endpoint,
        json!([
            route("11.0.0.0/8"),
            route("10.137.198.27/32"),
            nat(&[
                "192.168.0.0/16",
                "11.0.0.0/8",
                "10.137.196.0/23",
                "10.244.0.0/16"
            ]),
            dsr("10.244.1.3")
        ]),
    );
}

#[test]
fn flannels_rendered_delegate_takes_runtime_dns_and_one_nat() {
    let node = common::node("flannel");
    let endpoint = node
        .pod_life_cycle(&node.with_data_dir(field("flannel-rendered-delegate.json")))
        .0;
    assert_bridge_endpoint(&endpoint, json!([nat(&["10.244.0.0/16", "10.96.0.0/12"])]));
    assert_eq!(
        endpoint["Dns"],
        json!({"Search": ["default.svc.cluster.local"], "ServerList": ["10.96.0.10"]})
    );
}

#[test]
fn microsoft_sdn_l2bridge_delegate() {
    let node = common::node("sdn");
    let endpoint = node
        .pod_life_cycle(
            &node.rendered_by_flannel(&field("microsoft-sdn-l2bridge.json"), "win-bridge"),
        )
        .0;
    assert_bridge_endpoint(
        &endpoint,
        json!([
            route("10.96.0.0/12"),
            route("10.127.130.38/32"),
            nat(&["10.244.0.0/16", "10.96.0.0/12", "10.127.130.0/24"])
        ]),
    );
}

#[test]
fn sig_windows_tools_host_gw_configs_for_docker_and_containerd() {
    for name in [
        "sig-windows-tools-host-gw-docker.json",
        "sig-windows-tools-host-gw-containerd.json",
    ] {
        let node = common::node("sig-windows-tools");
        let endpoint = node
            .pod_life_cycle(&node.rendered_by_flannel(&field(name), "win-bridge"))
            .0;
        assert_bridge_endpoint(
            &endpoint,
            json!([
                route("10.96.0.0/12"),
                route("10.127.130.0/24"),
                nat(&["10.96.0.0/12", "10.244.0.0/16", "10.127.130.0/24"])
            ]),
        );
    }
}

#[test]
fn windows_container_networking_sdnbridge_config_with_optional_flags() {
    let node = common::node("wcn");
    let config = node.rendered_by_flannel(
        &field("windows-container-networking-flannel-l2bridge.json"),
        "win-bridge",
    );
    let endpoint = node.pod_life_cycle(&config).0;
    assert_bridge_endpoint(
        &endpoint,
        json!([
            route("10.96.0.0/12"),
            route("10.127.130.38/32"),
            nat(&["10.244.0.0/16", "10.96.0.0/12"])
        ]),
    );
}

#[test]
fn example_flannel_host_gw_conflist() {
    let node = common::node("example-flannel");
    let list = example("flannel-host-gw.conflist");
    let mut flannel = list["plugins"][0].clone();
    flannel["name"] = list["name"].clone();
    flannel["cniVersion"] = list["cniVersion"].clone();
    let endpoint = node
        .pod_life_cycle(&node.rendered_by_flannel(&flannel, "win-bridge"))
        .0;
    assert_bridge_endpoint(
        &endpoint,
        json!([
            route("10.96.0.0/12"),
            route("10.127.130.38/32"),
            nat(&["10.96.0.0/12", "10.244.0.0/16", "10.127.130.0/24"])
        ]),
    );
}

#[test]
fn example_win_bridge_conf_with_port_mappings() {
    let node = common::node("example-plain");
    let mut config = node.with_data_dir(example("win-bridge.conf"));
    config["runtimeConfig"] = json!({"portMappings": [{"hostPort": 8443, "containerPort": 443, "protocol": "TCP", "hostIP": "10.127.130.38"}]});
    let endpoint = node.pod_life_cycle(&config).0;
    assert_bridge_endpoint(
        &endpoint,
        json!([
            route("10.96.0.0/12"),
            nat(&["10.96.0.0/12", "10.127.130.0/24", "10.244.0.0/16"]),
            {"Type": "PortMapping", "Settings": {"Protocol": 6, "InternalPort": 443, "ExternalPort": 8443, "VIP": "10.127.130.38", "Flags": 1}}
        ]),
    );
}

#[test]
fn example_dual_stack_conf() {
    let node = common::dual_stack_node("example-dual");
    let config = node.with_data_dir(example("dual-stack.conf"));
    let netns = node.namespace();
    let result = node.add("pod", &netns, &config).result();
    assert_eq!(result["ips"], common::first_dual_stack_ips());
    let endpoint = serde_json::to_value(node.endpoint("pod_cbr0")).unwrap();
    assert_eq!(
        endpoint["Routes"],
        json!([
            {"NextHop": "10.244.1.2", "DestinationPrefix": "0.0.0.0/0"},
            {"NextHop": "fd00:10:244:1::2", "DestinationPrefix": "::/0"}
        ])
    );
    // An HNS without dual-stack support refuses it by name.
    node.del("pod", Some(&netns), &config).silent();
    node.engine()
        .set_version(hns::HnsVersion::new(10, 2))
        .unwrap();
    let msg = node.add("pod", &netns, &config).error(112);
    assert!(msg.contains("IPv6") && msg.contains("11.10"), "{msg}");
    assert!(node.reservations(NETWORK).is_empty());
}
