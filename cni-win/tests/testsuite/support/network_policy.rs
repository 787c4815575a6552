//! An emulated node for the NetworkPolicy agent: `cbr0` with three local pods whose
//! endpoints ADD would have made (x/a, x/b, y/b), two pods of another node (x/c, y/c), the
//! API objects the watches would send for them, and the emulator's verdict on a packet.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use cni_win::daemon::{self, Daemon};
use cni_win::doctor::Severity;
use cni_win::network_policy::{self, Agent, Event, Feed};
use cni_win::paths::NodePaths;
use cni_win::shutdown::Shutdown;
use cni_win_core::network_policy::{NodePolicy, PolicySnapshot};
use hns::WindowsBuild;
use hns::schema::EndpointPolicy;
use hns::schema::policy::AclPolicy;
use hns_emulator::acl::{Packet, PathVerdict, Verdict};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use serde_json::{Value, json};

use super::ScratchNode;

/// The agent's node.
pub const NODE: &str = "node-1";
/// Its InternalIP: kubelet's probes come from it.
pub const NODE_IP: &str = "10.0.0.10";
/// The pods of the other node and their addresses.
pub const REMOTE: [(&str, &str); 2] = [("x/c", "10.244.2.3"), ("y/c", "10.244.2.4")];
/// The local pods.
pub const LOCAL: [&str; 3] = ["x/a", "x/b", "y/b"];

/// The scratch node with the local pods' endpoints, its config naming the snapshot.
pub struct PolicyNode {
    pub node: ScratchNode,
    /// `networkPolicySnapshot`.
    pub snapshot: PathBuf,
    /// Each local pod's address.
    pub ips: BTreeMap<String, String>,
    /// Each pod's labels beyond `pod: <name>`.
    pub labels: BTreeMap<String, BTreeMap<String, String>>,
    /// `--snapshot-max-age` of the agents made here.
    pub snapshot_max_age: Duration,
    pub stop: Shutdown,
}

impl PolicyNode {
    pub fn new() -> PolicyNode {
        let node = ScratchNode::new();
        let snapshot = node.dir().join("netpol").join("snapshot.json");
        let conf = node.conf_dir().join("10-cbr0.conf");
        let mut config: Value = serde_json::from_slice(&std::fs::read(&conf).unwrap()).unwrap();
        config["networkPolicySnapshot"] = json!(snapshot);
        std::fs::write(&conf, serde_json::to_vec(&config).unwrap()).unwrap();
        let mut ips = BTreeMap::new();
        for pod in LOCAL {
            let container = pod.replace('/', "-");
            let ip = node.reserve(&container);
            let endpoint = node.ours(&container, &ip);
            node.client
                .attach_endpoint(node.namespace(), endpoint)
                .unwrap();
            ips.insert(pod.to_owned(), ip);
        }
        PolicyNode {
            node,
            snapshot,
            ips,
            labels: BTreeMap::new(),
            snapshot_max_age: cni_win_core::network_policy::DEFAULT_MAX_AGE,
            stop: Shutdown::new(),
        }
    }

    /// The node's config in Flannel-native form, as `cni-win install`'s Flannel templates
    /// write it: its `ipam` section leaves the type and ranges to subnet.env.
    pub fn flannel_native(self) -> PolicyNode {
        let dir = self.node.dir();
        let subnet_env = dir.join("subnet.env");
        std::fs::write(
            &subnet_env,
            "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n",
        )
        .unwrap();
        let config = json!({
            "cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
            "subnetFile": subnet_env, "dataDir": dir.join("flannel"),
            "ipam": {"dataDir": dir.join("ipam")},
            "networkPolicySnapshot": self.snapshot,
        });
        let conf = self.node.conf_dir().join("10-cbr0.conf");
        std::fs::write(&conf, serde_json::to_vec(&config).unwrap()).unwrap();
        self
    }

    /// The node's CNI paths.
    pub fn paths(&self) -> NodePaths {
        NodePaths::with_bin_dir(self.node.conf_dir(), self.node.dir().join("bin"))
    }

    /// A new agent on this node, nothing fed yet, and the daemon it is a task of (as `cni-win
    /// daemon --network-policy` runs it), no round run yet.
    pub fn agent(&self) -> (Agent, Daemon) {
        let agent = Agent::start(
            network_policy::Settings {
                node_name: NODE.to_owned(),
                snapshot_max_age: self.snapshot_max_age,
            },
            &self.stop,
        );
        let daemon = self.daemon().with_task(agent.task());
        (agent, daemon)
    }

    /// The node daemon on this node without the agent: the sweep (a dry run) and doctor.
    pub fn daemon(&self) -> Daemon {
        let settings = daemon::Settings {
            paths: self.paths(),
            apply: false,
            every: Duration::from_secs(3600),
            metrics_address: None,
        };
        Daemon::new(settings, Ok(self.node.new_client()), |_| {}).unwrap()
    }

    /// A new agent on this node, fed a whole relist with `policies`, and the daemon after
    /// the round whose read the agent programmed HNS over.
    pub fn programmed_agent(&self, policies: &[NetworkPolicy]) -> (Agent, Daemon) {
        let (agent, mut daemon) = self.agent();
        self.sync(&agent.feed(), policies);
        daemon.round(&self.stop);
        assert!(
            agent.wait_programmed(Duration::ZERO),
            "the round's pass programmed what was fed: {}",
            daemon.metrics().render()
        );
        (agent, daemon)
    }

    /// A pod's address, local or remote.
    pub fn ip(&self, pod: &str) -> String {
        self.ips
            .get(pod)
            .cloned()
            .or_else(|| {
                REMOTE
                    .iter()
                    .find(|(name, _)| *name == pod)
                    .map(|(_, ip)| (*ip).to_owned())
            })
            .unwrap_or_else(|| pod.to_owned())
    }

    /// The endpoint holding a pod's address.
    pub fn endpoint(&self, pod: &str) -> hns::schema::HostComputeEndpoint {
        let ip = self.ip(pod);
        self.node
            .client
            .list_endpoints(None)
            .unwrap()
            .into_iter()
            .find(|e| {
                e.ip_configurations
                    .iter()
                    .any(|c| c.ip_address.to_string() == ip)
            })
            .unwrap_or_else(|| panic!("no endpoint holds {pod}'s {ip}"))
    }

    /// Labels `pod` as a pod `name` (its `pod` label), as `kubectl label --overwrite` does.
    pub fn relabel(&mut self, pod: &str, name: &str) {
        self.labels
            .insert(pod.to_owned(), [("pod".to_owned(), name.to_owned())].into());
    }

    /// A pod as the API server sends it: on this node when local, with its address.
    pub fn api_pod(&self, pod: &str) -> Pod {
        let (namespace, name) = pod.split_once('/').unwrap();
        let remote = REMOTE.iter().any(|(p, _)| *p == pod);
        let mut labels = BTreeMap::from([("pod".to_owned(), name.to_owned())]);
        labels.extend(self.labels.get(pod).cloned().unwrap_or_default());
        let ip = self.ip(pod);
        serde_json::from_value(json!({
            "metadata": {"namespace": namespace, "name": name, "labels": labels,
                         "uid": format!("uid-{namespace}-{name}")},
            "spec": {"nodeName": if remote { "node-2" } else { NODE },
                     "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 80}]}]},
            "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}
        }))
        .unwrap()
    }

    /// Every pod, local and remote.
    pub fn api_pods(&self) -> Vec<Pod> {
        LOCAL
            .iter()
            .copied()
            .chain(REMOTE.iter().map(|(pod, _)| *pod))
            .map(|pod| self.api_pod(pod))
            .collect()
    }

    /// Feeds a whole relist of every resource: namespaces x and y, every pod, `policies`,
    /// this node.
    pub fn sync(&self, feed: &Feed, policies: &[NetworkPolicy]) {
        relist(feed, Feed::namespaces, ["x", "y"].map(namespace).to_vec());
        relist(feed, Feed::pods, self.api_pods());
        relist(feed, Feed::policies, policies.to_vec());
        relist(feed, Feed::node, vec![node_object()]);
    }

    /// What the emulator finds of a TCP connection's first packet from `from` to `to`:`port`
    /// (pods by name, or addresses), judged under `build`'s semantics (the host's HNS version,
    /// which the agent programs by, stays as it is).
    pub fn path(&self, from: &str, to: &str, port: u16, build: WindowsBuild) -> PathVerdict {
        let engine = &self.node.engine;
        engine.set_windows_build(build).unwrap();
        let packet = Packet::tcp(
            self.ip(from).parse().unwrap(),
            self.ip(to).parse().unwrap(),
            port,
        );
        engine.check_packet(&packet).unwrap()
    }

    /// The emulator's verdict on that packet; one that rests on what HNS does not document
    /// fails the test.
    pub fn tcp(&self, from: &str, to: &str, port: u16, build: WindowsBuild) -> Verdict {
        self.path(from, to, port, build).verdict().unwrap()
    }

    /// The snapshot file the agent wrote.
    pub fn snapshot(&self) -> PolicySnapshot {
        cni_win_core::network_policy::read(&self.snapshot)
            .expect("a usable snapshot")
            .expect("a snapshot")
            .snapshot
    }

    /// The policy of the snapshot the agent wrote, once it synced.
    pub fn policy(&self) -> NodePolicy {
        self.snapshot().policy.expect("a synced agent's snapshot")
    }

    /// The agent's rules on a pod's endpoint.
    pub fn agents_rules(&self, pod: &str) -> Vec<AclPolicy> {
        self.endpoint(pod)
            .policies
            .into_iter()
            .filter_map(|policy| match policy {
                EndpointPolicy::Acl(acl) if cni_win_netpol::is_agents(&acl) => Some(acl),
                _ => None,
            })
            .collect()
    }

    /// doctor's NetworkPolicy findings, from the snapshot and the node's read of HNS only.
    pub fn doctor(&self) -> Vec<Finding> {
        cni_win::doctor::diagnose(Ok(&self.node.client), &self.paths())
            .findings
            .into_iter()
            .filter(|f| f.check.contains("NetworkPolicy"))
            .map(|f| (f.check, f.severity, f.evidence))
            .collect()
    }

    /// Every verdict the tests look at, on both builds: each pod and the node to each local
    /// pod on 80 and 81.
    pub fn matrix(&self) -> Vec<(String, Verdict)> {
        let mut verdicts = Vec::new();
        for build in [WindowsBuild::SERVER_2022, WindowsBuild::SERVER_2025] {
            for from in LOCAL
                .iter()
                .copied()
                .chain(REMOTE.iter().map(|(pod, _)| *pod))
                .chain([NODE_IP])
            {
                for to in LOCAL {
                    for port in [80, 81] {
                        if from == to {
                            continue;
                        }
                        let verdict = self.tcp(from, to, port, build);
                        verdicts.push((format!("{build} {from} -> {to}:{port}"), verdict));
                    }
                }
            }
        }
        verdicts
    }
}

/// Feeds a relist of `objects` with `apply`.
pub fn relist<K>(feed: &Feed, apply: fn(&Feed, Event<K>), objects: Vec<K>) {
    apply(feed, Event::Init);
    for object in objects {
        apply(feed, Event::InitApply(object));
    }
    apply(feed, Event::InitDone);
}

/// A namespace with `ns: <name>` and the name label current API servers set.
pub fn namespace(name: &str) -> Namespace {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": {
        "ns": name, "kubernetes.io/metadata.name": name}}}))
    .unwrap()
}

/// This node's Node object.
pub fn node_object() -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": NODE},
        "status": {"addresses": [{"type": "InternalIP", "address": NODE_IP},
                                 {"type": "Hostname", "address": NODE}]}
    }))
    .unwrap()
}

/// A policy of `namespace` with `spec`.
pub fn policy(namespace: &str, name: &str, spec: Value) -> NetworkPolicy {
    serde_json::from_value(json!({
        "metadata": {"namespace": namespace, "name": name, "uid": format!("uid-{name}")},
        "spec": spec
    }))
    .unwrap()
}

/// x/a accepts TCP 80 from pods `b` of every namespace, and nothing else.
pub fn b_to_a() -> NetworkPolicy {
    policy(
        "x",
        "b-to-a",
        json!({
            "podSelector": {"matchLabels": {"pod": "a"}},
            "ingress": [{"from": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"pod": "b"}}}],
                         "ports": [{"port": 80}]}]
        }),
    )
}

/// How long a test waits for the agent to program what it was fed.
pub const PROGRAMMED: Duration = Duration::from_secs(20);

/// One doctor finding: its check, severity and evidence.
pub type Finding = (String, Severity, String);

/// The finding of `check`.
pub fn finding<'f>(findings: &'f [Finding], check: &str) -> &'f Finding {
    findings
        .iter()
        .find(|(name, _, _)| name == check)
        .unwrap_or_else(|| panic!("no {check:?} in {findings:#?}"))
}

/// Waits up to `within` for `condition`.
pub fn eventually(within: Duration, condition: impl Fn() -> bool) -> bool {
    let until = std::time::Instant::now() + within;
    while std::time::Instant::now() < until {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    condition()
}
