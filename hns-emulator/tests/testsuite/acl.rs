//! The emulator enforces what HNS enforces: ACL and IP set documents as Azure NPM, Calico and
//! hcsshim send them are validated with HNS's HRESULTs, evaluated per packet on the host's
//! Windows build, and their writes counted.

use crate::common::TempDir;
use hns::error::RawError;
use hns::raw::NetworkHandle;
use hns::schema::policy::AclRuleType;
use hns::{Guid, HResult, HnsVersion, RawHcn, WindowsRelease};
use hns_emulator::Emulator;
use hns_emulator::acl::{Packet, PathVerdict, PolicyWrites, Reason, Side, Undocumented, Verdict};

const A: &str = "10.244.1.5";
const B: &str = "10.244.1.6";
const C: &str = "10.244.1.7";

/// A host with one L2Bridge network, 10.244.1.0/24.
struct Node {
    emulator: Emulator,
    network: NetworkHandle,
    _dir: TempDir,
}

impl Node {
    fn new(tag: &str) -> Node {
        Node::with_network(tag, "")
    }

    /// `policies`: network policies (JSON objects, comma-separated) the network starts with.
    fn with_network(tag: &str, policies: &str) -> Node {
        let dir = TempDir::new(tag);
        let emulator = Emulator::open(&dir.0).unwrap();
        let network = emulator
            .create_network(
                &Guid::ZERO,
                &format!(
                    r#"{{"Name":"cbr0","Type":"L2Bridge","Ipams":[{{"Subnets":[{{"IpAddressPrefix":"10.244.1.0/24",
                    "Routes":[{{"NextHop":"10.244.1.1","DestinationPrefix":"0.0.0.0/0"}}]}}]}}],"Policies":[{policies}]}}"#
                ),
            )
            .unwrap();
        Node {
            emulator,
            network,
            _dir: dir,
        }
    }

    fn set_release(&self, release: WindowsRelease) {
        self.emulator.engine().set_release(release).unwrap();
    }

    fn set_version(&self, major: u32, minor: u32) {
        let version = HnsVersion::new(major, minor);
        self.emulator.engine().set_version(version).unwrap();
    }

    /// Creates an endpoint with `acls` (ACL settings objects).
    fn endpoint(&self, name: &str, ip: &str, acls: &[&str]) -> Result<Guid, RawError> {
        self.endpoint_with(name, ip, "", acls)
    }

    fn endpoint_with(
        &self,
        name: &str,
        ip: &str,
        flags: &str,
        acls: &[&str],
    ) -> Result<Guid, RawError> {
        let policies: Vec<String> = acls.iter().map(|settings| acl(settings)).collect();
        let settings = format!(
            r#"{{"Name":"{name}",{flags}"IpConfigurations":[{{"IpAddress":"{ip}"}}],"Policies":[{}]}}"#,
            policies.join(",")
        );
        let id = endpoint_id(ip);
        let endpoint = self
            .emulator
            .create_endpoint(&self.network, &id, &settings)?;
        self.emulator.close_endpoint(endpoint).unwrap();
        Ok(id)
    }

    /// `HcnModifyEndpoint` with a `Policy` request of whole policy objects.
    fn modify_endpoint(
        &self,
        id: Guid,
        request: &str,
        policies: &[String],
    ) -> Result<(), RawError> {
        let endpoint = self.emulator.open_endpoint(&id).unwrap();
        let result = self
            .emulator
            .modify_endpoint(&endpoint, &policy_request(request, policies));
        self.emulator.close_endpoint(endpoint).unwrap();
        result
    }

    /// `HcnModifyNetwork` with a `Policy` request of `SetPolicy` settings objects.
    fn modify_sets(&self, request: &str, sets: &[&str]) -> Result<(), RawError> {
        let policies: Vec<String> = sets
            .iter()
            .map(|settings| format!(r#"{{"Type":"SetPolicy","Settings":{settings}}}"#))
            .collect();
        self.emulator
            .modify_network(&self.network, &policy_request(request, &policies))
    }

    fn policies(&self, id: Guid) -> Vec<serde_json::Value> {
        let endpoint = self.emulator.open_endpoint(&id).unwrap();
        let json = self
            .emulator
            .query_endpoint_properties(&endpoint, "")
            .unwrap();
        self.emulator.close_endpoint(endpoint).unwrap();
        let document: serde_json::Value = serde_json::from_str(&json).unwrap();
        document["Policies"].as_array().cloned().unwrap_or_default()
    }

    fn check(&self, packet: Packet) -> PathVerdict {
        self.emulator.engine().check_packet(&packet).unwrap()
    }

    fn tcp(&self, from: &str, to: &str, port: u16) -> Verdict {
        self.verdict(Packet::tcp(
            from.parse().unwrap(),
            to.parse().unwrap(),
            port,
        ))
    }

    fn verdict(&self, packet: Packet) -> Verdict {
        self.check(packet).verdict().unwrap()
    }

    /// Creates a load balancer with `settings` (a `HostComputeLoadBalancer` document) under
    /// `id`, as kube-proxy's winkernel proxier writes one.
    fn load_balancer(&self, id: &str, settings: &str) -> Guid {
        let id: Guid = id.parse().unwrap();
        let handle = self.emulator.create_load_balancer(&id, settings).unwrap();
        self.emulator.close_load_balancer(handle).unwrap();
        id
    }

    fn writes(&self) -> PolicyWrites {
        self.emulator.engine().reset_policy_writes().unwrap()
    }
}

/// The GUID an endpoint is created with: its IPv4 address's bytes, so a test can name it.
fn endpoint_id(ip: &str) -> Guid {
    let ip: std::net::Ipv4Addr = ip.parse().unwrap();
    format!("{:08x}-0000-0000-0000-000000000000", u32::from(ip))
        .parse()
        .unwrap()
}

fn acl(settings: &str) -> String {
    format!(r#"{{"Type":"ACL","Settings":{settings}}}"#)
}

fn policy_request(request: &str, policies: &[impl AsRef<str>]) -> String {
    format!(
        r#"{{"ResourceType":"Policy","RequestType":"{request}","Settings":{{"Policies":[{}]}}}}"#,
        policies
            .iter()
            .map(AsRef::as_ref)
            .collect::<Vec<_>>()
            .join(",")
    )
}

/// Windows Server 2025's workaround (W-C#616): allow-all rules at a high number.
const ALLOW_ALL_IN: &str =
    r#"{"Protocols":"256","Action":"Allow","Direction":"In","RuleType":"Switch","Priority":65500}"#;
const ALLOW_ALL_OUT: &str = r#"{"Protocols":"256","Action":"Allow","Direction":"Out","RuleType":"Switch","Priority":65500}"#;
/// The Host-layer allow-alls Calico and Azure NPM write beside every endpoint's switch rules
/// ("Required by l2bridge network").
const HOST_ALLOW_IN: &str =
    r#"{"Protocols":"256","Action":"Allow","Direction":"In","RuleType":"Host"}"#;
const HOST_ALLOW_OUT: &str =
    r#"{"Protocols":"256","Action":"Allow","Direction":"Out","RuleType":"Host"}"#;

/// `rules` with the Host allow-alls, as production writes switch rules.
fn with_host<'a>(rules: &[&'a str]) -> Vec<&'a str> {
    rules
        .iter()
        .copied()
        .chain([HOST_ALLOW_IN, HOST_ALLOW_OUT])
        .collect()
}

fn assert_refused(result: Result<impl std::fmt::Debug, RawError>, code: HResult, needle: &str) {
    let error = result.expect_err("HNS refuses this");
    assert_eq!(error.hresult, code, "{}", error.record);
    assert!(
        error.record.contains(needle),
        "{needle:?} not in {}",
        error.record
    );
}

#[test]
fn acl_values_hns_refuses_are_invalid_policies() {
    let node = Node::new("acl-invalid");
    for (settings, needle) in [
        // hcsshim#1059: "HNS only accepts IP addresses and lists of IP addresses".
        (
            r#"{"Action":"Block","Direction":"Out","LocalAddresses":"Any","RemoteAddresses":"10.0.0.25/32","RuleType":"Switch"}"#,
            r#"LocalAddresses \"Any\""#,
        ),
        (
            r#"{"Action":"Allow","Direction":"In","Protocols":"TCP"}"#,
            "not an IANA protocol number",
        ),
        (
            r#"{"Action":"Allow","Direction":"In","Protocols":"6","LocalPorts":"90-80"}"#,
            "first port is above its last",
        ),
        (
            r#"{"Action":"Allow","Direction":"In","LocalAddresses":"azure-npm-1"}"#,
            "Id of an IP set",
        ),
        (r#"{"Action":"Deny","Direction":"In"}"#, "Action"),
        (r#"{"Action":"Allow","Direction":"Both"}"#, "Direction"),
        (
            r#"{"Action":"Allow","Direction":"In","Priority":70000}"#,
            "Priority",
        ),
        (
            r#"{"Action":"Allow","Direction":"In","RuleType":"Router"}"#,
            "RuleType",
        ),
    ] {
        assert_refused(
            node.endpoint("a", A, &[settings]),
            HResult::HCN_E_INVALID_POLICY,
            needle,
        );
    }
    // What fits is taken: several rules may share an Id (Azure NPM's one Id per policy).
    let shared = r#"{"Id":"azure-acl-x-web","Action":"Allow","Direction":"In","Protocols":"6","LocalPorts":"80,8000-8080","RemoteAddresses":"10.0.0.0/8,192.168.1.7","Priority":222}"#;
    let id = node.endpoint("a", A, &[shared, shared]).unwrap();
    // A refused modify leaves the endpoint as it was.
    let before = node.policies(id);
    assert_refused(
        node.modify_endpoint(
            id,
            "Add",
            &[acl(
                r#"{"Action":"Allow","Direction":"In","RemoteAddresses":"*"}"#,
            )],
        ),
        HResult::HCN_E_INVALID_POLICY,
        "RemoteAddresses",
    );
    assert_eq!(node.policies(id), before);
    // Address lists, port ranges and rule Ids need HNS 7.2.
    node.set_version(7, 1);
    assert_refused(
        node.modify_endpoint(
            id,
            "Add",
            &[acl(
                r#"{"Action":"Allow","Direction":"Out","RemotePorts":"53-54"}"#,
            )],
        ),
        HResult::HCN_E_INVALID_POLICY,
        "port range",
    );
}

/// `Update` replaces the endpoint's policies of the types it carries and keeps the others:
/// hcsshim's ncproxy updates endpoints with an `Iov` policy alone, which a whole-list replace
/// would strip of everything else; Azure NPM's removal (every policy it keeps, other types
/// first) fits both. An `Update` carrying nothing, where the readings part, is refused.
#[test]
fn update_replaces_the_policies_of_the_types_it_carries() {
    let node = Node::new("acl-update");
    let nat = r#"{"Type":"OutBoundNAT","Settings":{"Exceptions":["10.244.0.0/16"]}}"#.to_owned();
    let web = acl(
        r#"{"Id":"azure-acl-x-web","Action":"Allow","Direction":"In","Protocols":"6","LocalPorts":"80","Priority":222}"#,
    );
    let deny = acl(r#"{"Id":"azure-acl-x-web","Action":"Block","Direction":"In","Priority":3000}"#);
    let id = node.endpoint("a", A, &[]).unwrap();
    node.modify_endpoint(id, "Add", std::slice::from_ref(&nat))
        .unwrap();
    node.modify_endpoint(id, "Add", &[web.clone(), deny.clone()])
        .unwrap();
    assert_refused(
        node.modify_endpoint(id, "Add", std::slice::from_ref(&web)),
        HResult::HCN_E_POLICY_ALREADY_EXISTS,
        "",
    );
    assert_eq!(node.policies(id).len(), 3);
    // Azure NPM's removal: every policy it keeps, other types first, as one Update.
    node.modify_endpoint(id, "Update", &[nat.clone(), deny.clone()])
        .unwrap();
    let kept = node.policies(id);
    assert_eq!(kept.len(), 2);
    assert_eq!(kept[1]["Settings"]["Action"], "Block");
    // ACLs alone: the ACLs are replaced, the OutBoundNAT stays.
    node.modify_endpoint(id, "Update", std::slice::from_ref(&web))
        .unwrap();
    let types: Vec<_> = node
        .policies(id)
        .iter()
        .map(|policy| policy["Type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(types, ["OutBoundNAT", "ACL"]);
    // The OutBoundNAT alone: the ACLs stay.
    node.modify_endpoint(id, "Update", std::slice::from_ref(&nat))
        .unwrap();
    assert_eq!(node.policies(id).len(), 2);
    assert_refused(
        node.modify_endpoint(id, "Update", &[] as &[String]),
        HResult::HCN_E_REQUEST_UNSUPPORTED,
        "Update carrying no policy",
    );
    assert_refused(
        node.modify_endpoint(id, "Remove", &[deny]),
        HResult::HCN_E_POLICY_NOT_FOUND,
        "",
    );
}

#[test]
fn ip_sets_follow_azure_npm_and_hns_versions() {
    let node = Node::new("acl-sets");
    let pods = r#"{"Id":"azure-npm-1","Name":"podlabel-app:web","PolicyType":"IPSET","Values":"10.244.1.5"}"#;
    let ns = r#"{"Id":"azure-npm-2","Name":"ns-x","PolicyType":"IPSET","Values":"10.244.1.5,10.244.1.7"}"#;
    let nested = r#"{"Id":"azure-npm-3","Name":"nestedlabel-x","PolicyType":"NESTEDIPSET","Values":"azure-npm-1,azure-npm-2"}"#;
    node.set_version(12, 0);
    assert_refused(
        node.modify_sets("Add", &[pods]),
        HResult::HCN_E_INVALID_POLICY_TYPE,
        "HNS 13.0",
    );
    node.set_version(13, 2);
    node.modify_sets("Add", &[pods, ns]).unwrap();
    assert_refused(
        node.modify_sets("Add", &[nested]),
        HResult::HCN_E_INVALID_POLICY,
        "HNS 15.0",
    );
    node.set_version(15, 0);
    node.modify_sets("Add", &[nested]).unwrap();
    assert_refused(
        node.modify_sets("Add", &[pods]),
        HResult::HCN_E_POLICY_ALREADY_EXISTS,
        "Update",
    );
    assert_refused(
        node.modify_sets(
            "Update",
            &[r#"{"Id":"azure-npm-9","PolicyType":"IPSET","Values":""}"#],
        ),
        HResult::HCN_E_POLICY_NOT_FOUND,
        "azure-npm-9",
    );
    assert_refused(
        node.modify_sets(
            "Add",
            &[r#"{"Id":"azure-npm-4","PolicyType":"NESTEDIPSET","Values":"azure-npm-8"}"#],
        ),
        HResult::HCN_E_INVALID_POLICY,
        "azure-npm-8",
    );
    // Named by an ACL (as Azure NPM names them, by Id in an address list: an ingress peer
    // set in LocalAddresses) or a nested set, a set stays.
    let rule =
        r#"{"Action":"Allow","Direction":"In","LocalAddresses":"azure-npm-3","Priority":222}"#;
    let id = node.endpoint("b", B, &[rule]).unwrap();
    assert_refused(
        node.modify_sets("Remove", &[nested]),
        HResult::HCN_E_ENTITY_HAS_REFERENCES,
        &id.to_string(),
    );
    assert_refused(
        node.modify_sets("Remove", &[pods]),
        HResult::HCN_E_ENTITY_HAS_REFERENCES,
        "azure-npm-3",
    );
    // NPM's order: the ACLs, then nested sets, then their members.
    node.modify_endpoint(id, "Remove", &[acl(rule)]).unwrap();
    node.modify_sets("Remove", &[nested]).unwrap();
    node.modify_sets("Remove", &[pods, ns]).unwrap();
    assert_refused(
        node.modify_sets("Remove", &[pods]),
        HResult::HCN_E_POLICY_NOT_FOUND,
        "",
    );
    // A network created with sets is held to the same rules.
    let dir = TempDir::new("acl-sets-create");
    let other = Emulator::open(&dir.0).unwrap();
    other.engine().set_version(HnsVersion::new(12, 0)).unwrap();
    let error = other
        .create_network(&Guid::ZERO, &format!(r#"{{"Name":"n","Type":"L2Bridge","Policies":[{{"Type":"SetPolicy","Settings":{pods}}}]}}"#))
        .unwrap_err();
    assert_eq!(
        error.hresult,
        HResult::HCN_E_INVALID_POLICY_TYPE,
        "{}",
        error.record
    );
}

#[test]
fn what_no_rule_matches_follows_the_build_and_the_network() {
    let node = Node::new("acl-default");
    node.endpoint("a", A, &[]).unwrap();
    node.endpoint("b", B, &[]).unwrap();
    node.set_release(WindowsRelease::SERVER_2025);
    let open = node.check(Packet::tcp(A.parse().unwrap(), B.parse().unwrap(), 80));
    assert_eq!(open.verdict(), Ok(Verdict::Allowed));
    assert_eq!(open.destination.decision().unwrap().reason, Reason::NoAcl);

    node.endpoint(
        "c",
        C,
        &with_host(&[r#"{"Action":"Allow","Direction":"In","Protocols":"6","LocalPorts":"80"}"#]),
    )
    .unwrap();
    assert_eq!(node.tcp(A, C, 80), Verdict::Allowed);
    assert_eq!(node.tcp(A, C, 81), Verdict::Denied);
    // C has switch rules inbound only: Windows Server 2025 drops its outbound traffic (W-C#616).
    assert_eq!(node.tcp(C, A, 80), Verdict::Denied);
    // Before 2025, an L2Bridge endpoint whose ACLs block nothing: nothing says.
    node.set_release(WindowsRelease::SERVER_2022);
    for (from, to) in [(A, C), (C, A)] {
        let unknown = node.check(Packet::tcp(from.parse().unwrap(), to.parse().unwrap(), 81));
        let error = unknown.verdict().unwrap_err();
        assert!(error.to_string().contains("block nothing"), "{error}");
    }
    // With a Block, it drops what its ACLs do not allow, both ways (ACN PR #2617).
    node.endpoint(
        "d",
        "10.244.1.8",
        &with_host(&[
            r#"{"Action":"Allow","Direction":"In","Protocols":"6","LocalPorts":"80"}"#,
            r#"{"Action":"Block","Direction":"Out","Protocols":"6","RemotePorts":"25"}"#,
        ]),
    )
    .unwrap();
    assert_eq!(node.tcp(A, "10.244.1.8", 80), Verdict::Allowed);
    assert_eq!(node.tcp(A, "10.244.1.8", 81), Verdict::Denied);
    assert_eq!(node.tcp("10.244.1.8", A, 443), Verdict::Denied);
}

/// Calico and Azure NPM write Host allow-alls beside an endpoint's switch rules ("Required by
/// l2bridge network"), Azure CNI writes none on its L2Bridge: what an L2Bridge endpoint with
/// switch rules only does at the Host layer is not documented, and the verdict is refused.
#[test]
fn switch_acls_without_host_rules_are_undocumented_on_l2bridge() {
    let node = Node::new("acl-host-layer");
    node.endpoint("a", A, &[]).unwrap();
    node.endpoint("b", B, &[ALLOW_ALL_IN, ALLOW_ALL_OUT])
        .unwrap();
    for release in [WindowsRelease::SERVER_2022, WindowsRelease::SERVER_2025] {
        node.set_release(release);
        let unknown = node.check(Packet::tcp(A.parse().unwrap(), B.parse().unwrap(), 80));
        let error = unknown.verdict().unwrap_err();
        assert!(error.to_string().contains("Host layer"), "{error}");
        let Reason::Default(fallback) = &unknown.destination.decision().unwrap().reason else {
            panic!("{unknown:?}");
        };
        assert_eq!(fallback.rule_type, AclRuleType::Host);
    }
    node.endpoint("c", C, &with_host(&[ALLOW_ALL_IN, ALLOW_ALL_OUT]))
        .unwrap();
    assert_eq!(node.tcp(A, C, 80), Verdict::Allowed);
}

#[test]
fn egress_on_the_source_and_ingress_on_the_destination_both_decide() {
    let node = Node::new("acl-path");
    node.set_release(WindowsRelease::SERVER_2025);
    let a = node
        .endpoint("a", A, &with_host(&[
            ALLOW_ALL_IN,
            ALLOW_ALL_OUT,
            r#"{"Id":"no-ssh-out","Action":"Block","Direction":"Out","Protocols":"6","RemotePorts":"22","Priority":100}"#,
        ]))
        .unwrap();
    let b = node
        .endpoint("b", B, &with_host(&[
            ALLOW_ALL_OUT,
            r#"{"Action":"Allow","Direction":"In","Protocols":"6","LocalPorts":"20-25","RemoteAddresses":"10.244.1.0/29","Priority":200}"#,
            r#"{"Action":"Block","Direction":"In","Priority":65000}"#,
        ]))
        .unwrap();
    let ssh = node.check(Packet::tcp(A.parse().unwrap(), B.parse().unwrap(), 22));
    assert_eq!(ssh.verdict(), Ok(Verdict::Denied));
    let Side::Endpoint { endpoint, decision } = &ssh.source else {
        panic!("{ssh:?}");
    };
    assert_eq!(*endpoint, a);
    assert!(
        matches!(&decision.reason, Reason::Rule(rule) if rule.id.as_deref() == Some("no-ssh-out"))
    );
    let smtp = node.check(Packet::tcp(A.parse().unwrap(), B.parse().unwrap(), 25));
    assert_eq!(smtp.verdict(), Ok(Verdict::Allowed));
    assert!(matches!(&smtp.destination, Side::Endpoint { endpoint, .. } if *endpoint == b));
    // Outside 10.244.1.0/29, outside 20-25, not TCP: B's block at 65000.
    assert_eq!(node.tcp("10.244.1.9", B, 25), Verdict::Denied);
    assert_eq!(node.tcp(A, B, 26), Verdict::Denied);
    assert_eq!(
        node.verdict(Packet::udp(A.parse().unwrap(), B.parse().unwrap(), 25)),
        Verdict::Denied
    );
    // Egress, the remote port is the destination's: A's source port 22 is not blocked.
    let from_22 = Packet::tcp(A.parse().unwrap(), B.parse().unwrap(), 25).from_port(22);
    assert_eq!(node.verdict(from_22), Verdict::Allowed);
}

#[test]
fn a_membership_change_is_one_set_write() {
    let node = Node::new("acl-membership");
    node.set_release(WindowsRelease::SERVER_2025);
    node.modify_sets(
        "Add",
        &[r#"{"Id":"azure-npm-1","Name":"app:web","PolicyType":"IPSET","Values":"10.244.1.5"}"#],
    )
    .unwrap();
    node.endpoint("a", A, &with_host(&[ALLOW_ALL_OUT])).unwrap();
    node.endpoint("c", C, &with_host(&[ALLOW_ALL_OUT])).unwrap();
    // Azure NPM's ingress rule: the peer set in LocalAddresses, the packet's source.
    node.endpoint("b", B, &with_host(&[
        ALLOW_ALL_OUT,
        r#"{"Id":"azure-acl-y-from-web","Action":"Allow","Direction":"In","Protocols":"6","LocalPorts":"80","LocalAddresses":"azure-npm-1","Priority":222}"#,
    ]))
    .unwrap();
    assert_eq!(node.tcp(A, B, 80), Verdict::Allowed);
    assert_eq!(node.tcp(C, B, 80), Verdict::Denied);
    node.writes();
    node.modify_sets("Update", &[r#"{"Id":"azure-npm-1","Name":"app:web","PolicyType":"IPSET","Values":"10.244.1.5,10.244.1.7"}"#])
        .unwrap();
    assert_eq!(node.tcp(C, B, 80), Verdict::Allowed);
    assert_eq!(
        node.writes(),
        PolicyWrites {
            network_requests: 1,
            sets_written: 1,
            ..PolicyWrites::default()
        }
    );
}

/// The layout cni-win wrote before (an ingress peer set in RemoteAddresses) for a "same app"
/// policy (`from: - podSelector: {}`, a set holding the pod itself): under Azure NPM's reading
/// (a set in RemoteAddresses is the destination, the pod) it admits everyone, by position
/// only the set; no production writer lays sets out so, and the verdict is refused. NPM's
/// layout (LocalAddresses) admits the set's members only.
#[test]
fn an_ingress_peer_set_is_read_as_the_source() {
    let node = Node::new("acl-set-reading");
    node.set_release(WindowsRelease::SERVER_2025);
    node.modify_sets(
        "Add",
        &[r#"{"Id":"same-app","PolicyType":"IPSET","Values":"10.244.1.5,10.244.1.6"}"#],
    )
    .unwrap();
    node.endpoint("a", A, &with_host(&[ALLOW_ALL_OUT])).unwrap();
    node.endpoint("c", C, &with_host(&[ALLOW_ALL_OUT])).unwrap();
    let rule = |field: &str| {
        format!(
            r#"{{"Action":"Allow","Direction":"In","Protocols":"256","{field}":"same-app","Priority":4300}}"#
        )
    };
    let isolate = r#"{"Action":"Block","Direction":"In","Protocols":"256","Priority":65000}"#;
    let old = rule("RemoteAddresses");
    let id = node
        .endpoint("b", B, &with_host(&[ALLOW_ALL_OUT, &old, isolate]))
        .unwrap();
    let outsider = node.check(Packet::tcp(C.parse().unwrap(), B.parse().unwrap(), 80));
    let error = outsider.verdict().unwrap_err();
    assert_eq!(
        error.emulated,
        Verdict::Allowed,
        "NPM's reading admits everyone"
    );
    assert!(error.to_string().contains("RemoteAddresses"), "{error}");
    node.modify_endpoint(id, "Remove", &[acl(&old)]).unwrap();
    node.modify_endpoint(id, "Add", &[acl(&rule("LocalAddresses"))])
        .unwrap();
    assert_eq!(node.tcp(A, B, 80), Verdict::Allowed);
    assert_eq!(node.tcp(C, B, 80), Verdict::Denied);
}

#[test]
fn nested_sets_hold_their_members_addresses() {
    let node = Node::new("acl-nested");
    node.set_release(WindowsRelease::SERVER_2025);
    node.modify_sets(
        "Add",
        &[
            r#"{"Id":"x","PolicyType":"IPSET","Values":"10.244.1.5"}"#,
            r#"{"Id":"z","PolicyType":"IPSET","Values":"10.244.2.0/24"}"#,
        ],
    )
    .unwrap();
    node.modify_sets(
        "Add",
        &[
            r#"{"Id":"xz","PolicyType":"NESTEDIPSET","Values":"x,z"}"#,
            r#"{"Id":"none","PolicyType":"NESTEDIPSET","Values":""}"#,
        ],
    )
    .unwrap();
    let web = r#"{"Action":"Allow","Direction":"In","Protocols":"6","LocalPorts":"80","LocalAddresses":"xz"}"#;
    // ACN PR #1431: a nested set without members applies to any address.
    let dns = r#"{"Action":"Allow","Direction":"In","Protocols":"17","LocalPorts":"53","LocalAddresses":"none"}"#;
    node.endpoint("b", B, &with_host(&[ALLOW_ALL_OUT, web, dns]))
        .unwrap();
    assert_eq!(node.tcp(A, B, 80), Verdict::Allowed);
    assert_eq!(node.tcp("10.244.2.77", B, 80), Verdict::Allowed);
    assert_eq!(node.tcp(C, B, 80), Verdict::Denied);
    let udp = |from: &str| node.verdict(Packet::udp(from.parse().unwrap(), B.parse().unwrap(), 53));
    assert_eq!(
        (udp(C), udp("192.0.2.1")),
        (Verdict::Allowed, Verdict::Allowed)
    );
}

#[test]
fn remote_endpoints_are_not_enforced_and_host_traffic_is_ingress_only() {
    let node = Node::with_network(
        "acl-remote",
        r#"{"Type":"ProviderAddress","Settings":{"ProviderAddress":"192.168.1.10"}}"#,
    );
    node.set_release(WindowsRelease::SERVER_2025);
    // kube-proxy's stand-in for a pod of another node: an ACL on it is not enforced here.
    let remote = node
        .endpoint_with(
            "remote",
            "10.244.2.9",
            r#""Flags":1,"#,
            &[r#"{"Action":"Block","Direction":"Out"}"#],
        )
        .unwrap();
    node.endpoint(
        "b",
        B,
        &with_host(&[r#"{"Action":"Allow","Direction":"In","Protocols":"6","LocalPorts":"80"}"#]),
    )
    .unwrap();
    let from_remote = node.check(Packet::tcp(
        "10.244.2.9".parse().unwrap(),
        B.parse().unwrap(),
        80,
    ));
    assert_eq!(
        from_remote.source,
        Side::RemoteEndpoint { endpoint: remote }
    );
    assert_eq!(from_remote.verdict(), Ok(Verdict::Allowed));
    // The host's probes: ingress on the pod only.
    let probe = node.check(Packet::tcp(
        "192.168.1.10".parse().unwrap(),
        B.parse().unwrap(),
        80,
    ));
    assert_eq!(probe.source, Side::Host);
    assert_eq!(probe.verdict(), Ok(Verdict::Allowed));
    assert_eq!(node.tcp("192.168.1.10", B, 8080), Verdict::Denied);
    let out = node.check(Packet::tcp(
        B.parse().unwrap(),
        "8.8.8.8".parse().unwrap(),
        53,
    ));
    assert_eq!(
        (out.destination.clone(), out.verdict()),
        (Side::Elsewhere, Ok(Verdict::Denied))
    );
}

/// kube-dns's ClusterIP in the tests below.
const CLUSTER_IP: &str = "10.96.0.10";

/// A load balancer for UDP 53 on `frontends` (JSON list) over `backends`, with `flags` and
/// `source_vip` (JSON, or `null`).
fn dns_load_balancer(frontends: &str, backends: &[Guid], flags: u32, source_vip: &str) -> String {
    let backends: Vec<String> = backends.iter().map(|id| format!(r#""{id}""#)).collect();
    format!(
        r#"{{"HostComputeEndpoints":[{}],"SourceVIP":{source_vip},"FrontendVIPs":{frontends},
        "PortMappings":[{{"Protocol":17,"InternalPort":53,"ExternalPort":53}}],"Flags":{flags},
        "SchemaVersion":{{"Major":2,"Minor":0}}}}"#,
        backends.join(",")
    )
}

/// A pod isolated for egress (a Block at 65000, as the agent writes it) that `allows` egress
/// to UDP 53 of the addresses given.
fn isolated_for_egress(allows: &[&str]) -> Vec<String> {
    allows
        .iter()
        .map(|to| {
            format!(
                r#"{{"Action":"Allow","Direction":"Out","Protocols":"17","RemoteAddresses":"{to}","RemotePorts":"53","Priority":4300}}"#
            )
        })
        .chain(
            [
                r#"{"Action":"Block","Direction":"Out","Priority":65000}"#,
                ALLOW_ALL_IN,
                HOST_ALLOW_IN,
                HOST_ALLOW_OUT,
            ]
            .map(str::to_owned),
        )
        .collect()
}

/// Egress to a Service's ClusterIP: the load balancer sends the packet on to each backend,
/// and the source's egress rules are judged on the packet both as sent and as rewritten;
/// where the two disagree (rules that allow the backends only), HNS's order is not documented
/// and the verdict is refused. Before the load balancer was followed, the same query was a
/// plain denial (the ClusterIP is no endpoint's, and the rules allow it nothing).
#[test]
fn egress_through_a_cluster_ip_is_judged_before_and_after_the_rewrite() {
    let node = Node::new("acl-cluster-ip");
    node.set_release(WindowsRelease::SERVER_2025);
    let dns = [B, C].map(|ip| node.endpoint(ip, ip, &[]).unwrap());
    let backends_only = isolated_for_egress(&[&format!("{B},{C}")]);
    let rules: Vec<&str> = backends_only.iter().map(String::as_str).collect();
    let client = node.endpoint("a", A, &rules).unwrap();
    let balancer = node.load_balancer(
        "1b000000-0000-0000-0000-000000000001",
        &dns_load_balancer(&format!(r#"["{CLUSTER_IP}"]"#), &dns, 1, "null"),
    );
    let query = Packet::udp(A.parse().unwrap(), CLUSTER_IP.parse().unwrap(), 53);

    let path = node.check(query);
    assert_eq!(
        path.destination,
        Side::Frontend {
            load_balancers: vec![balancer]
        }
    );
    let reached: Vec<(Guid, std::net::IpAddr)> = path
        .backends
        .iter()
        .map(|backend| (backend.endpoint, backend.delivered.destination))
        .collect();
    assert_eq!(
        reached,
        [(dns[0], B.parse().unwrap()), (dns[1], C.parse().unwrap())]
    );
    assert_eq!(
        path.backends[0].delivered.source,
        A.parse::<std::net::IpAddr>().unwrap(),
        "DSR keeps the client"
    );
    let refused = path.verdict().unwrap_err();
    assert!(
        matches!(
            &refused.decision.undocumented[..],
            [Undocumented::ServiceNat {
                before: Verdict::Denied,
                after: Verdict::Allowed,
                ..
            }]
        ),
        "{refused}"
    );
    assert!(refused.to_string().contains("before or after"), "{refused}");
    assert_eq!(
        path.emulated_verdict(),
        Verdict::Allowed,
        "the pick is after"
    );
    // A port the load balancer does not map is no frontend: the rules deny it.
    assert_eq!(node.tcp(A, CLUSTER_IP, 53), Verdict::Denied);

    // Allowing the ClusterIP too, both readings allow.
    let frontend = isolated_for_egress(&[CLUSTER_IP]);
    node.modify_endpoint(client, "Add", &[acl(&frontend[0])])
        .unwrap();
    assert_eq!(node.verdict(query), Verdict::Allowed);

    // A backend that refuses the client: the verdict depends on the backend HNS picks.
    let refusing = [
        r#"{"Action":"Block","Direction":"In","Protocols":"17","Priority":100}"#,
        ALLOW_ALL_OUT,
        HOST_ALLOW_IN,
        HOST_ALLOW_OUT,
    ]
    .map(acl);
    node.modify_endpoint(dns[1], "Add", &refusing).unwrap();
    let split = node.check(query).verdict().unwrap_err();
    assert_eq!(
        split.decision.undocumented,
        [Undocumented::Backend {
            allowed: dns[0],
            denied: dns[1]
        }]
    );
}

/// Without DSR a backend sees the load balancer's source VIP, and without either what it sees
/// cannot be told; a load balancer without frontend VIPs fronts the node's own address (a
/// NodePort).
#[test]
fn a_backend_sees_the_source_vip_without_dsr_and_a_node_port_is_a_frontend() {
    let node = Node::new("acl-node-port");
    let dns = node.endpoint("b", B, &[]).unwrap();
    node.endpoint("a", A, &[]).unwrap();
    node.load_balancer(
        "1b000000-0000-0000-0000-000000000002",
        &dns_load_balancer(
            &format!(r#"["{CLUSTER_IP}"]"#),
            &[dns],
            0,
            r#""10.244.1.250""#,
        ),
    );
    let path = node.check(Packet::udp(
        A.parse().unwrap(),
        CLUSTER_IP.parse().unwrap(),
        53,
    ));
    assert_eq!(
        path.backends[0].delivered.source,
        "10.244.1.250".parse::<std::net::IpAddr>().unwrap()
    );
    assert_eq!(path.verdict(), Ok(Verdict::Allowed));

    // The node's address: the host adapter's (192.168.1.10 unless set).
    node.load_balancer(
        "1b000000-0000-0000-0000-000000000003",
        &dns_load_balancer("[]", &[dns], 0, "null"),
    );
    let unknown = node
        .emulator
        .engine()
        .check_packet(&Packet::udp(
            A.parse().unwrap(),
            "192.168.1.10".parse().unwrap(),
            53,
        ))
        .unwrap_err();
    assert!(
        unknown.detail.contains("neither DSR nor a SourceVIP"),
        "{}",
        unknown.detail
    );
}

#[test]
fn a_verdict_that_rests_on_a_tie_is_no_evidence() {
    let node = Node::new("acl-tie");
    node.endpoint("b", B, &with_host(&[
        r#"{"Id":"allow-web","Action":"Allow","Direction":"In","Protocols":"6","LocalPorts":"80","Priority":300}"#,
        r#"{"Id":"deny-all","Action":"Block","Direction":"In","Priority":300}"#,
    ]))
    .unwrap();
    let tied = node.check(Packet::tcp(A.parse().unwrap(), B.parse().unwrap(), 80));
    let error = tied.verdict().unwrap_err();
    assert_eq!(error.emulated, Verdict::Denied);
    assert!(error.to_string().contains("allow-web"), "{error}");
    assert_eq!(tied.emulated_verdict(), Verdict::Denied);
    // Where the tie does not match, the verdict stands.
    assert_eq!(node.tcp(A, B, 81), Verdict::Denied);
}

#[test]
fn policy_writes_are_counted_per_request_rule_and_set() {
    let node = Node::new("acl-writes");
    let id = node.endpoint("a", A, &[ALLOW_ALL_IN]).unwrap();
    assert_eq!(
        node.writes(),
        PolicyWrites::default(),
        "a create is not a write on a live endpoint"
    );
    let web = acl(
        r#"{"Action":"Allow","Direction":"In","Protocols":"6","LocalPorts":"80","Priority":100}"#,
    );
    let dns = acl(
        r#"{"Action":"Allow","Direction":"Out","Protocols":"17","RemotePorts":"53","Priority":100}"#,
    );
    node.modify_endpoint(id, "Add", &[web.clone(), dns.clone()])
        .unwrap();
    node.modify_endpoint(id, "Remove", std::slice::from_ref(&dns))
        .unwrap();
    // An Update carrying ACLs reprograms every ACL of the endpoint.
    node.modify_endpoint(id, "Update", &[acl(ALLOW_ALL_IN), dns])
        .unwrap();
    // A refused request writes nothing.
    node.modify_endpoint(id, "Add", &[web]).unwrap();
    assert!(
        node.modify_endpoint(
            id,
            "Add",
            &[acl(
                r#"{"Action":"Allow","Direction":"In","LocalAddresses":"Any"}"#
            )]
        )
        .is_err()
    );
    node.modify_sets("Add", &[r#"{"Id":"s","PolicyType":"IPSET","Values":""}"#])
        .unwrap();
    node.modify_sets(
        "Update",
        &[r#"{"Id":"s","PolicyType":"IPSET","Values":"10.0.0.1"}"#],
    )
    .unwrap();
    node.modify_sets(
        "Remove",
        &[r#"{"Id":"s","PolicyType":"IPSET","Values":"10.0.0.1"}"#],
    )
    .unwrap();
    assert_eq!(
        node.writes(),
        PolicyWrites {
            endpoint_requests: 4,
            acl_rules_written: 2 + 2 + 1,
            acl_rules_removed: 1 + 1,
            network_requests: 3,
            sets_written: 2,
            sets_removed: 1,
        }
    );
    assert_eq!(
        node.writes(),
        PolicyWrites::default(),
        "the reset cleared them"
    );
    let calls = node.emulator.engine().stats().unwrap();
    assert_eq!(
        calls["HcnModifyEndpoint"], 5,
        "every call is still counted as a call"
    );
    node.check(Packet::tcp(B.parse().unwrap(), A.parse().unwrap(), 80));
    assert_eq!(
        node.emulator.engine().stats().unwrap(),
        calls,
        "a check is not an HCN call"
    );
}
