//! win-overlay listed directly in a conflist with Flannel's `subnetFile` (Flannel-native mode):
//! `ipMasq` from `FLANNEL_IPMASQ` unless the config sets it, and STATUS as the node's readiness
//! gate while flanneld and HNS set the network up. What both plugins do in this mode is the
//! suite's ([`cni_win_conformance::plugin::flannel_native`]).

use std::time::Duration;

use cni_win_conformance::flannel::{self, PROVIDER_ADDRESS, VNI};
use cni_win_conformance::node::policy::{nat, provider_address, route};
use cni_win_conformance::node::{Call, Node};
use cni_win_conformance::plugin::flannel_native::{native, subnet_env};
use hns::schema::NetworkPolicy;
use serde_json::{Value, json};

use crate::{NETWORK, PLUGIN};

/// What flanneld's vxlan backend writes for this node (`FLANNEL_IPMASQ` as given).
fn flanneld_writes(subnet: &str, ip_masq: &str) -> String {
    format!(
        "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET={subnet}\nFLANNEL_MTU=1450\n\
         FLANNEL_IPMASQ={ip_masq}\n"
    )
}

fn write_subnet_env(node: &Node, text: &str) {
    std::fs::write(subnet_env(node), text).unwrap();
}

/// The vxlan example's plugin as libcni hands it over, its Flannel files and host-local's
/// store under the node's dir.
fn native_example(node: &Node) -> Value {
    native(&PLUGIN, node)
}

fn policies(node: &Node, container_id: &str) -> Value {
    serde_json::to_value(node.endpoint(&PLUGIN.endpoint_name(container_id))).unwrap()["Policies"]
        .clone()
}

#[test]
fn the_native_example_takes_ip_masq_from_subnet_env_unless_the_config_sets_it() {
    let node = crate::node("native-example");
    let mut config = native_example(&node);
    let service = route("10.96.0.0/12");
    let pa = provider_address(PROVIDER_ADDRESS);

    write_subnet_env(&node, &flanneld_writes("10.244.1.1/24", "true"));
    let result = node.add("masq", &node.namespace(), &config).result();
    assert_eq!(result["ips"][0]["address"], "10.244.1.2/24");
    assert_eq!(
        policies(&node, "masq"),
        json!([
            service,
            nat(&["10.96.0.0/12", "10.244.0.0/16", "10.244.1.0/24"]),
            pa
        ])
    );

    write_subnet_env(&node, &flanneld_writes("10.244.1.1/24", "false"));
    node.add("plain", &node.namespace(), &config).result();
    assert_eq!(
        policies(&node, "plain"),
        json!([service, nat(&["10.96.0.0/12", "10.244.0.0/16"]), pa])
    );

    config["ipMasq"] = json!(true);
    node.add("explicit", &node.namespace(), &config).result();
    assert_eq!(policies(&node, "explicit"), policies(&node, "masq"));
}

#[test]
fn status_is_ready_only_when_an_add_would_succeed() {
    let node = PLUGIN.node_without_network("gate");
    let config = native_example(&node);
    let status = || node.run(&Call::network("STATUS", &config));

    // Boot: neither subnet.env nor the network yet.
    let msg = status().error(50);
    assert!(
        msg.contains("subnet.env") && msg.contains("does not exist"),
        "{msg}"
    );
    write_subnet_env(&node, &flanneld_writes("10.244.1.1/30", "true"));
    let msg = status().error(50);
    assert!(
        msg.contains("flannel.4096") && msg.contains("does not exist"),
        "{msg}"
    );

    // flanneld created the network; HNS has not added the provider address yet (its new switch
    // settles only after the test).
    node.engine()
        .set_switch_settle(Duration::from_secs(3600))
        .unwrap();
    let mut network = flannel::vxlan(NETWORK, &[("10.244.1.0/24", "10.244.1.1")], VNI);
    network
        .policies
        .retain(|policy| !matches!(policy, NetworkPolicy::ProviderAddress(_)));
    let id = node.create_network(&network);
    let msg = status().error(50);
    assert!(msg.contains("ProviderAddress"), "{msg}");
    node.add("early", &node.namespace(), &config).error(11);

    node.client().delete_network(id).unwrap();
    node.create_network(&flannel::vxlan(
        NETWORK,
        &[("10.244.1.0/24", "10.244.1.1")],
        VNI,
    ));
    status().silent();

    // The /30 holds one pod besides the gateway. A full range fails new pods, not the node:
    // STATUS stays ready unless the ipam section (kept beside subnet.env's ranges) opts in.
    node.add("pod", &node.namespace(), &config).result();
    status().silent();
    node.add("next", &node.namespace(), &config).error(100);
    let mut strict = config.clone();
    strict["ipam"]["notReadyWhenFull"] = json!(true);
    let msg = node.run(&Call::network("STATUS", &strict)).error(50);
    assert!(
        msg.contains("10.244.1.0/30") && msg.contains("notReadyWhenFull"),
        "{msg}"
    );
}
