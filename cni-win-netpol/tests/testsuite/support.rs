//! What the integration tests share: the truth tables' cluster (`netpol_truth_tables`) as the
//! translation sees it, an HNS that takes the agent's writes as the emulator takes them, and
//! the emulator's verdict on a connection between two of the pods.

use cni_win_netpol::{
    Cluster, Desired, Held, LocalEndpoint, Mode, NodeAddresses, PodInfo, PodKey, Policy,
    Translation, Write, diff,
};
use hns::Guid;
use hns::WindowsBuild;
use hns::schema::policy::{AclAction, AclDirection, AclPolicy};
use hns::schema::{EndpointPolicy, NetworkType, RequestType};
use hns_emulator::acl::{EndpointAcls, IpSets, Packet, Verdict, evaluate};
use k8s_openapi::api::networking::v1::NetworkPolicy;

pub use netpol_truth_tables::{Changes, pod_ip, pods};

/// The node's addresses.
pub fn node(dual_stack: bool) -> NodeAddresses {
    let mut addresses = vec!["10.0.0.10".parse().unwrap()];
    if dual_stack {
        addresses.push("fd00::10".parse().unwrap());
    }
    NodeAddresses { addresses }
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
) -> (Desired, Vec<Write>) {
    let node = node(changes.dual_stack);
    let wanted = Translation::new(cluster, &node).desired(&endpoints(changes, programmed), mode);
    let writes = diff(programmed, &wanted);
    (wanted, writes)
}

/// Applies writes as the emulator does (`Add` appends and refuses a duplicate, `Remove` takes
/// the identical policy out and refuses a missing one; sets by `Id`, and a set some rule
/// names cannot go), so a write the emulator would refuse fails the test.
pub fn apply(programmed: &mut Held, writes: &[Write]) {
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
    let sets = IpSets::of(&programmed.network).expect("the emulator takes the agent's sets");
    for (pod, direction) in [(from, AclDirection::Out), (to, AclDirection::In)] {
        let policies: Vec<EndpointPolicy> = programmed.endpoints[&endpoint_id(pod)]
            .iter()
            .cloned()
            .map(EndpointPolicy::Acl)
            .collect();
        let acls = EndpointAcls::new(&policies, &sets, network_type.clone())
            .expect("the emulator takes the agent's rules");
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
