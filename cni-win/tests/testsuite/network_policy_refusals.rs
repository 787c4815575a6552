//! The NetworkPolicy agent when HNS refuses one of its writes: the failure stays with its
//! endpoint, which is told (metric, doctor, log) and tried again on its own backoff, reading
//! only what it needs; and a `Remove` HNS answers "policy not found" is read again and
//! finished, never counted done.

use std::time::Duration;

use crate::support::network_policy::{self, PROGRAMMED, PolicyNode, b_to_a, finding, policy};
use cni_win::daemon::Daemon;
use cni_win::doctor::Severity;
use cni_win::network_policy::{Agent, Event};
use hns::schema::policy::AclAction;
use hns::schema::{EndpointPolicy, ModifyRequest, RequestType};
use hns::{HResult, HnsVersion, WindowsBuild};
use hns_emulator::acl::Verdict::{Allowed, Denied};
use serde_json::json;

/// Waits until `done` holds, at most 10 s (a refused item is tried again after 1 s).
fn eventually(what: &str, done: impl Fn() -> bool) {
    assert!(
        network_policy::eventually(Duration::from_secs(10), done),
        "{what}: not within 10 s"
    );
}

fn metrics(daemon: &Daemon) -> String {
    daemon.metrics().render()
}

/// Namespaces x and y deny ingress but from pods b: x/b and y/b become isolated.
fn isolate_x_and_y(agent: &Agent) {
    for namespace in ["x", "y"] {
        agent.feed().policies(Event::Apply(policy(
            namespace,
            "from-b-only",
            json!({"podSelector": {},
                   "ingress": [{"from": [{"namespaceSelector": {},
                                          "podSelector": {"matchLabels": {"pod": "b"}}}]}]}),
        )));
    }
}

/// HNS refuses every write to x/b's endpoint (E_INVALIDARG). A change that isolates x/b and
/// y/b and moves the remote x/c into x/a's allowed pods: y/b and x/a are programmed, the set
/// update goes, x/b keeps the rules it held; the metric counts one failing endpoint and the
/// refusal's HRESULT, doctor says the agent could not write x/b and why, and retries read
/// x/b alone, never the whole node. Once HNS takes the write, x/b is programmed too.
#[test]
fn a_refused_endpoint_holds_back_nothing_else_and_is_told() {
    let mut node = PolicyNode::new();
    let (agent, daemon) = node.programmed_agent(&[b_to_a()]);
    let x_b = node.endpoint("x/b").id;
    let before_x_b = node.agents_rules("x/b");
    node.node
        .engine
        .refuse_policy_writes(x_b, HResult::E_INVALIDARG)
        .unwrap();

    node.relabel("x/c", "b");
    agent.feed().pods(Event::Apply(node.api_pod("x/c")));
    isolate_x_and_y(&agent);
    assert!(agent.wait_programmed(PROGRAMMED));

    let build = WindowsBuild::SERVER_2025;
    assert_eq!(
        node.tcp("x/c", "x/a", 80, build),
        Allowed,
        "the set update went"
    );
    assert_eq!(node.tcp("y/c", "y/b", 80, build), Denied, "y/b isolated");
    let held = node.policy();
    let mut y_b: Vec<String> = node
        .agents_rules("y/b")
        .into_iter()
        .filter_map(|acl| acl.id)
        .collect();
    let mut expected = held.pods["y/b"].expected.clone();
    y_b.sort();
    expected.sort();
    assert_eq!(y_b, expected, "y/b holds exactly its rules");
    assert_eq!(node.agents_rules("x/b"), before_x_b, "x/b as it was");
    assert_eq!(node.tcp("y/c", "x/b", 81, build), Allowed, "x/b still open");

    let text = metrics(&daemon);
    for series in [
        "cniwin_netpol_endpoints{state=\"failing\"} 1\n",
        "cniwin_netpol_endpoints{state=\"programmed\"} 2\n",
        "cniwin_netpol_hns_refusals_total{object=\"endpoint\",hresult=\"0x80070057\"} 1\n",
    ] {
        assert!(text.contains(series), "{series}: {text}");
    }
    let why = held.pods["x/b"].failing.clone().expect("x/b failing");
    assert!(why.contains("0x80070057"), "{why}");
    let findings = node.doctor();
    let (_, severity, evidence) = finding(&findings, "pod \"x/b\": NetworkPolicy");
    assert_eq!(*severity, Severity::Warn);
    assert!(
        evidence.contains("the agent could not write its rules")
            && evidence.contains("HRESULT 0x80070057"),
        "{evidence}"
    );

    // The retries: x/b alone, over a read of what was written to, never a full read.
    node.node.engine.reset_stats().unwrap();
    eventually("a retry", || {
        metrics(&daemon).contains("hresult=\"0x80070057\"} 2\n")
    });
    let calls = node.node.engine.stats().unwrap();
    let count = |function: &str| calls.get(function).copied().unwrap_or(0);
    assert_eq!(count("HcnEnumerateNetworks"), 0, "no full read: {calls:?}");
    assert_eq!(count("HcnModifyNetwork"), 0, "{calls:?}");
    assert!(count("HcnModifyEndpoint") >= 1, "{calls:?}");

    node.node.engine.clear_controls().unwrap();
    eventually("x/b programmed", || {
        metrics(&daemon).contains("cniwin_netpol_endpoints{state=\"failing\"} 0\n")
    });
    assert_eq!(
        node.tcp("y/c", "x/b", 81, build),
        Denied,
        "x/b isolated now"
    );
    assert_eq!(node.policy().pods["x/b"].failing, None);
}

/// x/a admits pods b on 80 and pods c on 81. After a round, its pod-b rule is removed behind
/// the agent's back; then the policy narrows to pods b on 82, so the agent removes both old allows in one
/// request, which HNS refuses ("policy not found": it lacks one). The agent reads x/a again
/// and removes what is there: x/c no longer reaches x/a on 81 (it did, exposed, when "policy
/// not found" counted as "endpoint gone" and the pass as done), with rules listing their
/// peers (HNS 12.0) and with IP sets (13.2).
#[test]
fn a_remove_of_a_rule_hns_lacks_is_read_again_and_finished() {
    for version in [HnsVersion::new(12, 0), HnsVersion::new(13, 2)] {
        remove_of_a_rule_hns_lacks(version);
    }
}

fn remove_of_a_rule_hns_lacks(version: HnsVersion) {
    let node = PolicyNode::new();
    node.node.engine.set_version(version).unwrap();
    let b_and_c = |ports: serde_json::Value| {
        policy(
            "x",
            "b-to-a",
            json!({"podSelector": {"matchLabels": {"pod": "a"}}, "ingress": ports}),
        )
    };
    let peers = |label: &str, port: u16| {
        json!({"from": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"pod": label}}}],
               "ports": [{"port": port}]})
    };
    let (agent, mut daemon) =
        node.programmed_agent(&[b_and_c(json!([peers("b", 80), peers("c", 81)]))]);
    // A round whose read the agent keeps: it holds x/a as programmed, and reads again between
    // rounds only what it writes to.
    daemon.round(&node.stop);
    let build = WindowsBuild::SERVER_2025;
    assert_eq!(node.tcp("x/c", "x/a", 81, build), Allowed);

    let x_a = node.endpoint("x/a").id;
    let allows: Vec<_> = node
        .agents_rules("x/a")
        .into_iter()
        .filter(|acl| acl.action == AclAction::Allow && acl.local_ports.is_some())
        .collect();
    let port_80 = allows
        .iter()
        .find(|acl| acl.local_ports.as_deref() == Some("80"))
        .expect("the pods-b rule")
        .clone();
    node.node
        .client
        .modify_endpoint_policies(
            x_a,
            &ModifyRequest::policies(RequestType::Remove, vec![EndpointPolicy::Acl(port_80)]),
        )
        .unwrap();

    agent
        .feed()
        .policies(Event::Apply(b_and_c(json!([peers("b", 82)]))));
    assert!(agent.wait_programmed(PROGRAMMED));
    eventually(&format!("HNS {version}: x/a's old allows removed"), || {
        node.tcp("x/c", "x/a", 81, build) == Denied
    });
    assert_eq!(node.tcp("x/b", "x/a", 82, build), Allowed);
    let mut on_endpoint: Vec<String> = node
        .agents_rules("x/a")
        .into_iter()
        .filter_map(|acl| acl.id)
        .collect();
    let mut expected = node.policy().pods["x/a"].expected.clone();
    on_endpoint.sort();
    expected.sort();
    assert_eq!(
        on_endpoint, expected,
        "HNS {version}: x/a holds exactly its rules"
    );
}

/// HNS refuses every write to the network's IP sets. A change that moves the remote x/c into
/// pods b (an update of the set x/a's rule names, refused) and isolates namespace y: y's
/// endpoints are programmed, and the snapshot new pods start from is written with y's
/// policy, since the set it names is still on the network (with its old members). Leaving
/// the file as it was would stop its stamp, and ADD would refuse every new pod of the node
/// once the file is older than its bound.
#[test]
fn a_refused_set_update_does_not_hold_back_the_snapshot() {
    let mut node = PolicyNode::new();
    let (agent, _daemon) = node.programmed_agent(&[b_to_a()]);
    let network = node.node.network_id();
    node.node
        .engine
        .refuse_policy_writes(network, HResult::E_INVALIDARG)
        .unwrap();

    node.relabel("x/c", "b");
    agent.feed().pods(Event::Apply(node.api_pod("x/c")));
    agent.feed().policies(Event::Apply(policy(
        "y",
        "deny-ingress",
        json!({"podSelector": {}, "policyTypes": ["Ingress"]}),
    )));
    assert!(agent.wait_programmed(PROGRAMMED));

    let build = WindowsBuild::SERVER_2025;
    assert_eq!(
        node.tcp("x/c", "x/a", 80, build),
        Denied,
        "the set as it was"
    );
    assert_eq!(node.tcp("x/c", "y/b", 80, build), Denied, "y/b isolated");
    assert_eq!(
        node.policy().pods["y/b"].policies,
        ["y/deny-ingress"],
        "the snapshot follows the policies"
    );
}
