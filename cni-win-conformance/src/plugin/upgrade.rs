//! A pod the reference plugin attached before the node switched to cni-win
//! ([`Plugin::reference_add`]: its endpoint in the reference's layout, its host-local
//! reservation) goes through CHECK, a repeated ADD, which adopts it, and DEL.

use std::net::Ipv4Addr;

use serde_json::{Value, json};

use super::Plugin;
use crate::node::Node;

/// The address the reference's host-local gave the pod.
pub const POD_IP: &str = "10.244.1.10";

impl Plugin {
    /// What the reference plugin's V2 ADD leaves for `container` in `netns` when its host-local
    /// gave it `ip`, created here through the raw HCN API: the reservation file its host-local
    /// writes, and the endpoint with the document its ADD sends (shared/reference:
    /// `<containerID>_<network>`, an ID HNS chooses, [`Plugin::reference_policies`], the
    /// address without a prefix length, the config's DNS, the pods' gateway as the default
    /// route, [`Plugin::reference_mac`]), attached with `HcnModifyNamespace`. Returns the result
    /// it printed.
    pub fn reference_add(
        &self,
        node: &Node,
        container: &str,
        ip: &str,
        netns: &str,
        config: &Value,
    ) -> Value {
        let store = node.ipam_dir().join(self.network);
        std::fs::create_dir_all(&store).unwrap();
        std::fs::write(store.join(ip), format!("{container}\r\neth0")).unwrap();
        std::fs::write(store.join("last_reserved_ip.0"), ip).unwrap();
        let mut document = json!({
            "SchemaVersion": {"Major": 2, "Minor": 0},
            "Name": self.endpoint_name(container),
            "HostComputeNetwork": node.network_id(self.network).to_string(),
            "Policies": (self.reference_policies)(config),
            "IpConfigurations": [{"IpAddress": ip}],
            "Dns": {"Search": config["dns"]["search"], "ServerList": config["dns"]["nameservers"]},
            "Routes": [{"NextHop": self.gateway(), "DestinationPrefix": "0.0.0.0/0"}]
        });
        if let Some(mac) = self.reference_mac {
            let ip: Ipv4Addr = ip.parse().expect("the pod's address is IPv4");
            document["MacAddress"] = json!(mac(ip));
        }
        let endpoint = node.raw_endpoint(self.network, &document, netns);
        json!({
            "cniVersion": "1.0.0",
            "interfaces": [{"name": endpoint.name, "mac": document.get("MacAddress").cloned().unwrap_or(json!(endpoint.mac_address))}],
            "ips": [{"address": format!("{ip}/24"), "gateway": self.gateway()}],
            "dns": {"nameservers": config["dns"]["nameservers"], "search": config["dns"]["search"]}
        })
    }
}

/// CHECK accepts what the reference printed; the runtime's repeated ADD adopts the endpoint
/// (its address, gateway, MAC and namespace) and reserves nothing more, again and again; CHECK
/// accepts what ADD returned; DEL removes the endpoint and the reservation.
pub fn a_reference_pod_is_checked_adopted_and_deleted(plugin: &Plugin) {
    let node = plugin.node("upgrade");
    let config = (plugin.reference_config)(&node);
    let netns = node.namespace();
    let printed = plugin.reference_add(&node, "old", POD_IP, &netns, &config);
    let before = node.endpoint(&plugin.endpoint_name("old"));
    let with_prev_result = |result: &serde_json::Value| {
        let mut config = config.clone();
        config["prevResult"] = result.clone();
        config
    };
    node.check("old", &netns, &with_prev_result(&printed))
        .silent();

    node.calls();
    let result = node.add("old", &netns, &config).result();
    let adopt = node.calls();
    assert_eq!(result["ips"][0]["address"], format!("{POD_IP}/24"));
    assert_eq!(result["ips"][0]["gateway"], plugin.gateway());
    assert_eq!(
        result["interfaces"][0]["mac"],
        before.mac_address.unwrap().to_string()
    );
    assert_eq!(result["interfaces"][0]["sandbox"], netns.as_str());
    assert_eq!(node.endpoints(plugin.network), vec![before.clone()]);
    assert_eq!(node.reservations(plugin.network), [POD_IP]);
    // Again: the same result; and CHECK accepts what ADD returned.
    assert_eq!(node.add("old", &netns, &config).result(), result);
    node.check("old", &netns, &with_prev_result(&result))
        .silent();
    eprintln!("repeated ADD of a reference pod, raw HCN calls (without, with closes): {adopt:?}");

    node.del("old", Some(&netns), &config).silent();
    assert!(node.endpoints(plugin.network).is_empty());
    assert!(node.reservations(plugin.network).is_empty());
}

/// A reference pod whose config carries an ACL (with its allow-all fallback, as doctor asks):
/// the reference's endpoint holds the config's switch rules but none of the Host-layer
/// allow-alls cni-win writes beside them, and CHECK accepts it; the pod works.
pub fn a_reference_pod_with_acls_passes_check(plugin: &Plugin) {
    let node = plugin.node("upgrade-acl");
    let mut config = (plugin.reference_config)(&node);
    let acls = [
        json!({"Type": "ACL", "Settings": {"Protocols": "6", "Action": "Block", "Direction": "In",
            "RemotePorts": "23", "RuleType": "Switch", "Priority": 200}}),
        json!({"Type": "ACL", "Settings": {"Protocols": "256", "Action": "Allow", "Direction": "In",
            "RuleType": "Switch", "Priority": 65500}}),
        json!({"Type": "ACL", "Settings": {"Protocols": "256", "Action": "Allow", "Direction": "Out",
            "RuleType": "Switch", "Priority": 65500}}),
    ];
    let policies = config["policies"]
        .as_array_mut()
        .expect("the config lists policies");
    policies.extend(
        acls.iter()
            .map(|acl| json!({"name": "EndpointPolicy", "value": acl})),
    );
    let netns = node.namespace();
    let mut printed = plugin.reference_add(&node, "old", POD_IP, &netns, &config);
    // The reference sends the config's policies as written, beside its own.
    let written: Vec<hns::schema::EndpointPolicy> = acls
        .iter()
        .map(|acl| serde_json::from_value(acl.clone()).expect("an ACL policy"))
        .collect();
    let id = node.endpoint(&plugin.endpoint_name("old")).id;
    node.client()
        .modify_endpoint_policies(
            id,
            &hns::schema::ModifyRequest::policies(hns::schema::RequestType::Add, written),
        )
        .unwrap();
    let endpoint = node.endpoint(&plugin.endpoint_name("old"));
    assert!(
        !endpoint.policies.iter().any(|policy| matches!(policy,
            hns::schema::EndpointPolicy::Acl(acl)
                if acl.rule_type == Some(hns::schema::policy::AclRuleType::Host))),
        "the reference writes no Host rule: {:?}",
        endpoint.policies
    );
    let mut with_prev_result = config.clone();
    with_prev_result["prevResult"] = printed.take();
    node.check("old", &netns, &with_prev_result).silent();
}
