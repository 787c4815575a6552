//! A pod the reference win-overlay attached before the node switched: its endpoint in the
//! reference's V2 overlay layout (user policies, ProviderAddress, then a separate OutBoundNAT
//! for `ipMasq`; the MAC `0E-2A-` + the address in lower-case hex; the HNS subnet's gateway)
//! goes through CHECK, a repeated ADD and DEL of cni-win's win-overlay. The shared behaviour
//! (GC, the fallbacks' call counts) is win-bridge's `upgrade` test and the conformance case
//! `hns.upgrade.reference-pod`.
#![cfg(not(windows))] // the HCN emulator these tests run on is Linux-only

mod common;

use cni_win_conformance::node::policy;
use common::{NETWORK, PROVIDER_ADDRESS, config};
use serde_json::json;

#[test]
fn a_reference_overlay_pod_is_checked_adopted_and_deleted() {
    let node = common::node("upgrade");
    let config = config(&node, "1.0.0");
    let netns = node.namespace();
    let name = format!("old_{NETWORK}");

    // The reference's host-local reservation and V2 ADD.
    let store = node.ipam_dir().join(NETWORK);
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(store.join("10.244.1.10"), "old\r\neth0").unwrap();
    // The config's two policies as given, then ProviderAddress and the ipMasq exception.
    let policies = [
        policy::nat(&["10.244.0.0/16", "10.96.0.0/12"]),
        policy::route("10.96.0.0/12"),
        policy::provider_address(PROVIDER_ADDRESS),
        policy::nat(&["10.244.1.0/24"]),
    ];
    let network = node.network_id(NETWORK);
    let document = json!({
        "SchemaVersion": {"Major": 2, "Minor": 0},
        "Name": name,
        "HostComputeNetwork": network.to_string(),
        "Policies": policies,
        "IpConfigurations": [{"IpAddress": "10.244.1.10"}],
        "Dns": {"Search": ["svc.cluster.local"], "ServerList": ["10.96.0.10"]},
        "Routes": [{"NextHop": "10.244.1.1", "DestinationPrefix": "0.0.0.0/0"}],
        "MacAddress": "0E-2A-0a-f4-01-0a"
    });
    let endpoint = node.raw_endpoint(NETWORK, &document, &netns);
    let printed = json!({
        "cniVersion": "1.0.0",
        "interfaces": [{"name": name, "mac": "0E-2A-0a-f4-01-0a"}],
        "ips": [{"address": "10.244.1.10/24", "gateway": "10.244.1.1"}],
        "dns": {"nameservers": ["10.96.0.10"], "search": ["svc.cluster.local"]}
    });

    let mut checked = config.clone();
    checked["prevResult"] = printed;
    node.check("old", &netns, &checked).silent();

    let result = node.add("old", &netns, &config).result();
    assert_eq!(result["ips"][0]["address"], "10.244.1.10/24");
    assert_eq!(result["ips"][0]["gateway"], "10.244.1.1");
    assert_eq!(node.endpoints(NETWORK), vec![endpoint]);
    assert_eq!(node.reservations(NETWORK), ["10.244.1.10"]);
    checked["prevResult"] = result;
    node.check("old", &netns, &checked).silent();

    node.del("old", Some(&netns), &config).silent();
    assert!(node.endpoints(NETWORK).is_empty());
    assert!(node.reservations(NETWORK).is_empty());
}
