//! What win-overlay's endpoint takes from the config and the network: the MAC from the prefix
//! and the IPv4 address, the provider address, the ipMasq exception (every subnet of the
//! network) and port mappings; dual-stack where HNS supports it, never IPv6 alone; a provider
//! address changed under the same network ID. The shared life cycle is the HNS catalogue's and
//! the suite's (every spec version, the call budgets).

use std::net::Ipv4Addr;

use cni_win_conformance::flannel::PROVIDER_ADDRESS;
use cni_win_conformance::node::Node;
use cni_win_conformance::node::policy::{nat, provider_address, route};
use serde_json::{Value, json};

use crate::{NETWORK, PLUGIN, config, mac};

/// The MAC win-overlay gives the pod at 10.244.1.`last`.
fn mac_of(last: u8) -> String {
    mac(Ipv4Addr::new(10, 244, 1, last))
}

#[test]
fn the_endpoint_is_what_the_config_and_the_network_say() {
    let node = crate::node("endpoint");
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
    moved["prevResult"]["interfaces"][0]["mac"] = json!(mac_of(2));
    let msg = node.check("web", &netns, &moved).error(113);
    assert!(msg.contains("0A-58-0A-F4-01-02"), "{msg}");
}

fn dual_stack_node(label: &str) -> (Node, Value) {
    let node = PLUGIN.dual_stack_node(label);
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
        mac_of(2),
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
fn a_provider_address_changed_under_the_same_network_id_is_read_again() {
    use hns::schema::policy::ProviderAddressPolicy;
    use hns::schema::{ModifyRequest, NetworkPolicy, RequestType};

    let node = crate::node("cache-provider-address");
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
