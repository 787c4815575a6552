//! Golden JSON: the schema types and policies against the documents in
//! hcn-api.md (and the exact JSON the reference plugins write).

use hns::schema::policy::{
    AclAction, AclDirection, AclPolicy, DrMacAddressPolicy, IsolationIdPolicy,
    NetAdapterNamePolicy, OutboundNatPolicy, PortMappingPolicy, ProviderAddressPolicy,
    RemoteSubnetRoutePolicy, SdnRoutePolicy, VxlanPortPolicy, protocol,
};
use hns::schema::v1::{endpoint_policy_from_conf, subnet_policy_from_conf};
use hns::schema::{
    EndpointPolicy, HostComputeEndpoint, HostComputeLoadBalancer, HostComputeNamespace,
    HostComputeNetwork, HostComputeQuery, IpPrefix, MacAddress, ModifyRequest, NetworkFlags,
    NetworkPolicy, NetworkType, RequestType, SubnetPolicy,
};
use hns::{ErrorRecord, Guid};
use serde_json::Value;

fn ip(text: &str) -> std::net::IpAddr {
    text.parse().unwrap()
}

fn prefix(text: &str) -> IpPrefix {
    text.parse().unwrap()
}

fn mac(text: &str) -> MacAddress {
    text.parse().unwrap()
}

fn same_json(actual: &str, expected: &str) {
    let actual: Value = serde_json::from_str(actual).unwrap();
    let expected: Value = serde_json::from_str(expected).unwrap();
    assert_eq!(actual, expected);
}

fn endpoint_policy(json: &str) -> EndpointPolicy {
    serde_json::from_str(json).unwrap()
}

#[test]
fn flannel_overlay_network_round_trips() {
    let doc = r#"{"Name":"flannel.4096","Type":"Overlay","Flags":8,
      "Ipams":[{"Type":"Static","Subnets":[{"IpAddressPrefix":"10.244.1.0/24",
        "Routes":[{"NextHop":"10.244.1.1","DestinationPrefix":"0.0.0.0/0"}],
        "Policies":[{"Type":"VSID","Settings":{"IsolationId":4096}}]}]}],
      "Policies":[{"Type":"NetAdapterName","Settings":{"NetworkAdapterName":"Ethernet"}}],
      "SchemaVersion":{"Major":2,"Minor":0}}"#;
    let network: HostComputeNetwork = serde_json::from_str(doc).unwrap();
    assert_eq!(network.network_type, NetworkType::Overlay);
    assert_eq!(network.flags, NetworkFlags::ENABLE_NON_PERSISTENT);
    let subnet = network.subnets().next().unwrap();
    assert_eq!(subnet.gateway(), Some(ip("10.244.1.1")));
    assert_eq!(
        subnet.policies,
        [SubnetPolicy::Vsid(IsolationIdPolicy { isolation_id: 4096 })]
    );
    assert_eq!(
        network.policies,
        [NetworkPolicy::NetAdapterName(NetAdapterNamePolicy {
            network_adapter_name: "Ethernet".into()
        })]
    );
    same_json(&serde_json::to_string(&network).unwrap(), doc);
}

#[test]
fn network_without_type_is_nat_and_accepts_empty_objects() {
    let network: HostComputeNetwork =
        serde_json::from_str(r#"{"ID":"9A8F2B1C-0D3E-4F50-8A6B-7C8D9E0F1A2B","Name":"nat","MacPool":{},"Dns":{},"Unknown":1}"#).unwrap();
    assert_eq!(network.network_type, NetworkType::Nat);
    assert_eq!(
        network.id,
        "9a8f2b1c-0d3e-4f50-8a6b-7c8d9e0f1a2b"
            .parse::<Guid>()
            .unwrap()
    );
}

#[test]
fn reference_endpoint_round_trips() {
    let doc = r#"{"SchemaVersion":{"Major":2,"Minor":0},"Name":"abc_cbr0",
      "HostComputeNetwork":"9a8f2b1c-0d3e-4f50-8a6b-7c8d9e0f1a2b",
      "Policies":[{"Type":"OutBoundNAT","Settings":{"Exceptions":["10.244.0.0/16"]}}],
      "IpConfigurations":[{"IpAddress":"10.244.1.5"}],
      "Dns":{"Search":["svc.cluster.local"],"ServerList":["10.96.0.10"]},
      "Routes":[{"NextHop":"10.244.1.2","DestinationPrefix":"0.0.0.0/0"}]}"#;
    let endpoint: HostComputeEndpoint = serde_json::from_str(doc).unwrap();
    assert_eq!(
        endpoint.policies,
        [EndpointPolicy::OutboundNat(OutboundNatPolicy {
            exceptions: vec![prefix("10.244.0.0/16").into()],
            ..Default::default()
        })]
    );
    assert!(endpoint.host_compute_namespace.is_zero());
    same_json(&serde_json::to_string(&endpoint).unwrap(), doc);
}

#[test]
fn query_documents_match_hcsshim() {
    assert_eq!(
        HostComputeQuery::by_name("cbr0").to_json(),
        r#"{"SchemaVersion":{"Major":2,"Minor":0},"Flags":0,"Filter":"{\"Name\":\"cbr0\"}"}"#
    );
    let id: Guid = "9a8f2b1c-0d3e-4f50-8a6b-7c8d9e0f1a2b".parse().unwrap();
    assert_eq!(
        HostComputeQuery::by_network(id).detailed().to_json(),
        r#"{"SchemaVersion":{"Major":2,"Minor":0},"Flags":1,"Filter":"{\"VirtualNetwork\":\"9a8f2b1c-0d3e-4f50-8a6b-7c8d9e0f1a2b\"}"}"#
    );
}

#[test]
fn namespace_modify_requests_match_hcsshim() {
    let id: Guid = "9a8f2b1c-0d3e-4f50-8a6b-7c8d9e0f1a2b".parse().unwrap();
    assert_eq!(
        ModifyRequest::namespace_endpoint(RequestType::Add, id).to_json(),
        r#"{"ResourceType":"Endpoint","RequestType":"Add","Settings":{"EndpointId":"9a8f2b1c-0d3e-4f50-8a6b-7c8d9e0f1a2b"}}"#
    );
    assert_eq!(
        ModifyRequest::namespace_endpoint(RequestType::Remove, id).to_json(),
        r#"{"ResourceType":"Endpoint","RequestType":"Remove","Settings":{"EndpointId":"9a8f2b1c-0d3e-4f50-8a6b-7c8d9e0f1a2b"}}"#
    );
    let remote = NetworkPolicy::RemoteSubnetRoute(RemoteSubnetRoutePolicy {
        destination_prefix: prefix("10.244.2.0/24"),
        isolation_id: 4096,
        provider_address: ip("192.168.1.11"),
        distributed_router_mac_address: mac("0E-2A-00-00-00-01"),
    });
    assert_eq!(
        ModifyRequest::policies(RequestType::Add, vec![remote]).to_json(),
        r#"{"ResourceType":"Policy","RequestType":"Add","Settings":{"Policies":[{"Type":"RemoteSubnetRoute","Settings":{"DestinationPrefix":"10.244.2.0/24","IsolationId":4096,"ProviderAddress":"192.168.1.11","DistributedRouterMacAddress":"0E-2A-00-00-00-01"}}]}}"#
    );
}

#[test]
fn namespace_resources_and_load_balancer_decode() {
    let namespace: HostComputeNamespace = serde_json::from_str(
        r#"{"ID":"3fbeee42-4716-4d15-bcb6-19a846a7d111","NamespaceId":2,"Type":"Host",
            "Resources":[{"Type":"Endpoint","Data":{"ID":"9A8F2B1C-0D3E-4F50-8A6B-7C8D9E0F1A2B"}}],
            "SchemaVersion":{"Major":2,"Minor":0}}"#,
    )
    .unwrap();
    assert_eq!(
        namespace.endpoint_ids().collect::<Vec<_>>(),
        ["9a8f2b1c-0d3e-4f50-8a6b-7c8d9e0f1a2b"
            .parse::<Guid>()
            .unwrap()]
    );
    // Some HNS builds spell the endpoint's key `Id`.
    let spelt_id: HostComputeNamespace = serde_json::from_str(
        r#"{"ID":"3fbeee42-4716-4d15-bcb6-19a846a7d111","Type":"Host",
            "Resources":[{"Type":"Endpoint","Data":{"Id":"9A8F2B1C-0D3E-4F50-8A6B-7C8D9E0F1A2B"}}]}"#,
    )
    .unwrap();
    assert_eq!(
        spelt_id.endpoint_ids().collect::<Vec<_>>(),
        namespace.endpoint_ids().collect::<Vec<_>>()
    );
    let doc = r#"{"ID":"3fbeee42-4716-4d15-bcb6-19a846a7d111","HostComputeEndpoints":["9a8f2b1c-0d3e-4f50-8a6b-7c8d9e0f1a2b"],
        "SourceVIP":"10.244.1.9","FrontendVIPs":["10.96.0.10"],
        "PortMappings":[{"Protocol":17,"InternalPort":53,"ExternalPort":53,"DistributionType":1,"Flags":2}],
        "SchemaVersion":{"Major":2,"Minor":0},"Flags":1}"#;
    let balancer: HostComputeLoadBalancer = serde_json::from_str(doc).unwrap();
    assert_eq!(balancer.port_mappings[0].protocol, protocol::UDP);
    same_json(&serde_json::to_string(&balancer).unwrap(), doc);
}

#[test]
fn error_record_matches_field_reports() {
    let text = r#"{"Success":false,"Error":"The parameter is incorrect. ","ErrorCode":2147942487}"#;
    let record: ErrorRecord = serde_json::from_str(text).unwrap();
    assert_eq!(record.error_code, 0x8007_0057);
    assert_eq!(record.to_json(), text);
}

/// The V2 policies the reference plugins write (reference-plugins.md §2.11), byte for byte.
#[test]
fn generated_endpoint_policies_are_byte_exact() {
    let cases: Vec<(EndpointPolicy, &str)> = vec![
        (
            EndpointPolicy::OutboundNat(OutboundNatPolicy {
                exceptions: vec![prefix("10.244.0.0/16").into()],
                ..Default::default()
            }),
            r#"{"Type":"OutBoundNAT","Settings":{"Exceptions":["10.244.0.0/16"]}}"#,
        ),
        (
            EndpointPolicy::OutboundNat(OutboundNatPolicy {
                destinations: vec![ip("10.244.1.5")],
                ..Default::default()
            }),
            r#"{"Type":"OutBoundNAT","Settings":{"Destinations":["10.244.1.5"]}}"#,
        ),
        (
            EndpointPolicy::ProviderAddress(ProviderAddressPolicy {
                provider_address: ip("192.168.1.10"),
            }),
            r#"{"Type":"ProviderAddress","Settings":{"ProviderAddress":"192.168.1.10"}}"#,
        ),
        (
            EndpointPolicy::PortMapping(PortMappingPolicy {
                protocol: protocol::TCP,
                internal_port: 80,
                external_port: 8080,
                vip: Some(ip("10.0.0.4")),
                flags: hns::schema::NatFlags::NONE,
            }),
            r#"{"Type":"PortMapping","Settings":{"Protocol":6,"InternalPort":80,"ExternalPort":8080,"VIP":"10.0.0.4"}}"#,
        ),
        (
            EndpointPolicy::SdnRoute(SdnRoutePolicy {
                destination_prefix: Some(prefix("11.0.0.0/8")),
                next_hop: None,
                need_encap: true,
            }),
            r#"{"Type":"SDNRoute","Settings":{"DestinationPrefix":"11.0.0.0/8","NeedEncap":true}}"#,
        ),
        (
            EndpointPolicy::Acl(AclPolicy {
                id: None,
                protocols: Some("6".into()),
                action: AclAction::Block,
                direction: AclDirection::In,
                local_addresses: None,
                remote_addresses: Some("10.0.0.0/8".into()),
                local_ports: Some("80".into()),
                remote_ports: None,
                rule_type: None,
                priority: Some(200),
            }),
            r#"{"Type":"ACL","Settings":{"Protocols":"6","Action":"Block","Direction":"In","RemoteAddresses":"10.0.0.0/8","LocalPorts":"80","Priority":200}}"#,
        ),
    ];
    for (policy, json) in cases {
        assert_eq!(serde_json::to_string(&policy).unwrap(), json);
        assert_eq!(endpoint_policy(json), policy, "{json}");
    }
    // The reference writes `"VIP":""` for "any host address": it reads as no VIP, which is
    // what HNS makes of it, and is written back without the key.
    let any_host = endpoint_policy(
        r#"{"Type":"PortMapping","Settings":{"Protocol":6,"InternalPort":80,"ExternalPort":8080,"VIP":""}}"#,
    );
    assert!(matches!(any_host, EndpointPolicy::PortMapping(ref m) if m.vip.is_none()));
    assert_eq!(
        serde_json::to_string(&any_host).unwrap(),
        r#"{"Type":"PortMapping","Settings":{"Protocol":6,"InternalPort":80,"ExternalPort":8080}}"#
    );
    // A value that is not an address keeps the policy as written, for HNS to judge.
    let bad = r#"{"Type":"ProviderAddress","Settings":{"ProviderAddress":"10.0.0"}}"#;
    let kept = endpoint_policy(bad);
    assert!(matches!(kept, EndpointPolicy::Other(_)));
    assert_eq!(serde_json::to_string(&kept).unwrap(), bad);
    let overhead = endpoint_policy(r#"{"Type":"EncapOverhead","Settings":{"Overhead":50}}"#);
    assert!(matches!(overhead, EndpointPolicy::EncapOverhead(ref o) if o.overhead == 50));
}

#[test]
fn network_and_subnet_policies_are_byte_exact() {
    let cases: Vec<(NetworkPolicy, &str)> = vec![
        (
            NetworkPolicy::RemoteSubnetRoute(RemoteSubnetRoutePolicy {
                destination_prefix: prefix("10.244.2.0/24"),
                isolation_id: 4096,
                provider_address: ip("192.168.1.11"),
                distributed_router_mac_address: mac("0E-2A-C0-A8-01-0B"),
            }),
            r#"{"Type":"RemoteSubnetRoute","Settings":{"DestinationPrefix":"10.244.2.0/24","IsolationId":4096,"ProviderAddress":"192.168.1.11","DistributedRouterMacAddress":"0E-2A-C0-A8-01-0B"}}"#,
        ),
        (NetworkPolicy::HostRoute, r#"{"Type":"HostRoute"}"#),
        (
            NetworkPolicy::DrMacAddress(DrMacAddressPolicy {
                address: mac("00-15-5D-01-02-03"),
            }),
            r#"{"Type":"DrMacAddress","Settings":{"Address":"00-15-5D-01-02-03"}}"#,
        ),
        (
            NetworkPolicy::VxlanPort(VxlanPortPolicy { port: 4789 }),
            r#"{"Type":"VxlanPort","Settings":{"Port":4789}}"#,
        ),
        (
            NetworkPolicy::ProviderAddress(ProviderAddressPolicy {
                provider_address: ip("192.168.1.10"),
            }),
            r#"{"Type":"ProviderAddress","Settings":{"ProviderAddress":"192.168.1.10"}}"#,
        ),
    ];
    for (policy, json) in cases {
        assert_eq!(serde_json::to_string(&policy).unwrap(), json);
        assert_eq!(
            serde_json::from_str::<NetworkPolicy>(json).unwrap(),
            policy,
            "{json}"
        );
    }
    let vsid: SubnetPolicy =
        serde_json::from_str(r#"{"Type":"VSID","Settings":{"IsolationId":4096}}"#).unwrap();
    assert_eq!(
        serde_json::to_string(&vsid).unwrap(),
        r#"{"Type":"VSID","Settings":{"IsolationId":4096}}"#
    );
    assert_eq!(
        serde_json::from_str::<NetworkPolicy>(r#"{"Type":"HostRoute","Settings":{}}"#).unwrap(),
        NetworkPolicy::HostRoute
    );
}

#[test]
fn other_policies_pass_through_byte_for_byte() {
    for json in [
        r#"{"Type":"L4WFPPROXY","Settings":{"InboundProxyPort":"15001", "UserSID":"S-1-5-18"}}"#,
        r#"{ "Type" : "QOS" , "Settings" : { "MaximumOutgoingBandwidthInBytes" : 1000 , "Extra" : true } }"#,
        r#"{"Type":"OutBoundNAT","Settings":{"ExceptionList":["10.0.0.0/8"]}}"#,
        r#"{"Type":"OutBoundNAT","ExceptionList":["10.0.0.0/8"]}"#,
    ] {
        let policy = endpoint_policy(json);
        assert!(
            matches!(policy, EndpointPolicy::Other(_)),
            "{json} decoded as {policy:?}"
        );
        assert_eq!(serde_json::to_string(&policy).unwrap(), json);
    }
}

#[test]
fn policy_types_decode_case_insensitively() {
    let policy = endpoint_policy(
        r#"{"Type":"SDNROUTE","Settings":{"DestinationPrefix":"10.0.0.0/8","NeedEncap":true}}"#,
    );
    assert!(matches!(policy, EndpointPolicy::SdnRoute(_)));
    assert_eq!(policy.type_name(), "SDNRoute");
}

#[test]
fn malformed_policies_are_errors_naming_the_problem() {
    let error = serde_json::from_str::<EndpointPolicy>(r#"{"Settings":{}}"#).unwrap_err();
    assert!(error.to_string().contains("\"Type\""), "{error}");
    assert!(serde_json::from_str::<EndpointPolicy>(r#"[1,2]"#).is_err());
}

/// hcn-api.md §8.6, row by row.
#[test]
fn v1_policies_translate_to_v2() {
    let cases = [
        (
            r#"{"Type":"OutBoundNAT","ExceptionList":["10.244.0.0/16","10.96.0.0/12"]}"#,
            r#"{"Type":"OutBoundNAT","Settings":{"Exceptions":["10.244.0.0/16","10.96.0.0/12"]}}"#,
        ),
        (
            r#"{"Type":"OutBoundNAT","Destinations":["10.244.1.5"]}"#,
            r#"{"Type":"OutBoundNAT","Settings":{"Destinations":["10.244.1.5"]}}"#,
        ),
        (
            r#"{"Type":"OutBoundNAT","VIP":"10.0.0.4"}"#,
            r#"{"Type":"OutBoundNAT","Settings":{"VirtualIP":"10.0.0.4"}}"#,
        ),
        (
            r#"{"Type":"PA","PA":"192.168.1.10"}"#,
            r#"{"Type":"ProviderAddress","Settings":{"ProviderAddress":"192.168.1.10"}}"#,
        ),
        (
            r#"{"Type":"NAT","InternalPort":80,"ExternalPort":8080,"Protocol":"TCP"}"#,
            r#"{"Type":"PortMapping","Settings":{"Protocol":6,"InternalPort":80,"ExternalPort":8080}}"#,
        ),
        (
            r#"{"Type":"NAT","InternalPort":53,"ExternalPort":53,"Protocol":"udp"}"#,
            r#"{"Type":"PortMapping","Settings":{"Protocol":17,"InternalPort":53,"ExternalPort":53}}"#,
        ),
        (
            r#"{"Type":"ROUTE","DestinationPrefix":"11.0.0.0/8","NeedEncap":true}"#,
            r#"{"Type":"SDNRoute","Settings":{"DestinationPrefix":"11.0.0.0/8","NeedEncap":true}}"#,
        ),
        (
            r#"{"Type":"ACL","Protocol":6,"Action":"Allow","Direction":"Out","LocalPort":80,"Priority":100}"#,
            r#"{"Type":"ACL","Settings":{"Protocols":"6","Action":"Allow","Direction":"Out","LocalPorts":"80","Priority":100}}"#,
        ),
        // Already V2: kept.
        (
            r#"{"Type":"OutBoundNAT","Settings":{"Exceptions":["10.0.0.0/8"]}}"#,
            r#"{"Type":"OutBoundNAT","Settings":{"Exceptions":["10.0.0.0/8"]}}"#,
        ),
        // V1 type without a V2 counterpart: passed through untouched.
        (r#"{"Type":"L2Driver"}"#, r#"{"Type":"L2Driver"}"#),
    ];
    for (v1, v2) in cases {
        let translated = endpoint_policy_from_conf(v1).unwrap_or_else(|e| panic!("{v1}: {e}"));
        assert_eq!(translated.dropped, [], "from {v1}");
        assert_eq!(
            serde_json::to_string(&translated.policy).unwrap(),
            v2,
            "from {v1}"
        );
    }
    assert_eq!(
        serde_json::to_string(
            &subnet_policy_from_conf(r#"{"Type":"VSID","VSID":4096}"#)
                .unwrap()
                .policy
        )
        .unwrap(),
        r#"{"Type":"VSID","Settings":{"IsolationId":4096}}"#
    );
}

#[test]
fn v1_translation_refuses_bad_values_and_reports_what_it_drops() {
    // A key the V1 type does not have is dropped, as the reference drops every V1 key,
    // and reported with what it most likely meant.
    let translated = endpoint_policy_from_conf(
        r#"{"type":"OutBoundNAT","exceptionList":["10.0.0.0/8"],"Exceptions":["10.1.0.0/16"]}"#,
    )
    .unwrap();
    assert_eq!(
        serde_json::to_string(&translated.policy).unwrap(),
        r#"{"Type":"OutBoundNAT","Settings":{"Exceptions":["10.0.0.0/8"]}}"#
    );
    let dropped: Vec<String> = translated.dropped.iter().map(ToString::to_string).collect();
    assert_eq!(
        dropped,
        [
            "`Exceptions` is not a V1 OutBoundNAT key; it has no V2 counterpart and is dropped; did you mean `ExceptionList`?"
        ]
    );
    let bad_prefix =
        endpoint_policy_from_conf(r#"{"Type":"OutBoundNAT","ExceptionList":["10.0.0.0/33"]}"#)
            .unwrap_err();
    assert!(
        bad_prefix.to_string().contains("10.0.0.0/33"),
        "{bad_prefix}"
    );
    let bad_protocol = endpoint_policy_from_conf(
        r#"{"Type":"NAT","InternalPort":1,"ExternalPort":1,"Protocol":"SCTP"}"#,
    )
    .unwrap_err();
    assert!(bad_protocol.to_string().contains("SCTP"), "{bad_protocol}");
    assert!(endpoint_policy_from_conf("not json").is_err());
    assert!(
        endpoint_policy_from_conf(r#"{"ExceptionList":[]}"#)
            .unwrap_err()
            .to_string()
            .contains("Type")
    );
}

/// The shapes Go-written configs use, read as hcsshim decodes them (`Type` and `Settings` in
/// any case, every other member dropped) and as HNS reads the settings.
#[test]
fn v2_policies_are_read_as_go_and_hns_read_them() {
    let read =
        |json: &str| endpoint_policy_from_conf(json).unwrap_or_else(|e| panic!("{json}: {e}"));
    // Envelope and known keys in any case: typed, spelt as HNS spells them.
    let typed =
        read(r#"{"TYPE":"outboundnat","settings":{"exceptions":["10.0.0.0/8"]},"Name":"ignored"}"#);
    assert_eq!(typed.dropped, []);
    assert_eq!(
        serde_json::to_string(&typed.policy).unwrap(),
        r#"{"Type":"OutBoundNAT","Settings":{"Exceptions":["10.0.0.0/8"]}}"#
    );
    // OpenShift WMCO's camelCase OutBoundNAT: no key HNS knows, kept as written.
    let wmco = read(
        r#"{"type":"OutBoundNAT","settings":{"exceptionList":["172.30.0.0/16"],"destinationPrefix":"","needEncap":false}}"#,
    );
    assert!(matches!(wmco.policy, EndpointPolicy::Other(_)));
    same_json(
        &serde_json::to_string(&wmco.policy).unwrap(),
        r#"{"Type":"OutBoundNAT","Settings":{"exceptionList":["172.30.0.0/16"],"destinationPrefix":"","needEncap":false}}"#,
    );
    assert_eq!(wmco.policy.misfit(), None);
    let ignored: Vec<String> = wmco
        .policy
        .ignored_keys()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        ignored,
        [
            "`destinationPrefix` is not a V2 OutBoundNAT key; HNS ignores it (its keys: VirtualIP, Exceptions, Destinations, Flags, MaxPortPoolUsage)",
            "`exceptionList` is not a V2 OutBoundNAT key; HNS ignores it; did you mean `Exceptions`?",
            "`needEncap` is not a V2 OutBoundNAT key; HNS ignores it (its keys: VirtualIP, Exceptions, Destinations, Flags, MaxPortPoolUsage)",
        ]
    );
    assert_eq!(
        wmco.policy.effect(),
        EndpointPolicy::OutboundNat(OutboundNatPolicy::default())
    );
    // WMCO's SDNRoute carries an OutBoundNAT key: HNS reads the route and ignores the rest.
    let route = read(
        r#"{"Type":"SDNROUTE","Settings":{"ExceptionList":[],"DestinationPrefix":"10.96.0.0/12","NeedEncap":true}}"#,
    );
    assert_eq!(route.policy.ignored_keys().len(), 1);
    assert_eq!(
        route.policy.effect(),
        EndpointPolicy::SdnRoute(SdnRoutePolicy {
            destination_prefix: Some(prefix("10.96.0.0/12")),
            next_hop: None,
            need_encap: true,
        })
    );
    // A known key whose value does not fit is what HNS refuses, whatever else is there.
    let refused =
        read(r#"{"Type":"ProviderAddress","Settings":{"providerAddress":"10.0.0","pa":"x"}}"#);
    assert!(
        refused.policy.misfit().unwrap().contains("ProviderAddress"),
        "{:?}",
        refused.policy.misfit()
    );
    assert_eq!(refused.policy.ignored_keys(), []);
    // ACL names are read as HNS reads type names: in any case.
    let acl = read(
        r#"{"type":"acl","settings":{"action":"allow","direction":"in","ruleType":"switch","protocols":"6","localPorts":"80"}}"#,
    );
    assert_eq!(
        serde_json::to_string(&acl.policy).unwrap(),
        r#"{"Type":"ACL","Settings":{"Protocols":"6","Action":"Allow","Direction":"In","LocalPorts":"80","RuleType":"Switch"}}"#
    );
    let unknown_action = read(r#"{"Type":"ACL","Settings":{"Action":"Permit","Direction":"In"}}"#);
    assert!(
        unknown_action.policy.misfit().unwrap().contains("Permit"),
        "{:?}",
        unknown_action.policy
    );
    // Not a policy at all, or no string type: errors naming it.
    for bad in [
        r#""OutBoundNAT""#,
        r#"{"Type":7,"Settings":{}}"#,
        r#"{"Settings":{}}"#,
    ] {
        assert!(endpoint_policy_from_conf(bad).is_err(), "{bad}");
    }
}
