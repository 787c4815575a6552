//! ADD and the node's NetworkPolicy snapshot (`networkPolicySnapshot`): a new pod's endpoint
//! is created with the rules the snapshot gives its pod (or its namespace, or a namespace
//! without policies), in the same `HcnCreateEndpoint` call, so its first packet is judged by
//! them; a snapshot that cannot be used (damaged, hostile, another network's, past its bound,
//! an agent that has not synced for too long, a rule HNS refuses) fails ADD with code 11 and
//! leaves nothing behind, never a pod started open.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use cni_win_core::network_policy::{self, Form, NodePolicy, PodPolicy, PolicySnapshot};
use hns::Guid;
use hns::schema::EndpointPolicy;
use hns::schema::policy::{AclAction, AclDirection, AclPolicy};
use hns::{WindowsBuild, WindowsRelease};
use hns_emulator::acl::{Packet, Verdict};
use serde_json::{Value, json};

use super::Plugin;
use crate::node::{Call, Node, Reply};

/// The node's address: its traffic is always allowed.
const NODE_IP: &str = "10.0.0.10";
/// A pod of the cluster that x/a's policy admits on TCP 80.
const ADMITTED: &str = "10.244.2.5";
/// A pod it does not admit.
const OTHER: &str = "10.244.2.6";
/// A rule of the snapshot; ADD writes what the snapshot names whatever its `Id`.
fn rule(name: &str, direction: AclDirection, action: AclAction, priority: u16) -> AclPolicy {
    AclPolicy {
        id: Some(format!("snapshot-{name}")),
        ..AclPolicy::all_traffic(action, direction, priority)
    }
}

/// What the agent writes for namespace `x`, where a policy isolates every pod for ingress
/// and admits [`ADMITTED`] to `a` on TCP 80: `a`'s rules, the namespace's posture for a pod
/// of `x` it has not seen, the default for a namespace without policies.
fn policy() -> NodePolicy {
    let from_node = AclPolicy {
        remote_addresses: Some(NODE_IP.to_owned()),
        ..rule("node-in", AclDirection::In, AclAction::Allow, 4200)
    };
    let to_node = AclPolicy {
        remote_addresses: Some(NODE_IP.to_owned()),
        ..rule("node-out", AclDirection::Out, AclAction::Allow, 4200)
    };
    let admitted = AclPolicy {
        protocols: Some("6".to_owned()),
        remote_addresses: Some(ADMITTED.to_owned()),
        local_ports: Some("80".to_owned()),
        ..rule("admit", AclDirection::In, AclAction::Allow, 4300)
    };
    let isolated = rule("block-in", AclDirection::In, AclAction::Block, 65000);
    let open_in = rule("open-in", AclDirection::In, AclAction::Allow, 65100);
    let open_out = rule("open-out", AclDirection::Out, AclAction::Allow, 65100);
    let [host_in, host_out] = [AclDirection::In, AclDirection::Out].map(|direction| AclPolicy {
        id: Some(format!("snapshot-host-{direction:?}")),
        ..AclPolicy::host_allow_all(direction)
    });
    let ids = |rules: &[&AclPolicy]| -> Vec<String> {
        rules
            .iter()
            .chain([&&host_in, &&host_out])
            .map(|acl| acl.id.clone().unwrap())
            .collect()
    };
    let posture = ids(&[&from_node, &to_node, &isolated, &open_out]);
    NodePolicy {
        mode: "ip-sets".to_owned(),
        form: Form::Full,
        rules: [
            &from_node, &to_node, &admitted, &isolated, &open_in, &open_out, &host_in, &host_out,
        ]
        .into_iter()
        .map(|acl| (acl.id.clone().unwrap(), acl.clone()))
        .collect(),
        pods: BTreeMap::from([(
            network_policy::object_key("x", "a"),
            PodPolicy {
                add: ids(&[&from_node, &to_node, &admitted, &isolated, &open_out]),
                policies: vec!["x/admit-a".to_owned()],
                ..PodPolicy::default()
            },
        )]),
        namespaces: BTreeMap::from([("x".to_owned(), posture)]),
        default: ids(&[&from_node, &to_node, &open_in, &open_out]),
        refused: BTreeMap::new(),
    }
}

/// [`policy`] as an agent wrote it before it wrote Host-layer rules.
fn policy_without_host_rules() -> NodePolicy {
    let mut policy = policy();
    let host = |id: &String| id.starts_with("snapshot-host-");
    policy.rules.retain(|id, _| !host(id));
    for ids in policy
        .pods
        .values_mut()
        .map(|pod| &mut pod.add)
        .chain(policy.namespaces.values_mut())
        .chain([&mut policy.default])
    {
        ids.retain(|id| !host(id));
    }
    policy
}

/// The agent's snapshot of [`policy`] on the plugin's network of `node`, as rendered for it.
fn snapshot(plugin: &Plugin, node: &Node) -> PolicySnapshot {
    PolicySnapshot {
        version: network_policy::VERSION,
        node: "node-1".to_owned(),
        networks: BTreeMap::from([(plugin.network.to_owned(), node.network_id(plugin.network))]),
        max_age_seconds: network_policy::DEFAULT_MAX_AGE.as_secs(),
        policy: Some(policy()),
    }
}

/// Writes `snapshot` to `path`, stamped now.
fn write(path: &Path, snapshot: &PolicySnapshot) {
    std::fs::write(path, serde_json::to_vec(snapshot).unwrap()).unwrap();
}

/// Sets the snapshot's stamp (its modification time), as the agent does.
fn stamp(path: &Path, at: SystemTime) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(at).unwrap();
}

/// The plugin's node, its config naming the snapshot, and the snapshot's path (nothing there
/// yet).
fn node(plugin: &Plugin, label: &str) -> (Node, Value, PathBuf) {
    let node = plugin.node(label);
    let path = node.dir().join("netpol").join("network-policy.json");
    std::fs::create_dir(path.parent().unwrap()).unwrap();
    let mut config = plugin.config(&node, "1.1.0");
    config["networkPolicySnapshot"] = json!(path);
    (node, config, path)
}

/// ADD of `container` in `netns` as pod `namespace/name`, named in `CNI_ARGS` as kubelet's
/// runtimes name it.
fn add(node: &Node, container: &str, netns: &str, pod: &str, config: &Value) -> Reply {
    let (namespace, name) = pod.split_once('/').unwrap();
    let call = Call {
        command: "ADD",
        container_id: container,
        ifname: "eth0",
        netns: Some(netns),
        config,
    };
    let args = format!("IgnoreUnknown=1;K8S_POD_NAMESPACE={namespace};K8S_POD_NAME={name}");
    node.run_with(&call, &BTreeMap::from([("CNI_ARGS", args)]))
}

/// A new pod: ADD of `container` as `pod` in a new namespace.
fn start(node: &Node, container: &str, pod: &str, config: &Value) -> Reply {
    add(node, container, &node.namespace(), pod, config)
}

/// The ACLs of `container`'s endpoint. (Containers here are named `np-…`: the attachment
/// lock is host-wide, and other test binaries run `pod` on the same network at once.)
fn acls(plugin: &Plugin, node: &Node, container: &str) -> Vec<AclPolicy> {
    node.endpoint(&plugin.endpoint_name(container))
        .policies
        .into_iter()
        .filter_map(|policy| match policy {
            EndpointPolicy::Acl(acl) => Some(acl),
            _ => None,
        })
        .collect()
}

/// The address ADD gave `container`.
fn address(plugin: &Plugin, node: &Node, container: &str) -> String {
    node.endpoint(&plugin.endpoint_name(container))
        .ip_configurations[0]
        .ip_address
        .to_string()
}

/// The emulator's verdict on a TCP connection's first packet from `from` to `to`:`port`.
fn tcp(node: &Node, from: &str, to: &str, port: u16) -> Verdict {
    let packet = Packet::tcp(from.parse().unwrap(), to.parse().unwrap(), port);
    node.engine()
        .check_packet(&packet)
        .unwrap()
        .verdict()
        .unwrap()
}

/// Each release's verdicts on one pod's first packets: from the admitted pod to 80 and 81,
/// from another pod to 80, and from the node.
fn verdicts(node: &Node, pod: &str) -> Vec<(WindowsBuild, [Verdict; 4])> {
    [WindowsRelease::SERVER_2022, WindowsRelease::SERVER_2025]
        .into_iter()
        .map(|release| {
            node.engine().set_release(release).unwrap();
            let build = release.build;
            let verdicts = [
                tcp(node, ADMITTED, pod, 80),
                tcp(node, ADMITTED, pod, 81),
                tcp(node, OTHER, pod, 80),
                tcp(node, NODE_IP, pod, 80),
            ];
            (build, verdicts)
        })
        .collect()
}

/// Asserts that nothing of a failed ADD is left: no endpoint, no reservation.
fn assert_nothing_left(plugin: &Plugin, node: &Node) {
    assert!(
        node.endpoints(plugin.network).is_empty(),
        "an endpoint is left"
    );
    assert!(
        node.reservations(plugin.network).is_empty(),
        "a reservation is left"
    );
}

/// A pod the agent has seen: created with its rules, its first packets judged by them on
/// both builds, at no HCN call more; CHECK holds the endpoint to the config's own policies.
pub fn a_pod_the_agent_has_seen_is_protected_from_its_first_packet_at_no_call_more(
    plugin: &Plugin,
) {
    use Verdict::{Allowed, Denied};
    let (node, config, path) = node(plugin, "netpol-seen");
    write(&path, &snapshot(plugin, &node));
    // The node's first ADD finds the network by name; the second is the usual one.
    start(&node, "np-warm", "default/warm", &config).result();
    node.calls();
    let netns = node.namespace();
    node.calls();
    let result = add(&node, "np-pod", &netns, "x/a", &config).result();
    assert_eq!(node.calls(), plugin.budget.add, "ADD's budget is unchanged");

    assert_eq!(
        acls(plugin, &node, "np-pod"),
        policy().rules_for_new_pod("x", "a"),
        "created with the pod's rules"
    );
    for (build, verdicts) in verdicts(&node, &address(plugin, &node, "np-pod")) {
        assert_eq!(verdicts, [Allowed, Denied, Denied, Allowed], "{build}");
    }
    // The rules are the agent's to change: CHECK holds the endpoint to the config's own.
    let mut check = config.clone();
    check["prevResult"] = result;
    node.check("np-pod", &netns, &check).silent();
}

/// A snapshot whose rules come without Host-layer allow-alls (an agent's from before it wrote
/// them): ADD adds them beside the switch rules, as it does beside a config's own, so a new
/// pod is never started with switch rules alone.
pub fn a_snapshot_without_host_rules_gets_them_at_add(plugin: &Plugin) {
    use Verdict::{Allowed, Denied};
    let (node, config, path) = node(plugin, "netpol-no-host");
    let without = PolicySnapshot {
        policy: Some(policy_without_host_rules()),
        ..snapshot(plugin, &node)
    };
    write(&path, &without);
    start(&node, "np-pod", "x/a", &config).result();
    let mut expected = policy_without_host_rules().rules_for_new_pod("x", "a");
    expected.extend([AclDirection::In, AclDirection::Out].map(AclPolicy::host_allow_all));
    assert_eq!(acls(plugin, &node, "np-pod"), expected);
    for (build, verdicts) in verdicts(&node, &address(plugin, &node, "np-pod")) {
        assert_eq!(verdicts, [Allowed, Denied, Denied, Allowed], "{build}");
    }
}

/// A pod the agent has not seen: its namespace's posture, or open in a namespace without
/// policies.
pub fn a_pod_the_agent_has_not_seen_gets_its_namespaces_posture_or_the_default(plugin: &Plugin) {
    use Verdict::{Allowed, Denied};
    let (node, config, path) = node(plugin, "netpol-unseen");
    write(&path, &snapshot(plugin, &node));
    start(&node, "np-unseen", "x/unseen", &config).result();
    assert_eq!(
        acls(plugin, &node, "np-unseen"),
        policy().rules_for_new_pod("x", "unseen")
    );
    for (build, verdicts) in verdicts(&node, &address(plugin, &node, "np-unseen")) {
        assert_eq!(
            verdicts,
            [Denied, Denied, Denied, Allowed],
            "{build}: x isolates its pods for ingress; nothing is known to admit this one"
        );
    }
    start(&node, "np-new", "new-namespace/b", &config).result();
    for (build, verdicts) in verdicts(&node, &address(plugin, &node, "np-new")) {
        assert_eq!(
            verdicts, [Allowed; 4],
            "{build}: no policy can select it yet"
        );
    }
}

/// No `networkPolicySnapshot`: NetworkPolicy is off. No file yet (the agent has never run
/// here): the pod starts without rules, and the log says so.
pub fn without_the_key_or_before_the_agents_first_snapshot_a_pod_has_no_policy_rules(
    plugin: &Plugin,
) {
    let (node, config, path) = node(plugin, "netpol-off");
    let mut without = config.clone();
    without
        .as_object_mut()
        .unwrap()
        .remove("networkPolicySnapshot");
    write(&path, &snapshot(plugin, &node));
    start(&node, "np-off", "x/a", &without).result();
    assert!(
        acls(plugin, &node, "np-off").is_empty(),
        "NetworkPolicy is not enabled"
    );

    std::fs::remove_file(&path).unwrap();
    let added = start(&node, "np-early", "x/a", &config);
    added.result();
    assert!(acls(plugin, &node, "np-early").is_empty());
    assert!(
        added.stderr.contains("no snapshot yet") && added.stderr.contains("x/a"),
        "{}",
        added.stderr
    );
}

/// A snapshot that is there but cannot be used is never read as "no policy": ADD fails with
/// code 11 naming the file, and rolls back what it reserved. That includes a hostile file (a
/// second entry for the pod, which a reader that keeps the last key would start open) and a
/// file reached through a linked directory.
#[cfg(unix)]
pub fn an_unusable_snapshot_fails_add_with_code_11_and_leaves_nothing(plugin: &Plugin) {
    let (node, config, path) = node(plugin, "netpol-unusable");
    let dir = path.parent().unwrap().to_owned();
    let elsewhere = node.dir().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let good = elsewhere.join("network-policy.json");
    write(&good, &snapshot(plugin, &node));
    let mut dangling = snapshot(plugin, &node);
    let policy = dangling.policy.as_mut().unwrap();
    policy.default.push("snapshot-gone".to_owned());
    let text = serde_json::to_string(&snapshot(plugin, &node)).unwrap();
    let pods = r#""Pods":{"#;
    assert!(text.contains(pods), "{text}");
    let opened = format!(
        r#"{pods}"x/a":{{"Add":["snapshot-open-in","snapshot-open-out"],"Policies":[],"Endpoint":null,"Expected":[]}},"#
    );
    let second_entry = text.replacen(pods, &opened, 1);
    /// What makes the file unusable, what ADD's error says of it, and what puts the node
    /// back.
    type Case<'a> = (&'a str, Box<dyn Fn() + 'a>, Box<dyn Fn() + 'a>);
    let remove_file = || std::fs::remove_file(&path).unwrap();
    let cases: Vec<Case<'_>> = vec![
        (
            "not a NetworkPolicy snapshot",
            Box::new(|| std::fs::write(&path, b"{\"Version\": 2, \"Ru").unwrap()),
            Box::new(remove_file),
        ),
        (
            "layout version",
            Box::new(|| std::fs::write(&path, br#"{"Version": 99}"#).unwrap()),
            Box::new(remove_file),
        ),
        (
            "snapshot-gone",
            Box::new(|| write(&path, &dangling)),
            Box::new(remove_file),
        ),
        (
            r#"the key "x/a" appears twice"#,
            Box::new(|| std::fs::write(&path, &second_entry).unwrap()),
            Box::new(remove_file),
        ),
        (
            "not a regular file",
            Box::new(|| std::os::unix::fs::symlink(&good, &path).unwrap()),
            Box::new(remove_file),
        ),
        (
            "not a regular file",
            Box::new(|| std::fs::create_dir(&path).unwrap()),
            Box::new(|| std::fs::remove_dir(&path).unwrap()),
        ),
        (
            "is a Link, not a directory",
            Box::new(|| {
                std::fs::remove_dir(&dir).unwrap();
                std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
            }),
            Box::new(|| {
                std::fs::remove_file(&dir).unwrap();
                std::fs::create_dir(&dir).unwrap();
            }),
        ),
        (
            "larger than",
            Box::new(|| {
                let file = std::fs::File::create(&path).unwrap();
                file.set_len(network_policy::MAX_SIZE + 1).unwrap();
            }),
            Box::new(remove_file),
        ),
        (
            "group or others (mode 777) may write it, so it decides new pods' rules",
            Box::new(|| {
                write(&path, &snapshot(plugin, &node));
                set_mode(&dir, 0o777);
            }),
            Box::new(|| {
                set_mode(&dir, 0o755);
                remove_file();
            }),
        ),
        (
            "group or others (mode 666) may write it",
            Box::new(|| {
                write(&path, &snapshot(plugin, &node));
                set_mode(&path, 0o666);
            }),
            Box::new(remove_file),
        ),
    ];
    for (problem, make, undo) in cases {
        make();
        let message = start(&node, "np-pod", "x/a", &config).error(11);
        assert!(
            message.contains(problem) && message.contains(&*path.to_string_lossy()),
            "{problem}: {message}"
        );
        assert_nothing_left(plugin, &node);
        undo();
    }
    assert!(good.is_file(), "the link's target is never touched");
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A snapshot rendered for another HNS network (another node's file, or a network created
/// again since), or one the agent has not stamped within its bound (stopped, or cut off from
/// the API server), is not used: ADD fails with code 11 saying what differs, and leaves
/// nothing.
pub fn a_snapshot_of_another_network_or_past_its_bound_fails_add_with_code_11(plugin: &Plugin) {
    let (node, config, path) = node(plugin, "netpol-whose");
    let now = SystemTime::now();
    let bound = network_policy::DEFAULT_MAX_AGE;
    let mut other_id = snapshot(plugin, &node);
    other_id
        .networks
        .insert(plugin.network.to_owned(), Guid::from_u128(0xdead));
    let mut other_network = snapshot(plugin, &node);
    other_network.networks = BTreeMap::from([("elsewhere".to_owned(), Guid::from_u128(0xdead))]);
    let cases: [(&PolicySnapshot, SystemTime, &str); 4] = [
        (&other_id, now, "created again since"),
        (&other_network, now, "not for network"),
        (
            &snapshot(plugin, &node),
            now - bound - Duration::from_secs(60),
            "more than its MaxAgeSeconds",
        ),
        (
            &snapshot(plugin, &node),
            now + bound + Duration::from_secs(60),
            "ahead of this node's clock",
        ),
    ];
    for (written, stamped, problem) in cases {
        write(&path, written);
        stamp(&path, stamped);
        let message = start(&node, "np-pod", "x/a", &config).error(11);
        assert!(
            message.contains(problem) && message.contains(&*path.to_string_lossy()),
            "{problem}: {message}"
        );
        assert_nothing_left(plugin, &node);
    }
    write(&path, &snapshot(plugin, &node));
    stamp(&path, now - bound + Duration::from_secs(60));
    start(&node, "np-pod", "x/a", &config).result();
    assert_eq!(
        acls(plugin, &node, "np-pod"),
        policy().rules_for_new_pod("x", "a"),
        "within its bound"
    );
}

/// An agent that runs on the node but has not synced yet writes a snapshot without policy,
/// stamped when it started: within the bound a new pod starts without rules, as before the
/// agent's first run (the window the API allows); past it, ADD fails with code 11, so an
/// agent that cannot sync (RBAC, a wrong node name) never leaves the node starting pods open.
pub fn an_agent_that_has_not_synced_leaves_pods_open_only_within_the_bound(plugin: &Plugin) {
    let (node, config, path) = node(plugin, "netpol-unsynced");
    let not_synced = PolicySnapshot {
        policy: None,
        ..snapshot(plugin, &node)
    };
    write(&path, &not_synced);
    stamp(&path, SystemTime::now() - Duration::from_secs(120));
    let added = start(&node, "np-early", "x/a", &config);
    added.result();
    assert!(acls(plugin, &node, "np-early").is_empty());
    assert!(
        added.stderr.contains("not synced yet") && added.stderr.contains("x/a"),
        "{}",
        added.stderr
    );

    stamp(
        &path,
        SystemTime::now() - network_policy::DEFAULT_MAX_AGE - Duration::from_secs(60),
    );
    let message = start(&node, "np-late", "x/a", &config).error(11);
    assert!(message.contains("has not synced since"), "{message}");
    assert!(
        node.endpoints(plugin.network)
            .iter()
            .all(|endpoint| endpoint.name != plugin.endpoint_name("np-late")),
        "nothing of the refused ADD is left"
    );
}

/// A snapshot rule HNS refuses (here one naming an IP set the network does not hold, as when
/// the agent removed it after ADD read the file) is the snapshot's fault, not the config's:
/// code 11 naming the snapshot, and nothing left.
pub fn a_snapshot_rule_hns_refuses_fails_add_with_code_11_naming_the_snapshot(plugin: &Plugin) {
    let (node, config, path) = node(plugin, "netpol-refused");
    let mut written = snapshot(plugin, &node);
    let policy = written.policy.as_mut().unwrap();
    let admit = policy.rules.get_mut("snapshot-admit").unwrap();
    admit.remote_addresses = Some("cni-win-netpol-set-0123456789abcdef".to_owned());
    write(&path, &written);
    let message = start(&node, "np-pod", "x/a", &config).error(11);
    assert!(
        message.contains("HNS rejected the NetworkPolicy rules of networkPolicySnapshot")
            && message.contains(&*path.to_string_lossy()),
        "{message}"
    );
    assert_nothing_left(plugin, &node);
}

/// A config ACL whose `Id` carries the agent's prefix would be taken for one of the agent's
/// rules (and removed by it): refused with code 7 naming the entry, whatever the snapshot.
pub fn a_config_acl_spelt_as_the_agents_is_refused_with_code_7(plugin: &Plugin) {
    let (node, mut config, path) = node(plugin, "netpol-prefix");
    write(&path, &snapshot(plugin, &node));
    let policies = config["policies"].as_array_mut().unwrap();
    let index = policies.len();
    policies.push(
        json!({"name": "EndpointPolicy", "value": {"Type": "ACL", "Settings": {
        "Id": "cni-win-netpol-mine", "Protocols": "6", "Action": "Block", "Direction": "In",
        "LocalPorts": "22", "Priority": 100}}}),
    );
    let message = start(&node, "np-pod", "x/a", &config).error(7);
    assert!(
        message.starts_with(&format!(
            "policies[{index}].value: ACL Id \"cni-win-netpol-mine\""
        )) && message.contains("cni-win-netpol-"),
        "{message}"
    );
    assert_nothing_left(plugin, &node);
}

/// A snapshot rule that would meet one of the config's own ACLs at one priority with another
/// action is never written: what HNS does with such a pair is undocumented.
pub fn a_snapshot_rule_that_ties_with_the_configs_own_acl_fails_add(plugin: &Plugin) {
    let (node, mut config, path) = node(plugin, "netpol-tie");
    write(&path, &snapshot(plugin, &node));
    config["policies"].as_array_mut().unwrap().push(json!({"name": "EndpointPolicy", "value":
        {"Type": "ACL", "Settings": {"Protocols": "256", "Action": "Allow", "Direction": "In", "Priority": 65000}}}));
    let message = start(&node, "np-pod", "x/a", &config).error(11);
    assert!(message.contains("ties with the config's ACL"), "{message}");
    assert_nothing_left(plugin, &node);
}

/// A relative `networkPolicySnapshot` is code 7 naming the key, and so, off Windows, is a
/// Windows path, which is relative there (it was once taken as absolute and opened relative
/// to the plugin's working directory).
pub fn the_snapshot_path_must_be_absolute(plugin: &Plugin) {
    let (node, mut config, path) = node(plugin, "netpol-relative");
    write(&path, &snapshot(plugin, &node));
    let mut relative = vec!["network-policy.json", ""];
    if !cfg!(windows) {
        relative.push(r"C:\var\lib\cni-win\network-policy.json");
    }
    for value in relative {
        config["networkPolicySnapshot"] = json!(value);
        let message = start(&node, "np-pod", "x/a", &config).error(7);
        assert!(
            message.starts_with("networkPolicySnapshot: "),
            "{value}: {message}"
        );
        assert!(message.contains("not an absolute path"), "{message}");
        assert_nothing_left(plugin, &node);
    }
}
