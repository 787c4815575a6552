//! The cluster as the agent sees it: namespaces' labels, pods, validated policies.
//!
//! The agent keeps one [`Cluster`] up to date from its watches (each object converted once,
//! when it changes) and translates from it; nothing here reaches the API server. The cluster
//! keeps the members of every group of pods its policies name as it changes
//! ([`crate::members`]), so translating matches no selector against pods.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::Pod;

use crate::members::{Held, MemberSet, Members, Memberships};
use crate::policy::{Policy, PolicyKey};
use crate::ports::{ApiProtocol, Protocol};
use crate::rules;
use crate::selector::Labels;

/// A pod's namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodKey {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
}

/// What policy translation needs of a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodInfo {
    /// Which pod.
    pub key: PodKey,
    /// Its labels.
    pub labels: Labels,
    /// Its addresses (`status.podIPs`, one per family on a dual-stack cluster); empty until
    /// the pod has been given them.
    pub ips: Vec<IpAddr>,
    /// Its serving containers' named ports, which policies may name instead of numbers:
    /// its containers' and its restartable init containers' (native sidecars,
    /// `restartPolicy: Always`, which serve beside the containers); not a run-once init
    /// container's, which has finished before the pod serves.
    pub named_ports: Vec<NamedPort>,
}

/// A named container port.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NamedPort {
    /// The port's name (`serve-80-tcp`).
    pub name: String,
    /// Its protocol: a policy port names it only with the same protocol.
    pub protocol: Protocol,
    /// Its number.
    pub port: u16,
}

impl PodInfo {
    /// Reads an API pod; `None` for a pod policies do not apply to: one on the host's network
    /// (its address is the node's), one that has finished (`Succeeded`, `Failed`: its
    /// address may already be another pod's), or one without namespace or name. A pod being
    /// deleted still counts until it is gone: its connections are still draining.
    pub fn from_api(pod: &Pod) -> Option<PodInfo> {
        let key = PodKey {
            namespace: pod.metadata.namespace.clone().filter(|n| !n.is_empty())?,
            name: pod.metadata.name.clone().filter(|n| !n.is_empty())?,
        };
        let spec = pod.spec.as_ref();
        if spec.and_then(|spec| spec.host_network) == Some(true) {
            return None;
        }
        let status = pod.status.as_ref();
        if let Some("Succeeded" | "Failed") = status.and_then(|s| s.phase.as_deref()) {
            return None;
        }
        let mut ips: Vec<IpAddr> = status
            .and_then(|status| status.pod_ips.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.ip.parse().ok())
            .collect();
        if ips.is_empty()
            && let Some(ip) = status
                .and_then(|status| status.pod_ip.as_deref())
                .and_then(|ip| ip.parse().ok())
        {
            ips.push(ip);
        }
        let sidecars = spec
            .and_then(|spec| spec.init_containers.as_ref())
            .into_iter()
            .flatten()
            .filter(|init| init.restart_policy.as_deref() == Some("Always"));
        let mut named_ports: Vec<NamedPort> = spec
            .into_iter()
            .flat_map(|spec| &spec.containers)
            .chain(sidecars)
            .flat_map(|container| container.ports.iter().flatten())
            .filter_map(|port| {
                let name = port.name.clone().filter(|name| !name.is_empty())?;
                let protocol = match Protocol::from_api(port.protocol.as_deref(), "").ok()? {
                    ApiProtocol::Matched(protocol) => protocol,
                    ApiProtocol::Sctp => return None,
                };
                let port = u16::try_from(port.container_port)
                    .ok()
                    .filter(|p| *p != 0)?;
                Some(NamedPort {
                    name,
                    protocol,
                    port,
                })
            })
            .collect();
        named_ports.sort();
        named_ports.dedup();
        Some(PodInfo {
            key,
            labels: pod.metadata.labels.clone().unwrap_or_default(),
            ips,
            named_ports,
        })
    }

    /// The number `name` stands for on this pod with `protocol`, if a container names it so.
    pub fn resolve(&self, name: &str, protocol: Protocol) -> Option<u16> {
        self.named_ports
            .iter()
            .find(|port| port.name == name && port.protocol == protocol)
            .map(|port| port.port)
    }
}

/// Everything translation reads of the cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cluster {
    namespaces: BTreeMap<String, Labels>,
    pods: BTreeMap<PodKey, PodInfo>,
    policies: BTreeMap<PolicyKey, Policy>,
    /// Derived from the three above, kept with each change.
    memberships: Memberships,
}

impl Cluster {
    /// An empty cluster.
    pub fn new() -> Cluster {
        Cluster::default()
    }

    /// Adds or replaces a namespace and its labels.
    pub fn set_namespace(&mut self, name: impl Into<String>, labels: Labels) {
        let name = name.into();
        if self.namespaces.get(&name) != Some(&labels) {
            self.namespace_changed(&name, Some(&labels));
        }
        self.namespaces.insert(name, labels);
    }

    /// Forgets a namespace.
    pub fn remove_namespace(&mut self, name: &str) {
        if self.namespaces.contains_key(name) {
            self.namespace_changed(name, None);
        }
        self.namespaces.remove(name);
    }

    fn namespace_changed(&mut self, name: &str, labels: Option<&Labels>) {
        let pods: Vec<&PodInfo> = pods_in(&self.pods, name).collect();
        self.memberships.namespace_changed(labels, &pods);
    }

    /// Adds or replaces a pod.
    pub fn set_pod(&mut self, pod: PodInfo) {
        let now = Held {
            pod: &pod,
            namespace_labels: self.namespaces.get(&pod.key.namespace),
        };
        self.memberships
            .pod_changed(self.pods.get(&pod.key), Some(now));
        self.pods.insert(pod.key.clone(), pod);
    }

    /// Forgets a pod.
    pub fn remove_pod(&mut self, key: &PodKey) {
        if let Some(old) = self.pods.remove(key) {
            self.memberships.pod_changed(Some(&old), None);
        }
    }

    /// Adds or replaces a policy (a refused policy's stand-in goes here too).
    pub fn set_policy(&mut self, policy: Policy) {
        // The new groups are named before the old are let go: a group both name is kept.
        for members in rules::members_named_by(&policy) {
            if self.memberships.named(&members) {
                let set = self.scan(&members);
                self.memberships.found(members, set);
            }
        }
        if let Some(old) = self.policies.insert(policy.key.clone(), policy) {
            self.unname(&old);
        }
    }

    /// Forgets a policy.
    pub fn remove_policy(&mut self, key: &PolicyKey) {
        if let Some(old) = self.policies.remove(key) {
            self.unname(&old);
        }
    }

    fn unname(&mut self, policy: &Policy) {
        for members in rules::members_named_by(policy) {
            self.memberships.unnamed(&members);
        }
    }

    /// A group's members: kept for every group a policy of the cluster names, found now for
    /// any other.
    pub(crate) fn members(&self, members: &Members) -> Cow<'_, MemberSet> {
        match self.memberships.get(members) {
            Some(set) => Cow::Borrowed(set),
            None => Cow::Owned(self.scan(members)),
        }
    }

    /// Finds a group's members among the pods it may hold: a group of one namespace looks in
    /// that namespace only, so a select-all peer in each of 2,000 namespaces costs the
    /// cluster's pods once, not 2,000 times.
    fn scan(&self, members: &Members) -> MemberSet {
        let mut set = MemberSet::default();
        let candidates: Box<dyn Iterator<Item = &PodInfo>> = match members.namespace() {
            Some(namespace) => Box::new(self.pods_in(namespace)),
            None => Box::new(self.pods()),
        };
        for pod in candidates {
            if members.holds(self.namespace_labels(&pod.key.namespace), pod) {
                set.insert(pod);
            }
        }
        set
    }

    /// A namespace's labels, if the namespace is known.
    pub fn namespace_labels(&self, name: &str) -> Option<&Labels> {
        self.namespaces.get(name)
    }

    /// A pod, if known.
    pub fn pod(&self, key: &PodKey) -> Option<&PodInfo> {
        self.pods.get(key)
    }

    /// Every pod, in key order.
    pub fn pods(&self) -> impl Iterator<Item = &PodInfo> {
        self.pods.values()
    }

    /// The pods of one namespace, in name order: a range of the map (keys sort by namespace
    /// first), so a group of one namespace costs its pods, not the cluster's.
    pub fn pods_in<'a>(&'a self, namespace: &str) -> impl Iterator<Item = &'a PodInfo> + 'a {
        pods_in(&self.pods, namespace)
    }

    /// Every policy, in key order.
    pub fn policies(&self) -> impl Iterator<Item = &Policy> {
        self.policies.values()
    }

    /// Every known namespace's name, in order.
    pub fn namespaces(&self) -> impl Iterator<Item = &str> {
        self.namespaces.keys().map(String::as_str)
    }

    /// The policies that select pod `key` (a pod not known is selected by none), in name
    /// order: its namespace's whose `podSelector` matches its labels.
    pub fn policies_selecting<'a>(&'a self, key: &'a PodKey) -> impl Iterator<Item = &'a Policy> {
        let labels = self.pod(key).map(|pod| &pod.labels);
        self.policies_in(&key.namespace)
            .filter(move |policy| labels.is_some_and(|labels| policy.pod_selector.matches(labels)))
    }

    /// The policies of one namespace, in name order: a range of the map, as [`Cluster::pods_in`].
    pub fn policies_in<'a>(&'a self, namespace: &'a str) -> impl Iterator<Item = &'a Policy> {
        let first = PolicyKey {
            namespace: namespace.to_owned(),
            name: String::new(),
        };
        self.policies
            .range(first..)
            .take_while(move |(key, _)| key.namespace == namespace)
            .map(|(_, policy)| policy)
    }
}

/// The pods of one namespace in `pods` ([`Cluster::pods_in`]).
fn pods_in<'a>(
    pods: &'a BTreeMap<PodKey, PodInfo>,
    namespace: &str,
) -> impl Iterator<Item = &'a PodInfo> + 'a {
    let first = PodKey {
        namespace: namespace.to_owned(),
        name: String::new(),
    };
    pods.range(first.clone()..)
        .take_while(move |(key, _)| key.namespace == first.namespace)
        .map(|(_, pod)| pod)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selector::Selector;

    fn pod(json: serde_json::Value) -> Option<PodInfo> {
        PodInfo::from_api(&serde_json::from_value(json).unwrap())
    }

    #[test]
    fn reads_labels_addresses_and_named_ports() {
        let info = pod(serde_json::json!({
            "metadata": {"namespace": "x", "name": "a", "labels": {"pod": "a"}},
            "spec": {"containers": [
                {"name": "web", "ports": [
                    {"name": "http", "containerPort": 8080},
                    {"name": "dns", "containerPort": 53, "protocol": "UDP"},
                    {"name": "assoc", "containerPort": 9000, "protocol": "SCTP"},
                    {"containerPort": 9090}
                ]}
            ]},
            "status": {"phase": "Running", "podIP": "10.244.1.1",
                       "podIPs": [{"ip": "10.244.1.1"}, {"ip": "fd00::1"}]}
        }))
        .unwrap();
        assert_eq!(
            info.key,
            PodKey {
                namespace: "x".into(),
                name: "a".into()
            }
        );
        assert_eq!(info.labels.get("pod").map(String::as_str), Some("a"));
        assert_eq!(
            info.ips,
            [
                "10.244.1.1".parse::<IpAddr>().unwrap(),
                "fd00::1".parse().unwrap()
            ]
        );
        assert_eq!(info.resolve("http", Protocol::Tcp), Some(8080));
        assert_eq!(
            info.resolve("http", Protocol::Udp),
            None,
            "a name resolves with its protocol"
        );
        assert_eq!(info.resolve("dns", Protocol::Udp), Some(53));
        assert_eq!(
            info.named_ports.len(),
            2,
            "SCTP and unnamed ports are nothing policies can name here"
        );
    }

    /// A native sidecar (an init container with `restartPolicy: Always`) serves beside the
    /// containers, so a policy may name its ports; a run-once init container has finished.
    #[test]
    fn named_ports_of_restartable_init_containers_count() {
        let info = pod(serde_json::json!({
            "metadata": {"namespace": "x", "name": "a"},
            "spec": {
                "initContainers": [
                    {"name": "proxy", "restartPolicy": "Always",
                     "ports": [{"name": "metrics", "containerPort": 9100}]},
                    {"name": "migrate", "ports": [{"name": "setup", "containerPort": 7000}]}
                ],
                "containers": [{"name": "web", "ports": [{"name": "http", "containerPort": 8080}]}]
            }
        }))
        .unwrap();
        assert_eq!(info.resolve("metrics", Protocol::Tcp), Some(9100));
        assert_eq!(info.resolve("http", Protocol::Tcp), Some(8080));
        assert_eq!(
            info.resolve("setup", Protocol::Tcp),
            None,
            "it has finished"
        );
    }

    #[test]
    fn falls_back_to_pod_ip_and_waits_for_addresses() {
        let single = pod(serde_json::json!({
            "metadata": {"namespace": "x", "name": "a"},
            "status": {"podIP": "10.244.1.1"}
        }))
        .unwrap();
        assert_eq!(single.ips, ["10.244.1.1".parse::<IpAddr>().unwrap()]);
        let pending =
            pod(serde_json::json!({"metadata": {"namespace": "x", "name": "a"}})).unwrap();
        assert!(pending.ips.is_empty());
    }

    #[test]
    fn policies_select_pods_of_their_namespace_by_labels() {
        let mut cluster = Cluster::new();
        cluster.set_namespace("x", Labels::new());
        let a = pod(
            serde_json::json!({"metadata": {"namespace": "x", "name": "a", "labels": {"pod": "a"}}}),
        );
        cluster.set_pod(a.unwrap());
        for (namespace, name, selector) in [
            (
                "x",
                "selects-a",
                serde_json::json!({"matchLabels": {"pod": "a"}}),
            ),
            (
                "x",
                "selects-b",
                serde_json::json!({"matchLabels": {"pod": "b"}}),
            ),
            ("x", "selects-all", serde_json::json!({})),
            ("y", "elsewhere", serde_json::json!({})),
        ] {
            let api = serde_json::from_value(serde_json::json!({
                "metadata": {"namespace": namespace, "name": name},
                "spec": {"podSelector": selector}
            }))
            .unwrap();
            cluster.set_policy(Policy::from_api(&api).unwrap());
        }
        let key = |name: &str| PodKey {
            namespace: "x".into(),
            name: name.into(),
        };
        let names = |key: &PodKey| -> Vec<String> {
            cluster
                .policies_selecting(key)
                .map(|policy| policy.key.name.clone())
                .collect()
        };
        assert_eq!(names(&key("a")), ["selects-a", "selects-all"]);
        assert!(names(&key("unknown")).is_empty());
        assert_eq!(cluster.namespaces().collect::<Vec<_>>(), ["x"]);
    }

    /// A policy of namespace `namespace` named `name` from its `spec`.
    fn policy(namespace: &str, name: &str, spec: serde_json::Value) -> Policy {
        let api = serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": namespace, "name": name},
            "spec": spec
        }))
        .unwrap();
        Policy::from_api(&api).unwrap()
    }

    /// The same objects put into a new cluster, in key order.
    fn rebuilt(cluster: &Cluster) -> Cluster {
        let mut fresh = Cluster::new();
        for (name, labels) in &cluster.namespaces {
            fresh.set_namespace(name.as_str(), labels.clone());
        }
        for pod in cluster.pods() {
            fresh.set_pod(pod.clone());
        }
        for policy in cluster.policies() {
            fresh.set_policy(policy.clone());
        }
        fresh
    }

    /// The members the cluster keeps through any sequence of changes are the members a new
    /// cluster of the same objects finds: pods added, relabelled, readdressed, moved into and
    /// out of blocks and removed; namespaces relabelled, removed and back; policies naming
    /// groups of one namespace, of labelled namespaces, of address blocks, by named ports,
    /// replaced and removed.
    #[test]
    fn kept_members_are_what_a_fresh_look_finds() {
        let specs = [
            serde_json::json!({"podSelector": {},
                "ingress": [{"from": [{"podSelector": {"matchLabels": {"tier": "web"}}}]}]}),
            serde_json::json!({"podSelector": {"matchLabels": {"tier": "db"}},
                "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"env": "prod"}},
                                       "podSelector": {"matchLabels": {"tier": "api"}}}]}]}),
            serde_json::json!({"podSelector": {}, "policyTypes": ["Egress"],
                "egress": [{"to": [{"ipBlock": {"cidr": "10.1.0.0/16"}}],
                            "ports": [{"port": "http"}]}]}),
            serde_json::json!({"podSelector": {}, "policyTypes": ["Egress"],
                "egress": [{"ports": [{"port": "http"}]},
                           {"to": [{"namespaceSelector": {}}]}]}),
        ];
        let mut seed: u64 = 0x5eed;
        let mut next = |bound: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) % bound as u64) as usize
        };
        let mut cluster = Cluster::new();
        for step in 0..2_000 {
            let namespace = format!("ns-{}", next(3));
            match next(10) {
                0..=4 => {
                    let tier = ["web", "api", "db"][next(3)];
                    let labels = serde_json::json!({"tier": tier});
                    let ports = if next(2) == 0 {
                        serde_json::json!([{"name": "http", "containerPort": 8000 + next(2)}])
                    } else {
                        serde_json::json!([])
                    };
                    let info = pod(serde_json::json!({
                        "metadata": {"namespace": namespace, "name": format!("p{}", next(6)),
                                     "labels": labels},
                        "spec": {"containers": [{"name": "c", "ports": ports}]},
                        "status": {"podIP": format!("10.{}.0.{}", next(2), next(8) + 1)}
                    }))
                    .unwrap();
                    cluster.set_pod(info);
                }
                5 => cluster.remove_pod(&PodKey {
                    namespace,
                    name: format!("p{}", next(6)),
                }),
                6 => {
                    let env = ["prod", "test"][next(2)];
                    cluster.set_namespace(namespace, [("env".to_owned(), env.to_owned())].into());
                }
                7 => cluster.remove_namespace(&namespace),
                8 => {
                    let spec = specs[next(specs.len())].clone();
                    cluster.set_policy(policy(&namespace, &format!("np{}", next(3)), spec));
                }
                _ => cluster.remove_policy(&PolicyKey {
                    namespace,
                    name: format!("np{}", next(3)),
                }),
            }
            assert_eq!(cluster, rebuilt(&cluster), "after step {step}");
        }
        assert!(
            cluster.memberships != Memberships::default(),
            "the sequence ends with groups kept"
        );
    }

    /// A pod's change is matched against the groups that may hold it: those of its namespace
    /// and those of any namespace, not every group of the cluster.
    #[test]
    fn a_pod_change_costs_the_groups_that_may_hold_it() {
        let mut cluster = Cluster::new();
        for n in 0..50 {
            let namespace = format!("ns-{n}");
            cluster.set_namespace(namespace.as_str(), Labels::new());
            cluster.set_policy(policy(
                &namespace,
                "own",
                serde_json::json!({"podSelector": {},
                    "ingress": [{"from": [{"podSelector": {"matchLabels": {"tier": "web"}}}]}]}),
            ));
        }
        cluster.set_policy(policy(
            "ns-0",
            "clients",
            serde_json::json!({"podSelector": {},
                "ingress": [{"from": [{"namespaceSelector": {},
                                       "podSelector": {"matchLabels": {"role": "client"}}}]}]}),
        ));
        let web = |tier: &str| {
            pod(serde_json::json!({
                "metadata": {"namespace": "ns-7", "name": "a", "labels": {"tier": tier}},
                "status": {"podIP": "10.0.0.7"}
            }))
            .unwrap()
        };
        crate::members::MEMBER_MATCHES.with(|count| count.set(0));
        cluster.set_pod(web("web"));
        cluster.set_pod(web("api"));
        let matches = crate::members::MEMBER_MATCHES.with(|count| count.get());
        assert_eq!(matches, 2 * 2, "two changes, two groups each");
        let own = Members::Selected(crate::policy::PodPeer {
            namespaces: crate::policy::Namespaces::Named("ns-7".to_owned()),
            pods: Selector::from_api(
                &serde_json::from_value(serde_json::json!({"matchLabels": {"tier": "web"}}))
                    .unwrap(),
                "",
            )
            .unwrap(),
        });
        assert_eq!(
            cluster.members(&own).pods().count(),
            0,
            "relabelled out of the group"
        );
    }

    #[test]
    fn pods_policies_do_not_apply_to() {
        let host_network = pod(serde_json::json!({
            "metadata": {"namespace": "x", "name": "a"},
            "spec": {"hostNetwork": true, "containers": []},
            "status": {"podIP": "10.0.0.10"}
        }));
        assert_eq!(host_network, None, "its address is the node's");
        for phase in ["Succeeded", "Failed"] {
            let finished = pod(serde_json::json!({
                "metadata": {"namespace": "x", "name": "a"},
                "status": {"phase": phase, "podIP": "10.244.1.1"}
            }));
            assert_eq!(
                finished, None,
                "{phase}: its address may be another pod's already"
            );
        }
        let terminating = pod(serde_json::json!({
            "metadata": {"namespace": "x", "name": "a", "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": "Running", "podIP": "10.244.1.1"}
        }));
        assert!(terminating.is_some(), "its connections are still draining");
        assert_eq!(pod(serde_json::json!({"metadata": {"name": "a"}})), None);
    }
}
