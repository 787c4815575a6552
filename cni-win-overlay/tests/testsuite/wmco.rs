//! Policies as the field writes them, through a pod's whole life (ADD, CHECK, DEL) on an
//! emulated node, asserted on what HNS received.
//!
//! OpenShift's Windows Machine Config Operator writes win-overlay configs (`apiVersion: 2`)
//! whose policies use camelCase keys (older releases PascalCase, with `SDNROUTE`), with V1's
//! `exceptionList` and an SDNRoute's keys inside an OutBoundNAT's V2 settings. The reference
//! plugin decodes each `value` into hcsshim's `EndpointPolicy` (keys matched regardless of
//! case) and sends `Type` and `Settings` to HNS as written; HNS ignores the settings keys it
//! does not know. cni-win does the same: a policy with such keys goes to HNS as written (not
//! merged into the plugin's OutBoundNAT), with a warning naming each key; one whose keys only
//! differ in case is read as its typed policy. Fixtures (`testdata/field/openshift-wmco-*`)
//! are written from those shapes.

use cni_win_conformance::flannel::PROVIDER_ADDRESS;
use cni_win_conformance::node::policy::{nat, provider_address, route};
use cni_win_conformance::node::{Node, load_json};
use hns::schema::{EndpointPolicy, ModifyRequest, RequestType};
use serde_json::{Value, json};

use crate::PLUGIN;

fn field(name: &str) -> Value {
    load_json(&PLUGIN.testdata("field").join(name))
}

/// A node whose overlay network is WMCO's.
fn node_with(label: &str) -> Node {
    PLUGIN.node_with(WMCO_NETWORK, label)
}

/// The WMCO overlay network's name.
const WMCO_NETWORK: &str = "OVNKubernetesHybridOverlayNetwork";

#[test]
fn openshift_wmco_configs_run_with_their_policies_sent_as_written() {
    // camelCase keys throughout.
    let node = node_with("wmco-camel");
    let config = node.with_data_dir(field("openshift-wmco-camelcase.json"));
    let (endpoint, log) = node.pod_life_cycle(&config);
    assert_eq!(
        endpoint["Policies"],
        json!([
            {"Type": "OutBoundNAT", "Settings": {"exceptionList": ["172.30.0.0/16"], "destinationPrefix": "", "needEncap": false}},
            {"Type": "SDNRoute", "Settings": {"exceptionList": [], "destinationPrefix": "172.30.0.0/16", "needEncap": true}},
            provider_address(PROVIDER_ADDRESS)
        ])
    );
    for warning in [
        "policies[0]: `exceptionList` is not a V2 OutBoundNAT key; HNS ignores it; did you mean `Exceptions`?",
        "policies[0]: `needEncap` is not a V2 OutBoundNAT key; HNS ignores it",
        "policies[1]: `exceptionList` is not a V2 SDNRoute key; HNS ignores it",
        "policies[0]: the OutBoundNAT policy goes to HNS as written",
    ] {
        assert!(log.contains(warning), "{warning}\n{log}");
    }
    assert!(!log.contains("policies[2]"), "{log}");

    // PascalCase keys, `SDNROUTE`, a V1 key inside V2 settings.
    let node = node_with("wmco-pascal");
    let mut config = field("openshift-wmco-pascalcase.json");
    config["Ipam"]["dataDir"] = json!(node.ipam_dir());
    let (endpoint, log) = node.pod_life_cycle(&config);
    assert_eq!(
        endpoint["Policies"],
        json!([
            {"Type": "OutBoundNAT", "Settings": {"ExceptionList": ["172.30.0.0/16"], "DestinationPrefix": "", "NeedEncap": false}},
            {"Type": "SDNROUTE", "Settings": {"ExceptionList": [], "DestinationPrefix": "172.30.0.0/16", "NeedEncap": true}},
            provider_address(PROVIDER_ADDRESS)
        ])
    );
    assert!(
        log.contains("`ExceptionList` is not a V2 OutBoundNAT key; HNS ignores it; did you mean `Exceptions`?"),
        "{log}"
    );
}

#[test]
fn envelope_and_settings_keys_are_matched_in_any_case() {
    let node = node_with("any-case");
    let mut config = node.with_data_dir(field("openshift-wmco-camelcase.json"));
    config["ipMasq"] = json!(true);
    config["policies"] = json!([
        {"Name": "EndpointPolicy", "Value": {"TYPE": "outboundnat", "settings": {"exceptions": ["172.30.0.0/16"]}}},
        {"NAME": "endpointpolicy", "value": {"Type": "sdnroute", "SETTINGS": {"destinationprefix": "172.30.0.0/16", "needEncap": true}}},
        {"name": "EndpointPolicy", "VALUE": {"type": "PROVIDERADDRESS", "Settings": {"providerAddress": PROVIDER_ADDRESS}}}
    ]);
    let (endpoint, log) = node.pod_life_cycle(&config);
    // Typed: the exceptions merge with ipMasq's, the provider address is not repeated.
    assert_eq!(
        endpoint["Policies"],
        json!([
            route("172.30.0.0/16"),
            provider_address(PROVIDER_ADDRESS),
            nat(&["172.30.0.0/16", "10.244.1.0/24"])
        ])
    );
    assert!(!log.contains("HNS ignores"), "{log}");
}

/// CHECK holds the endpoint to what its policies do, not to how they were spelt: HNS may
/// report a policy sent with keys it ignores in its own spelling, without them.
#[test]
fn check_compares_policies_by_what_hns_applies() {
    let node = node_with("check-effect");
    let mut config = node.with_data_dir(field("openshift-wmco-camelcase.json"));
    config["cniVersion"] = json!("1.0.0");
    let netns = node.namespace();
    config["prevResult"] = node.add("pod", &netns, &config).result();
    let endpoint = node.endpoint(&format!("pod_{WMCO_NETWORK}"));
    let client = node.client();
    let open = client.open_endpoint(endpoint.id).unwrap();
    let policies = |json: Value| -> Vec<EndpointPolicy> { serde_json::from_value(json).unwrap() };
    let as_sent = endpoint.policies[..2].to_vec();
    let as_hns_spells_them = policies(json!([
        {"Type": "OutBoundNAT", "Settings": {}},
        route("172.30.0.0/16")
    ]));
    open.modify(&ModifyRequest::policies(RequestType::Remove, as_sent))
        .unwrap();
    open.modify(&ModifyRequest::policies(
        RequestType::Add,
        as_hns_spells_them.clone(),
    ))
    .unwrap();
    node.check("pod", &netns, &config).silent();

    open.modify(&ModifyRequest::policies(
        RequestType::Remove,
        as_hns_spells_them[1..].to_vec(),
    ))
    .unwrap();
    let msg = node.check("pod", &netns, &config).error(113);
    assert!(
        msg.contains("SDNRoute") && msg.contains("172.30.0.0/16"),
        "{msg}"
    );
}
