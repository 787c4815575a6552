//! The cluster as the API server's watches feed it: every event becomes the translation's
//! values at once ([`Cluster`]: namespaces' labels, pods' labels, addresses and named ports,
//! validated policies), so the agent keeps no API object and its memory grows with what
//! policy needs, not with what the API server sends.
//!
//! The watches (`super::watches`) and the tests feed the same [`Feed`] with kube-runtime's
//! watcher [`Event`]s: a relist is `Init`, one `InitApply` per object, `InitDone` (objects not
//! listed again are gone); then `Apply` and `Delete`. A resource is *synced* at its first
//! `InitDone`; nothing is written to HNS or to the
//! snapshot until every resource is ([`ClusterState::synced`]), so a restarted agent never
//! programs from a half-read cluster. A watch that fails leaves what it fed as it was: the
//! agent keeps the last programmed rules (fail static) and says so; what a relist that
//! failed part-way shows gone is forgotten all the same ([`Relist`]), so a list that keeps
//! failing on its later pages does not keep deleted pods' addresses in allow rules.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::time::{Instant, SystemTime};

use cni_win_netpol::{Cluster, PodInfo, PodKey, Policy, PolicyKey};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::api::networking::v1::NetworkPolicy;
pub use kube::runtime::watcher::Event;

use super::Shared;
use crate::metrics::network_policy::ApiState;

/// What the agent watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    /// `networking.k8s.io/v1` NetworkPolicies, of every namespace.
    NetworkPolicies,
    /// Namespaces (their labels).
    Namespaces,
    /// Pods, of every namespace (peers anywhere; the local ones get rules).
    Pods,
    /// This node (its InternalIP: what it sends this node's pods is always let in).
    Node,
}

impl Resource {
    /// Every resource, each of which must be synced before the agent writes.
    pub const ALL: [Resource; 4] = [
        Resource::NetworkPolicies,
        Resource::Namespaces,
        Resource::Pods,
        Resource::Node,
    ];

    /// The resource as logs and metrics name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Resource::NetworkPolicies => "networkpolicies",
            Resource::Namespaces => "namespaces",
            Resource::Pods => "pods",
            Resource::Node => "node",
        }
    }
}

/// A policy the agent refused, due to be told as a Kubernetes Event on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The policy.
    pub policy: PolicyKey,
    /// Its `metadata.uid`, which the Event names so `kubectl describe` shows it.
    pub uid: Option<String>,
    /// Why, naming the field.
    pub reason: String,
}

impl Refusal {
    /// The name of the Event that tells this refusal: the policy's name and a fingerprint of
    /// the policy (its uid) and the reason, the same on every node. Every node's agent
    /// refuses the same policy for the same reason; the first to create the Event tells it,
    /// and the others find it there (`AlreadyExists`), so one refusal is one Event in the
    /// cluster, not one per node.
    pub fn event_name(&self) -> String {
        use sha2::{Digest, Sha256};
        let PolicyKey { namespace, name } = &self.policy;
        let uid = self.uid.as_deref().unwrap_or_default();
        let digest = Sha256::digest(format!("{namespace}/{name}/{uid}\n{}", self.reason));
        let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        // An Event's name is a DNS subdomain of at most 253 characters, as a policy's is.
        let mut end = name.len().min(253 - 1 - hex.len());
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}.{hex}", &name[..end])
    }
}

/// A relist in progress: the keys it has listed, and whether they came in key order.
///
/// The API server lists from etcd (or its watch cache) in key order, a page at a time, each
/// continuing after the last key of the one before; a key is `namespace/name` (or the name
/// of a cluster object), as here. So when a relist fails part-way, a known object whose key
/// sorts before the last key listed, and that was not listed, is gone. Should the keys ever
/// come out of order, nothing is inferred: the next complete list says what is gone.
#[derive(Debug, Default)]
struct Relist {
    listed: BTreeSet<String>,
    last: Option<String>,
    out_of_order: bool,
}

impl Relist {
    fn listed(&mut self, key: String) {
        if self.last.as_ref().is_some_and(|last| key <= *last) {
            self.out_of_order = true;
        }
        self.last = Some(key.clone());
        self.listed.insert(key);
    }

    /// Whether this relist shows `key` gone: wholly when it `ended`, else up to its last key.
    fn shows_gone(&self, key: &str, ended: bool) -> bool {
        if self.listed.contains(key) {
            return false;
        }
        ended || (!self.out_of_order && self.last.as_deref().is_some_and(|last| key < last))
    }
}

/// Everything the agent knows of the cluster.
#[derive(Debug)]
pub(crate) struct ClusterState {
    /// What translation reads.
    pub cluster: Cluster,
    /// The node the agent runs on.
    pub node_name: String,
    /// The pods on this node (`spec.nodeName`): the ones that get rules.
    pub local: BTreeSet<PodKey>,
    /// This node's InternalIP addresses, from its Node object; `None` while no Node object
    /// of that name is known (a wrong `--node-name`: an error, logged and in the metrics).
    pub node_addresses: Option<Vec<IpAddr>>,
    /// The refused policies and why.
    pub refused: BTreeMap<PolicyKey, String>,
    /// Refusals not yet told as Events, one per policy (its latest reason), kept until told.
    events_due: BTreeMap<PolicyKey, Refusal>,
    /// Counts every change, so the programmer knows what it has programmed.
    pub generation: u64,
    /// When the first change not yet in HNS arrived: the programming latency counts from it.
    pub changed_since: Option<Instant>,
    /// The generation HNS holds, after the last pass that succeeded.
    pub programmed: Option<u64>,
    /// Whether the last word of every watch was an event, not an error.
    pub api_errors: BTreeMap<Resource, String>,
    /// When a watch last failed while every other answered: what was fed is current up to
    /// then, on the node's clock (the snapshot's stamp, [`ClusterState::current_as_of`]).
    api_lost: Option<SystemTime>,
    synced: BTreeSet<Resource>,
    /// The relist in progress, per resource.
    relisting: BTreeMap<Resource, Relist>,
}

impl ClusterState {
    pub(crate) fn new(node_name: String) -> ClusterState {
        ClusterState {
            cluster: Cluster::new(),
            node_name,
            local: BTreeSet::new(),
            node_addresses: None,
            refused: BTreeMap::new(),
            events_due: BTreeMap::new(),
            generation: 0,
            changed_since: None,
            programmed: None,
            api_errors: BTreeMap::new(),
            api_lost: None,
            synced: BTreeSet::new(),
            relisting: BTreeMap::new(),
        }
    }

    /// Whether every resource has been listed once: until then nothing may be written.
    pub(crate) fn synced(&self) -> bool {
        Resource::ALL.iter().all(|r| self.synced.contains(r))
    }

    /// Whether every watch's last word was an event.
    pub(crate) fn api_up(&self) -> bool {
        self.api_errors.is_empty()
    }

    /// Up to when what was fed is known to be the cluster's, on the node's clock: now while
    /// every watch answers, when the first of them failed while one does not, and never
    /// before every resource has been listed once.
    pub(crate) fn current_as_of(&self) -> Option<SystemTime> {
        if !self.synced() {
            None
        } else if self.api_up() {
            Some(SystemTime::now())
        } else {
            self.api_lost
        }
    }

    /// Whether the API answers, the agent has synced and knows its Node, as the metrics say
    /// it.
    pub(crate) fn api(&self) -> ApiState {
        ApiState {
            up: self.api_up(),
            synced: self.synced(),
            node_found: self.node_addresses.is_some(),
        }
    }

    /// The watch of `resource` failed: until it feeds an event from the API server again, the
    /// API is down.
    fn watch_failed(&mut self, resource: Resource, error: String) {
        if self.api_errors.is_empty() {
            self.api_lost = Some(SystemTime::now());
            log::warn!(
                "network policy: the {} watch failed ({error}): keeping the last programmed \
                 rules (fail static) until the API server answers again",
                resource.as_str()
            );
        }
        self.api_errors.insert(resource, error);
    }

    fn changed(&mut self) {
        self.generation += 1;
        self.changed_since.get_or_insert_with(Instant::now);
    }

    /// Applies one event of `resource`; `key` names an object, `apply` and `delete` change
    /// the state and say whether anything changed.
    fn event<K>(
        &mut self,
        resource: Resource,
        event: Event<K>,
        key: impl Fn(&K) -> Option<String>,
        mut apply: impl FnMut(&mut ClusterState, &K) -> bool,
        known: impl Fn(&ClusterState) -> Vec<String>,
        mut forget: impl FnMut(&mut ClusterState, &str) -> bool,
    ) {
        // `Init` comes before the list is asked for: only what the API server sent says the
        // watch is back.
        if !matches!(event, Event::Init) && self.api_errors.remove(&resource).is_some() {
            log::info!(
                "network policy: the {} watch is back: programming from the API server again",
                resource.as_str()
            );
        }
        let mut forget_gone = |state: &mut ClusterState, relist: &Relist, ended: bool| {
            let gone: Vec<String> = known(state)
                .into_iter()
                .filter(|key| relist.shows_gone(key, ended))
                .collect();
            gone.iter()
                .fold(false, |changed, key| forget(state, key) | changed)
        };
        let changed = match event {
            Event::Init => {
                // A relist that never ended (its watch failed part-way) still shows what is
                // gone before its last key.
                let partial = self.relisting.insert(resource, Relist::default());
                partial.is_some_and(|partial| forget_gone(self, &partial, false))
            }
            Event::InitApply(object) => {
                if let (Some(relist), Some(key)) = (self.relisting.get_mut(&resource), key(&object))
                {
                    relist.listed(key);
                }
                apply(self, &object)
            }
            Event::InitDone => {
                let relist = self.relisting.remove(&resource).unwrap_or_default();
                let changed = forget_gone(self, &relist, true);
                if resource == Resource::Node && self.node_addresses.is_none() {
                    log::error!(
                        "network policy: the API server has no Node named {:?}: this node's \
                         pods get no rules and its addresses are not allowed in; --node-name \
                         (or NODE_NAME) must be the Node object's name exactly, as \
                         `kubectl get nodes` spells it",
                        self.node_name
                    );
                }
                // The first sync of the last resource is a change: it allows the first write.
                let first = self.synced.insert(resource);
                changed || (first && self.synced())
            }
            Event::Apply(object) => apply(self, &object),
            Event::Delete(object) => key(&object).is_some_and(|key| forget(self, &key)),
        };
        if changed {
            self.changed();
        }
    }

    fn policy_event(&mut self, event: Event<NetworkPolicy>) {
        self.event(
            Resource::NetworkPolicies,
            event,
            |policy| namespaced_key(&policy.metadata),
            ClusterState::set_policy,
            |state| {
                state
                    .cluster
                    .policies()
                    .map(|p| format!("{}/{}", p.key.namespace, p.key.name))
                    .collect()
            },
            ClusterState::forget_policy,
        );
    }

    fn namespace_event(&mut self, event: Event<Namespace>) {
        self.event(
            Resource::Namespaces,
            event,
            |namespace| namespace.metadata.name.clone(),
            ClusterState::set_namespace,
            |state| state.cluster.namespaces().map(str::to_owned).collect(),
            ClusterState::forget_namespace,
        );
    }

    fn pod_event(&mut self, event: Event<Pod>) {
        self.event(
            Resource::Pods,
            event,
            |pod| namespaced_key(&pod.metadata),
            ClusterState::set_pod,
            |state| {
                let known = state.cluster.pods().map(|pod| &pod.key);
                known
                    .chain(&state.local)
                    .map(|key| format!("{}/{}", key.namespace, key.name))
                    .collect()
            },
            ClusterState::forget_pod,
        );
    }

    fn node_event(&mut self, event: Event<Node>) {
        self.event(
            Resource::Node,
            event,
            |node| node.metadata.name.clone(),
            ClusterState::set_node,
            |state| vec![state.node_name.clone()],
            |state, _| state.forget_node(),
        );
    }

    fn set_policy(&mut self, api: &NetworkPolicy) -> bool {
        let (policy, refusal) = match Policy::from_api(api) {
            Ok(policy) => (policy, None),
            Err(refused) => {
                let Some(stand_in) = refused.stand_in.clone() else {
                    log::warn!("network policy: {refused}: it names nothing to enforce");
                    return false;
                };
                (stand_in, Some(refused.to_string()))
            }
        };
        let key = policy.key.clone();
        let had = self.refused.get(&key).cloned();
        match &refusal {
            Some(reason) if had.as_ref() != Some(reason) => {
                log::warn!(
                    "network policy: {reason}; its pods are isolated with nothing allowed (fail \
                     closed) until it is fixed"
                );
                self.refused.insert(key.clone(), reason.clone());
                self.events_due.insert(
                    key.clone(),
                    Refusal {
                        policy: key.clone(),
                        uid: api.metadata.uid.clone(),
                        reason: reason.clone(),
                    },
                );
            }
            Some(_) => {}
            None => {
                self.events_due.remove(&key);
                if self.refused.remove(&key).is_some() {
                    log::info!(
                        "network policy {}/{}: accepted now",
                        key.namespace,
                        key.name
                    );
                }
            }
        }
        let same = self
            .cluster
            .policies_in(&key.namespace)
            .any(|held| held.key == key && *held == policy);
        if !same {
            self.cluster.set_policy(policy);
        }
        !same || had != refusal
    }

    fn forget_policy(&mut self, key: &str) -> bool {
        let Some((namespace, name)) = key.split_once('/') else {
            return false;
        };
        let key = PolicyKey {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        };
        let known = self.cluster.policies_in(namespace).any(|p| p.key == key);
        self.cluster.remove_policy(&key);
        self.refused.remove(&key);
        self.events_due.remove(&key);
        known
    }

    fn set_namespace(&mut self, namespace: &Namespace) -> bool {
        let Some(name) = namespace.metadata.name.as_deref().filter(|n| !n.is_empty()) else {
            return false;
        };
        let labels = namespace.metadata.labels.clone().unwrap_or_default();
        if self.cluster.namespace_labels(name) == Some(&labels) {
            return false;
        }
        self.cluster.set_namespace(name, labels);
        true
    }

    fn forget_namespace(&mut self, name: &str) -> bool {
        let known = self.cluster.namespace_labels(name).is_some();
        self.cluster.remove_namespace(name);
        known
    }

    fn set_pod(&mut self, pod: &Pod) -> bool {
        let Some(key) = pod_key(pod) else {
            return false;
        };
        let Some(info) = PodInfo::from_api(pod) else {
            return self.forget_pod_key(&key);
        };
        let local = pod.spec.as_ref().and_then(|spec| spec.node_name.as_deref())
            == Some(self.node_name.as_str());
        let was_local = self.local.contains(&key);
        if local {
            self.local.insert(key.clone());
        } else {
            self.local.remove(&key);
        }
        let same = self.cluster.pod(&key) == Some(&info) && was_local == local;
        if !same {
            self.cluster.set_pod(info);
        }
        !same
    }

    fn forget_pod(&mut self, key: &str) -> bool {
        match key.split_once('/') {
            Some((namespace, name)) => self.forget_pod_key(&PodKey {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            }),
            None => false,
        }
    }

    fn forget_pod_key(&mut self, key: &PodKey) -> bool {
        let known = self.cluster.pod(key).is_some();
        self.cluster.remove_pod(key);
        self.local.remove(key) || known
    }

    /// Takes this node's InternalIP addresses: the node's own address on the cluster's
    /// network, where kubelet's probes come from. Not ExternalIP: probes do not come from
    /// it, and on some platforms it is a shared NAT or public address, which would let
    /// whoever holds it past every policy.
    fn set_node(&mut self, node: &Node) -> bool {
        if node.metadata.name.as_deref() != Some(self.node_name.as_str()) {
            return false;
        }
        let mut addresses: Vec<IpAddr> = node
            .status
            .iter()
            .flat_map(|status| status.addresses.iter().flatten())
            .filter(|address| address.type_ == "InternalIP")
            .filter_map(|address| address.address.parse().ok())
            .collect();
        addresses.sort();
        addresses.dedup();
        if self.node_addresses.as_ref() == Some(&addresses) {
            return false;
        }
        self.node_addresses = Some(addresses);
        true
    }

    fn forget_node(&mut self) -> bool {
        self.node_addresses.take().is_some()
    }
}

/// `namespace/name` of a pod, if it has both.
fn pod_key(pod: &Pod) -> Option<PodKey> {
    Some(PodKey {
        namespace: pod.metadata.namespace.clone().filter(|n| !n.is_empty())?,
        name: pod.metadata.name.clone().filter(|n| !n.is_empty())?,
    })
}

fn namespaced_key(
    metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<String> {
    Some(format!(
        "{}/{}",
        metadata.namespace.as_deref().filter(|n| !n.is_empty())?,
        metadata.name.as_deref().filter(|n| !n.is_empty())?
    ))
}

/// Where the watches (and the tests) put what they see. Cheap to clone; every event wakes
/// the agent's programmer when it changed what policy needs.
#[derive(Debug, Clone)]
pub struct Feed {
    pub(super) shared: std::sync::Arc<Shared>,
}

impl Feed {
    /// Applies a change to the state; wakes the programmer if it changed what policy needs,
    /// and publishes whether the API answers.
    fn with_state(&self, change: impl FnOnce(&mut ClusterState)) {
        let mut state = self.shared.lock_state();
        let before = state.feed.generation;
        change(&mut state.feed);
        let changed = state.feed.generation != before;
        let api = state.feed.api();
        drop(state);
        if changed {
            self.shared.wake.notify_all();
        }
        self.shared.publish_api(api);
    }

    /// A NetworkPolicy event.
    pub fn policies(&self, event: Event<NetworkPolicy>) {
        self.with_state(|state| state.policy_event(event));
    }

    /// A Namespace event.
    pub fn namespaces(&self, event: Event<Namespace>) {
        self.with_state(|state| state.namespace_event(event));
    }

    /// A Pod event.
    pub fn pods(&self, event: Event<Pod>) {
        self.with_state(|state| state.pod_event(event));
    }

    /// An event of this node's Node object.
    pub fn node(&self, event: Event<Node>) {
        self.with_state(|state| state.node_event(event));
    }

    /// A watch of `resource` failed (the API server unreachable, a refusal): what it fed
    /// stays as it was, so HNS keeps the last programmed rules, and the agent says so.
    pub fn failed(&self, resource: Resource, error: String) {
        self.with_state(|state| state.watch_failed(resource, error));
    }

    /// The refusals due to be told as Events: each stays due until [`Feed::told`] (a
    /// publication that failed is tried again), and goes once its policy is fixed or gone.
    pub fn refusals_due(&self) -> Vec<Refusal> {
        self.shared
            .lock_state()
            .feed
            .events_due
            .values()
            .cloned()
            .collect()
    }

    /// `refusal` has been told (its Event is in the API server).
    pub fn told(&self, refusal: &Refusal) {
        let mut state = self.shared.lock_state();
        let due = &mut state.feed.events_due;
        if due.get(&refusal.policy) == Some(refusal) {
            due.remove(&refusal.policy);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, node: &str, ip: &str, phase: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": "x", "name": name, "labels": {"pod": name}},
            "spec": {"nodeName": node, "containers": []},
            "status": {"phase": phase, "podIP": ip, "conditions": [{"type": "Ready", "status": phase}]}
        }))
        .unwrap()
    }

    fn pods(state: &mut ClusterState, event: Event<Pod>) {
        state.pod_event(event);
    }

    fn key(name: &str) -> PodKey {
        PodKey {
            namespace: "x".to_owned(),
            name: name.to_owned(),
        }
    }

    /// A relist replaces what the watch fed: a pod it does not list again is gone, and the
    /// resource is synced at its end; a status change policy does not read is no change.
    #[test]
    fn a_relist_forgets_what_it_did_not_list_and_only_changes_count() {
        let mut state = ClusterState::new("node-1".to_owned());
        pods(&mut state, Event::Init);
        pods(
            &mut state,
            Event::InitApply(pod("a", "node-1", "10.244.1.2", "Running")),
        );
        pods(
            &mut state,
            Event::InitApply(pod("b", "node-2", "10.244.2.2", "Running")),
        );
        assert!(!state.synced.contains(&Resource::Pods));
        pods(&mut state, Event::InitDone);
        assert!(state.synced.contains(&Resource::Pods));
        assert!(!state.synced(), "the other resources are not listed yet");
        assert_eq!(state.local, BTreeSet::from([key("a")]));

        let generation = state.generation;
        pods(
            &mut state,
            Event::Apply(pod("a", "node-1", "10.244.1.2", "Unknown")),
        );
        assert_eq!(
            state.generation, generation,
            "a condition is nothing policy reads"
        );

        pods(&mut state, Event::Init);
        pods(
            &mut state,
            Event::InitApply(pod("b", "node-2", "10.244.2.2", "Running")),
        );
        assert!(
            state.cluster.pod(&key("a")).is_some(),
            "kept until the relist ends"
        );
        pods(&mut state, Event::InitDone);
        assert!(state.cluster.pod(&key("a")).is_none());
        assert!(state.local.is_empty());
        assert!(state.generation > generation);

        pods(
            &mut state,
            Event::Apply(pod("b", "node-2", "10.244.2.2", "Succeeded")),
        );
        assert!(
            state.cluster.pod(&key("b")).is_none(),
            "a finished pod's address may be another pod's already"
        );
    }

    /// A failed watch is back with the first event of its relist the API server sent, not
    /// with the `Init` that comes before the list is asked for.
    #[test]
    fn a_failed_watch_is_back_with_what_the_api_server_sends() {
        let mut state = ClusterState::new("node-1".to_owned());
        pods(&mut state, Event::Init);
        pods(&mut state, Event::InitDone);
        assert!(state.api_up());

        state.watch_failed(Resource::Pods, "connection refused".to_owned());
        assert!(!state.api_up());
        pods(&mut state, Event::Init);
        assert!(!state.api_up(), "nothing listed yet");
        pods(
            &mut state,
            Event::InitApply(pod("a", "node-1", "10.244.1.2", "Running")),
        );
        assert!(state.api_up());

        state.watch_failed(Resource::Pods, "forbidden".to_owned());
        pods(&mut state, Event::Init);
        pods(&mut state, Event::InitDone);
        assert!(state.api_up(), "an empty list is an answer too");
    }

    /// A refused policy is enforced by its stand-in and due as an Event once per reason.
    #[test]
    fn a_refusal_is_told_once_per_reason() {
        let mut state = ClusterState::new("node-1".to_owned());
        let policy = |cidr: &str| -> NetworkPolicy {
            serde_json::from_value(serde_json::json!({
                "metadata": {"namespace": "x", "name": "p", "uid": "u1"},
                "spec": {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": cidr}}]}]}
            }))
            .unwrap()
        };
        assert!(state.set_policy(&policy("10.0.0.0/33")));
        assert!(!state.set_policy(&policy("10.0.0.0/33")), "nothing new");
        let due: Vec<&Refusal> = state.events_due.values().collect();
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].uid.as_deref(), Some("u1"));
        assert_eq!(
            state.cluster.policies().count(),
            1,
            "the stand-in is enforced"
        );
        assert!(state.set_policy(&policy("10.0.0.0/8")), "fixed");
        assert!(state.refused.is_empty());
        assert!(state.events_due.is_empty(), "nothing left to tell");
    }

    /// One refusal is one Event in the cluster: its name is the same on every node, and
    /// another reason (or another policy of that name: another uid) is another Event.
    #[test]
    fn a_refusals_event_name_is_the_same_on_every_node() {
        let refusal = |uid: &str, reason: &str| Refusal {
            policy: PolicyKey {
                namespace: "x".to_owned(),
                name: "p".to_owned(),
            },
            uid: Some(uid.to_owned()),
            reason: reason.to_owned(),
        };
        let name = refusal("u1", "except[0] is outside cidr").event_name();
        assert!(name.starts_with("p."), "{name}");
        assert_eq!(
            refusal("u1", "except[0] is outside cidr").event_name(),
            name
        );
        assert_ne!(refusal("u1", "port 0").event_name(), name);
        assert_ne!(
            refusal("u2", "except[0] is outside cidr").event_name(),
            name
        );
        let long = Refusal {
            policy: PolicyKey {
                namespace: "x".to_owned(),
                name: "n".repeat(253),
            },
            ..refusal("u1", "r")
        };
        assert!(long.event_name().len() <= 253, "a DNS subdomain");
    }

    /// A relist that fails part-way still forgets what it shows gone: the API server lists in
    /// key order, so a known object before the last key it listed, and not listed, is gone;
    /// what comes after is not known yet, and stays.
    #[test]
    fn a_relist_failing_part_way_forgets_what_it_shows_gone() {
        let mut state = ClusterState::new("node-1".to_owned());
        pods(&mut state, Event::Init);
        for name in ["a", "b", "c", "d"] {
            pods(
                &mut state,
                Event::InitApply(pod(name, "node-1", "10.244.1.2", "Running")),
            );
        }
        pods(&mut state, Event::InitDone);
        let generation = state.generation;

        // a and b deleted; the relist's second page fails after c, and so does the next.
        for _ in 0..2 {
            pods(&mut state, Event::Init);
            pods(
                &mut state,
                Event::InitApply(pod("c", "node-1", "10.244.1.2", "Running")),
            );
            state.watch_failed(Resource::Pods, "continue token expired".to_owned());
        }
        pods(&mut state, Event::Init);
        assert!(state.cluster.pod(&key("a")).is_none(), "before c: gone");
        assert!(state.cluster.pod(&key("b")).is_none(), "before c: gone");
        assert!(state.cluster.pod(&key("c")).is_some());
        assert!(
            state.cluster.pod(&key("d")).is_some(),
            "after c: not listed yet"
        );
        assert!(state.generation > generation);

        // Keys out of order say nothing about what is gone.
        pods(
            &mut state,
            Event::InitApply(pod("d", "node-1", "10.244.1.2", "Running")),
        );
        pods(
            &mut state,
            Event::InitApply(pod("c", "node-1", "10.244.1.2", "Running")),
        );
        pods(&mut state, Event::Init);
        assert!(state.cluster.pod(&key("c")).is_some());
        assert!(state.cluster.pod(&key("d")).is_some());
    }

    fn node(name: &str, addresses: serde_json::Value) -> Node {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name},
            "status": {"addresses": addresses}
        }))
        .unwrap()
    }

    /// The node's InternalIP is its address, not its ExternalIP; no Node object under the
    /// agent's name after a list is known as such (a wrong node name), not an empty node.
    #[test]
    fn the_node_is_its_internal_ip_and_a_missing_node_is_known() {
        let mut state = ClusterState::new("node-1".to_owned());
        state.node_event(Event::Init);
        state.node_event(Event::InitDone);
        assert!(!state.api().node_found, "no Node named node-1");
        assert_eq!(state.node_addresses, None);

        let addresses = serde_json::json!([
            {"type": "InternalIP", "address": "10.0.0.10"},
            {"type": "ExternalIP", "address": "203.0.113.7"},
            {"type": "Hostname", "address": "node-1"}
        ]);
        state.node_event(Event::Init);
        state.node_event(Event::InitApply(node("node-1", addresses)));
        state.node_event(Event::InitDone);
        assert!(state.api().node_found);
        assert_eq!(
            state.node_addresses,
            Some(vec!["10.0.0.10".parse().unwrap()]),
            "never the ExternalIP"
        );

        state.node_event(Event::Delete(node("node-1", serde_json::json!([]))));
        assert!(!state.api().node_found);
    }
}
