//! A pod's ADD, CHECK and DEL in every spec version, and what they cost in raw HCN calls
//! whatever the number of endpoints on the node.

use std::net::Ipv4Addr;

use serde_json::json;

use super::Plugin;
use crate::node::first_address;

/// In every spec version the pod gets an address of the node's subnet that is none of the
/// gateways, the plugin's gateway as its default route, the config's DNS, an interface in its
/// namespace with the MAC the plugin gives it; CHECK accepts it and DEL leaves nothing.
pub fn add_check_del_in_every_version(plugin: &Plugin) {
    let node = plugin.node("versions");
    let gateway = plugin.gateway();
    node.in_every_version(
        plugin.network,
        &gateway,
        |version| plugin.config(&node, version),
        |_, netns, result| {
            let (address, _) = first_address(result);
            assert!(address.ends_with("/24"), "{address}");
            for taken in ["10.244.1.1/24".to_owned(), format!("{gateway}/24")] {
                assert_ne!(
                    address, taken,
                    "host-local must never hand out the gateways"
                );
            }
            assert_eq!(result["dns"]["nameservers"], json!(["10.96.0.10"]));
            if result.get("ips").is_some() {
                let interface = &result["interfaces"][0];
                assert_eq!(interface["name"], "eth0");
                assert_eq!(interface["sandbox"], netns);
                assert!(interface["mac"].as_str().unwrap().contains('-'));
                assert_eq!(result["ips"][0]["interface"], 0);
                assert_eq!(
                    result["routes"][0],
                    json!({"dst": "0.0.0.0/0", "gw": gateway})
                );
                if let Some(mac) = plugin.mac {
                    let ip: Ipv4Addr = address.split('/').next().unwrap().parse().unwrap();
                    assert_eq!(interface["mac"], mac(ip), "{result}");
                }
            }
        },
    );
}

/// A pod's ADD (on a cold and a warm network cache), repeated ADD, CHECK and DEL cost the
/// plugin's budget exactly, with 1 endpoint on the node and with 501.
pub fn call_budgets_do_not_depend_on_the_number_of_endpoints(plugin: &Plugin) {
    let node = plugin.node("budget");
    let limits = plugin.budget;
    let (few, _) = node.assert_budgets(plugin.network, &plugin.config(&node, "1.1.0"), &limits);
    assert_eq!(
        few, limits,
        "the budgets are exact: a change must update docs/performance.md"
    );
}
