//! What the integration tests share: the truth tables' cluster (namespaces x, y, z; pods a,
//! b, c in each, serving 80 and 81 over TCP and UDP on upstream's port names), an HNS that
//! takes the agent's writes as the emulator takes them, and the emulator's verdict on a
//! connection between two of the pods.

use std::collections::BTreeMap;
use std::net::IpAddr;

use cni_win_netpol::{
    Cluster, Desired, LocalEndpoint, Mode, Node, PodInfo, PodKey, Policy, Programmed, Write,
    desired, diff,
};
use hns::Guid;
use hns::WindowsBuild;
use hns::schema::policy::{AclAction, AclDirection, AclPolicy};
use hns::schema::{EndpointPolicy, RequestType};
use hns_emulator::acl::{EndpointAcls, IpSets, Packet, Verdict, evaluate};
use k8s_openapi::api::core::v1::{Container, ContainerPort, Pod, PodIP, PodSpec, PodStatus};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

pub const NAMESPACES: [&str; 3] = ["x", "y", "z"];
pub const POD_NAMES: [&str; 3] = ["a", "b", "c"];

/// Every pod of the truth tables, `ns/pod`, in matrix order.
pub fn pods() -> Vec<String> {
    NAMESPACES
        .iter()
        .flat_map(|ns| POD_NAMES.iter().map(move |pod| format!("{ns}/{pod}")))
        .collect()
}

/// The node's addresses.
pub fn node(dual_stack: bool) -> Node {
    let mut addresses = vec!["10.0.0.10".parse().unwrap()];
    if dual_stack {
        addresses.push("fd00::10".parse().unwrap());
    }
    Node { addresses }
}

/// A pod's address of one family: `10.244.<ns>.<pod>`, `fd00:10:244:<ns>::<pod>`, counting
/// from 1 (x/b is 10.244.1.2).
pub fn pod_ip(pod: &str, v6: bool) -> IpAddr {
    let (ns, name) = pod.split_once('/').unwrap();
    let ns = NAMESPACES.iter().position(|n| *n == ns).unwrap() + 1;
    let name = POD_NAMES.iter().position(|n| *n == name).unwrap() + 1;
    if v6 {
        format!("fd00:10:244:{ns}::{name}").parse().unwrap()
    } else {
        format!("10.244.{ns}.{name}").parse().unwrap()
    }
}

/// The endpoint of a pod.
pub fn endpoint_id(pod: &str) -> Guid {
    let index = pods().iter().position(|p| p == pod).unwrap();
    Guid::from_u128(0xe000_0000 + index as u128)
}

/// A named container port a case adds to a pod.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraPort {
    pub name: String,
    pub port: i32,
    pub protocol: String,
}

/// What a case changes in the standard cluster.
#[derive(Debug, Clone, Default)]
pub struct Changes {
    pub dual_stack: bool,
    pub namespace_labels: BTreeMap<String, BTreeMap<String, String>>,
    pub pod_labels: BTreeMap<String, BTreeMap<String, String>>,
    pub named_ports: BTreeMap<String, Vec<ExtraPort>>,
}

/// The pod as the API server would send it.
pub fn api_pod(pod: &str, changes: &Changes) -> Pod {
    let (ns, name) = pod.split_once('/').unwrap();
    let mut labels = BTreeMap::from([("pod".to_owned(), name.to_owned())]);
    labels.extend(changes.pod_labels.get(pod).cloned().unwrap_or_default());
    let mut containers: Vec<Container> = [80, 81]
        .into_iter()
        .flat_map(|port| ["TCP", "UDP"].map(|protocol| (port, protocol)))
        .map(|(port, protocol)| {
            let lower = protocol.to_lowercase();
            Container {
                name: format!("cont-{port}-{lower}"),
                ports: Some(vec![ContainerPort {
                    name: Some(format!("serve-{port}-{lower}")),
                    container_port: port,
                    protocol: Some(protocol.to_owned()),
                    ..ContainerPort::default()
                }]),
                ..Container::default()
            }
        })
        .collect();
    if let Some(extra) = changes.named_ports.get(pod) {
        containers.push(Container {
            name: "extra".to_owned(),
            ports: Some(
                extra
                    .iter()
                    .map(|port| ContainerPort {
                        name: Some(port.name.clone()),
                        container_port: port.port,
                        protocol: Some(port.protocol.clone()),
                        ..ContainerPort::default()
                    })
                    .collect(),
            ),
            ..Container::default()
        });
    }
    let mut ips = vec![pod_ip(pod, false)];
    if changes.dual_stack {
        ips.push(pod_ip(pod, true));
    }
    Pod {
        metadata: ObjectMeta {
            namespace: Some(ns.to_owned()),
            name: Some(name.to_owned()),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers,
            node_name: Some("node-1".to_owned()),
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            phase: Some("Running".to_owned()),
            pod_ip: Some(ips[0].to_string()),
            pod_ips: Some(ips.iter().map(|ip| PodIP { ip: ip.to_string() }).collect()),
            ..PodStatus::default()
        }),
    }
}

/// The standard cluster with a case's changes and policies; refused policies are enforced
/// by their stand-ins, as the agent enforces them. Also returns the refusals.
pub fn cluster(changes: &Changes, policies: &[NetworkPolicy]) -> (Cluster, Vec<String>) {
    let mut cluster = Cluster::new();
    for ns in NAMESPACES {
        let mut labels = BTreeMap::from([
            ("ns".to_owned(), ns.to_owned()),
            ("kubernetes.io/metadata.name".to_owned(), ns.to_owned()),
        ]);
        labels.extend(
            changes
                .namespace_labels
                .get(ns)
                .cloned()
                .unwrap_or_default(),
        );
        cluster.set_namespace(ns, labels);
    }
    for pod in pods() {
        cluster.set_pod(PodInfo::from_api(&api_pod(&pod, changes)).unwrap());
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

/// The ACLs cni-win writes with `allowAclPortMapping` that are not per-port: allow-all In and
/// Out at 65500. The tables give them to namespace y's endpoints, which policies must still
/// isolate.
pub fn port_mapping_fallback() -> Vec<AclPolicy> {
    [AclDirection::In, AclDirection::Out]
        .map(|direction| AclPolicy::all_traffic(AclAction::Allow, direction, 65500))
        .to_vec()
}

/// The local endpoints: every pod is on this node.
pub fn endpoints(changes: &Changes, programmed: &Programmed) -> Vec<LocalEndpoint> {
    pods()
        .into_iter()
        .map(|pod| {
            let id = endpoint_id(&pod);
            let (ns, name) = pod.split_once('/').unwrap();
            let mut ips = vec![pod_ip(&pod, false)];
            if changes.dual_stack {
                ips.push(pod_ip(&pod, true));
            }
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
pub fn fresh_hns() -> Programmed {
    let mut programmed = Programmed::default();
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
    programmed: &Programmed,
    mode: Mode,
) -> (Desired, Vec<Write>) {
    let wanted = desired(
        cluster,
        &node(changes.dual_stack),
        &endpoints(changes, programmed),
        mode,
    );
    let writes = diff(programmed, &wanted);
    (wanted, writes)
}

/// Applies writes as the emulator does (`Add` appends and refuses a duplicate, `Remove` takes
/// the identical policy out and refuses a missing one; sets by `Id`, and a set some rule
/// names cannot go), so a write the emulator would refuse fails the test.
pub fn apply(programmed: &mut Programmed, writes: &[Write]) {
    for write in writes {
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
                                acl.remote_addresses
                                    .as_deref()
                                    .unwrap_or_default()
                                    .split(',')
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
pub fn assert_no_opposite_ties(programmed: &Programmed) {
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

/// The emulator's verdict on a connection's first packet from `from` to `to`: the sender's
/// egress, then the receiver's ingress. A verdict resting on a tie of opposite actions at one
/// priority (undocumented in HNS) fails the test.
pub fn verdict(
    programmed: &Programmed,
    from: &str,
    to: &str,
    packet: &Packet,
    build: WindowsBuild,
) -> Verdict {
    let sets = IpSets::of(&programmed.network).expect("the emulator takes the agent's sets");
    for (pod, direction) in [(from, AclDirection::Out), (to, AclDirection::In)] {
        let policies: Vec<EndpointPolicy> = programmed.endpoints[&endpoint_id(pod)]
            .iter()
            .cloned()
            .map(EndpointPolicy::Acl)
            .collect();
        let acls =
            EndpointAcls::new(&policies, &sets).expect("the emulator takes the agent's rules");
        let decision = evaluate(&acls, direction, packet, build);
        assert!(
            decision.tie.is_empty(),
            "{pod} {direction:?}: verdict rests on a tie: {decision:?}"
        );
        if decision.verdict == Verdict::Denied {
            return Verdict::Denied;
        }
    }
    Verdict::Allowed
}
