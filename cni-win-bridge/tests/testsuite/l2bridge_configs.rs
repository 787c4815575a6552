//! Every L2Bridge config from the reference material (`testdata/field`), and every file in
//! `examples/win-bridge`, accepted by the real binary through a pod's ADD, CHECK and DEL, and
//! producing the documented endpoint (asserted on the JSON HNS received): the first pod at .3
//! with the x.2 default route, the policies, and the DNS where the config's is worth pinning.

use cni_win_conformance::node::policy::{dsr, nat, route};
use cni_win_conformance::plugin::field::{FieldConfig, Form, reference_sample_policies};
use serde_json::json;

use crate::{NETWORK, PLUGIN, example};

#[test]
fn reference_sample_v1_translates_v1_policies_and_adds_loopback_dsr() {
    let mut policies = reference_sample_policies(&[]);
    policies.push(dsr("10.244.1.3"));
    FieldConfig::new(
        "testdata/field/reference-sample-v1.json",
        Form::Plugin,
        json!(policies),
    )
    .dns(json!({"Search": ["svc.cluster.local"], "ServerList": ["11.0.0.10"]}))
    .assert_endpoint(&PLUGIN);
}

#[test]
fn reference_sample_v2_as_flannel_renders_it_merges_ip_masq_network() {
    let mut policies = reference_sample_policies(&["10.244.0.0/16"]);
    policies.push(dsr("10.244.1.3"));
    FieldConfig::new(
        "testdata/field/reference-sample-v2.json",
        Form::Flannel,
        json!(policies),
    )
    .assert_endpoint(&PLUGIN);
}

#[test]
fn flannels_rendered_delegate_takes_runtime_dns_and_one_nat() {
    FieldConfig::new(
        "testdata/field/flannel-rendered-delegate.json",
        Form::Plugin,
        json!([nat(&["10.244.0.0/16", "10.96.0.0/12"])]),
    )
    .dns(json!({"Search": ["default.svc.cluster.local"], "ServerList": ["10.96.0.10"]}))
    .assert_endpoint(&PLUGIN);
}

#[test]
fn microsoft_sdn_l2bridge_delegate() {
    FieldConfig::new(
        "testdata/field/microsoft-sdn-l2bridge.json",
        Form::Flannel,
        json!([
            route("10.96.0.0/12"),
            route("10.127.130.38/32"),
            nat(&["10.244.0.0/16", "10.96.0.0/12", "10.127.130.0/24"])
        ]),
    )
    .assert_endpoint(&PLUGIN);
}

#[test]
fn sig_windows_tools_host_gw_configs_for_docker_and_containerd() {
    for file in [
        "testdata/field/sig-windows-tools-host-gw-docker.json",
        "testdata/field/sig-windows-tools-host-gw-containerd.json",
    ] {
        FieldConfig::new(
            file,
            Form::Flannel,
            json!([
                route("10.96.0.0/12"),
                route("10.127.130.0/24"),
                nat(&["10.96.0.0/12", "10.244.0.0/16", "10.127.130.0/24"])
            ]),
        )
        .assert_endpoint(&PLUGIN);
    }
}

#[test]
fn windows_container_networking_sdnbridge_config_with_optional_flags() {
    FieldConfig::new(
        "testdata/field/windows-container-networking-flannel-l2bridge.json",
        Form::Flannel,
        json!([
            route("10.96.0.0/12"),
            route("10.127.130.38/32"),
            nat(&["10.244.0.0/16", "10.96.0.0/12"])
        ]),
    )
    .assert_endpoint(&PLUGIN);
}

#[test]
fn example_flannel_host_gw_conflist() {
    FieldConfig::new(
        "../examples/win-bridge/flannel-host-gw.conflist",
        Form::FlannelConflist,
        json!([
            route("10.96.0.0/12"),
            route("10.127.130.38/32"),
            nat(&["10.96.0.0/12", "10.244.0.0/16", "10.127.130.0/24"])
        ]),
    )
    .assert_endpoint(&PLUGIN);
}

#[test]
fn example_win_bridge_conf_with_port_mappings() {
    FieldConfig::new(
        "../examples/win-bridge/win-bridge.conf",
        Form::Plugin,
        json!([
            route("10.96.0.0/12"),
            nat(&["10.96.0.0/12", "10.127.130.0/24", "10.244.0.0/16"]),
            {"Type": "PortMapping", "Settings": {"Protocol": 6, "InternalPort": 443, "ExternalPort": 8443, "VIP": "10.127.130.38", "Flags": 1}}
        ]),
    )
    .runtime_config(json!({"portMappings": [{"hostPort": 8443, "containerPort": 443, "protocol": "TCP", "hostIP": "10.127.130.38"}]}))
    .assert_endpoint(&PLUGIN);
}

#[test]
fn example_dual_stack_conf() {
    let node = crate::dual_stack_node("example-dual");
    let config = node.with_data_dir(example("dual-stack.conf"));
    let netns = node.namespace();
    let result = node.add("pod", &netns, &config).result();
    assert_eq!(result["ips"], PLUGIN.first_dual_stack_ips());
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
