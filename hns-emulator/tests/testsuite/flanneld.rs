//! flanneld's Windows backends against the emulator, with the exact documents they send
//! (`tests/data/flanneld-*.json`): host-gw creates `cbr0` through V1 and waits for its
//! `ManagementIP`, then makes and host-attaches `cbr0_ep`; vxlan creates `flannel.4096` through
//! V2 without a `ProviderAddress`, waits for the one HNS adds, reads the DR MAC, and adds its
//! `HostRoute` and `RemoteSubnetRoute` policies.

use std::time::Duration;

use crate::common::{TempDir, bridge, client, document, hns_call};
use hns::schema::policy::ProviderAddressPolicy;
use hns::schema::{HostComputeNetwork, HostComputeQuery, NetworkPolicy, NetworkType};
use hns::{Client, Guid, RawHcn};
use hns_emulator::{Emulator, HostAdapter};
use serde_json::{Value, json};

/// Long enough that a test never sees a new switch settle by itself.
const NEVER: Duration = Duration::from_secs(3600);

fn host(tag: &str, settle: Duration) -> (Client<Emulator>, TempDir) {
    let dir = TempDir::new(tag);
    let client = client(&dir);
    client.raw().engine().set_switch_settle(settle).unwrap();
    (client, dir)
}

fn v1(client: &Client<Emulator>, method: &str, path: &str, body: &str) -> Value {
    let reply = hns_call(client, method, path, body).unwrap();
    assert_eq!(reply["Success"], true, "{method} {path}: {reply}");
    reply["Output"].clone()
}

/// `hcn.GetNetworkByID`, as flanneld's vxlan backend polls it: a filtered enumeration, then
/// open and query.
fn network_by_id(client: &Client<Emulator>, id: &str) -> HostComputeNetwork {
    let filter = json!({ "ID": id }).to_string();
    let query = HostComputeQuery {
        filter,
        ..HostComputeQuery::all()
    };
    let ids: Vec<Guid> =
        serde_json::from_str(&client.raw().enumerate_networks(&query.to_json()).unwrap()).unwrap();
    assert_eq!(ids.len(), 1, "{id}");
    client.open_network(ids[0]).unwrap().into_properties()
}

/// `HcnCreateNetwork` of flanneld's exact vxlan document, then the query hcsshim's `Create`
/// makes: the network as HNS reports it right after creation.
fn create_vxlan_network(client: &Client<Emulator>) -> HostComputeNetwork {
    let raw = client.raw();
    let handle = raw
        .create_network(&Guid::ZERO, &document("flanneld-vxlan-network.json"))
        .unwrap();
    let created = raw.query_network_properties(&handle, "").unwrap();
    raw.close_network(handle).unwrap();
    serde_json::from_str(&created).unwrap()
}

fn provider_address(network: &HostComputeNetwork) -> Option<std::net::IpAddr> {
    network.find_policy(|policy| match policy {
        NetworkPolicy::ProviderAddress(ProviderAddressPolicy { provider_address }) => {
            Some(*provider_address)
        }
        _ => None,
    })
}

#[test]
fn host_gw_creates_cbr0_through_v1_and_gets_its_management_ip_once_the_switch_settled() {
    let (client, _dir) = host("flanneld-host-gw", NEVER);
    // flanneld looks for an existing cbr0 first.
    assert_eq!(v1(&client, "GET", "/networks/", ""), json!([]));
    let created = v1(
        &client,
        "POST",
        "/networks/",
        &document("flanneld-host-gw-network.json"),
    );
    assert_eq!(created["Name"], "cbr0");
    let id = created["ID"].as_str().unwrap().to_owned();
    let path = format!("/networks/{id}");
    // "Waiting to get ManagementIP from HNSNetwork cbr0": the new switch has not settled.
    assert!(created.get("ManagementIP").is_none(), "{created}");
    assert!(v1(&client, "GET", &path, "").get("ManagementIP").is_none());
    client.raw().engine().settle_switch_now().unwrap();
    let network = v1(&client, "GET", &path, "");
    assert_eq!(network["ManagementIP"], "192.168.1.10");
    // The subnet as HNS reports it: with an ID of its own and its (here empty) policies.
    let subnet_id = network["Subnets"][0]["ID"].clone();
    assert!(
        subnet_id.as_str().unwrap().parse::<Guid>().is_ok(),
        "{network}"
    );
    assert_eq!(
        network["Subnets"],
        json!([{"ID": subnet_id, "AddressPrefix": "10.244.1.0/24",
            "GatewayAddress": "10.244.1.1", "Policies": []}])
    );
    assert!(
        network.get("DrMacAddress").is_none(),
        "an L2Bridge has no DR MAC: {network}"
    );
    // The same object through V2.
    let v2 = client.open_network(id.parse().unwrap()).unwrap();
    assert_eq!(v2.properties().network_type, NetworkType::L2Bridge);
    let subnet = v2.properties().subnets().next().unwrap().clone();
    assert_eq!(subnet.gateway(), Some("10.244.1.1".parse().unwrap()));
    drop(v2);

    // cbr0_ep: looked up by name, created on the network, attached to the host.
    let endpoints = v1(&client, "GET", "/endpoints/", "");
    assert_eq!(endpoints, json!([]));
    let body = document("flanneld-host-gw-bridge-endpoint.json").replace("NETWORK_ID", &id);
    let endpoint = v1(&client, "POST", "/endpoints/", &body);
    assert_eq!(endpoint["Name"], "cbr0_ep");
    assert_eq!(endpoint["IPAddress"], "10.244.1.2");
    assert_eq!(endpoint["VirtualNetworkName"], "cbr0");
    let attach = format!("/endpoints/{}/attach", endpoint["ID"].as_str().unwrap());
    let attach_body = document("flanneld-host-gw-host-attach.json");
    let attached = v1(&client, "POST", &attach, &attach_body);
    assert_eq!(attached["State"], 2);
    // flanneld restarted: the attach again is refused with the text flanneld tolerates.
    assert_eq!(
        hns_call(&client, "POST", &attach, &attach_body).unwrap(),
        json!({"Success": false, "Error": "This endpoint is already attached to the switch."})
    );

    // flanneld deletes a cbr0 whose subnet changed; its endpoints go with it.
    v1(&client, "DELETE", &path, "");
    assert!(
        client
            .open_network(id.parse().unwrap())
            .unwrap_err()
            .is_not_found()
    );
    assert_eq!(v1(&client, "GET", "/endpoints/", ""), json!([]));
    assert_eq!(
        hns_call(&client, "DELETE", &path, "").unwrap(),
        json!({"Success": false, "Error": "Element not found."})
    );
}

#[test]
fn a_pre_made_cbr0_reports_the_hosts_address_as_its_management_ip() {
    let (client, _dir) = host("flanneld-pre-made", Duration::ZERO);
    let id = bridge(&client);
    let listed = v1(&client, "GET", "/networks/", "");
    assert_eq!(listed[0]["ID"], id.to_string());
    assert_eq!(listed[0]["ManagementIP"], "192.168.1.10");
    // The host's adapter is a fact of the host: another node, another address.
    client
        .raw()
        .engine()
        .set_adapter(HostAdapter {
            address: "10.0.0.4/24".parse().unwrap(),
            ..HostAdapter::default()
        })
        .unwrap();
    let network = v1(&client, "GET", &format!("/networks/{id}"), "");
    assert_eq!(network["ManagementIP"], "10.0.0.4");
    // A NAT network has an internal switch: no management IP.
    let nat = client
        .create_network(
            Guid::ZERO,
            &crate::common::network_settings(
                "nat",
                NetworkType::Nat,
                "172.20.0.0/16",
                "172.20.0.1",
            ),
        )
        .unwrap()
        .id();
    let nat = v1(&client, "GET", &format!("/networks/{nat}"), "");
    assert!(nat.get("ManagementIP").is_none(), "{nat}");
}

#[test]
fn v1_network_creates_are_checked_as_v2_ones() {
    let (client, _dir) = host("flanneld-v1-refusals", Duration::ZERO);
    let network = document("flanneld-host-gw-network.json");
    v1(&client, "POST", "/networks/", &network);
    let refused = hns_call(&client, "POST", "/networks/", &network).unwrap();
    assert_eq!(refused["Success"], false);
    assert!(
        refused["Error"]
            .as_str()
            .unwrap()
            .starts_with("A network with this name already exists."),
        "{refused}"
    );
    let bad_prefix = json!({"Name": "bad", "Type": "L2Bridge",
        "Subnets": [{"AddressPrefix": "10.245.0.0", "GatewayAddress": "10.245.0.1"}]});
    let refused = hns_call(&client, "POST", "/networks/", &bad_prefix.to_string()).unwrap();
    let error = refused["Error"].as_str().unwrap();
    assert!(
        error.starts_with("The provided network configuration is invalid")
            && error.contains("Subnets AddressPrefix \"10.245.0.0\""),
        "{refused}"
    );
    let with_policies = json!({"Name": "p", "Type": "L2Bridge", "Policies": [{"Type": "VLAN"}]});
    let refused = hns_call(&client, "POST", "/networks/", &with_policies.to_string()).unwrap();
    assert!(
        refused["Error"]
            .as_str()
            .unwrap()
            .contains("POST /networks/ with network Policies"),
        "{refused}"
    );
    let overlay = json!({"Name": "vxlan0", "Type": "Overlay", "NetworkAdapterName": "Ethernet",
        "DNSServerList": "10.96.0.10,10.96.0.11",
        "Subnets": [{"AddressPrefix": "10.246.0.0/24", "GatewayAddress": "10.246.0.1",
            "Policies": [{"Type": "VSID", "VSID": 4097}]}]});
    let created = v1(&client, "POST", "/networks/", &overlay.to_string());
    assert_eq!(created["NetworkAdapterName"], "Ethernet");
    assert_eq!(created["DNSServerList"], "10.96.0.10,10.96.0.11");
    // The reply gives the VSID back in the V1 shape it was sent in, and the DR MAC HNS added.
    assert_eq!(
        created["Subnets"][0]["Policies"],
        json!([{"Type": "VSID", "VSID": 4097}])
    );
    assert!(created["DrMacAddress"].is_string(), "{created}");
    let v2 = network_by_id(&client, created["ID"].as_str().unwrap());
    let subnet = v2.subnets().next().unwrap();
    assert_eq!(
        serde_json::to_value(&subnet.policies).unwrap(),
        json!([{"Type": "VSID", "Settings": {"IsolationId": 4097}}])
    );
    assert_eq!(provider_address(&v2), Some("192.168.1.10".parse().unwrap()));
}

#[test]
fn vxlan_waits_for_the_provider_address_hns_adds_then_programs_its_routes() {
    let (client, _dir) = host("flanneld-vxlan", NEVER);
    let raw = client.raw();
    let created = create_vxlan_network(&client);
    let id = created.id.to_string();
    // "Waiting to get ManagementIP from HostComputeNetwork flannel.4096".
    assert_eq!(provider_address(&network_by_id(&client, &id)), None);
    client.raw().engine().settle_switch_now().unwrap();
    let network = network_by_id(&client, &id);
    assert_eq!(
        provider_address(&network),
        Some("192.168.1.10".parse().unwrap())
    );
    let dr_mac = network
        .find_policy(|policy| match policy {
            NetworkPolicy::DrMacAddress(mac) => Some(mac.address),
            _ => None,
        })
        .expect("HNS adds a DR MAC to an overlay network");
    assert!(!dr_mac.to_string().is_empty());
    assert_eq!(network.flags.bits(), 8);
    assert_eq!(
        v1(&client, "GET", &format!("/networks/{id}"), "")["ManagementIP"],
        "192.168.1.10"
    );

    let modify = |request: &str| {
        let handle = raw.open_network(&network.id).unwrap();
        let modified = raw.modify_network(&handle, request);
        raw.close_network(handle).unwrap();
        modified
    };
    modify(&document("flanneld-vxlan-host-route.json")).unwrap();
    let route = document("flanneld-vxlan-remote-subnet-route.json");
    modify(&route.replace("REQUEST_TYPE", "Add")).unwrap();
    let policies = client
        .open_network(network.id)
        .unwrap()
        .into_properties()
        .policies;
    assert!(policies.contains(&NetworkPolicy::HostRoute), "{policies:?}");
    let remote = policies
        .iter()
        .find_map(|policy| match policy {
            NetworkPolicy::RemoteSubnetRoute(route) => Some(*route),
            _ => None,
        })
        .expect("the RemoteSubnetRoute flanneld added");
    assert_eq!(
        remote.distributed_router_mac_address.to_string(),
        "0E-2A-C0-A8-01-0B"
    );
    // A lease renewed: flanneld removes the policy as HNS reports it, then adds it again.
    let as_reported = json!({"ResourceType": "Policy", "RequestType": "Remove",
        "Settings": {"Policies": [{"Type": "RemoteSubnetRoute", "Settings": remote}]}});
    modify(&as_reported.to_string()).unwrap();
    modify(&route.replace("REQUEST_TYPE", "Add")).unwrap();
    modify(&route.replace("REQUEST_TYPE", "Remove")).unwrap();
    let policies = client
        .open_network(network.id)
        .unwrap()
        .into_properties()
        .policies;
    assert!(
        !policies
            .iter()
            .any(|policy| matches!(policy, NetworkPolicy::RemoteSubnetRoute(_))),
        "{policies:?}"
    );
}

#[test]
fn a_network_made_on_a_settled_switch_gets_its_management_ip_at_once() {
    let (client, _dir) = host("flanneld-settled", Duration::ZERO);
    // What setup scripts do: a throw-away network first, so the switch exists.
    let external = client
        .create_network(
            Guid::ZERO,
            &crate::common::network_settings(
                "External",
                NetworkType::L2Bridge,
                "10.250.0.0/30",
                "10.250.0.1",
            ),
        )
        .unwrap()
        .id();
    client.raw().engine().set_switch_settle(NEVER).unwrap();
    let vxlan = create_vxlan_network(&client);
    assert_eq!(
        provider_address(&vxlan),
        Some("192.168.1.10".parse().unwrap())
    );

    // The last network on the adapter takes the switch; the next one makes a new one, which
    // settles again.
    client.delete_network(vxlan.id).unwrap();
    client.delete_network(external).unwrap();
    let again = create_vxlan_network(&client);
    assert_eq!(provider_address(&again), None);
}
