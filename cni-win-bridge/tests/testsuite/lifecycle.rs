//! win-bridge's own life-cycle assertions (the endpoint document, second interfaces, reference
//! endpoints); the shared ones are the HNS catalogue's and the suite's (every spec version).

use cni_win_conformance::node::Call;
use serde_json::json;

use crate::{NETWORK, config};

#[test]
fn the_endpoint_is_what_the_config_says() {
    let node = crate::node("endpoint");
    let netns = node.namespace();
    let mut config = config(&node, "1.0.0");
    config["ipMasqNetwork"] = json!("10.244.0.0/16");
    config["runtimeConfig"] = json!({
        "portMappings": [{"HostPort": 8080, "ContainerPort": 80, "Protocol": "tcp", "HostIP": ""}],
        "dns": {"Servers": ["10.96.0.53"], "Searches": ["default.svc.cluster.local"], "Options": ["ndots:5"]}
    });
    config["optionalFlags"] = json!({"localRoutedPortMapping": true});
    let result = node.add("web", &netns, &config).result();
    let endpoint = node.endpoint("web_cbr0");
    let settings = serde_json::to_value(&endpoint).unwrap();
    assert_eq!(
        settings["Policies"],
        json!([
            {"Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": true}},
            {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16", "10.96.0.0/12"]}},
            {"Type": "PortMapping", "Settings": {"Protocol": 6, "InternalPort": 80, "ExternalPort": 8080, "Flags": 1}}
        ])
    );
    assert_eq!(
        settings["Dns"],
        json!({"Search": ["default.svc.cluster.local"], "ServerList": ["10.96.0.53"], "Options": ["ndots:5"]})
    );
    assert_eq!(
        settings["Routes"],
        json!([{"NextHop": "10.244.1.2", "DestinationPrefix": "0.0.0.0/0"}])
    );
    assert_eq!(settings["IpConfigurations"][0]["PrefixLength"], 24);
    assert_eq!(endpoint.host_compute_namespace.to_string(), netns);
    assert_eq!(
        result["interfaces"][0]["mac"],
        endpoint.mac_address.unwrap().to_string()
    );
    assert_eq!(result["dns"]["options"], json!(["ndots:5"]));
}

#[test]
fn a_second_interface_gets_its_own_endpoint() {
    let node = crate::node("ifname");
    let config = config(&node, "1.0.0");
    let netns = node.namespace();
    let eth0 = node.add("pod", &netns, &config).result();
    let ns2 = node.namespace();
    let call = |command| Call {
        command,
        container_id: "pod",
        ifname: "eth1",
        netns: Some(&ns2),
        config: &config,
    };
    let eth1 = node.run(&call("ADD")).result();
    assert_ne!(eth0["ips"][0]["address"], eth1["ips"][0]["address"]);
    node.endpoint("pod_cbr0@eth1");
    node.run(&call("DEL")).silent();
    // eth1's DEL left eth0 alone.
    assert_eq!(node.endpoints(NETWORK).len(), 1);
    node.endpoint("pod_cbr0");
}

#[test]
fn del_removes_an_endpoint_the_reference_plugin_made() {
    let node = crate::node("reference");
    let config = config(&node, "1.0.0");
    let id = node.network_id(NETWORK);
    // The reference names it <container>_<network> and lets HNS choose the ID.
    let client = node.client();
    let network = client.open_network(id).unwrap();
    let settings = hns::schema::HostComputeEndpoint {
        name: "legacy_cbr0".into(),
        ip_configurations: vec![hns::schema::IpConfig {
            ip_address: "10.244.1.77".parse().unwrap(),
            prefix_length: None,
        }],
        ..Default::default()
    };
    network.create_endpoint(hns::Guid::ZERO, &settings).unwrap();
    drop(network);
    node.del("legacy", None, &config).silent();
    assert!(node.endpoints(NETWORK).is_empty());
}
