//! The V1 view of a network agrees with the V2 view of the same object.
//!
//! Every network document in `tests/data` (flanneld's V1 `cbr0` create and its V2 vxlan
//! create) is created through the API it was written for, and the network is then read
//! through both: `GET /networks/<id>` and `GET /networks/` against `HcnQueryNetworkProperties`,
//! field by field. The V1 reply's shape is checked against `hns-v1-overlay-network-reply.json`:
//! the keys of a V1 `GET /networks` reply captured on a Windows Server 2019 node (HNS 9.2,
//! `Version` 38654705666) for an Overlay network made with a `VSID` subnet policy, logged by
//! hns.psm1's `Invoke-HNSRequest`; its values are replaced, its keys are as captured.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::common::{TempDir, client, document, hns_call};
use hns::schema::{HostComputeNetwork, NetworkPolicy, SubnetPolicy};
use hns::{Client, Guid, RawHcn};
use hns_emulator::Emulator;
use serde_json::Value;

/// Keys of the captured reply that HNS keeps for itself and the emulator has no state for.
const NOT_MODELLED: &[&str] = &[
    "ActivityId",
    "AdditionalParams",
    "CurrentEndpointCount",
    "DNSServerCompartment",
    "Extensions",
    "Flags",
    "Health",
    "IPv6",
    "LayeredOn",
    "MaxConcurrentEndpoints",
    "Resources",
    "State",
    "TotalEndpoints",
    "Version",
];
const SUBNET_NOT_MODELLED: &[&str] = &["AdditionalParams", "Health", "ObjectType", "State"];
/// hcsshim's `HNSNetwork` fields (`internal/hns/hnsnetwork.go`) the captured network happens
/// not to carry: it has no adapter name, source MAC, DNS settings or automatic DNS.
const HCSSHIM_ONLY: &[&str] = &[
    "NetworkAdapterName",
    "SourceMac",
    "DNSSuffix",
    "DNSServerList",
    "AutomaticDNS",
];

fn v1(client: &Client<Emulator>, method: &str, path: &str, body: &str) -> Value {
    let reply = hns_call(client, method, path, body).unwrap();
    assert_eq!(reply["Success"], true, "{method} {path}: {reply}");
    reply["Output"].clone()
}

/// The network documents in `tests/data`: objects with a `Name` and a `Type`; those with V1
/// `Subnets` are V1 creates.
fn network_documents() -> Vec<(String, String)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut documents = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(text) = name.ends_with(".json").then(|| document(&name)) else {
            continue;
        };
        let Ok(Value::Object(object)) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        // A reply, not a request: it carries what HNS fills in.
        if object.contains_key("ID") {
            continue;
        }
        if object.contains_key("Name") && object.contains_key("Type") {
            documents.push((name, text));
        }
    }
    documents.sort();
    documents
}

/// Creates `text` through the API it is written for; the new network's ID.
fn create(client: &Client<Emulator>, name: &str, text: &str) -> Guid {
    let value: Value = serde_json::from_str(text).unwrap();
    if value.get("Subnets").is_some() {
        let created = v1(client, "POST", "/networks/", text);
        created["ID"].as_str().unwrap().parse().unwrap()
    } else {
        let raw = client.raw();
        let handle = raw
            .create_network(&Guid::ZERO, text)
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let properties = raw.query_network_properties(&handle, "").unwrap();
        raw.close_network(handle).unwrap();
        serde_json::from_str::<HostComputeNetwork>(&properties)
            .unwrap()
            .id
    }
}

fn keys(object: &Value) -> BTreeSet<String> {
    object.as_object().unwrap().keys().cloned().collect()
}

/// Asserts `view` (V1) says what `network` (V2) says, field by field.
fn assert_agrees(what: &str, view: &Value, network: &HostComputeNetwork) {
    assert_eq!(view["ID"], network.id.to_string(), "{what}");
    assert_eq!(view["Name"], network.name, "{what}");
    assert_eq!(view["Type"], network.network_type.to_string(), "{what}");
    let policy_mac = |pick: fn(&NetworkPolicy) -> Option<String>| network.find_policy(pick);
    let dr_mac = policy_mac(|policy| match policy {
        NetworkPolicy::DrMacAddress(mac) => Some(mac.address.to_string()),
        _ => None,
    });
    assert_eq!(
        view.get("DrMacAddress").and_then(Value::as_str),
        dr_mac.as_deref(),
        "{what}"
    );
    let provider = network.find_policy(|policy| match policy {
        NetworkPolicy::ProviderAddress(address) => Some(address.provider_address.to_string()),
        _ => None,
    });
    if let Some(provider) = provider {
        assert_eq!(view["ManagementIP"], provider, "{what}");
    }
    let pools: Vec<(String, String)> = network
        .mac_pool
        .ranges
        .iter()
        .map(|range| {
            (
                range.start_mac_address.to_string(),
                range.end_mac_address.to_string(),
            )
        })
        .collect();
    let v1_pools: Vec<(String, String)> = view["MacPools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|pool| {
            (
                pool["StartMacAddress"].as_str().unwrap().to_owned(),
                pool["EndMacAddress"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(v1_pools, pools, "{what}");
    assert_eq!(view["Policies"], Value::Array(Vec::new()), "{what}");

    let subnets: Vec<_> = network.subnets().collect();
    let v1_subnets = view["Subnets"].as_array().unwrap();
    assert_eq!(v1_subnets.len(), subnets.len(), "{what}");
    let mut ids = BTreeSet::new();
    for (v1_subnet, subnet) in v1_subnets.iter().zip(subnets) {
        assert_eq!(
            v1_subnet["AddressPrefix"],
            subnet.ip_address_prefix.to_string(),
            "{what}"
        );
        assert_eq!(
            v1_subnet.get("GatewayAddress").and_then(Value::as_str),
            subnet
                .gateway()
                .map(|gateway| gateway.to_string())
                .as_deref(),
            "{what}"
        );
        let id: Guid = v1_subnet["ID"].as_str().unwrap().parse().unwrap();
        assert!(!id.is_zero() && id != network.id, "{what}: subnet ID {id}");
        assert!(ids.insert(id), "{what}: subnet ID {id} twice");
        let policies = v1_subnet["Policies"].as_array().unwrap();
        assert_eq!(policies.len(), subnet.policies.len(), "{what}");
        for (v1_policy, policy) in policies.iter().zip(&subnet.policies) {
            match policy {
                SubnetPolicy::Vsid(vsid) => {
                    assert_eq!(v1_policy["Type"], "VSID", "{what}");
                    assert_eq!(v1_policy["VSID"], vsid.isolation_id, "{what}");
                }
                SubnetPolicy::Vlan(vlan) => {
                    assert_eq!(v1_policy["Type"], "VLAN", "{what}");
                    assert_eq!(v1_policy["VLAN"], vlan.isolation_id, "{what}");
                }
                other => panic!("{what}: unexpected subnet policy {other:?}"),
            }
        }
    }
}

/// A client of an emulated host whose switch settles at once, so a network's `ManagementIP`
/// is in its views from the start.
fn settled_client(dir: &TempDir) -> Client<Emulator> {
    let client = client(dir);
    client
        .raw()
        .engine()
        .set_switch_settle(Duration::ZERO)
        .unwrap();
    client
}

#[test]
fn the_v1_view_of_every_network_in_the_test_data_agrees_with_its_v2_view() {
    let dir = TempDir::new("v1-view");
    let client = settled_client(&dir);
    let documents = network_documents();
    let names: Vec<&str> = documents.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(
        names,
        [
            "flanneld-host-gw-network.json",
            "flanneld-vxlan-network.json"
        ]
    );
    let mut created = Vec::new();
    for (name, text) in &documents {
        created.push((name, create(&client, name, text)));
    }
    let listed = v1(&client, "GET", "/networks/", "");
    assert_eq!(listed.as_array().unwrap().len(), created.len());
    for (name, id) in created {
        let network = client.open_network(id).unwrap().into_properties();
        let view = v1(&client, "GET", &format!("/networks/{id}"), "");
        assert_agrees(name, &view, &network);
        // The subnet IDs are the same on every read and in the list.
        assert_eq!(view, v1(&client, "GET", &format!("/networks/{id}"), ""));
        let entry = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|entry| entry["ID"] == id.to_string())
            .unwrap();
        assert_eq!(entry, &view, "{name}");
    }
}

#[test]
fn the_v1_view_of_an_overlay_network_has_the_keys_of_a_real_v1_reply() {
    let dir = TempDir::new("v1-view-keys");
    let client = settled_client(&dir);
    let id = create(
        &client,
        "flanneld-vxlan-network.json",
        &document("flanneld-vxlan-network.json"),
    );
    let view = v1(&client, "GET", &format!("/networks/{id}"), "");
    let real: Value = serde_json::from_str(&document("hns-v1-overlay-network-reply.json")).unwrap();

    let real_keys = keys(&real);
    let view_keys = keys(&view);
    let expected: BTreeSet<String> = real_keys
        .iter()
        .filter(|key| !NOT_MODELLED.contains(&key.as_str()))
        .cloned()
        .collect();
    let missing: Vec<_> = expected.difference(&view_keys).collect();
    assert!(missing.is_empty(), "V1 view lacks {missing:?}: {view}");
    let extra: Vec<_> = view_keys
        .iter()
        .filter(|key| !real_keys.contains(*key) && !HCSSHIM_ONLY.contains(&key.as_str()))
        .collect();
    assert!(
        extra.is_empty(),
        "V1 view has keys no V1 reply has: {extra:?}"
    );

    let real_subnet = keys(&real["Subnets"][0]);
    let view_subnet = keys(&view["Subnets"][0]);
    let expected: BTreeSet<String> = real_subnet
        .iter()
        .filter(|key| !SUBNET_NOT_MODELLED.contains(&key.as_str()))
        .cloned()
        .collect();
    assert_eq!(view_subnet, expected, "{view}");
    // The VSID policy in the V1 shape the real reply spells.
    assert_eq!(
        keys(&view["Subnets"][0]["Policies"][0]),
        keys(&real["Subnets"][0]["Policies"][0])
    );
    assert_eq!(view["Subnets"][0]["Policies"][0]["VSID"], 4096);
}
