//! win-overlay's own life-cycle assertions: in every spec version the pod gets the HNS gateway
//! (.1) and the prefix+IPv4 MAC; the endpoint carries the provider address, the ipMasq
//! exception and port mappings; dual-stack where HNS supports it; the call budgets with 1 and
//! 501 endpoints. The shared ones are the HNS catalogue's.
#![cfg(not(windows))] // the HCN emulator these tests run on is Linux-only

mod common;

use cni_win_conformance::node::policy::{nat, provider_address, route};
use cni_win_conformance::node::{Budget, first_address};
use common::{NETWORK, Node, PLUGIN, PROVIDER_ADDRESS, config, overlay_network};
use serde_json::{Value, json};

/// The MAC win-overlay gives the pod at 10.244.1.`last`.
fn mac(last: u8) -> String {
    format!("0E-2A-0A-F4-01-{last:02X}")
}

#[test]
fn add_check_del_in_every_version() {
    let node = common::node("versions");
    node.in_every_version(
        NETWORK,
        "10.244.1.1",
        |version| config(&node, version),
        |_, _, result| {
            let (address, _) = first_address(result);
            if result.get("ips").is_some() {
                assert_eq!(
                    result["routes"][0],
                    json!({"dst": "0.0.0.0/0", "gw": "10.244.1.1"})
                );
                let last: u8 = address.split(['.', '/']).nth(3).unwrap().parse().unwrap();
                assert_eq!(result["interfaces"][0]["mac"], mac(last), "{result}");
            }
        },
    );
}

#[test]
fn the_endpoint_is_what_the_config_and_the_network_say() {
    let node = common::node("endpoint");
    let netns = node.namespace();
    let mut config = config(&node, "1.0.0");
    config["endpointMacPrefix"] = json!("0a-58");
    config["runtimeConfig"] = json!({
        "portMappings": [{"HostPort": 8080, "ContainerPort": 80, "Protocol": "tcp"}],
        "dns": {"Servers": ["10.96.0.53"], "Searches": ["default.svc.cluster.local"]}
    });
    let result = node.add("web", &netns, &config).result();
    let endpoint = serde_json::to_value(node.endpoint("web_flannel.4096")).unwrap();
    assert_eq!(
        endpoint["Policies"],
        json!([
            route("10.96.0.0/12"),
            nat(&["10.244.0.0/16", "10.96.0.0/12", "10.244.1.0/24"]),
            {"Type": "PortMapping", "Settings": {"Protocol": 6, "InternalPort": 80, "ExternalPort": 8080}},
            provider_address(PROVIDER_ADDRESS)
        ])
    );
    assert_eq!(endpoint["MacAddress"], "0A-58-0A-F4-01-02");
    assert_eq!(result["interfaces"][0]["mac"], "0A-58-0A-F4-01-02");
    assert_eq!(
        endpoint["Routes"],
        json!([{"NextHop": "10.244.1.1", "DestinationPrefix": "0.0.0.0/0"}])
    );
    assert_eq!(
        endpoint["Dns"],
        json!({"Search": ["default.svc.cluster.local"], "ServerList": ["10.96.0.53"]})
    );
    // CHECK holds the endpoint to the policies above and to prevResult's MAC.
    config["prevResult"] = result;
    node.check("web", &netns, &config).silent();
    let mut moved = config.clone();
    moved["prevResult"]["interfaces"][0]["mac"] = json!(mac(2));
    let msg = node.check("web", &netns, &moved).error(113);
    assert!(msg.contains("0A-58-0A-F4-01-02"), "{msg}");
}

fn dual_stack_node(label: &str) -> (Node, Value) {
    let node = Node::new(PLUGIN, label);
    node.create_network(&overlay_network(
        NETWORK,
        &[
            ("10.244.1.0/24", "10.244.1.1"),
            ("fd00:10:244:1::/64", "fd00:10:244:1::1"),
        ],
        4096,
    ));
    let mut config = config(&node, "1.0.0");
    config["ipam"] = json!({
        "type": "host-local", "dataDir": node.ipam_dir(),
        "ranges": [[{"subnet": "10.244.1.0/24"}], [{"subnet": "fd00:10:244:1::/64"}]]
    });
    (node, config)
}

#[test]
fn dual_stack_configures_both_families_where_hns_supports_it() {
    let (node, config) = dual_stack_node("dual");
    let netns = node.namespace();
    let result = node.add("pod", &netns, &config).result();
    assert_eq!(
        result["ips"],
        json!([
            {"address": "10.244.1.2/24", "gateway": "10.244.1.1", "interface": 0},
            {"address": "fd00:10:244:1::2/64", "gateway": "fd00:10:244:1::1", "interface": 0}
        ])
    );
    let endpoint = serde_json::to_value(node.endpoint("pod_flannel.4096")).unwrap();
    assert_eq!(
        endpoint["MacAddress"],
        mac(2),
        "the MAC comes from the IPv4 address"
    );
    assert_eq!(
        endpoint["Routes"],
        json!([
            {"NextHop": "10.244.1.1", "DestinationPrefix": "0.0.0.0/0"},
            {"NextHop": "fd00:10:244:1::1", "DestinationPrefix": "::/0"}
        ])
    );
    // ipMasq excepts both of the network's subnets.
    assert_eq!(
        endpoint["Policies"][1],
        nat(&[
            "10.244.0.0/16",
            "10.96.0.0/12",
            "10.244.1.0/24",
            "fd00:10:244:1::/64"
        ])
    );
    node.del("pod", Some(&netns), &config).silent();

    // A host whose HNS lacks dual-stack refuses it by name and version, leaving nothing.
    node.engine()
        .set_version(hns::HnsVersion::new(11, 9))
        .unwrap();
    let msg = node.add("pod", &netns, &config).error(112);
    for needle in ["IPv6", "11.9", "11.10", "22410"] {
        assert!(msg.contains(needle), "{needle}: {msg}");
    }
    assert!(node.reservations(NETWORK).is_empty() && node.endpoints(NETWORK).is_empty());
}

#[test]
fn ipv6_only_is_refused_since_hns_has_no_ipv6_only_overlay() {
    let (node, mut config) = dual_stack_node("v6-only");
    config["ipam"]["ranges"] = json!([[{"subnet": "fd00:10:244:1::/64"}]]);
    let msg = node.add("pod", &node.namespace(), &config).error(7);
    assert!(msg.contains("IPv4"), "{msg}");
    assert!(node.reservations(NETWORK).is_empty() && node.endpoints(NETWORK).is_empty());
}

#[test]
fn call_budgets_do_not_depend_on_the_number_of_endpoints() {
    let node = common::node("budget");
    // The overlay reads the network's policies, which change under an unchanged ID: a warm
    // ADD and CHECK query the network after opening it by its cached ID (one call more than
    // win-bridge), and skip the lookup by name.
    let limits = Budget {
        cold_add: (7, 10),
        add: (6, 9),
        repeated_add: (5, 7),
        check: (4, 6),
        del: (3, 4),
    };
    let (few, _) = node.assert_budgets(NETWORK, &config(&node, "1.1.0"), &limits);
    assert_eq!(
        few, limits,
        "the budgets are exact: a change must update the README"
    );
}

#[test]
fn a_provider_address_changed_under_the_same_network_id_is_read_again() {
    use hns::schema::policy::ProviderAddressPolicy;
    use hns::schema::{ModifyRequest, NetworkPolicy, RequestType};

    let node = common::node("cache-provider-address");
    let config = config(&node, "1.1.0");
    // The first ADD warms the network cache with the network as it is now.
    node.add("first", &node.namespace(), &config).result();
    let policy = |ip: &str| {
        NetworkPolicy::ProviderAddress(ProviderAddressPolicy {
            provider_address: ip.parse().unwrap(),
        })
    };
    let client = node.client();
    let network = client.open_network(node.network_id(NETWORK)).unwrap();
    let (old, new) = (PROVIDER_ADDRESS, "10.127.130.99");
    for (request, ip) in [(RequestType::Remove, old), (RequestType::Add, new)] {
        network
            .modify(&ModifyRequest::policies(request, vec![policy(ip)]))
            .unwrap();
    }
    drop(network);
    node.add("pod", &node.namespace(), &config).result();
    let endpoint = serde_json::to_value(node.endpoint("pod_flannel.4096")).unwrap();
    let policies = endpoint["Policies"].as_array().unwrap();
    assert!(policies.contains(&provider_address(new)), "{policies:?}");
    assert!(!policies.contains(&provider_address(old)), "{policies:?}");
}
