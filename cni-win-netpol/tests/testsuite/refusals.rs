//! A write HNS refuses holds back only what depends on it: every other endpoint and set is
//! still programmed, in an order that opens no window, and the refused item is left as it
//! was until it is tried again.

#![cfg(not(windows))]

use cni_win_netpol::{Applied, Failed, Held, IpSet, Item, Mode, Write, Writes};
use hns::schema::RequestType;

use crate::support::{
    Changes, apply_one, endpoint_id, every_pair, from_every_b, policy, programmed, relabel,
};

/// Makes `writes` on `hns` as HNS would, refusing those `refuse` names; the writes HNS took,
/// in order, and what `apply` said.
fn apply_refusing(
    hns: &mut Held,
    writes: &Writes,
    hold: impl Fn(&Item) -> bool,
    refuse: impl Fn(&Write) -> bool,
) -> (Vec<Write>, Applied<String>) {
    let mut taken = Vec::new();
    let applied = writes.apply(hold, |write| {
        if refuse(write) {
            return Err(Failed::Refused("refused".to_owned()));
        }
        apply_one(hns, write);
        taken.push(write.clone());
        Ok(())
    });
    (taken, applied)
}

fn to_endpoint(pod: &str) -> impl Fn(&Write) -> bool {
    let id = endpoint_id(pod);
    move |write| matches!(write, Write::Endpoint { endpoint, .. } if *endpoint == id)
}

/// Whether a write names the set of pods labelled `pod=<label>`.
fn to_set(label: &str) -> impl Fn(&Write) -> bool {
    let name = format!("pod:pod={label} ");
    move |write| match write {
        Write::Network(request) => request
            .settings
            .policies
            .iter()
            .filter_map(IpSet::from_network_policy)
            .any(|set| set.name.contains(&name)),
        Write::Endpoint { .. } => false,
    }
}

fn set_id(hns: &Held, label: &str) -> String {
    let name = format!("pod:pod={label} ");
    hns.network
        .iter()
        .filter_map(IpSet::from_network_policy)
        .find(|set| set.name.contains(&name))
        .unwrap_or_else(|| panic!("no set of pods {label}"))
        .id
}

/// What `policies` on the cluster of `changes` want, and the writes from `hns`.
fn round(
    hns: &Held,
    changes: &Changes,
    policies: &[k8s_openapi::api::networking::v1::NetworkPolicy],
) -> (cni_win_netpol::Desired, Writes) {
    let (cluster, _) = crate::support::cluster(changes, policies);
    crate::support::round(&cluster, changes, hns, Mode::IpSets)
}

fn deny_z() -> k8s_openapi::api::networking::v1::NetworkPolicy {
    policy(
        "z",
        "deny",
        serde_json::json!({"podSelector": {}, "policyTypes": ["Ingress"]}),
    )
}

/// Namespace z becomes isolated while y/c joins pod-b; HNS refuses every write to z/a: z/b,
/// z/c and the set are programmed, z/a keeps the rules it had (its old ones are not taken
/// away before its new ones are in), and the next pass writes z/a alone.
#[test]
fn a_refused_endpoint_holds_back_no_other_endpoint_and_no_set() {
    let before = Changes::default();
    let mut hns = programmed(&before, &[from_every_b()], Mode::IpSets);
    let was = hns.clone();
    let after = relabel("y/c", &[("pod", "b")]);
    let (wanted, writes) = round(&hns, &after, &[from_every_b(), deny_z()]);
    let (taken, applied) = apply_refusing(&mut hns, &writes, |_| false, to_endpoint("z/a"));

    let z_a = endpoint_id("z/a");
    assert_eq!(applied.refused.len(), 1, "{:?}", applied.refused);
    assert_eq!(applied.refused[0].item, Item::Endpoint(z_a));
    assert_eq!(hns.endpoints[&z_a], was.endpoints[&z_a], "z/a as it was");
    for pod in crate::support::pods().iter().filter(|pod| *pod != "z/a") {
        let id = endpoint_id(pod);
        let mut held: Vec<_> = hns.endpoints[&id]
            .iter()
            .filter(|acl| cni_win_netpol::is_agents(acl))
            .cloned()
            .collect();
        let mut want = wanted.endpoints[&id].clone();
        held.sort_by(|a, b| a.id.cmp(&b.id));
        want.sort_by(|a, b| a.id.cmp(&b.id));
        assert_eq!(held, want, "{pod} programmed");
    }
    let b = IpSet::from_network_policy(&hns.network[0]).unwrap();
    assert!(
        b.addresses.contains(&crate::support::pod_ip("y/c", false)),
        "the set update went: {b:?}"
    );
    assert!(applied.endpoints_tried.contains(&z_a), "read again");
    crate::support::assert_no_window(&was, &taken, &every_pair(), "z/a refused");

    let (_, retry) = round(&hns, &after, &[from_every_b(), deny_z()]);
    assert_eq!(
        crate::support::describe(&retry.in_order()),
        ["z/a Add 1", "z/a Remove 1"],
        "the retry writes z/a alone"
    );
}

/// x/a moves to a new pod-c set and y/a to a new pod-a set; HNS refuses pod-c: pod-a is
/// still added (the sets go one at a time once their request is refused), y/a programmed,
/// x/a keeps its rules waiting for pod-c, and pod-b, which x/a's rules still name, stays.
#[test]
fn a_refused_set_holds_back_only_the_endpoints_whose_new_rules_name_it() {
    let changes = Changes::default();
    let mut hns = programmed(&changes, &[from_every_b()], Mode::IpSets);
    let was = hns.clone();
    let from = |ns: &str, label: &str| {
        policy(
            ns,
            "from",
            serde_json::json!({
                "podSelector": {"matchLabels": {"pod": "a"}},
                "policyTypes": ["Ingress"],
                "ingress": [{"from": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"pod": label}}}]}]
            }),
        )
    };
    let (wanted, writes) = round(&hns, &changes, &[from("x", "c"), from("y", "a")]);
    let (taken, applied) = apply_refusing(&mut hns, &writes, |_| false, to_set("c"));

    let (x_a, y_a) = (endpoint_id("x/a"), endpoint_id("y/a"));
    assert_eq!(hns.endpoints[&x_a], was.endpoints[&x_a], "x/a as it was");
    assert!(applied.waiting.contains_key(&x_a), "{:?}", applied.waiting);
    assert!(
        matches!(&applied.refused[..], [refused] if matches!(refused.item, Item::Set(_))),
        "{:?}",
        applied.refused
    );
    let mut held = hns.endpoints[&y_a].clone();
    held.retain(cni_win_netpol::is_agents);
    assert_eq!(held.len(), wanted.endpoints[&y_a].len(), "y/a programmed");
    set_id(&hns, "a");
    set_id(&hns, "b");
    crate::support::assert_no_window(&was, &taken, &every_pair(), "pod-c refused");
}

/// y/a's egress names pod-b and pod-c, and z/b moves from b to c while x/c joins b: one
/// update of both sets. HNS refuses pod-c: pod-b is widened, then narrowed, alone; pod-c
/// stays as it was; nothing both the old and the reached rules allow is refused meanwhile.
#[test]
fn a_refused_membership_update_leaves_the_other_sets_updated_without_a_window() {
    let to_b_and_c = policy(
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
    let mut hns = programmed(
        &Changes::default(),
        std::slice::from_ref(&to_b_and_c),
        Mode::IpSets,
    );
    let was = hns.clone();
    let mut after = relabel("z/b", &[("pod", "c")]);
    after.pod_labels.insert(
        "x/c".to_owned(),
        [("pod".to_owned(), "b".to_owned())].into(),
    );
    let (wanted, writes) = round(&hns, &after, &[to_b_and_c]);
    assert_eq!(
        crate::support::describe(&writes.in_order()),
        ["network Update 2"]
    );
    let (taken, applied) = apply_refusing(&mut hns, &writes, |_| false, to_set("c"));
    assert_eq!(
        crate::support::describe(&taken),
        ["network Update 1", "network Update 1"],
        "pod-b widened, then narrowed"
    );
    let (b, c) = (set_id(&was, "b"), set_id(&was, "c"));
    assert_eq!(
        applied
            .refused
            .iter()
            .map(|r| r.item.clone())
            .collect::<Vec<_>>(),
        [Item::Set(c.clone())]
    );
    let set = |hns: &Held, id: &str| {
        hns.network
            .iter()
            .filter_map(IpSet::from_network_policy)
            .find(|set| set.id == id)
            .unwrap()
    };
    assert_eq!(set(&hns, &b), wanted.sets[&b], "pod-b updated");
    assert_eq!(set(&hns, &c), set(&was, &c), "pod-c as it was");
    crate::support::assert_no_window(&was, &taken, &every_pair(), "pod-c refused");
}

/// x/a loses its only policy: its new rules go in, HNS refuses its Remove, and pod-b, which
/// its old rule still names, is not removed.
#[test]
fn a_set_a_refused_remove_leaves_named_is_kept() {
    let changes = Changes::default();
    let mut hns = programmed(&changes, &[from_every_b()], Mode::IpSets);
    let (_, writes) = round(&hns, &changes, &[]);
    assert_eq!(
        crate::support::describe(&writes.in_order()),
        ["x/a Add 1", "x/a Remove 2", "network Remove 1"]
    );
    let x_a = endpoint_id("x/a");
    let (taken, applied) = apply_refusing(
        &mut hns,
        &writes,
        |_| false,
        |write| {
            matches!(write, Write::Endpoint { endpoint, request }
            if *endpoint == x_a && request.request_type == RequestType::Remove)
        },
    );
    assert_eq!(crate::support::describe(&taken), ["x/a Add 1"]);
    assert_eq!(applied.refused.len(), 1);
    set_id(&hns, "b");
}

/// An item held back (its retry not due) is left as it is, as if refused, and said to be.
#[test]
fn a_held_item_is_left_as_it_is() {
    let mut hns = programmed(&Changes::default(), &[], Mode::IpSets);
    let was = hns.clone();
    let (_, writes) = round(&hns, &Changes::default(), &[deny_z()]);
    let z_a = Item::Endpoint(endpoint_id("z/a"));
    let (taken, applied) = apply_refusing(&mut hns, &writes, |item| *item == z_a, |_| false);
    assert_eq!(
        crate::support::describe(&taken),
        ["z/b Add 1", "z/b Remove 1", "z/c Add 1", "z/c Remove 1"]
    );
    assert_eq!(applied.held, [z_a].into());
    assert!(applied.refused.is_empty());
    assert_eq!(
        hns.endpoints[&endpoint_id("z/a")],
        was.endpoints[&endpoint_id("z/a")]
    );
}
