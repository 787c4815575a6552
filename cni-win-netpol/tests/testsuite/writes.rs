//! How the agent's writes converge HNS: how many, in what order, around whose rules.

#![cfg(not(windows))]

use cni_win_netpol::{Mode, NewPodPeers, NewPodSets, PodKey, Translation, Write};
use hns::WindowsBuild;
use hns::schema::policy::{AclAction, AclDirection, AclPolicy, AclRuleType};
use hns_emulator::acl::{Packet, Verdict};

use crate::support::{Changes, describe, from_every_b, policy, programmed, relabel};

#[test]
fn a_remote_pods_label_change_is_one_set_update_with_ip_sets() {
    let before = Changes::default();
    let mut hns = programmed(&before, &[from_every_b()], Mode::IpSets);
    let after = relabel("y/c", &[("pod", "b")]);
    let (cluster, _) = crate::support::cluster(&after, &[from_every_b()]);
    let (_, writes) = crate::support::round(&cluster, &after, &hns, Mode::IpSets);
    assert_eq!(
        describe(&writes.in_order()),
        ["network Update 1"],
        "no endpoint is rewritten"
    );
    crate::support::apply(&mut hns, &writes);
    let packet = Packet::tcp(
        crate::support::pod_ip("y/c", false),
        crate::support::pod_ip("x/a", false),
        80,
    );
    for network_type in &crate::support::NETWORK_TYPES {
        let build = WindowsBuild::SERVER_2025;
        assert_eq!(
            crate::support::verdict(&hns, "y/c", "x/a", &packet, build, network_type),
            Verdict::Allowed
        );
    }
}

/// H1: a peer set is named where Azure NPM names it, the packet's source on ingress
/// (`LocalAddresses`), its destination on egress (`RemoteAddresses`). A "same app" policy
/// (`from: - podSelector: {}`, a set holding the pod itself) written as before, the set in an
/// ingress rule's `RemoteAddresses`, admits every source under NPM's reading (a set there is
/// the destination, the pod); the emulator refuses that verdict, and this test failed.
#[test]
fn peer_sets_are_named_where_azure_npm_names_them() {
    let same_app = policy(
        "x",
        "same-app",
        serde_json::json!({
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{"from": [{"podSelector": {}}]}],
            "egress": [{"to": [{"podSelector": {}}]}]
        }),
    );
    let changes = Changes::default();
    let hns = programmed(&changes, std::slice::from_ref(&same_app), Mode::IpSets);
    let x_a = &hns.endpoints[&crate::support::endpoint_id("x/a")];
    let is_set = |field: &Option<String>| {
        field
            .as_deref()
            .is_some_and(|id| id.starts_with(cni_win_netpol::SET_ID_PREFIX))
    };
    let mut set_rules: Vec<(AclDirection, bool, bool)> = x_a
        .iter()
        .filter(|acl| is_set(&acl.local_addresses) || is_set(&acl.remote_addresses))
        .map(|acl| {
            (
                acl.direction,
                is_set(&acl.local_addresses),
                is_set(&acl.remote_addresses),
            )
        })
        .collect();
    set_rules.sort_by_key(|(direction, ..)| *direction == AclDirection::Out);
    assert_eq!(
        set_rules,
        [
            (AclDirection::In, true, false),
            (AclDirection::Out, false, true)
        ],
        "{x_a:#?}"
    );
    let tcp = |from: &str, to: &str| {
        Packet::tcp(
            crate::support::pod_ip(from, false),
            crate::support::pod_ip(to, false),
            80,
        )
    };
    for build in [WindowsBuild::SERVER_2022, WindowsBuild::SERVER_2025] {
        for network_type in &crate::support::NETWORK_TYPES {
            let verdict = |from: &str, to: &str| {
                crate::support::verdict(&hns, from, to, &tcp(from, to), build, network_type)
            };
            assert_eq!(verdict("x/b", "x/a"), Verdict::Allowed, "same namespace");
            assert_eq!(verdict("y/b", "x/a"), Verdict::Denied, "another namespace");
            assert_eq!(verdict("x/a", "y/b"), Verdict::Denied, "egress elsewhere");
        }
    }
}

#[test]
fn a_remote_pods_label_change_rewrites_the_rules_naming_it_inline() {
    let before = Changes::default();
    let hns = programmed(&before, &[from_every_b()], Mode::Inline);
    let after = relabel("y/c", &[("pod", "b")]);
    let (cluster, _) = crate::support::cluster(&after, &[from_every_b()]);
    let (_, writes) = crate::support::round(&cluster, &after, &hns, Mode::Inline);
    assert_eq!(
        describe(&writes.in_order()),
        ["x/a Add 1", "x/a Remove 1"],
        "the new rule before the old one goes"
    );
}

#[test]
fn an_unchanged_cluster_costs_no_write_even_as_hns_spells_it_back_differently() {
    for mode in [Mode::Inline, Mode::IpSets] {
        let changes = Changes::default();
        let mut hns = programmed(&changes, &[from_every_b()], mode);
        for acl in hns.endpoints.values_mut().flatten() {
            if let Some(list) = &acl.remote_addresses {
                let mut entries: Vec<&str> = list.split(',').collect();
                entries.reverse();
                acl.remote_addresses = Some(entries.join(", "));
            }
        }
        let (cluster, _) = crate::support::cluster(&changes, &[from_every_b()]);
        let (_, writes) = crate::support::round(&cluster, &changes, &hns, mode);
        assert!(writes.is_empty(), "{mode:?}: {writes:?}");
    }
}

#[test]
fn a_rule_removed_behind_the_agents_back_is_put_back() {
    let changes = Changes::default();
    let mut hns = programmed(&changes, &[from_every_b()], Mode::IpSets);
    let x_a = crate::support::endpoint_id("x/a");
    let taken = hns.endpoints.get_mut(&x_a).unwrap().remove(4);
    let (cluster, _) = crate::support::cluster(&changes, &[from_every_b()]);
    let (_, writes) = crate::support::round(&cluster, &changes, &hns, Mode::IpSets);
    assert_eq!(describe(&writes.in_order()), ["x/a Add 1"]);
    let Write::Endpoint { request, .. } = &writes.in_order()[0] else {
        unreachable!()
    };
    assert_eq!(
        request.settings.policies,
        [hns::schema::EndpointPolicy::Acl(taken)]
    );
}

/// x/a's ingress moves from the pod-b set to a new pod-c set while y/c joins pod-b and z/b
/// leaves it (y/a's egress still names pod-b), and namespace z becomes isolated: the new set,
/// pod-b widened to its old and new members, x/a's new rule then its old one, pod-b narrowed,
/// then each endpoint of z on its own, new rules before old.
#[test]
fn writes_go_new_sets_widened_sets_endpoints_narrowed_sets_old_sets() {
    let changes = Changes::default();
    let mut hns = programmed(&changes, &[from_every_b()], Mode::IpSets);
    let from_c = policy(
        "x",
        "from-b",
        serde_json::json!({
            "podSelector": {"matchLabels": {"pod": "a"}},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"pod": "c"}}}]}]
        }),
    );
    let keep_b = policy(
        "y",
        "to-b",
        serde_json::json!({
            "podSelector": {"matchLabels": {"pod": "a"}},
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"pod": "b"}}}]}]
        }),
    );
    let deny_z = policy(
        "z",
        "deny",
        serde_json::json!({"podSelector": {}, "policyTypes": ["Ingress"]}),
    );
    // Step 1: y/a's egress names the pod-b set too, so it stays when x/a stops naming it.
    let (cluster, _) = crate::support::cluster(&changes, &[from_every_b(), keep_b.clone()]);
    let (_, writes) = crate::support::round(&cluster, &changes, &hns, Mode::IpSets);
    crate::support::apply(&mut hns, &writes);
    // Step 2.
    let mut after = relabel("z/b", &[("pod", "z")]);
    after.pod_labels.insert(
        "y/c".to_owned(),
        [("pod".to_owned(), "b".to_owned())].into(),
    );
    let (cluster, _) = crate::support::cluster(&after, &[from_c.clone(), keep_b, deny_z]);
    let (_, writes) = crate::support::round(&cluster, &after, &hns, Mode::IpSets);
    assert_eq!(
        describe(&writes.in_order()),
        [
            "network Add 1",
            "network Update 1",
            "x/a Add 1",
            "x/a Remove 1",
            "network Update 1",
            "z/a Add 1",
            "z/a Remove 1",
            "z/b Add 1",
            "z/b Remove 1",
            "z/c Add 1",
            "z/c Remove 1",
        ]
    );
    crate::support::apply(&mut hns, &writes);
    // Step 3: nobody names the pod-b set any more: it goes after the rule naming it.
    let (cluster, _) = crate::support::cluster(&after, &[from_c]);
    let (_, writes) = crate::support::round(&cluster, &after, &hns, Mode::IpSets);
    assert_eq!(
        describe(&writes.in_order()),
        [
            "y/a Add 1",
            "y/a Remove 2",
            "z/a Add 1",
            "z/a Remove 1",
            "z/b Add 1",
            "z/b Remove 1",
            "z/c Add 1",
            "z/c Remove 1",
            "network Remove 1"
        ]
    );
    crate::support::apply(&mut hns, &writes);
}

/// z/b moves from pod-b to pod-c as x/a's ingress moves from pod-b to pod-c (y/a's egress
/// keeps both sets): z/b reaches x/a before and after, so it must after every
/// write: pod-c widened before x/a's old rule goes, pod-b narrowed only after x/a's new rule
/// is in.
#[test]
fn a_pod_moving_between_the_sets_of_a_changing_rule_is_never_refused() {
    let to_c = policy(
        "y",
        "to-b-and-c",
        serde_json::json!({
            "podSelector": {"matchLabels": {"pod": "a"}},
            "policyTypes": ["Egress"],
            "egress": [{"to": [
                {"namespaceSelector": {}, "podSelector": {"matchLabels": {"pod": "b"}}},
                {"namespaceSelector": {}, "podSelector": {"matchLabels": {"pod": "c"}}}
            ]}]
        }),
    );
    let from_c = policy(
        "x",
        "from-b",
        serde_json::json!({
            "podSelector": {"matchLabels": {"pod": "a"}},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"pod": "c"}}}]}]
        }),
    );
    let before = Changes::default();
    let hns = programmed(&before, &[from_every_b(), to_c.clone()], Mode::IpSets);
    let after = relabel("z/b", &[("pod", "c")]);
    let (cluster, _) = crate::support::cluster(&after, &[from_c, to_c]);
    let (_, writes) = crate::support::round(&cluster, &after, &hns, Mode::IpSets);
    let probes = ["z/b", "x/b", "y/c"]
        .map(|from| {
            let packet = Packet::tcp(
                crate::support::pod_ip(from, false),
                crate::support::pod_ip("x/a", false),
                80,
            );
            (from.to_owned(), "x/a".to_owned(), packet)
        })
        .to_vec();
    crate::support::assert_no_window(&hns, &writes.in_order(), &probes, "z/b moves to pod-c");
    assert_eq!(
        describe(&writes.in_order()),
        [
            "network Update 1",
            "x/a Add 1",
            "x/a Remove 1",
            "network Update 1"
        ],
        "pod-c widened, x/a's rules, pod-b narrowed"
    );
}

fn foreign(action: AclAction, direction: AclDirection, priority: u16) -> AclPolicy {
    AclPolicy {
        id: Some("operator-rule".to_owned()),
        protocols: Some("6".to_owned()),
        action,
        direction,
        local_addresses: None,
        remote_addresses: Some("192.0.2.1".to_owned()),
        local_ports: None,
        remote_ports: None,
        rule_type: Some(AclRuleType::Switch),
        priority: Some(priority),
    }
}

#[test]
fn other_owners_rules_are_kept_and_never_tied_with_an_opposite_action() {
    let changes = Changes::default();
    let deny_x = policy(
        "x",
        "deny",
        serde_json::json!({"podSelector": {}, "policyTypes": ["Ingress"]}),
    );
    let mut hns = crate::support::fresh_hns();
    let x_a = crate::support::endpoint_id("x/a");
    let operator = [
        foreign(AclAction::Block, AclDirection::In, 4200),
        foreign(AclAction::Block, AclDirection::In, 4201),
        foreign(AclAction::Allow, AclDirection::In, 65000),
    ];
    hns.endpoints.insert(x_a, operator.to_vec());
    let (cluster, _) = crate::support::cluster(&changes, &[deny_x, from_every_b()]);
    let (wanted, writes) = crate::support::round(&cluster, &changes, &hns, Mode::IpSets);
    crate::support::apply(&mut hns, &writes);
    let held = &hns.endpoints[&x_a];
    for rule in &operator {
        assert!(held.contains(rule), "kept: {rule:?}");
    }
    let ours = &wanted.endpoints[&x_a];
    let priorities = |action: AclAction| -> Vec<u16> {
        ours.iter()
            .filter(|acl| acl.action == action)
            .filter_map(|acl| acl.priority)
            .collect()
    };
    assert!(
        priorities(AclAction::Allow)
            .iter()
            .all(|p| ![4200, 4201, 65000].contains(p)),
        "{ours:?}"
    );
    assert!(
        priorities(AclAction::Allow).contains(&4202),
        "node rules moved past the operator's blocks"
    );
    assert_eq!(
        priorities(AclAction::Block),
        [65001],
        "the block moved past the operator's allow"
    );
}

/// A set HNS holds under the `Id` of a desired set but for another group (another `Name`:
/// two groups met at one `Id`, or another writer) is never updated to the desired members,
/// which would hand that group's rules this group's members: its rules and then the set go,
/// this group's rules are not written (fail closed), and the next pass writes them into the
/// free `Id`. No prefix of either pass lets the other group's member in.
#[test]
fn a_set_held_for_another_group_is_never_repointed() {
    use cni_win_netpol::IpSet;

    let changes = Changes::default();
    let policies = [from_every_b()];
    let mut hns = programmed(&changes, &policies, Mode::IpSets);
    let intruder = crate::support::pod_ip("y/c", false);
    for policy in &mut hns.network {
        let set = IpSet::from_network_policy(policy).unwrap();
        *policy = IpSet {
            name: "y/evil pod:pod=c v4".to_owned(),
            addresses: vec![intruder],
            ..set
        }
        .to_network_policy();
    }
    let (cluster, _) = crate::support::cluster(&changes, &policies);
    let (wanted, writes) = crate::support::round(&cluster, &changes, &hns, Mode::IpSets);
    let collisions = cni_win_netpol::renamed_sets(&hns, &wanted);
    assert_eq!(collisions.len(), 1, "{collisions:?}");
    assert!(
        collisions[0].names.contains("y/evil pod:pod=c v4"),
        "{}",
        collisions[0]
    );
    let in_order = writes.in_order();
    assert_eq!(
        describe(&in_order),
        ["x/a Remove 1", "network Remove 1"],
        "the other group's rule, then its set; never an Update"
    );
    let packet = |from: &str| {
        Packet::tcp(
            crate::support::pod_ip(from, false),
            crate::support::pod_ip("x/a", false),
            80,
        )
    };
    for prefix in 0..=in_order.len() {
        let mut held = hns.clone();
        for write in &in_order[..prefix] {
            crate::support::apply_one(&mut held, write);
        }
        for build in [WindowsBuild::SERVER_2022, WindowsBuild::SERVER_2025] {
            for network_type in &crate::support::NETWORK_TYPES {
                assert_eq!(
                    crate::support::verdict(
                        &held,
                        "x/b",
                        "x/a",
                        &packet("x/b"),
                        build,
                        network_type
                    ),
                    Verdict::Denied,
                    "{build} {network_type} after {prefix} write(s): fail closed"
                );
            }
        }
    }
    crate::support::apply(&mut hns, &writes);
    let (_, writes) = crate::support::round(&cluster, &changes, &hns, Mode::IpSets);
    assert_eq!(describe(&writes.in_order()), ["network Add 1", "x/a Add 1"]);
    crate::support::apply(&mut hns, &writes);
    for (from, verdict) in [("x/b", Verdict::Allowed), ("y/c", Verdict::Denied)] {
        for network_type in &crate::support::NETWORK_TYPES {
            let build = WindowsBuild::SERVER_2025;
            assert_eq!(
                crate::support::verdict(&hns, from, "x/a", &packet(from), build, network_type),
                verdict,
                "{from} {network_type}"
            );
        }
    }
}

/// A pod isolated for ingress still accepts its node's connections (kubelet's probes), as
/// the API requires; what it sends its node is what its egress rules allow, as for any
/// address: under a deny-all egress nothing, through an `ipBlock` naming the node, that.
#[test]
fn the_node_reaches_an_isolated_pod_and_the_pod_reaches_the_node_as_egress_allows() {
    let changes = Changes::default();
    let deny_all = policy(
        "x",
        "deny",
        serde_json::json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),
    );
    let to_node = policy(
        "x",
        "to-node",
        serde_json::json!({"podSelector": {}, "policyTypes": ["Egress"],
                           "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.10/32"}}]}]}),
    );
    let node = crate::support::node(false).addresses[0];
    let pod = crate::support::pod_ip("x/a", false);
    for (policies, egress) in [
        (vec![deny_all.clone()], Verdict::Denied),
        (vec![deny_all, to_node], Verdict::Allowed),
    ] {
        let hns = programmed(&changes, &policies, Mode::Inline);
        let acls: Vec<hns::schema::EndpointPolicy> = hns.endpoints
            [&crate::support::endpoint_id("x/a")]
            .iter()
            .cloned()
            .map(hns::schema::EndpointPolicy::Acl)
            .collect();
        let sets = hns_emulator::acl::IpSets::default();
        for (build, network_type) in [WindowsBuild::SERVER_2022, WindowsBuild::SERVER_2025]
            .into_iter()
            .flat_map(|build| crate::support::NETWORK_TYPES.map(|network| (build, network)))
        {
            let acls =
                hns_emulator::acl::EndpointAcls::new(&acls, &sets, network_type.clone()).unwrap();
            let probe = hns_emulator::acl::evaluate(
                &acls,
                AclDirection::In,
                &Packet::tcp(node, pod, 8080),
                build,
            );
            assert_eq!(probe.verdict, Verdict::Allowed, "kubelet probe");
            let to_node = hns_emulator::acl::evaluate(
                &acls,
                AclDirection::Out,
                &Packet::tcp(pod, node, 10250),
                build,
            );
            let names: Vec<_> = policies.iter().map(|p| &p.metadata.name).collect();
            assert!(to_node.undocumented.is_empty(), "{to_node:?}");
            assert_eq!(to_node.verdict, egress, "{build} {network_type}: {names:?}");
            let other = hns_emulator::acl::evaluate(
                &acls,
                AclDirection::In,
                &Packet::tcp("10.0.0.11".parse().unwrap(), pod, 80),
                build,
            );
            assert_eq!(
                other.verdict,
                Verdict::Denied,
                "another node's address is not this node"
            );
        }
    }
}

#[test]
fn a_pending_pod_gets_the_rules_of_its_policies_without_its_own_address() {
    let changes = Changes::default();
    let (cluster, _) = crate::support::cluster(&changes, &[from_every_b()]);
    let x_a = PodKey {
        namespace: "x".into(),
        name: "a".into(),
    };
    let node = crate::support::node(false);
    let pending = Translation::new(&cluster, &node)
        .pending_pod_acls(
            &x_a,
            &crate::support::port_mapping_fallback(),
            &mut NewPodPeers::Inline,
        )
        .unwrap();
    let own = crate::support::pod_ip("x/a", false).to_string();
    assert!(
        pending
            .iter()
            .all(|acl| acl.remote_addresses.as_deref() != Some(own.as_str()))
    );
    let b_pods = ["x/b", "y/b", "z/b"]
        .map(|pod| crate::support::pod_ip(pod, false).to_string())
        .join(",");
    assert!(
        pending.iter().any(|acl| acl.direction == AclDirection::In
            && acl.action == AclAction::Allow
            && acl.remote_addresses.as_deref() == Some(b_pods.as_str())),
        "peers inline: {pending:?}"
    );
    let blocks: Vec<_> = pending
        .iter()
        .filter(|acl| acl.action == AclAction::Block)
        .map(|acl| acl.direction)
        .collect();
    assert_eq!(blocks, [AclDirection::In]);
}

#[test]
fn an_unseen_pod_gets_its_namespaces_posture() {
    let changes = Changes::default();
    let deny_x = policy(
        "x",
        "deny",
        serde_json::json!({"podSelector": {}, "policyTypes": ["Ingress"]}),
    );
    let allow_from_y = policy(
        "x",
        "from-y",
        serde_json::json!({"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"ns": "y"}}}]}]}),
    );
    let (cluster, _) = crate::support::cluster(&changes, &[deny_x, allow_from_y, from_every_b()]);
    let node = crate::support::node(false);
    let unseen = PodKey {
        namespace: "x".into(),
        name: "new".into(),
    };
    let posture = Translation::new(&cluster, &node)
        .pending_pod_acls(&unseen, &[], &mut NewPodPeers::Inline)
        .unwrap();
    assert_eq!(
        posture,
        Translation::new(&cluster, &node)
            .namespace_posture("x", &[], &mut NewPodPeers::Inline)
            .unwrap()
    );
    let isolated: Vec<_> = posture
        .iter()
        .filter(|acl| acl.action == AclAction::Block)
        .map(|acl| acl.direction)
        .collect();
    assert_eq!(isolated, [AclDirection::In]);
    let y_pods = ["y/a", "y/b", "y/c"]
        .map(|pod| crate::support::pod_ip(pod, false).to_string())
        .join(",");
    let allowed: Vec<Option<&str>> = posture
        .iter()
        .filter(|acl| {
            acl.action == AclAction::Allow
                && acl.direction == AclDirection::In
                && acl.priority == Some(4300)
        })
        .map(|acl| acl.remote_addresses.as_deref())
        .collect();
    assert_eq!(
        allowed,
        [Some(y_pods.as_str())],
        "what the namespace-wide policy allows, not what from-b (pods a only) does"
    );

    let open = Translation::new(&cluster, &node)
        .namespace_posture("z", &[], &mut NewPodPeers::Inline)
        .unwrap();
    assert!(
        open.iter().all(|acl| acl.action == AclAction::Allow),
        "no policy in z: open both ways"
    );

    let (cluster, _) = crate::support::cluster(&changes, &[from_every_b()]);
    let selective = Translation::new(&cluster, &node)
        .namespace_posture("x", &[], &mut NewPodPeers::Inline)
        .unwrap();
    let blocks: Vec<_> = selective
        .iter()
        .filter(|acl| acl.action == AclAction::Block)
        .map(|acl| acl.direction)
        .collect();
    assert_eq!(
        blocks,
        [AclDirection::In],
        "a policy that may select the pod isolates it until the agent sees it"
    );
    assert!(
        selective.iter().all(|acl| acl.priority != Some(4300)),
        "and allows nothing of that policy's"
    );
}

#[test]
fn every_endpoint_gets_both_directions_explicitly() {
    let changes = Changes::default();
    let hns = programmed(&changes, &[], Mode::IpSets);
    for pod in crate::support::pods() {
        let acls = &hns.endpoints[&crate::support::endpoint_id(&pod)];
        for direction in [AclDirection::In, AclDirection::Out] {
            assert!(
                acls.iter().any(|acl| acl.direction == direction
                    && acl.action == AclAction::Allow
                    && acl.remote_addresses.is_none()
                    && acl.priority == Some(65100)),
                "{pod} {direction:?}: Windows Server 2025 denies what no ACL allows"
            );
        }
    }
    assert!(hns.network.is_empty(), "no policy, no set");
}

/// Calico and Azure NPM put Host-layer allow-alls, In and Out, beside every endpoint's switch
/// rules ("Required by l2bridge network"): the agent writes its own, with its `Id`s, where no
/// other owner rules the Host layer; namespace y's endpoints carry the plugin's already.
#[test]
fn every_endpoint_has_the_host_layer_allowed_once() {
    let changes = Changes::default();
    let hns = programmed(&changes, &[from_every_b()], Mode::IpSets);
    for pod in crate::support::pods() {
        let acls = &hns.endpoints[&crate::support::endpoint_id(&pod)];
        for direction in [AclDirection::In, AclDirection::Out] {
            let host: Vec<&AclPolicy> = acls
                .iter()
                .filter(|acl| {
                    acl.direction == direction && acl.rule_type == Some(AclRuleType::Host)
                })
                .collect();
            let [rule] = host[..] else {
                panic!("{pod} {direction:?}: one Host rule, not {host:?}");
            };
            let id = AclPolicy {
                id: None,
                ..rule.clone()
            };
            assert_eq!(id, AclPolicy::host_allow_all(direction), "{pod}");
            assert_eq!(
                cni_win_netpol::is_agents(rule),
                !pod.starts_with("y/"),
                "{pod}: the agent's where no other owner has one"
            );
        }
    }
}

/// Where HNS has IP sets, the rules ADD writes for a new pod name the network's sets rather
/// than listing their peers, and the sets they name are gathered for the agent to keep on
/// the network: a rule costs its policy, not its peers' number. Left out, every allow whose
/// peers are pods goes and the rest stays: isolated as before, its node and address blocks
/// allowed, nothing wider.
#[test]
fn a_new_pods_rules_name_the_networks_sets_or_leave_pod_peers_out() {
    let from_b_and_a_block = policy(
        "x",
        "from-b",
        serde_json::json!({
            "podSelector": {"matchLabels": {"pod": "a"}},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [
                {"namespaceSelector": {}, "podSelector": {"matchLabels": {"pod": "b"}}},
                {"ipBlock": {"cidr": "192.168.0.0/16"}}
            ]}]
        }),
    );
    let (cluster, _) = crate::support::cluster(&Changes::default(), &[from_b_and_a_block]);
    let node = crate::support::node(false);
    let x_a = PodKey {
        namespace: "x".into(),
        name: "a".into(),
    };
    let b_pods: Vec<std::net::IpAddr> = ["x/b", "y/b", "z/b"]
        .map(|pod| crate::support::pod_ip(pod, false))
        .into();
    // The peers a rule names: addresses in RemoteAddresses, an ingress peer set in
    // LocalAddresses (as production writes it).
    let remotes = |acls: &[AclPolicy]| -> Vec<String> {
        acls.iter()
            .filter(|acl| acl.action == AclAction::Allow && acl.priority == Some(4300))
            .flat_map(|acl| [acl.local_addresses.clone(), acl.remote_addresses.clone()])
            .flatten()
            .collect()
    };

    let mut gathered = NewPodSets::default();
    let named = Translation::new(&cluster, &node)
        .pending_pod_acls(&x_a, &[], &mut NewPodPeers::Sets(&mut gathered))
        .unwrap();
    let (sets, collisions) = gathered.finish(&[]);
    assert!(collisions.is_empty());
    let set = sets.values().next().expect("the group of pods b is a set");
    assert_eq!(sets.len(), 1, "{sets:?}");
    let mut members = set.addresses.clone();
    members.sort();
    let mut expected = b_pods.clone();
    expected.sort();
    assert_eq!(members, expected);
    let mut named_remotes = remotes(&named);
    named_remotes.sort();
    assert_eq!(named_remotes, ["192.168.0.0/16", set.id.as_str()]);

    let narrowed = Translation::new(&cluster, &node)
        .pending_pod_acls(&x_a, &[], &mut NewPodPeers::Omitted)
        .unwrap();
    assert_eq!(remotes(&narrowed), ["192.168.0.0/16"], "{narrowed:?}");
    let blocks: Vec<_> = narrowed
        .iter()
        .filter(|acl| acl.action == AclAction::Block)
        .map(|acl| acl.direction)
        .collect();
    assert_eq!(blocks, [AclDirection::In], "still isolated");
    let full = Translation::new(&cluster, &node)
        .pending_pod_acls(&x_a, &[], &mut NewPodPeers::Inline)
        .unwrap();
    assert!(
        narrowed.iter().all(|rule| full.contains(rule)),
        "narrower, never wider: {narrowed:?} {full:?}"
    );
}

/// A set that only the snapshot on disk names (ADD may still write a rule naming it on a
/// new endpoint) is not removed until the agent has replaced the file.
#[test]
fn a_set_the_snapshot_on_disk_names_is_kept() {
    let changes = Changes::default();
    let hns = programmed(&changes, &[from_every_b()], Mode::IpSets);
    let (cluster, _) = crate::support::cluster(&changes, &[]);
    let node = crate::support::node(false);
    let endpoints = crate::support::endpoints(&changes, &hns);
    let mut wanted = Translation::new(&cluster, &node).desired(&endpoints, Mode::IpSets);
    let removed_sets = |writes: &[Write]| {
        describe(writes)
            .into_iter()
            .filter(|write| write.starts_with("network Remove"))
            .count()
    };
    assert_eq!(
        removed_sets(&cni_win_netpol::diff(&hns, &wanted).in_order()),
        1,
        "the policy is gone: its set goes"
    );
    wanted.kept_sets = hns
        .network
        .iter()
        .filter_map(cni_win_netpol::IpSet::from_network_policy)
        .map(|set| set.id)
        .collect();
    assert_eq!(wanted.kept_sets.len(), 1);
    let writes = cni_win_netpol::diff(&hns, &wanted).in_order();
    assert_eq!(removed_sets(&writes), 0, "{:?}", describe(&writes));
}

/// What a pass plans for one set is the set's own writes, whatever other sets change with
/// it: the request that carries it (one `Update` of every changed set) differs from pass to
/// pass, its own writes do not. A set HNS refused is held back for its retry by comparing
/// these, so a cluster that keeps moving other sets does not have it sent again each pass.
#[test]
fn a_sets_planned_writes_do_not_depend_on_the_other_sets() {
    let from_every_c = policy(
        "x",
        "c-to-a",
        serde_json::json!({
            "podSelector": {"matchLabels": {"pod": "a"}},
            "ingress": [{"from": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"pod": "c"}}}],
                         "ports": [{"port": 81}]}]
        }),
    );
    let policies = [from_every_b(), from_every_c];
    let hns = programmed(&Changes::default(), &policies, Mode::IpSets);
    let writes = |relabelled: &[(&str, &str)]| {
        let changes = Changes {
            pod_labels: relabelled
                .iter()
                .map(|(pod, label)| {
                    let labels = [("pod".to_owned(), (*label).to_owned())].into();
                    ((*pod).to_owned(), labels)
                })
                .collect(),
            ..Changes::default()
        };
        let (cluster, _) = crate::support::cluster(&changes, &policies);
        crate::support::round(&cluster, &changes, &hns, Mode::IpSets).1
    };
    let b_alone = writes(&[("y/a", "b")]);
    let b_and_c = writes(&[("y/a", "b"), ("z/a", "c")]);
    assert_eq!(describe(&b_alone.in_order()), ["network Update 1"]);
    assert_eq!(describe(&b_and_c.in_order()), ["network Update 2"]);

    let Write::Network(request) = &b_alone.in_order()[0] else {
        panic!("a network write")
    };
    let set_b = cni_win_netpol::IpSet::from_network_policy(&request.settings.policies[0])
        .expect("an IP set");
    let item = cni_win_netpol::Item::Set(set_b.id);
    assert_eq!(describe(&b_alone.planned(&item)), ["network Update 1"]);
    assert_eq!(b_alone.planned(&item), b_and_c.planned(&item));
}
