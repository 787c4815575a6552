//! What the integration tests share: the truth tables' cluster (`netpol_truth_tables`) as the
//! translation sees it, an HNS that takes the agent's writes as the emulator takes them, and
//! the emulator's verdict on a connection between two of the pods, or from a pod through a
//! Service's load balancer.

use cni_win_netpol::{
    Cluster, Desired, Held, LocalEndpoint, Mode, NodeAddresses, PodInfo, PodKey, Policy,
    Translation, Write, Writes, diff,
};
use hns::Guid;
use hns::WindowsBuild;
use hns::schema::policy::{AclAction, AclDirection, AclPolicy};
use hns::schema::{EndpointPolicy, NetworkType, RequestType};
use hns_emulator::acl::{
    BackendPath, EndpointAcls, IpSets, Packet, PathVerdict, Ports, Side, Verdict, egress_through,
    evaluate,
};
use k8s_openapi::api::networking::v1::NetworkPolicy;

pub use netpol_truth_tables::{Changes, Outcome, pod_ip, pods};

/// The node's addresses.
pub fn node(dual_stack: bool) -> NodeAddresses {
    let mut addresses = vec!["10.0.0.10".parse().unwrap()];
    if dual_stack {
        addresses.push("fd00::10".parse().unwrap());
    }
    NodeAddresses { addresses }
}

/// A policy of `namespace` with `spec`.
pub fn policy(namespace: &str, name: &str, spec: serde_json::Value) -> NetworkPolicy {
    serde_json::from_value(serde_json::json!({
        "metadata": {"namespace": namespace, "name": name},
        "spec": spec,
    }))
    .unwrap()
}

/// x/a accepts ingress from pods `b` of every namespace only.
pub fn from_every_b() -> NetworkPolicy {
    policy(
        "x",
        "from-b",
        serde_json::json!({
            "podSelector": {"matchLabels": {"pod": "a"}},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"pod": "b"}}}]}]
        }),
    )
}

/// Programs `policies` on a fresh HNS and returns it.
pub fn programmed(changes: &Changes, policies: &[NetworkPolicy], mode: Mode) -> Held {
    let (cluster, _) = self::cluster(changes, policies);
    let mut hns = fresh_hns();
    let (_, writes) = round(&cluster, changes, &hns, mode);
    apply(&mut hns, &writes);
    hns
}

/// Writes as a test reads them: `network Update 1`, `x/a Add 2` (the request and how many
/// policies it carries).
pub fn describe(writes: &[Write]) -> Vec<String> {
    writes
        .iter()
        .map(|write| match write {
            Write::Network(request) => format!(
                "network {:?} {}",
                request.request_type,
                request.settings.policies.len()
            ),
            Write::Endpoint { endpoint, request } => {
                let pod = pods()
                    .into_iter()
                    .find(|pod| endpoint_id(pod) == *endpoint)
                    .unwrap();
                format!(
                    "{pod} {:?} {}",
                    request.request_type,
                    request.settings.policies.len()
                )
            }
        })
        .collect()
}

/// The standard cluster with `pod` labelled `labels` instead.
pub fn relabel(pod: &str, labels: &[(&str, &str)]) -> Changes {
    let labels = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Changes {
        pod_labels: std::collections::BTreeMap::from([(pod.to_owned(), labels)]),
        ..Changes::default()
    }
}

/// The endpoint of a pod.
pub fn endpoint_id(pod: &str) -> Guid {
    let index = pods().iter().position(|p| p == pod).unwrap();
    Guid::from_u128(0xe000_0000 + index as u128)
}

/// The standard cluster with a case's changes and policies; refused policies are enforced
/// by their stand-ins, as the agent enforces them. Also returns the refusals.
pub fn cluster(changes: &Changes, policies: &[NetworkPolicy]) -> (Cluster, Vec<String>) {
    let mut cluster = Cluster::new();
    for ns in netpol_truth_tables::NAMESPACES {
        cluster.set_namespace(ns, changes.namespace_labels(ns));
    }
    for pod in pods() {
        cluster.set_pod(PodInfo::from_api(&changes.api_pod(&pod, "node-1")).unwrap());
    }
    let mut refused = Vec::new();
    for policy in policies {
        match Policy::from_api(policy) {
            Ok(policy) => cluster.set_policy(policy),
            Err(refusal) => {
                refused.push(refusal.to_string());
                cluster.set_policy(refusal.stand_in.expect("a named policy has a stand-in"));
            }
        }
    }
    (cluster, refused)
}

/// The network types Flannel makes, whose endpoints the verdicts are judged on: host-gw's
/// L2Bridge and vxlan's Overlay (what HNS does with what no rule matches differs).
pub const NETWORK_TYPES: [NetworkType; 2] = [NetworkType::L2Bridge, NetworkType::Overlay];

/// The ACLs cni-win writes with `allowAclPortMapping` that are not per-port: allow-all In and
/// Out at 65500, and beside them the Host-layer allow-alls. The tables give them to namespace
/// y's endpoints, which policies must still isolate.
pub fn port_mapping_fallback() -> Vec<AclPolicy> {
    [AclDirection::In, AclDirection::Out]
        .into_iter()
        .flat_map(|direction| {
            [
                AclPolicy::all_traffic(AclAction::Allow, direction, 65500),
                AclPolicy::host_allow_all(direction),
            ]
        })
        .collect()
}

/// The local endpoints: every pod is on this node.
pub fn endpoints(changes: &Changes, programmed: &Held) -> Vec<LocalEndpoint> {
    pods()
        .into_iter()
        .map(|pod| {
            let id = endpoint_id(&pod);
            let (ns, name) = pod.split_once('/').unwrap();
            let ips = netpol_truth_tables::pod_ips(&pod, changes.dual_stack);
            LocalEndpoint {
                id,
                pod: PodKey {
                    namespace: ns.to_owned(),
                    name: name.to_owned(),
                },
                ips,
                others: programmed
                    .endpoints
                    .get(&id)
                    .into_iter()
                    .flatten()
                    .filter(|acl| !cni_win_netpol::is_agents(acl))
                    .cloned()
                    .collect(),
            }
        })
        .collect()
}

/// A fresh HNS: the endpoints exist, namespace y's with the port-mapping fallback.
pub fn fresh_hns() -> Held {
    let mut programmed = Held::default();
    for pod in pods() {
        let acls = if pod.starts_with("y/") {
            port_mapping_fallback()
        } else {
            Vec::new()
        };
        programmed.endpoints.insert(endpoint_id(&pod), acls);
    }
    programmed
}

/// One round of the agent: what `cluster` wants, and the writes that get it there.
pub fn round(
    cluster: &Cluster,
    changes: &Changes,
    programmed: &Held,
    mode: Mode,
) -> (Desired, Writes) {
    let node = node(changes.dual_stack);
    let wanted = Translation::new(cluster, &node).desired(&endpoints(changes, programmed), mode);
    let writes = diff(programmed, &wanted);
    (wanted, writes)
}

/// Applies writes in their order as the emulator does (`Add` appends and refuses a duplicate,
/// `Remove` takes the identical policy out and refuses a missing one; sets by `Id`, and a set
/// some rule names cannot go), so a write the emulator would refuse fails the test.
pub fn apply(programmed: &mut Held, writes: &Writes) {
    for write in writes.in_order() {
        apply_one(programmed, &write);
    }
}

/// Applies one write as the emulator does (see [`apply`]).
pub fn apply_one(programmed: &mut Held, write: &Write) {
    {
        match write {
            Write::Endpoint { endpoint, request } => {
                let acls = programmed.endpoints.entry(*endpoint).or_default();
                for policy in &request.settings.policies {
                    let EndpointPolicy::Acl(acl) = policy else {
                        panic!("the agent writes ACLs only: {policy:?}");
                    };
                    match request.request_type {
                        RequestType::Add => {
                            assert!(!acls.contains(acl), "Add of a rule already there: {acl:?}");
                            acls.push(acl.clone());
                        }
                        RequestType::Remove => {
                            let at = acls.iter().position(|held| held == acl);
                            acls.remove(
                                at.unwrap_or_else(|| panic!("Remove of a rule not there: {acl:?}")),
                            );
                        }
                        other => panic!("the agent never sends {other:?} to an endpoint"),
                    }
                }
            }
            Write::Network(request) => {
                for policy in &request.settings.policies {
                    let set =
                        cni_win_netpol::IpSet::from_network_policy(policy).expect("an IP set");
                    let at = programmed.network.iter().position(|held| {
                        cni_win_netpol::IpSet::from_network_policy(held)
                            .is_some_and(|s| s.id == set.id)
                    });
                    match (request.request_type, at) {
                        (RequestType::Add, None) => programmed.network.push(policy.clone()),
                        (RequestType::Update, Some(at)) => programmed.network[at] = policy.clone(),
                        (RequestType::Remove, Some(at)) => {
                            let named = programmed.endpoints.values().flatten().any(|acl| {
                                [&acl.local_addresses, &acl.remote_addresses]
                                    .into_iter()
                                    .flat_map(|field| {
                                        field.as_deref().unwrap_or_default().split(',')
                                    })
                                    .any(|a| a == set.id)
                            });
                            assert!(!named, "Remove of set {} while a rule names it", set.id);
                            programmed.network.remove(at);
                        }
                        (request_type, at) => panic!(
                            "{request_type:?} of set {} (held: {})",
                            set.id,
                            at.is_some()
                        ),
                    }
                }
            }
        }
    }
}

/// No endpoint holds two rules of one direction, layer and priority with opposite actions,
/// whoever wrote them: what HNS does with such a pair is undocumented.
pub fn assert_no_opposite_ties(programmed: &Held) {
    for (endpoint, acls) in &programmed.endpoints {
        for a in acls {
            let tied = acls.iter().find(|b| {
                (b.direction, b.rule_type, b.priority) == (a.direction, a.rule_type, a.priority)
                    && (b.action == AclAction::Block) != (a.action == AclAction::Block)
            });
            assert!(
                tied.is_none(),
                "endpoint {endpoint}: {a:?} ties with {tied:?}"
            );
        }
    }
}

/// The emulator's verdict on a connection's first packet from `from` to `to`, on endpoints of
/// a `network_type` network of a `build` host: the sender's egress, then the receiver's
/// ingress. A verdict resting on what HNS does not document (a tie of opposite actions at one
/// priority, a set's reading, an unknown default) fails the test.
pub fn verdict(
    programmed: &Held,
    from: &str,
    to: &str,
    packet: &Packet,
    build: WindowsBuild,
    network_type: &NetworkType,
) -> Verdict {
    for (pod, direction) in [(from, AclDirection::Out), (to, AclDirection::In)] {
        let acls = acls_of(programmed, pod, network_type);
        let decision = evaluate(&acls, direction, packet, build);
        assert!(
            decision.undocumented.is_empty(),
            "{pod} {direction:?} on {network_type}: the verdict rests on what HNS does not \
             document: {decision:?}"
        );
        if decision.verdict == Verdict::Denied {
            return Verdict::Denied;
        }
    }
    Verdict::Allowed
}

/// What the emulator makes of `sent`, a connection's first packet from `from` to a Service's
/// ClusterIP, which kube-proxy's load balancer (with DSR, as the manifests run it) sends on to
/// one of `backends` on `target_port`: each backend's path, the sender's egress judged on the
/// packet both as sent and as rewritten (`hns_emulator::acl::egress_through`).
pub fn service_outcome(
    programmed: &Held,
    from: &str,
    backends: &[String],
    sent: &Packet,
    target_port: u16,
    build: WindowsBuild,
    network_type: &NetworkType,
) -> Outcome {
    let source = acls_of(programmed, from, network_type);
    let side = |pod: &str, decision| Side::Endpoint {
        endpoint: endpoint_id(pod),
        decision,
    };
    let paths = backends
        .iter()
        .map(|backend| {
            let delivered = Packet {
                destination: pod_ip(backend, sent.destination.is_ipv6()),
                ports: sent.ports.map(|ports| Ports {
                    destination: target_port,
                    ..ports
                }),
                ..*sent
            };
            let ingress = acls_of(programmed, backend, network_type);
            BackendPath {
                load_balancer: Guid::ZERO,
                endpoint: endpoint_id(backend),
                delivered,
                source: side(from, egress_through(&source, sent, &delivered, build)),
                destination: side(
                    backend,
                    evaluate(&ingress, AclDirection::In, &delivered, build),
                ),
            }
        })
        .collect();
    let path = PathVerdict {
        packet: *sent,
        source: side(from, evaluate(&source, AclDirection::Out, sent, build)),
        destination: Side::Frontend {
            load_balancers: vec![Guid::ZERO],
        },
        backends: paths,
    };
    Outcome::of(path.verdict())
}

/// The ACLs HNS holds for `pod`'s endpoint on a `network_type` network, against the sets.
fn acls_of(programmed: &Held, pod: &str, network_type: &NetworkType) -> EndpointAcls {
    let sets = IpSets::of(&programmed.network).expect("the emulator takes the agent's sets");
    let policies: Vec<EndpointPolicy> = programmed.endpoints[&endpoint_id(pod)]
        .iter()
        .cloned()
        .map(EndpointPolicy::Acl)
        .collect();
    EndpointAcls::new(&policies, &sets, network_type.clone())
        .expect("the emulator takes the agent's rules")
}

/// Connections to judge: which pods, and the packet.
pub type Probes = Vec<(String, String, Packet)>;

/// Writes `writes` (those HNS took, in order) to `before` one request at a time and fails
/// the test when, after any of them, a connection of `probes` that both `before` and the end
/// allow is refused, on either build and network type. Returns the end, and how many verdicts
/// were checked.
pub fn assert_no_window(
    before: &Held,
    writes: &[Write],
    probes: &Probes,
    label: &str,
) -> (Held, usize) {
    let allowed = |hns: &Held, build, network_type| -> Vec<bool> {
        probes
            .iter()
            .map(|(from, to, packet)| {
                verdict(hns, from, to, packet, build, network_type) == Verdict::Allowed
            })
            .collect()
    };
    let mut end = before.clone();
    for write in writes {
        apply_one(&mut end, write);
    }
    let mut checked = 0;
    for network_type in &NETWORK_TYPES {
        for build in [WindowsBuild::SERVER_2022, WindowsBuild::SERVER_2025] {
            let first = allowed(before, build, network_type);
            let last = allowed(&end, build, network_type);
            let mut between = before.clone();
            for (n, write) in writes.iter().enumerate() {
                apply_one(&mut between, write);
                let now = allowed(&between, build, network_type);
                for (i, (from, to, packet)) in probes.iter().enumerate() {
                    assert!(
                        now[i] || !(first[i] && last[i]),
                        "{label} {network_type} {build}: after write {n} ({write:?}) {from} -> \
                         {to} {packet:?} is refused, which the rules before and after allow"
                    );
                    checked += 1;
                }
            }
        }
    }
    (end, checked)
}

/// Every connection on TCP 80 between two pods of the cluster.
pub fn every_pair() -> Probes {
    let pods = pods();
    pods.iter()
        .flat_map(|from| {
            pods.iter().filter(move |to| *to != from).map(move |to| {
                let packet = Packet::tcp(pod_ip(from, false), pod_ip(to, false), 80);
                (from.clone(), to.clone(), packet)
            })
        })
        .collect()
}
