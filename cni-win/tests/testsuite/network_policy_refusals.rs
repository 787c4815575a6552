//! The NetworkPolicy agent when HNS refuses one of its writes: the failure stays with its
//! endpoint, which is told (metric, doctor, log) and tried again on its own backoff, reading
//! only what it needs.

use std::time::Duration;

use crate::support::network_policy::{self, PROGRAMMED, PolicyNode, b_to_a, finding, policy};
use cni_win::daemon::Daemon;
use cni_win::doctor::Severity;
use cni_win::network_policy::{Agent, Event};
use hns::{HResult, WindowsBuild};
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
