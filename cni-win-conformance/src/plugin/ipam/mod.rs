//! What a config's `ipam` may not be: a range outside the HNS network's subnet, or a plugin
//! that leads back into an HNS plugin ([`delegation_loops`]).

#[cfg(target_os = "linux")]
pub mod delegation_loops;

use serde_json::json;

use super::Plugin;
use crate::node::Call;

/// The network is 10.244.1.0/24: HNS refuses every address of 10.244.2.0/24, so STATUS must not
/// say ready, and ADD must fail before host-local reserves one, naming both subnets.
pub fn a_range_outside_the_hns_subnet_is_refused_before_anything_is_allocated(plugin: &Plugin) {
    let node = plugin.node("outside-subnet");
    let mut config = plugin.config(&node, "1.1.0");
    config["ipam"]["subnet"] = json!("10.244.2.0/24");
    let msg = node.run(&Call::network("STATUS", &config)).error(50);
    assert!(
        msg.contains("10.244.2.0/24") && msg.contains("10.244.1.0/24"),
        "{msg}"
    );
    let msg = node.add("pod", &node.namespace(), &config).error(7);
    assert!(
        msg.contains("ipam subnet 10.244.2.0/24 is not inside HNS network")
            && msg.contains("10.244.1.0/24"),
        "{msg}"
    );
    assert!(node.endpoints(plugin.network).is_empty());
    assert!(node.reservations(plugin.network).is_empty());
}
