//! Every overlay field config from the reference material, and every file in
//! `examples/win-overlay`, accepted by the real binary through a pod's ADD, CHECK and DEL, and
//! producing the documented endpoint (asserted on the JSON HNS received): the prefix+IPv4 MAC,
//! the HNS gateway, the provider address, one merged OutBoundNAT.
//!
//! Fixtures (`testdata/field`), in the shapes reference-plugins.md and kubernetes-windows.md
//! record: the reference `sample.conf` (V1 policies, cniVersion 0.2.0, `vxlan0`) and
//! `sample-v2.conf` (apiVersion 2, V2 policies with a ProviderAddress); Flannel's vxlan delegate
//! as Flannel renders it; microsoft/SDN's overlay config; sig-windows-tools' overlay configs for
//! docker (win-overlay) and containerd (sdnoverlay, `SDNROUTE`, ProviderAddress filled in by
//! start.ps1); windows-container-networking's `flannel_overlay.conf`. Delegates naming
//! sdnoverlay are switched to win-overlay, as a node moving to it would.

use cni_win_conformance::flannel::PROVIDER_ADDRESS;
use cni_win_conformance::node::policy::{nat, provider_address, route};
use cni_win_conformance::plugin::field::{FieldConfig, Form, reference_sample_policies};
use serde_json::{Value, json};

use crate::PLUGIN;

/// The node's subnet, which `ipMasq` adds to the exceptions.
const NODE_SUBNET: &str = "10.244.1.0/24";

fn pa() -> Value {
    provider_address(PROVIDER_ADDRESS)
}

#[test]
fn reference_samples() {
    let mut policies = reference_sample_policies(&[NODE_SUBNET]);
    policies.push(pa());
    FieldConfig::new(
        "testdata/field/reference-sample.json",
        Form::Plugin,
        json!(policies),
    )
    .dns(json!({"Search": ["svc.cluster.local"], "ServerList": ["11.0.0.10"]}))
    .assert_endpoint(&PLUGIN);
    // Its own ProviderAddress is kept once; port mappings work (the reference ignores them).
    FieldConfig::new(
        "testdata/field/reference-sample-v2.json",
        Form::Plugin,
        json!([
            route("11.0.0.0/8"),
            route("10.137.198.27/32"),
            pa(),
            nat(&["192.168.0.0/16", "11.0.0.0/8", "10.137.196.0/23"]),
            {"Type": "PortMapping", "Settings": {"Protocol": 17, "InternalPort": 80, "ExternalPort": 8080}}
        ]),
    )
    .runtime_config(
        json!({"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "udp"}]}),
    )
    .assert_endpoint(&PLUGIN);
}

#[test]
fn flannels_rendered_vxlan_delegate() {
    FieldConfig::new(
        "testdata/field/flannel-rendered-vxlan-delegate.json",
        Form::Plugin,
        json!([
            route("10.96.0.0/12"),
            nat(&["10.244.0.0/16", "10.96.0.0/12", NODE_SUBNET]),
            pa()
        ]),
    )
    .dns(json!({"Search": ["default.svc.cluster.local"], "ServerList": ["10.96.0.10"]}))
    .assert_endpoint(&PLUGIN);
}

#[test]
fn flannel_configs_with_win_overlay_delegates() {
    for (file, service, exceptions) in [
        (
            "testdata/field/microsoft-sdn-overlay.json",
            "11.0.0.0/8",
            ["192.168.0.0/16", "11.0.0.0/8"],
        ),
        (
            "testdata/field/sig-windows-tools-overlay-docker.json",
            "10.96.0.0/12",
            ["10.96.0.0/12", "10.244.0.0/16"],
        ),
    ] {
        FieldConfig::new(
            file,
            Form::Flannel,
            json!([
                route(service),
                nat(&[exceptions[0], exceptions[1], NODE_SUBNET]),
                pa()
            ]),
        )
        .assert_endpoint(&PLUGIN);
    }
}

#[test]
fn sdnoverlay_configs_with_additional_args_sdnroute_and_provider_address() {
    for (file, exceptions) in [
        (
            "testdata/field/sig-windows-tools-sdnoverlay.json",
            ["10.96.0.0/12", "10.244.0.0/16"],
        ),
        (
            "testdata/field/windows-container-networking-flannel-overlay.json",
            ["10.244.0.0/16", "10.96.0.0/12"],
        ),
    ] {
        FieldConfig::new(
            file,
            Form::Flannel,
            json!([
                route("10.96.0.0/12"),
                pa(),
                nat(&[exceptions[0], exceptions[1], NODE_SUBNET])
            ]),
        )
        .assert_endpoint(&PLUGIN);
    }
}

#[test]
fn examples() {
    FieldConfig::new(
        "../examples/win-overlay/win-overlay.conf",
        Form::Plugin,
        json!([
            route("10.96.0.0/12"),
            nat(&["10.244.0.0/16", "10.96.0.0/12", NODE_SUBNET]),
            {"Type": "PortMapping", "Settings": {"Protocol": 6, "InternalPort": 443, "ExternalPort": 8443, "VIP": "10.127.130.38", "Flags": 1}},
            pa()
        ]),
    )
    .runtime_config(
        json!({"portMappings": [{"hostPort": 8443, "containerPort": 443, "protocol": "TCP", "hostIP": "10.127.130.38"}]}),
    )
    .assert_endpoint(&PLUGIN);
    FieldConfig::new(
        "../examples/win-overlay/flannel-vxlan.conflist",
        Form::FlannelConflist,
        json!([
            route("10.96.0.0/12"),
            nat(&["10.96.0.0/12", "10.244.0.0/16", NODE_SUBNET]),
            pa()
        ]),
    )
    .assert_endpoint(&PLUGIN);
}
