//! Every overlay field config from the reference material, and every file in
//! `examples/win-overlay`, accepted by the real binary and producing the documented endpoint
//! (asserted on the JSON HNS received): the prefix+IPv4 MAC, the HNS gateway, the provider
//! address, one merged OutBoundNAT.
//!
//! Fixtures (`testdata/field`), in the shapes reference-plugins.md and kubernetes-windows.md
//! record: the reference `sample.conf` (V1 policies, cniVersion 0.2.0, `vxlan0`) and
//! `sample-v2.conf` (apiVersion 2, V2 policies with a ProviderAddress); Flannel's vxlan delegate
//! as Flannel renders it; microsoft/SDN's overlay config; sig-windows-tools' overlay configs for
//! docker (win-overlay) and containerd (sdnoverlay, `SDNROUTE`, ProviderAddress filled in by
//! start.ps1); windows-container-networking's `flannel_overlay.conf`. Delegates naming
//! sdnoverlay are switched to win-overlay, as a node moving to it would.

mod common;

use std::path::Path;

use common::{PROVIDER_ADDRESS, node_with};
use conformance::node::policy::{nat, provider_address, route};
use conformance::node::{Node, load_json};
use serde_json::{Value, json};

fn testdata(relative: &str) -> Value {
    load_json(&Path::new(env!("CARGO_MANIFEST_DIR")).join(relative))
}

/// The first pod's address and MAC (host-local skips the gateway .1).
const POD_IP: &str = "10.244.1.2";
const POD_MAC: &str = "0E-2A-0A-F4-01-02";

/// The node's subnet, which `ipMasq` adds to the exceptions.
const NODE_SUBNET: &str = "10.244.1.0/24";

/// ADDs one pod with `raw` as `prepare` makes it ready for a node whose overlay network is
/// named as `raw` says; asserts the overlay parts of its endpoint (address, MAC, gateway) and
/// returns the endpoint.
fn overlay_endpoint(raw: Value, prepare: impl FnOnce(&Node, Value) -> Value) -> Value {
    let node = node_with(raw["name"].as_str().unwrap(), "field");
    let endpoint = node.pod_endpoint(&prepare(&node, raw));
    assert_eq!(endpoint["MacAddress"], POD_MAC, "{endpoint:#}");
    assert_eq!(
        endpoint["IpConfigurations"],
        json!([{"IpAddress": POD_IP, "PrefixLength": 24}])
    );
    assert_eq!(
        endpoint["Routes"],
        json!([{"NextHop": "10.244.1.1", "DestinationPrefix": "0.0.0.0/0"}])
    );
    endpoint
}

/// Flannel's rendering of a flannel config whose delegate win-overlay receives.
fn rendered(node: &Node, flannel: Value) -> Value {
    node.rendered_by_flannel(&flannel, "win-overlay")
}

fn pa() -> Value {
    provider_address(PROVIDER_ADDRESS)
}

#[test]
fn reference_sample_v1_policies_ip_masq_and_the_provider_address() {
    let endpoint = overlay_endpoint(
        testdata("testdata/field/reference-sample.json"),
        |node, config| node.with_data_dir(config),
    );
    assert_eq!(
        endpoint["Policies"],
        json!([
            route("11.0.0.0/8"),
            route("10.137.198.27/32"),
            nat(&[
                "192.168.0.0/16",
                "11.0.0.0/8",
                "10.137.196.0/23",
                NODE_SUBNET
            ]),
            pa()
        ])
    );
    assert_eq!(
        endpoint["Dns"],
        json!({"Search": ["svc.cluster.local"], "ServerList": ["11.0.0.10"]})
    );
}

#[test]
fn reference_sample_v2_keeps_its_provider_address_once_and_maps_ports() {
    let endpoint = overlay_endpoint(
        testdata("testdata/field/reference-sample-v2.json"),
        |node, config| {
            let mut config = node.with_data_dir(config);
            config["runtimeConfig"] = json!({"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "udp"}]});
            config
        },
    );
    assert_eq!(
        endpoint["Policies"],
        json!([
            route("11.0.0.0/8"),
            route("10.137.198.27/32"),
            pa(),
            nat(&["192.168.0.0/16", "11.0.0.0/8", "10.137.196.0/23"]),
            {"Type": "PortMapping", "Settings": {"Protocol": 17, "InternalPort": 80, "ExternalPort": 8080}}
        ])
    );
}

#[test]
fn flannels_rendered_vxlan_delegate() {
    let endpoint = overlay_endpoint(
        testdata("testdata/field/flannel-rendered-vxlan-delegate.json"),
        |node, config| node.with_data_dir(config),
    );
    assert_eq!(
        endpoint["Policies"],
        json!([
            route("10.96.0.0/12"),
            nat(&["10.244.0.0/16", "10.96.0.0/12", NODE_SUBNET]),
            pa()
        ])
    );
    assert_eq!(
        endpoint["Dns"],
        json!({"Search": ["default.svc.cluster.local"], "ServerList": ["10.96.0.10"]})
    );
}

#[test]
fn microsoft_sdn_overlay_config_as_flannel_renders_it() {
    let endpoint = overlay_endpoint(
        testdata("testdata/field/microsoft-sdn-overlay.json"),
        rendered,
    );
    assert_eq!(
        endpoint["Policies"],
        json!([
            route("11.0.0.0/8"),
            nat(&["192.168.0.0/16", "11.0.0.0/8", NODE_SUBNET]),
            pa()
        ])
    );
}

#[test]
fn sig_windows_tools_overlay_config_for_docker() {
    let endpoint = overlay_endpoint(
        testdata("testdata/field/sig-windows-tools-overlay-docker.json"),
        rendered,
    );
    assert_eq!(
        endpoint["Policies"],
        json!([
            route("10.96.0.0/12"),
            nat(&["10.96.0.0/12", "10.244.0.0/16", NODE_SUBNET]),
            pa()
        ])
    );
}

#[test]
fn sdnoverlay_configs_with_additional_args_sdnroute_and_provider_address() {
    for (name, exceptions) in [
        (
            "testdata/field/sig-windows-tools-sdnoverlay.json",
            ["10.96.0.0/12", "10.244.0.0/16"],
        ),
        (
            "testdata/field/windows-container-networking-flannel-overlay.json",
            ["10.244.0.0/16", "10.96.0.0/12"],
        ),
    ] {
        let endpoint = overlay_endpoint(testdata(name), rendered);
        assert_eq!(
            endpoint["Policies"],
            json!([
                route("10.96.0.0/12"),
                pa(),
                nat(&[exceptions[0], exceptions[1], NODE_SUBNET])
            ]),
            "{name}"
        );
    }
}

#[test]
fn example_win_overlay_conf_with_port_mappings() {
    let endpoint = overlay_endpoint(
        testdata("../examples/win-overlay/win-overlay.conf"),
        |node, config| {
            let mut config = node.with_data_dir(config);
            config["runtimeConfig"] = json!({"portMappings": [{"hostPort": 8443, "containerPort": 443, "protocol": "TCP", "hostIP": "10.127.130.38"}]});
            config
        },
    );
    assert_eq!(
        endpoint["Policies"],
        json!([
            route("10.96.0.0/12"),
            nat(&["10.244.0.0/16", "10.96.0.0/12", NODE_SUBNET]),
            {"Type": "PortMapping", "Settings": {"Protocol": 6, "InternalPort": 443, "ExternalPort": 8443, "VIP": "10.127.130.38", "Flags": 1}},
            pa()
        ])
    );
}

#[test]
fn example_flannel_vxlan_conflist() {
    let endpoint = overlay_endpoint(
        testdata("../examples/win-overlay/flannel-vxlan.conflist"),
        |node, list| {
            let mut flannel = list["plugins"][0].clone();
            flannel["name"] = list["name"].clone();
            flannel["cniVersion"] = list["cniVersion"].clone();
            node.rendered_by_flannel(&flannel, "win-overlay")
        },
    );
    assert_eq!(
        endpoint["Policies"],
        json!([
            route("10.96.0.0/12"),
            nat(&["10.96.0.0/12", "10.244.0.0/16", NODE_SUBNET]),
            pa()
        ])
    );
}
