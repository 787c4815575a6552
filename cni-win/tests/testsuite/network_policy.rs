//! The NetworkPolicy agent end to end on an emulated node, as a task of the node daemon: the
//! cluster fed through the same `Feed` the API server's watches feed, HNS programmed through
//! the daemon's client, judged by the emulator's verdict on each connection's first packet and
//! by its count of policy writes and raw calls. Only the kube watches themselves are not run
//! here (the node lane runs them against a real API server).

use std::time::{Duration, SystemTime};

use crate::support::network_policy::{
    PROGRAMMED, PolicyNode, b_to_a, eventually, finding, policy, relist,
};
use cni_win::network_policy::{Agent, Event, Feed, Resource};
use cni_win_core::network_policy::{self as format, PolicySnapshot};
use hns::schema::policy::AclPolicy;
use hns::schema::{EndpointPolicy, ModifyRequest, RequestType};
use hns::{HnsVersion, WindowsBuild};
use hns_emulator::acl::{PolicyWrites, Verdict};
use serde_json::json;

use Verdict::{Allowed, Denied};

const BUILDS: [WindowsBuild; 2] = [WindowsBuild::SERVER_2022, WindowsBuild::SERVER_2025];

fn writes(node: &PolicyNode) -> PolicyWrites {
    node.node.engine.reset_policy_writes().unwrap()
}

/// The remote pod x/c relabelled `pod: b`, which the policy admits: the writes it took.
fn remote_c_becomes_b(node: &mut PolicyNode, agent: &Agent) -> PolicyWrites {
    writes(node);
    node.relabel("x/c", "b");
    agent.feed().pods(Event::Apply(node.api_pod("x/c")));
    assert!(agent.wait_programmed(PROGRAMMED));
    writes(node)
}

/// The policy of the truth tables' kind, programmed from a whole relist: pods `b` reach x/a
/// on TCP 80 from wherever they run, nothing else reaches x/a but the node, and every other
/// pod is open, on both builds. Then a remote pod's label change is one IP set update: no
/// endpoint's rules are rewritten (HNS 15.0, Windows Server 2022's: IP sets).
#[test]
fn a_policy_is_programmed_from_the_watches_and_a_membership_change_is_one_write() {
    let mut node = PolicyNode::new();
    let (agent, _daemon) = node.programmed_agent(&[b_to_a()]);
    for build in BUILDS {
        for (from, port, verdict) in [
            ("x/b", 80, Allowed),
            ("y/b", 80, Allowed),
            ("x/b", 81, Denied),
            ("x/c", 80, Denied),
            ("y/c", 80, Denied),
            (crate::support::network_policy::NODE_IP, 81, Allowed),
        ] {
            assert_eq!(
                node.tcp(from, "x/a", port, build),
                verdict,
                "{build} {from}:{port}"
            );
        }
        for (from, to) in [("x/a", "y/b"), ("x/c", "x/b"), ("y/c", "y/b")] {
            assert_eq!(
                node.tcp(from, to, 81, build),
                Allowed,
                "{build} {from} -> {to}"
            );
        }
    }
    let sets = node
        .node
        .client
        .open_network(node.node.network_id())
        .unwrap()
        .into_properties()
        .policies;
    assert!(
        sets.iter().any(|p| p.type_name() == "SetPolicy"),
        "peers are IP sets on HNS 15.0: {sets:?}"
    );

    let made = remote_c_becomes_b(&mut node, &agent);
    assert_eq!(
        (made.network_requests, made.endpoint_requests),
        (1, 0),
        "one set update, no endpoint rewritten: {made:?}"
    );
    for build in BUILDS {
        assert_eq!(node.tcp("x/c", "x/a", 80, build), Allowed, "{build}");
    }
}

/// On a Flannel node the conflist is in Flannel-native form, refused as configured (its
/// `ipam` lacks what subnet.env fills in) and accepted as ADD runs it: the agent follows the
/// config ADD runs on, so the snapshot is written.
#[test]
fn a_flannel_native_config_gets_its_snapshot() {
    let node = PolicyNode::new().flannel_native();
    let (_agent, _daemon) = node.programmed_agent(&[b_to_a()]);
    assert_eq!(node.policy().pods["x/a"].policies, ["x/b-to-a"]);
    assert_eq!(
        node.tcp("x/c", "x/a", 80, WindowsBuild::SERVER_2025),
        Denied
    );
}

/// A change between rounds costs one enumeration of the endpoints and its writes: the
/// programmer reads again only what it wrote to last time (here the network whose IP set the
/// previous change updated), never every endpoint (2 calls each: half a second on a node with
/// a hundred pods and HNS answering in 5 ms).
#[test]
fn a_change_between_rounds_reads_hns_for_little() {
    let mut node = PolicyNode::new();
    let (agent, _daemon) = node.programmed_agent(&[b_to_a()]);
    remote_c_becomes_b(&mut node, &agent);

    node.node.engine.reset_stats().unwrap();
    node.relabel("y/c", "b");
    agent.feed().pods(Event::Apply(node.api_pod("y/c")));
    assert!(agent.wait_programmed(PROGRAMMED));
    let calls = node.node.engine.reset_stats().unwrap();
    let count = |function: &str| calls.get(function).copied().unwrap_or(0);
    assert_eq!(
        [
            "HcnEnumerateEndpoints",
            "HcnOpenEndpoint",
            "HcnQueryEndpointProperties",
            "HcnEnumerateNetworks",
            "HcnOpenNetwork",
            "HcnQueryNetworkProperties",
            "HcnModifyNetwork",
            "HcnModifyEndpoint",
        ]
        .map(count),
        [1, 0, 0, 0, 2, 1, 1, 0],
        "{calls:?}"
    );
    assert_eq!(
        node.tcp("y/c", "x/a", 80, WindowsBuild::SERVER_2025),
        Allowed
    );
}

/// Below HNS 13.0 there are no IP sets: a membership change rewrites the rules that list the
/// peer, a new rule before the old one goes.
#[test]
fn without_ip_sets_peers_are_listed_in_the_rules() {
    let mut node = PolicyNode::new();
    node.node
        .engine
        .set_version(HnsVersion::new(12, 0))
        .unwrap();
    let (agent, _daemon) = node.programmed_agent(&[b_to_a()]);
    assert_eq!(node.policy().mode, "inline");
    for build in BUILDS {
        assert_eq!(node.tcp("y/b", "x/a", 80, build), Allowed);
        assert_eq!(node.tcp("x/c", "x/a", 80, build), Denied);
    }
    let made = remote_c_becomes_b(&mut node, &agent);
    assert_eq!(
        (made.network_requests, made.endpoint_requests),
        (0, 2),
        "x/a's rule added anew, then the old one removed: {made:?}"
    );
    assert_eq!(
        node.tcp("x/c", "x/a", 80, WindowsBuild::SERVER_2025),
        Allowed
    );
}

/// Until every watch has listed its resource once, nothing is programmed: not HNS, not the
/// snapshot's policy, not by a round, not between rounds. The snapshot says only that the
/// agent runs and has not synced (so ADD bounds how long new pods start without rules).
#[test]
fn nothing_is_written_before_every_watch_has_synced() {
    let node = PolicyNode::new();
    let (agent, mut daemon) = node.agent();
    let feed = agent.feed();
    relist(
        &feed,
        Feed::namespaces,
        ["x", "y"]
            .map(crate::support::network_policy::namespace)
            .to_vec(),
    );
    relist(&feed, Feed::pods, node.api_pods());
    relist(
        &feed,
        Feed::node,
        vec![crate::support::network_policy::node_object()],
    );
    feed.policies(Event::Init);
    feed.policies(Event::InitApply(b_to_a()));
    daemon.round(&node.stop);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(writes(&node), PolicyWrites::default());
    let not_synced = node.snapshot();
    assert_eq!(not_synced.policy, None);
    assert_eq!(
        not_synced.networks,
        [("cbr0".to_owned(), node.node.network_id())].into()
    );
    assert!(
        daemon
            .metrics()
            .render()
            .contains("cniwin_netpol_synced 0\n")
    );
    feed.policies(Event::InitDone);
    assert!(
        agent.wait_programmed(PROGRAMMED),
        "programmed between rounds"
    );
    assert!(writes(&node).endpoint_requests > 0);
    assert!(node.snapshot().policy.is_some());
}

/// A restarted agent reads HNS and the cluster again and computes the same rules, with the
/// same `Id`s: it writes nothing, and no verdict changes at any point, before it has synced,
/// while it syncs or after.
#[test]
fn a_restart_writes_nothing_and_never_opens_a_window() {
    let node = PolicyNode::new();
    let first = node.programmed_agent(&[b_to_a()]);
    let before = node.matrix();
    assert!(before.iter().any(|(_, v)| *v == Denied));
    let held = node.snapshot();
    drop(first);
    writes(&node);

    let (second, mut daemon) = node.agent();
    let feed = second.feed();
    // Half-synced: pods and namespaces listed, policies not yet.
    relist(
        &feed,
        Feed::namespaces,
        ["x", "y"]
            .map(crate::support::network_policy::namespace)
            .to_vec(),
    );
    relist(&feed, Feed::pods, node.api_pods());
    daemon.round(&node.stop);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(node.matrix(), before, "before the restarted agent synced");
    node.sync(&feed, &[b_to_a()]);
    assert!(second.wait_programmed(PROGRAMMED));
    assert_eq!(node.matrix(), before, "after");
    assert_eq!(writes(&node), PolicyWrites::default(), "no write at all");
    assert_eq!(node.snapshot(), held, "the snapshot is the same");
}

/// HNS restarts while the agent writes a change (the IP set update comes back
/// `ERROR_SERVICE_NOT_ACTIVE`) and comes back with everything it held (its rehydration): the
/// set keeps its old members meanwhile, and the first pass that reads HNS again (the next
/// daemon round at the latest) writes it. A refusal from a stopped HNS says nothing of the set,
/// so it costs no backoff (before, the round held the set back for a second and x/c stayed
/// out).
#[test]
fn a_write_lost_to_an_hns_restart_is_made_once_hns_answers() {
    let mut node = PolicyNode::new();
    let (agent, mut daemon) = node.programmed_agent(&[b_to_a()]);
    node.node
        .engine
        .inject_fault(
            hns::Function::ModifyNetwork,
            1,
            hns::HResult::ERROR_SERVICE_NOT_ACTIVE,
        )
        .unwrap();
    node.node.engine.suffer(hns_emulator::Outage::Stop).unwrap();
    node.node
        .engine
        .suffer(hns_emulator::Outage::Restart)
        .unwrap();
    node.relabel("x/c", "b");
    agent.feed().pods(Event::Apply(node.api_pod("x/c")));
    assert!(
        eventually(Duration::from_secs(5), || {
            crate::support::daemon::Scrape::parse(&daemon.metrics().render())
                .sum("cniwin_netpol_hns_refusals_total", "")
                == 1.0
        }),
        "the pass's write was refused: {}",
        daemon.metrics().render()
    );

    daemon.round(&node.stop);
    for build in BUILDS {
        assert_eq!(node.tcp("x/c", "x/a", 80, build), Allowed, "{build}");
        assert_eq!(node.tcp("y/c", "x/a", 80, build), Denied, "{build}");
    }
}

/// A reboot: HNS loses the endpoints, the namespaces and flanneld's network, which flanneld
/// makes again under a new ID with no IP set; the runtime starts the pods again (here their
/// endpoints on the same addresses, without rules). Until the agent has passed over the new
/// network, the snapshot names the old one, which ADD takes for no snapshot; the first round
/// writes the network's sets and every endpoint's rules and renders the snapshot for the new
/// network, and the node answers as before the reboot.
#[test]
fn after_a_reboot_the_first_round_programs_the_new_network_as_before() {
    let node = PolicyNode::new();
    let (_agent, mut daemon) = node.programmed_agent(&[b_to_a()]);
    let before = node.matrix();
    let old = node.node.network_id();
    node.node
        .engine
        .suffer(hns_emulator::Outage::Reboot)
        .unwrap();
    node.node.client.delete_network(old).unwrap();
    let new = node.node.flanneld_recreates_cbr0();
    for pod in crate::support::network_policy::LOCAL {
        let endpoint = node.node.ours(&pod.replace('/', "-"), &node.ip(pod));
        node.node
            .client
            .attach_endpoint(node.node.namespace(), endpoint)
            .unwrap();
    }
    assert_eq!(
        node.snapshot().networks["cbr0"],
        old,
        "not yet rendered anew"
    );

    daemon.round(&node.stop);
    assert_eq!(node.snapshot().networks["cbr0"], new);
    let sets: Vec<String> = node
        .node
        .client
        .open_network(new)
        .unwrap()
        .into_properties()
        .policies
        .iter()
        .filter(|policy| policy.type_name() == "SetPolicy")
        .map(|policy| format!("{policy:?}"))
        .collect();
    assert!(!sets.is_empty(), "the new network's IP sets");
    for pod in crate::support::network_policy::LOCAL {
        assert!(!node.agents_rules(pod).is_empty(), "{pod}'s rules");
    }
    assert_eq!(node.matrix(), before);
}

/// An API server that cannot be reached changes nothing: HNS keeps the rules, a daemon round
/// keeps them, the metric and the log say so; when the watches come back with the same
/// cluster, still nothing is written.
#[test]
fn an_unreachable_api_server_keeps_the_last_programmed_rules() {
    let node = PolicyNode::new();
    let (agent, mut daemon) = node.programmed_agent(&[b_to_a()]);
    let feed = agent.feed();
    let before = node.matrix();
    writes(&node);

    for resource in Resource::ALL {
        feed.failed(resource, "connection refused".to_owned());
    }
    let text = daemon.metrics().render();
    assert!(text.contains("cniwin_netpol_api_up 0\n"), "at once: {text}");
    daemon.round(&node.stop);
    let text = daemon.metrics().render();
    assert!(text.contains("cniwin_netpol_api_up 0\n"), "{text}");
    assert!(text.contains("cniwin_netpol_synced 1\n"), "{text}");
    assert_eq!(node.matrix(), before);
    assert_eq!(writes(&node), PolicyWrites::default());

    node.sync(&feed, &[b_to_a()]);
    assert!(
        daemon
            .metrics()
            .render()
            .contains("cniwin_netpol_api_up 1\n"),
        "at once"
    );
    assert!(agent.wait_programmed(PROGRAMMED));
    daemon.round(&node.stop);
    assert!(
        daemon
            .metrics()
            .render()
            .contains("cniwin_netpol_api_up 1\n")
    );
    assert_eq!(writes(&node), PolicyWrites::default());
}

/// A round with the agent on and synced costs what a round without it costs: the daemon's
/// one read of the node (12 raw HCN calls on this three-pod node, closes not counted), which
/// the agent's pass takes as it is, writing nothing when nothing drifted.
#[test]
fn a_round_with_a_synced_agent_costs_no_hcn_call_more() {
    let node = PolicyNode::new();
    let (_agent, mut with_agent) = node.programmed_agent(&[b_to_a()]);
    let mut without = node.daemon();
    without.round(&node.stop);
    writes(&node);
    node.node.calls();
    without.round(&node.stop);
    let (alone, alone_with_closes) = node.node.calls();
    with_agent.round(&node.stop);
    let (with, with_closes) = node.node.calls();
    println!(
        "a daemon round on a three-pod node: {alone} raw HCN calls ({alone_with_closes} with \
         closes) without the NetworkPolicy agent, {with} ({with_closes}) with it synced"
    );
    assert_eq!(with, alone, "the agent's pass adds no HCN call");
    assert!(with <= 12, "{with} raw HCN calls");
    assert_eq!(writes(&node), PolicyWrites::default());
}

/// A change the programmer writes between a round's read and the round's pass (here: while
/// a task before the agent's runs) is not taken for drift: what was written after the read
/// started is read again before the pass, so the pass writes nothing and repairs nothing.
#[test]
fn a_write_after_the_rounds_read_is_not_drift() {
    use cni_win::daemon::{Ran, Round, Task};
    use std::rc::Rc;

    /// Feeds a change and waits until the programmer has written it.
    struct Meanwhile {
        agent: Rc<Agent>,
        change: Option<k8s_openapi::api::core::v1::Pod>,
    }
    impl Task for Meanwhile {
        fn register(&mut self, _: &mut prometheus_client::registry::Registry) {}
        fn run(&mut self, _: &Round<'_>) -> Ran {
            if let Some(pod) = self.change.take() {
                self.agent.feed().pods(Event::Apply(pod));
                assert!(self.agent.wait_programmed(PROGRAMMED));
            }
            Ran::default()
        }
        fn publish(&mut self) {}
    }

    let mut node = PolicyNode::new();
    let (agent, first) = node.programmed_agent(&[b_to_a()]);
    drop(first);
    node.relabel("x/c", "b");
    let agent = Rc::new(agent);
    let mut daemon = node
        .daemon()
        .with_task(Meanwhile {
            agent: Rc::clone(&agent),
            change: Some(node.api_pod("x/c")),
        })
        .with_task(agent.task());
    writes(&node);
    daemon.round(&node.stop);
    let made = writes(&node);
    assert_eq!(
        (made.network_requests, made.endpoint_requests),
        (1, 0),
        "the change's one set update, and nothing from the round's pass: {made:?}"
    );
    let text = daemon.metrics().render();
    for series in [
        "cniwin_netpol_drift_repairs_total 0\n",
        "cniwin_netpol_programming_failures_total 0\n",
    ] {
        assert!(text.contains(series), "{series}: {text}");
    }
    for build in BUILDS {
        assert_eq!(node.tcp("x/c", "x/a", 80, build), Allowed, "{build}");
    }
}

/// A rule removed behind the agent's back (the isolation block of x/a: x/a would be open) is
/// back after one daemon round, and counted as a repair.
#[test]
fn a_rule_removed_behind_the_agents_back_is_back_within_one_round() {
    let node = PolicyNode::new();
    let (_agent, mut daemon) = node.programmed_agent(&[b_to_a()]);
    let before = node.matrix();
    daemon.round(&node.stop);

    let block: Vec<EndpointPolicy> = node
        .agents_rules("x/a")
        .into_iter()
        .filter(|acl| acl.action == hns::schema::policy::AclAction::Block)
        .map(EndpointPolicy::Acl)
        .collect();
    assert_eq!(block.len(), 1, "x/a is isolated for ingress");
    let endpoint = node.endpoint("x/a").id;
    node.node
        .client
        .modify_endpoint_policies(
            endpoint,
            &ModifyRequest::policies(RequestType::Remove, block),
        )
        .unwrap();
    // Without its block, x/a's ingress rules no longer say what happens to x/c's packet:
    // dropped on Windows Server 2025, undocumented on 2022 (an L2Bridge endpoint whose ACLs
    // block nothing).
    assert_eq!(
        node.tcp("x/c", "x/a", 80, WindowsBuild::SERVER_2025),
        Denied,
        "2025's default"
    );
    let drifted = node.path("x/c", "x/a", 80, WindowsBuild::SERVER_2022);
    assert!(drifted.verdict().is_err(), "drifted: {drifted:?}");

    daemon.round(&node.stop);
    assert_eq!(node.matrix(), before, "repaired");
    let text = daemon.metrics().render();
    assert!(
        text.contains("cniwin_netpol_drift_repairs_total 1\n"),
        "{text}"
    );
}

/// A policy HNS cannot enforce as written is refused: its pods are isolated with nothing
/// allowed, it is counted, named in the snapshot, and due as an Event with its uid.
#[test]
fn a_refused_policy_fails_closed_and_is_told() {
    let node = PolicyNode::new();
    let (agent, mut daemon) = node.agent();
    let feed = agent.feed();
    let bad_except = policy(
        "y",
        "bad-except",
        json!({"podSelector": {"matchLabels": {"pod": "b"}},
               "ingress": [{"from": [{"ipBlock": {"cidr": "10.244.0.0/16", "except": ["10.0.0.0/24"]}}]}]}),
    );
    node.sync(&feed, &[b_to_a(), bad_except]);
    daemon.round(&node.stop);
    for build in BUILDS {
        assert_eq!(
            node.tcp("x/a", "y/b", 80, build),
            Denied,
            "{build}: fails closed"
        );
        assert_eq!(
            node.tcp(crate::support::network_policy::NODE_IP, "y/b", 80, build),
            Allowed,
            "{build}: the node still reaches it"
        );
    }
    let refusals = feed.refusals_due();
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert_eq!(refusals[0].uid.as_deref(), Some("uid-bad-except"));
    assert!(
        refusals[0].reason.contains("except[0]"),
        "{}",
        refusals[0].reason
    );
    assert_eq!(
        feed.refusals_due(),
        refusals,
        "due until told: a publication that failed is tried again"
    );
    feed.told(&refusals[0]);
    assert!(feed.refusals_due().is_empty(), "told once");
    assert!(node.policy().refused.contains_key("y/bad-except"));
    let text = daemon.metrics().render();
    for series in [
        "cniwin_netpol_policies{state=\"refused\"} 1\n",
        "cniwin_netpol_policies{state=\"applied\"} 1\n",
    ] {
        assert!(text.contains(series), "{series}: {text}");
    }
}

/// Every family the agent serves, after a round on a programmed node.
#[test]
fn the_agents_metric_families() {
    let node = PolicyNode::new();
    let (_agent, mut daemon) = node.programmed_agent(&[b_to_a()]);
    daemon.round(&node.stop);
    let text = daemon.metrics().render();
    for series in [
        "cniwin_netpol_api_up 1\n",
        "cniwin_netpol_synced 1\n",
        "cniwin_netpol_node_found 1\n",
        "cniwin_netpol_mode{mode=\"ip-sets\"} 1\n",
        "cniwin_netpol_mode{mode=\"inline\"} 0\n",
        "cniwin_netpol_policies{state=\"applied\"} 1\n",
        "cniwin_netpol_policies{state=\"refused\"} 0\n",
        "cniwin_netpol_endpoints{state=\"programmed\"} 3\n",
        "cniwin_netpol_endpoints{state=\"conflicting\"} 0\n",
        "cniwin_netpol_endpoints{state=\"failing\"} 0\n",
        "cniwin_netpol_snapshots{state=\"full\"} 1\n",
        "cniwin_netpol_snapshots{state=\"narrowed\"} 0\n",
        "cniwin_netpol_snapshots{state=\"refused\"} 0\n",
        "cniwin_netpol_snapshots{state=\"failed\"} 0\n",
        "cniwin_netpol_hns_writes_total{object=\"endpoint\"} ",
        "cniwin_netpol_hns_writes_total{object=\"network\"} ",
        "cniwin_netpol_drift_repairs_total 0\n",
        "cniwin_netpol_programming_failures_total 0\n",
        "cniwin_netpol_programming_latency_seconds_count 1\n",
        "# UNIT cniwin_netpol_programming_latency_seconds seconds\n",
    ] {
        assert!(text.contains(series), "{series}: {text}");
    }
}

/// A pod the scheduler put on this node is in the snapshot before its sandbox exists; ADD
/// (the real win-bridge) creates its endpoint with its rules, so its first packet is judged
/// by its policy; once the pod's address is reported the agent takes the endpoint over, and
/// no verdict changes.
#[test]
fn a_new_pod_is_created_with_the_snapshots_rules_and_taken_over_without_a_change() {
    let mut node = PolicyNode::new();
    let (agent, _daemon) = node.programmed_agent(&[b_to_a()]);
    let feed = agent.feed();

    // x/d, labelled like x/a: the policy isolates it and admits pods b on TCP 80.
    node.relabel("x/d", "a");
    let mut pending = node.api_pod("x/d");
    pending.status = None;
    feed.pods(Event::Apply(pending));
    assert!(agent.wait_programmed(PROGRAMMED));
    assert!(
        node.policy().pods.contains_key("x/d"),
        "in the snapshot before ADD"
    );

    let ip = add(&node, "np-d", "x", "d");
    node.ips.insert("x/d".to_owned(), ip);
    let first_packets = |node: &PolicyNode| -> Vec<(String, Verdict)> {
        BUILDS
            .iter()
            .flat_map(|build| {
                [
                    ("x/b", 80),
                    ("y/b", 80),
                    ("x/b", 81),
                    ("x/c", 80),
                    (crate::support::network_policy::NODE_IP, 81),
                ]
                .map(|(from, port)| {
                    (
                        format!("{build} {from}:{port}"),
                        node.tcp(from, "x/d", port, *build),
                    )
                })
            })
            .collect()
    };
    let at_add = first_packets(&node);
    let expected: Vec<Verdict> = [Allowed, Allowed, Denied, Denied, Allowed].repeat(2);
    assert_eq!(
        at_add.iter().map(|(_, v)| *v).collect::<Vec<_>>(),
        expected,
        "{at_add:?}"
    );

    feed.pods(Event::Apply(node.api_pod("x/d")));
    assert!(agent.wait_programmed(PROGRAMMED));
    assert_eq!(first_packets(&node), at_add, "taken over without a change");
    let held = node.policy();
    let d = &held.pods["x/d"];
    assert!(d.endpoint.is_some(), "{d:?}");
    let mut on_endpoint: Vec<String> = node
        .agents_rules("x/d")
        .into_iter()
        .filter_map(|acl| acl.id)
        .collect();
    let mut expected = d.expected.clone();
    on_endpoint.sort();
    expected.sort();
    assert_eq!(
        on_endpoint, expected,
        "the endpoint holds its usual rules now"
    );
    assert_eq!(d.policies, ["x/b-to-a"]);
}

/// Runs the real win-bridge ADD for `container` as pod `namespace/name` with the node's
/// config, as containerd does for a Kubernetes pod; returns the pod's address.
fn add(node: &PolicyNode, container: &str, namespace: &str, name: &str) -> String {
    use std::io::Write;
    let plugin = cni_win_conformance::node::built_beside(
        std::path::Path::new(env!("CARGO_BIN_EXE_cni-win")),
        "cni-win-bridge",
        "win-bridge",
    );
    let config = std::fs::read(node.node.conf_dir().join("10-cbr0.conf")).unwrap();
    let mut child = std::process::Command::new(plugin)
        .env_clear()
        .env("CNI_COMMAND", "ADD")
        .env("CNI_CONTAINERID", container)
        .env("CNI_NETNS", node.node.namespace().to_string())
        .env("CNI_IFNAME", "eth0")
        .env("CNI_PATH", node.node.dir().join("bin"))
        .env(
            "CNI_ARGS",
            format!("IgnoreUnknown=1;K8S_POD_NAMESPACE={namespace};K8S_POD_NAME={name}"),
        )
        .env(hns_emulator::STATE_ENV, node.node.state())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&config).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "ADD failed: {output:?}");
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let address = result["ips"][0]["address"].as_str().unwrap();
    address.split('/').next().unwrap().to_owned()
}

/// doctor says which mode the host's HNS allows, which policies select each local pod and
/// whether its endpoint holds its rules (a rule removed is a warning until a round puts it
/// back), each refused policy, and whether kube-proxy's load balancers keep the client's
/// address (DSR) now that policies select pods here.
#[test]
fn doctor_reports_the_policy_view_of_each_pod_and_kube_proxys_dsr() {
    use cni_win::doctor::Severity as Doctor;
    use hns::schema::{
        HostComputeLoadBalancer, LoadBalancerFlags, LoadBalancerPortMapping,
        LoadBalancerPortMappingFlags,
    };

    let node = PolicyNode::new();
    let (agent, mut daemon) = node.agent();
    let refused = policy(
        "y",
        "sctp-only",
        json!({"podSelector": {"matchLabels": {"pod": "nobody"}},
               "ingress": [{"ports": [{"protocol": "SCTP", "port": 80}]}]}),
    );
    node.sync(&agent.feed(), &[b_to_a(), refused]);
    daemon.round(&node.stop);
    let findings = node.doctor();
    let (_, verdict, evidence) = finding(&findings, "NetworkPolicy: programming mode");
    assert_eq!(*verdict, Doctor::Pass);
    assert!(evidence.contains("HNS 15.0: ip-sets"), "{evidence}");
    let (_, verdict, evidence) = finding(&findings, "pod \"x/a\": NetworkPolicy");
    assert_eq!(*verdict, Doctor::Pass, "{evidence}");
    assert!(
        evidence.contains("selected by x/b-to-a") && evidence.contains("holds its"),
        "{evidence}"
    );
    let (_, _, evidence) = finding(&findings, "pod \"x/b\": NetworkPolicy");
    assert!(evidence.contains("selected by no policy"), "{evidence}");
    let (_, verdict, evidence) = finding(&findings, "NetworkPolicy \"y/sctp-only\"");
    assert_eq!(*verdict, Doctor::Warn);
    assert!(evidence.contains("SCTP"), "{evidence}");
    let (_, verdict, _) = finding(&findings, "NetworkPolicy: kube-proxy DSR");
    assert_eq!(*verdict, Doctor::Pass, "no load balancer yet");

    // A rule of x/a's removed behind the agent's back.
    let endpoint = node.endpoint("x/a").id;
    let first = node.agents_rules("x/a").remove(0);
    node.node
        .client
        .modify_endpoint_policies(
            endpoint,
            &ModifyRequest::policies(RequestType::Remove, vec![EndpointPolicy::Acl(first)]),
        )
        .unwrap();
    let findings = node.doctor();
    let (_, verdict, evidence) = finding(&findings, "pod \"x/a\": NetworkPolicy");
    assert_eq!(*verdict, Doctor::Warn);
    assert!(evidence.contains("lacks 1 of its"), "{evidence}");

    // kube-proxy's load balancers: without DSR, Service traffic hides its client.
    let balancer = |vip: Option<&str>, external_port, flags| HostComputeLoadBalancer {
        host_compute_endpoints: vec![endpoint],
        frontend_vips: vip.into_iter().map(|vip| vip.parse().unwrap()).collect(),
        port_mappings: vec![LoadBalancerPortMapping {
            protocol: 6,
            internal_port: 80,
            external_port,
            flags: if vip.is_some() {
                LoadBalancerPortMappingFlags::NONE
            } else {
                LoadBalancerPortMappingFlags::LOCAL_ROUTED_VIP
            },
            ..LoadBalancerPortMapping::default()
        }],
        flags,
        ..HostComputeLoadBalancer::default()
    };
    let create = |lb: HostComputeLoadBalancer| {
        node.node
            .client
            .create_load_balancer(hns::Guid::ZERO, &lb)
            .unwrap()
            .id
    };
    let snat = create(balancer(Some("10.96.0.50"), 80, LoadBalancerFlags::NONE));
    let findings = node.doctor();
    let (_, verdict, evidence) = finding(&findings, "NetworkPolicy: kube-proxy DSR");
    assert_eq!(*verdict, Doctor::Fail, "{evidence}");
    assert!(
        evidence.contains("1 of 1 Service load balancers lack the DSR flag (e.g. 10.96.0.50)")
            && evidence.contains("cannot see the client"),
        "{evidence}"
    );
    node.node.client.delete_load_balancer(snat).unwrap();

    // kube-proxy with --enable-dsr: the ClusterIP has DSR; the same Service's external IP
    // and NodePort with externalTrafficPolicy Cluster do not, and reach x/a SNATed.
    create(balancer(Some("10.96.0.50"), 80, LoadBalancerFlags::DSR));
    let findings = node.doctor();
    let (_, verdict, evidence) = finding(&findings, "NetworkPolicy: kube-proxy DSR");
    assert_eq!(*verdict, Doctor::Pass, "{evidence}");
    let bypass = "NetworkPolicy: Services with externalTrafficPolicy Cluster";
    assert_eq!(finding(&findings, bypass).1, Doctor::Pass);
    create(balancer(Some("203.0.113.7"), 80, LoadBalancerFlags::NONE));
    create(balancer(None, 30080, LoadBalancerFlags::NONE));
    let findings = node.doctor();
    let (_, verdict, evidence) = finding(&findings, "NetworkPolicy: kube-proxy DSR");
    assert_eq!(
        *verdict,
        Doctor::Pass,
        "an eTP=Cluster address is not kube-proxy's flag: {evidence}"
    );
    let (_, verdict, evidence) = finding(&findings, bypass);
    assert_eq!(*verdict, Doctor::Warn);
    assert!(
        evidence.contains("2 load balancer(s)") && evidence.contains("203.0.113.7 port 80"),
        "{evidence}"
    );
}

/// The snapshot as ADD would find it: missing is a warning (new pods start without rules),
/// unusable a failure (every ADD fails with code 11); per network, judged as ADD judges it:
/// rendered for another HNS network or past its bound a failure, an agent not synced yet a
/// warning.
#[test]
fn doctor_says_what_add_makes_of_the_snapshot() {
    use cni_win::doctor::Severity as Doctor;
    let node = PolicyNode::new();
    let check = format!("NetworkPolicy: snapshot {}", node.snapshot.display());
    let (_, verdict, evidence) = finding(&node.doctor(), &check).clone();
    assert_eq!(verdict, Doctor::Warn);
    assert!(evidence.contains("new pods start without"), "{evidence}");
    std::fs::create_dir_all(node.snapshot.parent().unwrap()).unwrap();
    std::fs::write(&node.snapshot, b"{\"Version\": 1}").unwrap();
    let (_, verdict, evidence) = finding(&node.doctor(), &check).clone();
    assert_eq!(verdict, Doctor::Fail);
    assert!(evidence.contains("code 11"), "{evidence}");

    let (_agent, _daemon) = node.programmed_agent(&[b_to_a()]);
    let on_network = format!("{check} on network \"cbr0\"");
    let (_, verdict, evidence) = finding(&node.doctor(), &on_network).clone();
    assert_eq!(verdict, Doctor::Pass, "{evidence}");
    let written = node.snapshot();
    let rewrite = |snapshot: &PolicySnapshot, stamped: SystemTime| {
        std::fs::write(&node.snapshot, serde_json::to_vec(snapshot).unwrap()).unwrap();
        stamp(&node, stamped);
    };
    let other_network = PolicySnapshot {
        networks: [("cbr0".to_owned(), hns::Guid::from_u128(7))].into(),
        ..written.clone()
    };
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let not_synced = PolicySnapshot {
        policy: None,
        ..written.clone()
    };
    for (snapshot, stamped, severity, says) in [
        (
            &other_network,
            SystemTime::now(),
            Doctor::Fail,
            "created again since",
        ),
        (
            &written,
            hour_ago,
            Doctor::Fail,
            "more than its MaxAgeSeconds",
        ),
        (
            &not_synced,
            SystemTime::now(),
            Doctor::Warn,
            "without syncing",
        ),
        (&not_synced, hour_ago, Doctor::Fail, "has not synced since"),
    ] {
        rewrite(snapshot, stamped);
        let (_, verdict, evidence) = finding(&node.doctor(), &on_network).clone();
        assert_eq!(verdict, severity, "{evidence}");
        assert!(evidence.contains(says), "{says}: {evidence}");
    }
}

/// Sets the snapshot's stamp, its modification time.
fn stamp(node: &PolicyNode, at: SystemTime) {
    let file = std::fs::File::options()
        .write(true)
        .open(&node.snapshot)
        .unwrap();
    file.set_modified(at).unwrap();
}

fn stamped(node: &PolicyNode) -> SystemTime {
    std::fs::metadata(&node.snapshot)
        .unwrap()
        .modified()
        .unwrap()
}

/// The agent stamps the snapshot while it is synced and every watch answers (at least every
/// tenth of its bound), so ADD can tell a current file from one the agent stopped vouching
/// for; once a watch fails it stops, and the stamps resume when the API server is back.
#[test]
fn the_snapshot_is_stamped_only_while_the_agent_vouches_for_it() {
    let mut node = PolicyNode::new();
    node.snapshot_max_age = Duration::from_secs(1);
    let (agent, _daemon) = node.programmed_agent(&[b_to_a()]);
    assert_eq!(node.snapshot().max_age_seconds, 1);
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let recent = || {
        SystemTime::now()
            .duration_since(stamped(&node))
            .is_ok_and(|age| age < Duration::from_secs(1))
    };
    stamp(&node, hour_ago);
    assert!(eventually(Duration::from_secs(5), recent), "stamped again");

    agent
        .feed()
        .failed(Resource::Pods, "connection refused".to_owned());
    std::thread::sleep(Duration::from_millis(300));
    stamp(&node, hour_ago);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(stamped(&node), hour_ago, "no stamp while the API is lost");
    let found = format::read(&node.snapshot).unwrap().unwrap();
    let message = found
        .usable("cbr0", node.node.network_id(), SystemTime::now())
        .unwrap_err()
        .problem;
    assert!(message.contains("cut off from the API server"), "{message}");

    relist(&agent.feed(), Feed::pods, node.api_pods());
    assert!(eventually(Duration::from_secs(5), recent), "stamped again");

    // A change the agent cannot render (HNS unreadable: the pass fails before it, and is
    // tried again after a second) leaves the file as it is, unstamped.
    node.node
        .engine
        .inject_fault(hns::Function::EnumerateEndpoints, 1, hns::HResult::E_FAIL)
        .unwrap();
    agent.feed().policies(Event::Apply(policy(
        "y",
        "deny",
        json!({"podSelector": {}, "policyTypes": ["Ingress"]}),
    )));
    std::thread::sleep(Duration::from_millis(100));
    stamp(&node, hour_ago);
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        stamped(&node),
        hour_ago,
        "no stamp over a change not rendered"
    );
    assert!(agent.wait_programmed(PROGRAMMED));
    assert!(eventually(Duration::from_secs(5), recent), "stamped again");
}

/// A snapshot names the HNS network it is for, so a network whose config names it but that
/// HNS created after the round's read (flanneld at the node's start) must not wait for the
/// next round: within a tick the agent sees it. Before its first sync the agent's snapshot
/// without policy then names it too, still stamped when the agent started.
#[test]
fn a_network_created_after_the_rounds_read_is_in_the_snapshot_within_a_tick() {
    let mut node = PolicyNode::new();
    node.snapshot_max_age = Duration::from_secs(1);
    for (index, name) in [(20, "cbr1"), (30, "cbr2")] {
        let config = json!({"cniVersion": "1.1.0", "name": name, "type": "win-bridge",
            "ipam": {"type": "host-local", "subnet": format!("10.244.{index}.0/24"),
                     "dataDir": node.node.dir().join("ipam")},
            "networkPolicySnapshot": node.snapshot});
        let conf = node.node.conf_dir().join(format!("{index}-{name}.conf"));
        std::fs::write(conf, config.to_string()).unwrap();
    }
    let create = |index: u8, name: &str| {
        let subnet = format!("10.244.{index}.0/24");
        let gateway = format!("10.244.{index}.1");
        let settings = cni_win_conformance::flannel::host_gw(name, &[(&subnet, &gateway)]);
        node.node
            .client
            .create_network(hns::Guid::ZERO, &settings)
            .unwrap();
    };
    let networks = || node.snapshot().networks;
    let (agent, mut daemon) = node.agent();
    daemon.round(&node.stop);
    assert_eq!(node.snapshot().policy, None, "not synced");
    assert!(networks().contains_key("cbr0") && !networks().contains_key("cbr1"));
    let started = stamped(&node);
    create(20, "cbr1");
    assert!(
        eventually(Duration::from_secs(5), || networks().contains_key("cbr1")),
        "{:?}",
        networks()
    );
    assert_eq!(stamped(&node), started, "still when the agent started");

    node.sync(&agent.feed(), &[b_to_a()]);
    assert!(agent.wait_programmed(PROGRAMMED));
    assert!(node.snapshot().policy.is_some());
    create(30, "cbr2");
    assert!(
        eventually(Duration::from_secs(5), || networks().contains_key("cbr2")),
        "{:?}",
        networks()
    );
}

/// Where HNS has IP sets, a new pod's rules name the network's sets: a set only the
/// snapshot names (no endpoint's rules name it yet) is put on the network before the file
/// names it, so ADD's endpoint is created with it and judged by it; once no policy needs it,
/// it stays while the file on disk names it and goes the pass after.
#[test]
fn a_set_only_the_snapshot_names_is_on_the_network_while_the_file_names_it() {
    let mut node = PolicyNode::new();
    let (agent, mut daemon) = node.programmed_agent(&[b_to_a()]);
    let feed = agent.feed();
    let c_to_d = policy(
        "x",
        "c-to-d",
        json!({"podSelector": {"matchLabels": {"pod": "d"}},
               "ingress": [{"from": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"pod": "c"}}}]}]}),
    );
    feed.policies(Event::Apply(c_to_d.clone()));
    let mut pending = node.api_pod("x/d");
    pending.status = None;
    feed.pods(Event::Apply(pending));
    assert!(agent.wait_programmed(PROGRAMMED));
    let sets = || -> Vec<String> {
        node.node
            .client
            .open_network(node.node.network_id())
            .unwrap()
            .into_properties()
            .policies
            .iter()
            .filter_map(cni_win_netpol::IpSet::from_network_policy)
            .map(|set| set.id)
            .collect()
    };
    let d_rules = node.policy().rules_for_new_pod("x", "d");
    // An ingress peer set is in LocalAddresses, as production writes it.
    let names = |acl: &AclPolicy| -> Vec<String> {
        [&acl.local_addresses, &acl.remote_addresses]
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    };
    let named: Vec<String> = d_rules
        .iter()
        .flat_map(names)
        .filter(|entry| entry.starts_with(cni_win_netpol::SET_ID_PREFIX))
        .collect();
    assert_eq!(named.len(), 1, "the pods c, as a set: {d_rules:?}");
    let c_set = named[0].clone();
    assert!(sets().contains(&c_set), "{:?}", sets());

    feed.policies(Event::Delete(c_to_d));
    assert!(agent.wait_programmed(PROGRAMMED));
    assert!(
        !node
            .policy()
            .rules
            .values()
            .any(|acl| names(acl).contains(&c_set)),
        "the file no longer names it"
    );
    assert!(sets().contains(&c_set), "kept: the file on disk named it");
    daemon.round(&node.stop);
    assert!(!sets().contains(&c_set), "gone the pass after");

    // And ADD with a rule naming a set: pod x/d admitted from the pods c only.
    feed.policies(Event::Apply(policy(
        "x",
        "c-to-d",
        json!({"podSelector": {"matchLabels": {"pod": "d"}},
               "ingress": [{"from": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"pod": "c"}}}]}]}),
    )));
    assert!(agent.wait_programmed(PROGRAMMED));
    let ip = add(&node, "np-d", "x", "d");
    node.ips.insert("x/d".to_owned(), ip);
    for build in BUILDS {
        assert_eq!(node.tcp("x/c", "x/d", 80, build), Allowed, "{build}");
        assert_eq!(node.tcp("x/b", "x/d", 80, build), Denied, "{build}");
    }
}

/// A namespace's posture needs only its policies: one whose Namespace object has not arrived
/// (its watch failing or lagging while policies and pods arrive) is isolated as its policies
/// say, not opened as a namespace without policies.
#[test]
fn a_namespace_without_its_namespace_object_gets_its_policies_posture() {
    let node = PolicyNode::new();
    let (agent, mut daemon) = node.agent();
    let feed = agent.feed();
    relist(
        &feed,
        Feed::namespaces,
        vec![crate::support::network_policy::namespace("y")],
    );
    relist(&feed, Feed::pods, node.api_pods());
    relist(&feed, Feed::policies, vec![b_to_a()]);
    relist(
        &feed,
        Feed::node,
        vec![crate::support::network_policy::node_object()],
    );
    daemon.round(&node.stop);
    let policy = node.policy();
    assert!(
        policy.namespaces.contains_key("x"),
        "{:?}",
        policy.namespaces
    );
    let blocks: Vec<_> = policy
        .rules_for_new_pod("x", "unseen")
        .into_iter()
        .filter(|acl| acl.action == hns::schema::policy::AclAction::Block)
        .map(|acl| acl.direction)
        .collect();
    assert_eq!(blocks, [hns::schema::policy::AclDirection::In]);
    assert!(
        policy
            .rules_for_new_pod("y", "unseen")
            .iter()
            .all(|acl| acl.action == hns::schema::policy::AclAction::Allow),
        "no policy in y: open"
    );
}

/// The agent runs as SYSTEM and only ever replaces a regular file at the snapshot path: a
/// directory there (a config naming another component's data directory) is refused, left as
/// it is with what it holds, logged and counted.
#[test]
fn a_directory_at_the_snapshot_path_is_never_removed() {
    let node = PolicyNode::new();
    std::fs::create_dir_all(&node.snapshot).unwrap();
    let held = node.snapshot.join("networks").join("10.244.1.5");
    std::fs::create_dir_all(held.parent().unwrap()).unwrap();
    std::fs::write(&held, b"a pod's reservation").unwrap();
    let (_agent, mut daemon) = node.programmed_agent(&[b_to_a()]);
    daemon.round(&node.stop);
    assert_eq!(std::fs::read(&held).unwrap(), b"a pod's reservation");
    let text = daemon.metrics().render();
    for series in [
        "cniwin_netpol_snapshots{state=\"refused\"} 1\n",
        "cniwin_netpol_snapshots{state=\"full\"} 0\n",
    ] {
        assert!(text.contains(series), "{series}: {text}");
    }
}

/// The support bundle carries the policy view: the snapshot as the agent wrote it, and
/// doctor's NetworkPolicy findings.
#[test]
fn the_support_bundle_holds_the_policy_view() {
    use cni_win::support_bundle::{Plan, Settings};
    let node = PolicyNode::new();
    let (_agent, _daemon) = node.programmed_agent(&[b_to_a()]);
    let settings = Settings {
        paths: node.paths(),
        subnet_file: node.node.dir().join("subnet.env"),
        log_tail_bytes: 4000,
        step_timeout: Duration::from_secs(10),
        timeout: Duration::from_secs(60),
        max_bytes: 64 * 1024 * 1024,
    };
    let bundle = Plan::new(&settings).collect(Ok(node.node.new_client()));
    let entry = |suffix: &str| {
        bundle
            .entries
            .iter()
            .find(|entry| entry.name.ends_with(suffix))
            .unwrap_or_else(|| {
                let names: Vec<&str> = bundle.entries.iter().map(|e| e.name.as_str()).collect();
                panic!("no {suffix} in {names:?}")
            })
    };
    let snapshot_entry = entry("netpol/snapshot.json");
    assert!(snapshot_entry.name.starts_with("network-policy/"));
    let held = PolicySnapshot::from_bytes(&snapshot_entry.bytes).unwrap();
    assert_eq!(held, node.snapshot());
    let doctor = String::from_utf8_lossy(&entry("doctor.json").bytes).into_owned();
    assert!(
        doctor.contains("pod \\\"x/a\\\": NetworkPolicy"),
        "{doctor}"
    );
}

/// `cni-win daemon --network-policy` refuses to start without what it needs, naming it: the
/// node's name, a cluster or a kubeconfig that loads. `sweep --every`, the daemon's old
/// spelling, is the same daemon and says what to use instead; `sweep` without it is the
/// one-shot removal, which takes no daemon flag.
#[test]
fn the_agent_names_what_it_lacks_to_start() {
    let node = PolicyNode::new();
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_cni-win"));
        command
            .args(&args[..1])
            .args(["--conf-dir", &node.node.conf_dir().to_string_lossy()])
            .args(&args[1..])
            .env_remove("NODE_NAME")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env_remove("KUBERNETES_SERVICE_PORT")
            .env(hns_emulator::STATE_ENV, node.node.state());
        for (key, value) in env {
            command.env(key, value);
        }
        let output = command.output().unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, stderr) = run(&["sweep", "--network-policy"], &[]);
    assert_eq!(code, Some(2), "only as the daemon: {stderr}");
    assert!(stderr.contains("--every"), "{stderr}");

    for daemon in [
        &["daemon", "--network-policy"][..],
        &["sweep", "--every", "1h", "--network-policy"],
    ] {
        let (code, stderr) = run(daemon, &[]);
        assert_eq!(code, Some(1), "{daemon:?}: {stderr}");
        assert!(stderr.contains("--node-name"), "{daemon:?}: {stderr}");
        assert_eq!(
            stderr.contains("use `cni-win daemon --every"),
            daemon[0] == "sweep",
            "{daemon:?}: the alias says what to use: {stderr}"
        );
        let (code, stderr) = run(daemon, &[("NODE_NAME", "node-1")]);
        assert_eq!(code, Some(1));
        assert!(stderr.contains("not in a cluster"), "{stderr}");
    }
    let missing = node.node.dir().join("no-kubeconfig");
    let with_kubeconfig = [
        "daemon",
        "--network-policy",
        "--node-name",
        "node-1",
        "--kubeconfig",
        &missing.to_string_lossy(),
    ];
    let (code, stderr) = run(&with_kubeconfig, &[]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("no-kubeconfig"), "{stderr}");
}
