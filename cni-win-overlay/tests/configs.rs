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
#![cfg(not(windows))] // the HCN emulator these tests run on is Linux-only

mod common;

use std::path::Path;

use cni_win_conformance::node::policy::{nat, provider_address, route};
use cni_win_conformance::node::{Node, load_json};
use common::{PROVIDER_ADDRESS, node_with};
use serde_json::{Value, json};

/// How a fixture reaches the plugin.
#[derive(Clone, Copy)]
enum Form {
    /// The file is the plugin's config (host-local pointed at the node's store).
    Plugin,
    /// The file is a flannel config whose delegate Flannel renders for win-overlay.
    Flannel,
    /// The file is a conflist whose first plugin is such a flannel config.
    FlannelConflist,
}

/// One field config or example and the endpoint it must produce.
struct Fixture {
    /// Relative to the crate.
    file: &'static str,
    form: Form,
    /// `runtimeConfig` the runtime adds (port mappings), if any.
    runtime_config: Option<Value>,
    /// The endpoint's policies.
    policies: Value,
    /// The endpoint's DNS, where the fixture's is worth pinning.
    dns: Option<Value>,
}

/// The first pod's address and MAC (host-local skips the gateway .1).
const POD_IP: &str = "10.244.1.2";
const POD_MAC: &str = "0E-2A-0A-F4-01-02";

/// The node's subnet, which `ipMasq` adds to the exceptions.
const NODE_SUBNET: &str = "10.244.1.0/24";

impl Fixture {
    /// The config as the plugin receives it on `node`.
    fn config(&self, node: &Node, raw: Value) -> Value {
        let mut config = match self.form {
            Form::Plugin => node.with_data_dir(raw),
            Form::Flannel => node.rendered_by_flannel(&raw, "win-overlay"),
            Form::FlannelConflist => {
                let mut flannel = raw["plugins"][0].clone();
                flannel["name"] = raw["name"].clone();
                flannel["cniVersion"] = raw["cniVersion"].clone();
                node.rendered_by_flannel(&flannel, "win-overlay")
            }
        };
        if let Some(runtime) = &self.runtime_config {
            config["runtimeConfig"] = runtime.clone();
        }
        config
    }

    /// Runs one pod's ADD, CHECK and DEL on a node whose overlay network is named as the
    /// fixture says and asserts the endpoint HNS received.
    fn assert_endpoint(&self) {
        let raw = load_json(&Path::new(env!("CARGO_MANIFEST_DIR")).join(self.file));
        let node = node_with(raw["name"].as_str().unwrap(), "field");
        let endpoint = node.pod_life_cycle(&self.config(&node, raw)).0;
        let file = self.file;
        assert_eq!(endpoint["MacAddress"], POD_MAC, "{file}");
        assert_eq!(
            endpoint["IpConfigurations"],
            json!([{"IpAddress": POD_IP, "PrefixLength": 24}]),
            "{file}"
        );
        assert_eq!(
            endpoint["Routes"],
            json!([{"NextHop": "10.244.1.1", "DestinationPrefix": "0.0.0.0/0"}]),
            "{file}"
        );
        assert_eq!(endpoint["Policies"], self.policies, "{file}");
        if let Some(dns) = &self.dns {
            assert_eq!(&endpoint["Dns"], dns, "{file}");
        }
    }
}

fn pa() -> Value {
    provider_address(PROVIDER_ADDRESS)
}

fn fixture(file: &'static str, form: Form, policies: Value) -> Fixture {
    Fixture {
        file,
        form,
        runtime_config: None,
        policies,
        dns: None,
    }
}

#[test]
fn reference_samples() {
    Fixture {
        dns: Some(json!({"Search": ["svc.cluster.local"], "ServerList": ["11.0.0.10"]})),
        ..fixture(
            "testdata/field/reference-sample.json",
            Form::Plugin,
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
            ]),
        )
    }
    .assert_endpoint();
    // Its own ProviderAddress is kept once; port mappings work (the reference ignores them).
    Fixture {
        runtime_config: Some(
            json!({"portMappings": [{"hostPort": 8080, "containerPort": 80, "protocol": "udp"}]}),
        ),
        ..fixture(
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
    }
    .assert_endpoint();
}

#[test]
fn flannels_rendered_vxlan_delegate() {
    Fixture {
        dns: Some(json!({"Search": ["default.svc.cluster.local"], "ServerList": ["10.96.0.10"]})),
        ..fixture(
            "testdata/field/flannel-rendered-vxlan-delegate.json",
            Form::Plugin,
            json!([
                route("10.96.0.0/12"),
                nat(&["10.244.0.0/16", "10.96.0.0/12", NODE_SUBNET]),
                pa()
            ]),
        )
    }
    .assert_endpoint();
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
        fixture(
            file,
            Form::Flannel,
            json!([
                route(service),
                nat(&[exceptions[0], exceptions[1], NODE_SUBNET]),
                pa()
            ]),
        )
        .assert_endpoint();
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
        fixture(
            file,
            Form::Flannel,
            json!([
                route("10.96.0.0/12"),
                pa(),
                nat(&[exceptions[0], exceptions[1], NODE_SUBNET])
            ]),
        )
        .assert_endpoint();
    }
}

#[test]
fn examples() {
    Fixture {
        runtime_config: Some(
            json!({"portMappings": [{"hostPort": 8443, "containerPort": 443, "protocol": "TCP", "hostIP": "10.127.130.38"}]}),
        ),
        ..fixture(
            "../examples/win-overlay/win-overlay.conf",
            Form::Plugin,
            json!([
                route("10.96.0.0/12"),
                nat(&["10.244.0.0/16", "10.96.0.0/12", NODE_SUBNET]),
                {"Type": "PortMapping", "Settings": {"Protocol": 6, "InternalPort": 443, "ExternalPort": 8443, "VIP": "10.127.130.38", "Flags": 1}},
                pa()
            ]),
        )
    }
    .assert_endpoint();
    fixture(
        "../examples/win-overlay/flannel-vxlan.conflist",
        Form::FlannelConflist,
        json!([
            route("10.96.0.0/12"),
            nat(&["10.96.0.0/12", "10.244.0.0/16", NODE_SUBNET]),
            pa()
        ]),
    )
    .assert_endpoint();
}
