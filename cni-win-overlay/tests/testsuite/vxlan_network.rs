//! win-overlay's own errors, through the real binary: the network's VXLAN identity (VNI, port,
//! VSID), the MAC prefix, the provider address HNS has not added yet; STATUS and GC check the
//! VNI as ADD does. Every refused ADD leaves no endpoint and no address.

use std::time::Duration;

use cni_win_conformance::flannel;
use cni_win_conformance::node::Call;
use hns::schema::policy::VxlanPortPolicy;
use hns::schema::{HostComputeNetwork, NetworkPolicy};
use serde_json::{Value, json};

use crate::{NETWORK, PLUGIN, config};

/// Flannel vxlan's network with `vni`.
fn overlay_network(name: &str, subnets: &[(&str, &str)], vni: u32) -> HostComputeNetwork {
    flannel::vxlan(name, subnets, vni)
}

/// ADDs a pod on a node whose network is `network`, with `overrides` on the plain config;
/// asserts error `code` and that nothing was left; returns the message.
fn refused(network: &HostComputeNetwork, overrides: Value, code: u64) -> String {
    let node = PLUGIN.node_without_network("refused");
    // HNS adds a management IP (ProviderAddress) to an overlay network once its new switch has
    // settled; here the network stays as created for as long as the test runs.
    node.engine()
        .set_switch_settle(Duration::from_secs(3600))
        .unwrap();
    node.create_network(network);
    let mut config = config(&node, "1.1.0");
    for (key, value) in overrides.as_object().unwrap() {
        config[key] = value.clone();
    }
    let config = node.with_data_dir(config);
    let msg = node.add("pod", &node.namespace(), &config).error(code);
    assert!(node.endpoints(NETWORK).is_empty(), "{msg}");
    assert!(node.reservations(NETWORK).is_empty(), "{msg}");
    msg
}

fn flannel_network() -> HostComputeNetwork {
    overlay_network(NETWORK, &[("10.244.1.0/24", "10.244.1.1")], 4096)
}

#[test]
fn a_vni_mismatch_is_invalid_config_with_both_values() {
    let other_vni = overlay_network(NETWORK, &[("10.244.1.0/24", "10.244.1.1")], 4097);
    let msg = refused(&other_vni, json!({}), 7);
    assert!(
        msg.contains("VSID 4097") && msg.contains("vni is 4096"),
        "{msg}"
    );
    // The config may name the network's VNI.
    let node = PLUGIN.node_without_network("vni");
    node.create_network(&other_vni);
    let mut config = config(&node, "1.1.0");
    config["vni"] = json!(4097);
    node.add("pod", &node.namespace(), &config).result();
}

#[test]
fn a_vni_below_4096_is_invalid_config() {
    let msg = refused(&flannel_network(), json!({"vni": 1}), 7);
    assert!(msg.contains("vni: 1") && msg.contains("4096"), "{msg}");
}

#[test]
fn a_vxlan_port_mismatch_is_invalid_config_with_both_values() {
    let mut network = flannel_network();
    network.policies[0] = NetworkPolicy::VxlanPort(VxlanPortPolicy { port: 8472 });
    let msg = refused(&network, json!({}), 7);
    assert!(msg.contains("8472") && msg.contains("4789"), "{msg}");
    let msg = refused(&flannel_network(), json!({"vxlanPort": 8472}), 7);
    assert!(
        msg.contains("port 4789") && msg.contains("vxlanPort is 8472"),
        "{msg}"
    );
}

#[test]
fn a_network_without_vsid_is_not_a_vxlan_overlay() {
    let mut network = flannel_network();
    for subnet in network.ipams.iter_mut().flat_map(|ipam| &mut ipam.subnets) {
        subnet.policies.clear();
    }
    let msg = refused(&network, json!({}), 7);
    assert!(msg.contains("VSID"), "{msg}");
}

#[test]
fn a_bad_mac_prefix_is_invalid_config_naming_the_key() {
    for prefix in ["0E2A", "0E-2", "ZZ-2A", "01-00", "0E-2A-00"] {
        let msg = refused(&flannel_network(), json!({"endpointMacPrefix": prefix}), 7);
        assert!(
            msg.contains("endpointMacPrefix") && msg.contains(prefix),
            "{msg}"
        );
    }
}

#[test]
fn a_network_without_provider_address_yet_is_try_again_later() {
    let mut network = flannel_network();
    network
        .policies
        .retain(|policy| !matches!(policy, NetworkPolicy::ProviderAddress(_)));
    let msg = refused(&network, json!({}), 11);
    assert!(
        msg.contains("ProviderAddress") && msg.contains("flanneld"),
        "{msg}"
    );
}

#[test]
fn status_is_not_ready_while_the_network_has_another_vni() {
    let node = PLUGIN.node_without_network("status");
    node.create_network(&overlay_network(
        NETWORK,
        &[("10.244.1.0/24", "10.244.1.1")],
        5000,
    ));
    let config = config(&node, "1.1.0");
    let msg = node.run(&Call::network("STATUS", &config)).error(50);
    assert!(msg.contains("VSID 5000"), "{msg}");
}

#[test]
fn status_and_gc_check_the_vni_as_add_does() {
    let node = PLUGIN.node_without_network("status-vni");
    node.create_network(&flannel_network());
    let mut config = node.with_data_dir(config(&node, "1.1.0"));
    config["cni.dev/valid-attachments"] = json!([]);
    for (vni, code, needle) in [(1, 7, "vni: 1"), (4097, 50, "VSID 4096")] {
        config["vni"] = json!(vni);
        let msg = node.run(&Call::network("STATUS", &config)).error(code);
        assert!(msg.contains(needle), "STATUS vni {vni}: {msg}");
        let msg = node.run(&Call::network("GC", &config)).error(7);
        assert!(msg.contains(needle), "GC vni {vni}: {msg}");
    }
}
