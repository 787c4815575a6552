//! NetworkPolicy on the emulated node: cni-win's agent (`cni-win.exe daemon
//! --network-policy`) under Wine, watching the real kube-apiserver as deploy/rbac.yaml's
//! ServiceAccount authorises it; the snapshot it writes; the Event it publishes on a policy it
//! refuses; and a pod's ADD by win-bridge.exe with the snapshot's rules, judged by the
//! emulator's verdict on the pod's first packets.
//!
//! The pod has no address in the API (no kubelet runs): it is the pod ADD meets, one the
//! scheduler has put on the node and the agent has seen. Its peers are an `ipBlock`, which
//! needs no other pod's address. The truth tables run in a story of their own, with the Linux
//! build: this proves the watches, the RBAC and the Windows build against a real API server.
//! Its objects are in a namespace of its own, and its pod is gone when it ends: every later
//! agent on the node would see it.

use std::path::Path;
use std::time::{Duration, Instant};

use hns_emulator::acl::{Packet, Verdict};
use node_lane::NODE_NAME;
use node_lane::agent_process::AgentProcess;
use serde_json::{Value, json};

use crate::lane::{Backend, Lane, write_config};
use crate::node::Node;
use crate::report::Report;

/// The story's namespace, and its pod in it.
const NAMESPACE: &str = "netpol";
const POD: &str = "a";
/// How long the agent may take to sync, and to tell a refusal.
const AGENT_DEADLINE: Duration = Duration::from_secs(90);
/// The peers the policy admits, less one.
const ADMITTED: &str = "10.244.9.9";
const EXCEPTED: &str = "10.244.9.8";

/// Runs the NetworkPolicy story on a fresh host-gw node.
pub fn run(lane: &Lane, report: &mut Report) {
    let node = match lane.node("netpol") {
        Ok(node) => node,
        Err(why) => return report.record("set-up", Err(why)),
    };
    report.record(
        "flanneld makes the network",
        lane.flanneld(Backend::HostGw, &node),
    );
    let snapshot = node.dir().join("network-policy.json");
    let config = match write_config(&node, Backend::HostGw, Some(&snapshot)) {
        Ok(config) => config,
        Err(why) => return report.record("networkPolicySnapshot in the conflist", Err(why)),
    };
    let kubectl = &lane.control_plane.kubectl;
    let pod_check = format!("pod {NAMESPACE}/{POD} on the node, its policy");
    let objects = [
        (
            "the namespaces, the ServiceAccount's RBAC",
            lane.control_plane.authorise_agent(),
        ),
        (pod_check.as_str(), kubectl.apply(&objects())),
    ];
    for (check, outcome) in objects {
        let failed = outcome.is_err();
        report.record(check, outcome.map(|()| "applied".to_owned()));
        if failed {
            return;
        }
    }
    report.record(
        "the agent's ServiceAccount reads, writes no Node, creates Events",
        least_privilege(lane),
    );
    let agent = match start_agent(lane, &node) {
        Ok(agent) => agent,
        Err(why) => return report.record("the agent starts", Err(why)),
    };
    let synced = wait_for_snapshot(&snapshot, &agent);
    let synced_ok = synced.is_ok();
    report.record(
        "the agent syncs through the API server as deploy/rbac.yaml's ServiceAccount",
        synced,
    );
    if synced_ok {
        report.record(
            "a refused policy gets an Event",
            refusal_event(lane, &agent),
        );
    }
    let added = node.add_kubernetes_pod(Backend::HostGw.plugin(), &config, NAMESPACE, POD);
    drop(agent);
    let check = format!("ADD gives {NAMESPACE}/{POD} the snapshot's rules");
    match added {
        Ok(pod) => {
            report.record(
                &format!("{check}: its first packets"),
                first_packets(&node, &lane.node_ip, &pod.ip.to_string()),
            );
            let _ = node.del_pod(Backend::HostGw.plugin(), &config, &pod);
        }
        Err(why) => report.record(&check, Err(why)),
    }
    if let Err(why) = tear_down(lane) {
        report.record("tear-down", Err(why));
    }
}

/// What deploy/rbac.yaml lets the agent's ServiceAccount do, as the API server's RBAC
/// answers: watch what it translates, create Events, and nothing more (flanneld's patch on
/// node status is flanneld's ServiceAccount's: a token taken from the agent cannot add an
/// address to a Node, which that node's agent would let past every policy).
fn least_privilege(lane: &Lane) -> Result<String, String> {
    use node_lane::control_plane::AGENT_USER;
    let kubectl = &lane.control_plane.kubectl;
    let mut wrong = Vec::new();
    for (verb, resource, allowed) in [
        ("watch", "networkpolicies.networking.k8s.io", true),
        ("watch", "namespaces", true),
        ("watch", "pods", true),
        ("watch", "nodes", true),
        ("create", "events.events.k8s.io", true),
        ("patch", "nodes/status", false),
        ("patch", "nodes", false),
        ("patch", "events.events.k8s.io", false),
        ("update", "pods", false),
        ("get", "secrets", false),
    ] {
        if kubectl.can(AGENT_USER, verb, resource)? != allowed {
            wrong.push(format!(
                "{verb} {resource}: {}",
                if allowed { "no" } else { "yes" }
            ));
        }
    }
    if wrong.is_empty() {
        Ok(format!("{AGENT_USER}: as deploy/rbac.yaml says"))
    } else {
        Err(wrong.join("; "))
    }
}

/// Deletes the story's policies, and its pod at once, as its kubelet would confirm.
fn tear_down(lane: &Lane) -> Result<(), String> {
    let kubectl = &lane.control_plane.kubectl;
    kubectl.delete_now("networkpolicy", NAMESPACE, &["admit", "sctp"])?;
    kubectl.delete_now("pod", NAMESPACE, &[POD])
}

/// The story's namespace (and its default ServiceAccount, which no controller-manager makes
/// here); its pod, bound to this node, without an address yet; the policy admitting TCP 80
/// from 10.244.9.0/24 but 10.244.9.8.
fn objects() -> Value {
    json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Namespace",
         "metadata": {"name": NAMESPACE, "labels": {"ns": NAMESPACE, "kubernetes.io/metadata.name": NAMESPACE}}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"namespace": NAMESPACE, "name": "default"}},
        {"apiVersion": "v1", "kind": "Pod",
         "metadata": {"namespace": NAMESPACE, "name": POD, "labels": {"pod": POD}},
         "spec": {"nodeName": NODE_NAME, "automountServiceAccountToken": false,
                  "containers": [{"name": "web", "image": "web",
                  "ports": [{"name": "http", "containerPort": 80}]}]}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
         "metadata": {"namespace": NAMESPACE, "name": "admit"},
         "spec": {"podSelector": {"matchLabels": {"pod": POD}},
                  "ingress": [{"from": [{"ipBlock": {"cidr": "10.244.9.0/24",
                                                     "except": [format!("{EXCEPTED}/32")]}}],
                               "ports": [{"protocol": "TCP", "port": 80}]}]}}
    ]})
}

/// Starts the agent: the `.exe` under the node's Wine.
fn start_agent(lane: &Lane, node: &Node) -> Result<AgentProcess, String> {
    AgentProcess::start(&lane.control_plane, node.daemon_launch())
}

/// Polls `check` until it answers, the agent exits, or [`AGENT_DEADLINE`] passes.
fn poll<T>(
    agent: &AgentProcess,
    what: &str,
    mut check: impl FnMut() -> Option<T>,
) -> Result<T, String> {
    agent.poll(AGENT_DEADLINE, Duration::from_millis(250), what, || {
        Ok(check())
    })
}

/// The snapshot names the pod and the policy selecting it: every watch listed (the agent
/// writes nothing before), the Node and the pod read, the policy validated.
fn wait_for_snapshot(snapshot: &Path, agent: &AgentProcess) -> Result<String, String> {
    let took = Instant::now();
    let (key, policy) = (format!("{NAMESPACE}/{POD}"), format!("{NAMESPACE}/admit"));
    let pod = poll(agent, &format!("snapshot naming {key}'s policy"), || {
        let held = cni_win_core::network_policy::read(snapshot).ok()??.snapshot;
        let pod = held.policy?.pods.get(&key)?.clone();
        (pod.policies == [policy.as_str()]).then_some((held.node, pod))
    })?;
    Ok(format!(
        "in {} ms: snapshot of node {:?} names {key}, selected by {policy}, {} rule(s) for its ADD",
        took.elapsed().as_millis(),
        pod.0,
        pod.1.add.len()
    ))
}

/// A policy with an SCTP port (which the API accepts and Windows cannot enforce): the agent
/// publishes a Warning Event `PolicyRefused` on it, through events.k8s.io as RBAC allows.
fn refusal_event(lane: &Lane, agent: &AgentProcess) -> Result<String, String> {
    let kubectl = &lane.control_plane.kubectl;
    kubectl.apply(
        &json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"namespace": NAMESPACE, "name": "sctp"},
        "spec": {"podSelector": {"matchLabels": {"pod": "nobody"}},
                 "ingress": [{"ports": [{"protocol": "SCTP", "port": 80}]}]}}),
    )?;
    let note = poll(
        agent,
        &format!("PolicyRefused Event on {NAMESPACE}/sctp"),
        || {
            let events = kubectl.get("events.events.k8s.io", NAMESPACE).ok()?;
            events["items"].as_array()?.iter().find_map(|event| {
                (event["reason"] == "PolicyRefused" && event["regarding"]["name"] == "sctp")
                    .then(|| event["note"].as_str().unwrap_or_default().to_owned())
            })
        },
    )?;
    Ok(format!("PolicyRefused: {note}"))
}

/// With every Windows process of the node stopped, the emulator's verdict on the pod's first
/// packets: TCP 80 from the admitted peer, not from the excepted one nor to port 81; the
/// node's own always.
fn first_packets(node: &Node, node_ip: &str, pod: &str) -> Result<String, String> {
    let engine = node.engine()?;
    let cases = [
        (ADMITTED, 80, Verdict::Allowed),
        (EXCEPTED, 80, Verdict::Denied),
        (ADMITTED, 81, Verdict::Denied),
        (node_ip, 81, Verdict::Allowed),
    ];
    let mut seen = Vec::new();
    for (from, port, want) in cases {
        let packet = Packet::tcp(
            from.parse().map_err(|e| format!("{from}: {e}"))?,
            pod.parse().map_err(|e| format!("{pod}: {e}"))?,
            port,
        );
        let verdict = engine
            .check_packet(&packet)
            .map_err(|failure| failure.to_string())?
            .verdict()
            .map_err(|undocumented| undocumented.to_string())?;
        if verdict != want {
            return Err(format!("{from} -> {pod}:{port}: {verdict:?}, not {want:?}"));
        }
        seen.push(format!("{from}:{port} {verdict:?}"));
    }
    Ok(seen.join(", "))
}
