//! What HNS should hold: every local endpoint's ACLs and the IP sets they name.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use hns::Guid;
use hns::schema::policy::AclPolicy;

use crate::cluster::{Cluster, PodKey};
use crate::render::{
    IpSet, Mode, NamedGroups, Priorities, PriorityConflict, Renderer, host_directions, is_agents,
};
use crate::rules::{self, PodPolicy, Remote, Subject};
use crate::sets::{self, SetCollision, Sets};

/// The addresses of the node the agent runs on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeAddresses {
    /// Its addresses: what they send a pod is always allowed in (kubelet's probes come from
    /// them); what a pod sends them is what its egress rules allow.
    pub addresses: Vec<IpAddr>,
}

/// A pod endpoint on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalEndpoint {
    /// The HNS endpoint.
    pub id: Guid,
    /// The pod it belongs to.
    pub pod: PodKey,
    /// Its addresses as HNS holds them.
    pub ips: Vec<IpAddr>,
    /// The ACLs on it that are not the agent's (the conflist's, `allowAclPortMapping`'s), as
    /// read from HNS: the agent's priorities stay clear of them.
    pub others: Vec<AclPolicy>,
}

/// What HNS should hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Desired {
    /// The agent's ACLs of each endpoint, in priority order.
    pub endpoints: BTreeMap<Guid, Vec<AclPolicy>>,
    /// The IP sets those ACLs name ([`Mode::IpSets`]), by `Id`.
    pub sets: BTreeMap<String, IpSet>,
    /// Endpoints left as they are: no priority is free of their other owners' rules.
    pub conflicts: BTreeMap<Guid, PriorityConflict>,
    /// Sets two groups met at: neither is written, nor any rule naming it.
    pub collisions: Vec<SetCollision>,
    /// Sets HNS keeps though no rule of `endpoints` names them: those the NetworkPolicy
    /// snapshot on disk names, which ADD may still write on a new endpoint until the agent
    /// has replaced the file ([`crate::diff`] removes none of them).
    pub kept_sets: BTreeSet<String>,
}

impl Desired {
    /// Leaves out the sets of `collisions` and every rule naming them: what those rules would
    /// allow is refused, the endpoints' isolation stays.
    pub(crate) fn fail_closed(&mut self, collisions: Vec<SetCollision>) {
        let ids: BTreeSet<&str> = collisions.iter().map(|c| c.id.as_str()).collect();
        if ids.is_empty() {
            return;
        }
        for acls in self.endpoints.values_mut() {
            acls.retain(|acl| !sets::names_any(acl, &ids));
        }
        self.sets.retain(|id, _| !ids.contains(id.as_str()));
        self.collisions.extend(collisions);
    }
}

/// How the rules ADD writes on a new pod's endpoint name the pod's peers.
#[derive(Debug)]
pub enum NewPodPeers<'s> {
    /// Listed inline: the endpoint needs no set (hosts without IP sets).
    Inline,
    /// As the network's IP sets ([`Mode::IpSets`]), gathered here: each must be on the pod's
    /// network before ADD reads a rule that names it, and stay while a rule ADD may read
    /// names it. A rule then costs its policies, not its peers' number.
    Sets(&'s mut NewPodSets),
    /// Left out: every policy allow whose peers are pods is dropped, so a new pod is allowed
    /// its node and address blocks only where its policies isolate it (narrower, never
    /// wider), for a snapshot that would not fit otherwise.
    Omitted,
}

/// The IP sets the rules ADD writes for new pods name ([`NewPodPeers::Sets`]), gathered over
/// every new pod and posture of one snapshot.
#[derive(Debug, Default)]
pub struct NewPodSets(Sets);

impl NewPodSets {
    /// The sets to put on the networks the rules are for, and the `Id`s two groups met at:
    /// in these rules, or one of them and a set of `networks` (each network's
    /// [`Desired::sets`]), whose group keeps it. No rule naming a collision may be written
    /// ([`SetCollision::is_named_by`]): what it allows is refused (fail closed).
    pub fn finish(
        self,
        networks: &[&BTreeMap<String, IpSet>],
    ) -> (BTreeMap<String, IpSet>, Vec<SetCollision>) {
        let (mut named, mut collisions) = self.0.finish();
        named.retain(|id, set| {
            let others: BTreeSet<String> = networks
                .iter()
                .filter_map(|sets| sets.get(id))
                .filter(|held| held.name != set.name)
                .map(|held| held.name.clone())
                .collect();
            if others.is_empty() {
                return true;
            }
            let mut names = others;
            names.insert(set.name.clone());
            collisions.push(SetCollision {
                id: id.clone(),
                names,
            });
            false
        });
        (named, collisions)
    }
}

/// One state of the cluster translated for this node, for as many questions as a pass asks.
///
/// It matches no pod against a group (the cluster keeps each group's members as it changes),
/// and lists, spells and fingerprints each group once, however many endpoints, new pods and
/// namespaces' postures name it.
#[derive(Debug)]
pub struct Translation<'c> {
    cluster: &'c Cluster,
    node: &'c NodeAddresses,
    groups: NamedGroups,
}

impl<'c> Translation<'c> {
    /// A translation of `cluster` for `node`; the cluster cannot change while it lives.
    pub fn new(cluster: &'c Cluster, node: &'c NodeAddresses) -> Translation<'c> {
        Translation {
            cluster,
            node,
            groups: NamedGroups::default(),
        }
    }

    /// The agent's ACLs for every endpoint in `endpoints`, and the sets they name.
    ///
    /// An endpoint whose pod the agent has not seen gets its namespace's posture
    /// ([`Translation::namespace_posture`]).
    ///
    /// Two groups whose sets meet one `Id` fail closed: see [`Desired::collisions`].
    pub fn desired(&mut self, endpoints: &[LocalEndpoint], mode: Mode) -> Desired {
        let mut desired = Desired::default();
        let mut sets = Sets::default();
        for endpoint in endpoints {
            let pod = self.cluster.pod(&endpoint.pod);
            let subject = Subject {
                namespace: &endpoint.pod.namespace,
                labels: pod.map(|pod| &pod.labels),
                named_ports: pod.map_or(&[], |pod| &pod.named_ports),
            };
            let policy = rules::pod_policy(self.cluster, subject);
            match self.endpoint_acls(&policy, &endpoint.ips, &endpoint.others, mode, &mut sets) {
                Ok(acls) => {
                    desired.endpoints.insert(endpoint.id, acls);
                }
                Err(conflict) => {
                    desired.conflicts.insert(endpoint.id, conflict);
                }
            }
        }
        let (named, collisions) = sets.finish();
        desired.sets = named;
        desired.fail_closed(collisions);
        desired
    }

    /// The ACLs for a pod the agent has seen but that has no address yet, as ADD creates its
    /// endpoint: its rules name their peers as `peers` says, never the pod's own address; the
    /// agent later converges the endpoint to its usual form without a window (rules are
    /// added before others are removed). `others` are the ACLs ADD writes besides (the
    /// conflist's, `allowAclPortMapping`'s).
    ///
    /// A pod the agent has not seen gets [`Translation::namespace_posture`].
    pub fn pending_pod_acls(
        &mut self,
        pod: &PodKey,
        others: &[AclPolicy],
        peers: &mut NewPodPeers<'_>,
    ) -> Result<Vec<AclPolicy>, PriorityConflict> {
        let Some(info) = self.cluster.pod(pod) else {
            return self.namespace_posture(&pod.namespace, others, peers);
        };
        let subject = Subject {
            namespace: &pod.namespace,
            labels: Some(&info.labels),
            named_ports: &info.named_ports,
        };
        self.addressless_acls(subject, others, peers)
    }

    /// The ACLs for a new pod of `namespace` that the agent has not seen: a direction is open
    /// only when no policy of the namespace isolates any pod in it; otherwise the pod is
    /// isolated, allowed its node and what the policies selecting every pod of the namespace
    /// allow (those surely select it; rules naming its own named ports cannot be resolved
    /// yet). It fails closed until the agent sees the pod: narrower than its policies, never
    /// wider. It needs nothing of the namespace but its policies: a namespace whose
    /// Namespace object has not arrived gets the posture its policies make.
    pub fn namespace_posture(
        &mut self,
        namespace: &str,
        others: &[AclPolicy],
        peers: &mut NewPodPeers<'_>,
    ) -> Result<Vec<AclPolicy>, PriorityConflict> {
        let subject = Subject {
            namespace,
            labels: None,
            named_ports: &[],
        };
        self.addressless_acls(subject, others, peers)
    }

    /// The ACLs of an endpoint whose own addresses are not known yet: what ADD writes before
    /// the agent has programmed the pod.
    fn addressless_acls(
        &mut self,
        subject: Subject<'_>,
        others: &[AclPolicy],
        peers: &mut NewPodPeers<'_>,
    ) -> Result<Vec<AclPolicy>, PriorityConflict> {
        let mut policy = rules::pod_policy(self.cluster, subject);
        let mut unnamed = Sets::default();
        let (mode, sets) = match peers {
            NewPodPeers::Inline => (Mode::Inline, &mut unnamed),
            NewPodPeers::Sets(sets) => (Mode::IpSets, &mut sets.0),
            NewPodPeers::Omitted => {
                policy
                    .allows
                    .retain(|allow| !matches!(allow.remote, Remote::Group(_)));
                (Mode::Inline, &mut unnamed)
            }
        };
        self.endpoint_acls(&policy, &[], others, mode, sets)
    }

    fn endpoint_acls(
        &mut self,
        policy: &PodPolicy,
        own: &[IpAddr],
        others: &[AclPolicy],
        mode: Mode,
        sets: &mut Sets,
    ) -> Result<Vec<AclPolicy>, PriorityConflict> {
        let others: Vec<AclPolicy> = others
            .iter()
            .filter(|acl| !is_agents(acl))
            .cloned()
            .collect();
        let mut renderer = Renderer {
            cluster: self.cluster,
            mode,
            priorities: Priorities::clear_of(&others)?,
            sets,
            groups: &mut self.groups,
            host: host_directions(&others),
        };
        Ok(renderer.endpoint(policy, &self.node.addresses, own))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::api::networking::v1::NetworkPolicy;

    use super::*;
    use crate::cluster::{PodInfo, PodKey};
    use crate::members::MEMBER_MATCHES;
    use crate::policy::Policy;

    const PODS: usize = 40;

    /// `PODS` pods of namespace `x` on this node, every one allowed ingress from every other
    /// by one policy: every endpoint's rules name the same group.
    fn node_of_web_pods() -> (Cluster, Vec<LocalEndpoint>) {
        let mut cluster = Cluster::new();
        cluster.set_namespace("x", [("ns".to_owned(), "x".to_owned())].into());
        let mut endpoints = Vec::new();
        for index in 0..PODS {
            let pod: Pod = serde_json::from_value(serde_json::json!({
                "metadata": {"namespace": "x", "name": format!("web-{index}"),
                             "labels": {"role": "web"}},
                "spec": {"containers": []},
                "status": {"phase": "Running", "podIP": format!("10.244.1.{}", index + 2)}
            }))
            .unwrap();
            let info = PodInfo::from_api(&pod).unwrap();
            endpoints.push(LocalEndpoint {
                id: Guid::from_u128(index as u128 + 1),
                pod: info.key.clone(),
                ips: info.ips.clone(),
                others: Vec::new(),
            });
            cluster.set_pod(info);
        }
        let policy: NetworkPolicy = serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": "x", "name": "web-from-web"},
            "spec": {"podSelector": {},
                     "ingress": [{"from": [{"podSelector": {"matchLabels": {"role": "web"}}}]}]}
        }))
        .unwrap();
        cluster.set_policy(Policy::from_api(&policy).unwrap());
        (cluster, endpoints)
    }

    /// A set the rules for new pods name, whose `Id` a network's set of another group holds,
    /// is a collision: the network's group keeps the `Id`, and no rule for new pods names it.
    #[test]
    fn a_new_pods_set_at_a_networks_set_of_another_group_is_a_collision() {
        let set = |name: &str, last: u8| IpSet {
            id: "cni-win-netpol-set-1".to_owned(),
            name: name.to_owned(),
            addresses: vec![[10, 244, 1, last].into()],
        };
        let network = BTreeMap::from([(set("x/a v4", 2).id, set("x/a v4", 2))]);
        let mut same = NewPodSets::default();
        same.0.name(&set("x/a v4", 2));
        let (named, collisions) = same.finish(&[&network]);
        assert_eq!(named.len(), 1);
        assert!(collisions.is_empty());

        let mut other = NewPodSets::default();
        other.0.name(&set("y/evil v4", 3));
        let (named, collisions) = other.finish(&[&network]);
        assert!(named.is_empty());
        assert_eq!(collisions.len(), 1);
        assert_eq!(
            collisions[0].names,
            BTreeSet::from(["x/a v4".to_owned(), "y/evil v4".to_owned()])
        );
        let naming = AclPolicy {
            remote_addresses: Some("cni-win-netpol-set-1".to_owned()),
            ..AclPolicy::all_traffic(
                hns::schema::policy::AclAction::Allow,
                hns::schema::policy::AclDirection::In,
                4300,
            )
        };
        assert!(collisions[0].is_named_by(&naming));
    }

    /// A translation matches no pod against a group, however many endpoints, new pods and
    /// postures name it: the cluster keeps each group's members as it changes, so a pass
    /// costs the endpoints it programs, not the cluster's pods.
    #[test]
    fn a_translation_matches_no_pod_against_a_group() {
        let (cluster, endpoints) = node_of_web_pods();
        let node = NodeAddresses::default();
        for mode in [Mode::Inline, Mode::IpSets] {
            MEMBER_MATCHES.with(|count| count.set(0));
            let mut translation = Translation::new(&cluster, &node);
            let desired = translation.desired(&endpoints, mode);
            for endpoint in &endpoints {
                let pending = translation
                    .pending_pod_acls(&endpoint.pod, &[], &mut NewPodPeers::Inline)
                    .unwrap();
                assert!(
                    pending.iter().any(|acl| acl
                        .remote_addresses
                        .as_deref()
                        .is_some_and(|remote| remote.split(',').count() == PODS)),
                    "{mode:?}: {pending:?}"
                );
            }
            translation
                .namespace_posture("x", &[], &mut NewPodPeers::Inline)
                .unwrap();
            let matches = MEMBER_MATCHES.with(|count| count.get());
            assert_eq!(matches, 0, "{mode:?}");
            assert_eq!(desired.endpoints.len(), PODS);
            // The ingress rule's peer: addresses in RemoteAddresses, a set in LocalAddresses.
            let web_addresses = |acls: &Vec<AclPolicy>| {
                acls.iter()
                    .filter_map(|acl| match mode {
                        Mode::Inline => acl.remote_addresses.as_deref(),
                        Mode::IpSets => acl.local_addresses.as_deref(),
                    })
                    .any(|remote| match mode {
                        Mode::Inline => remote.split(',').count() == PODS,
                        Mode::IpSets => desired
                            .sets
                            .get(remote)
                            .is_some_and(|set| set.addresses.len() == PODS),
                    })
            };
            assert!(desired.endpoints.values().all(web_addresses), "{mode:?}");
        }
    }

    /// A select-all peer in each of many namespaces ("allow from my own namespace", one
    /// policy per namespace) makes a group per namespace; each group's members are looked for
    /// in its namespace only, so keeping every group costs the cluster's pods once, not the
    /// namespaces times the pods, and every namespace's posture then costs no match.
    #[test]
    fn groups_of_one_namespace_cost_that_namespaces_pods() {
        const NAMESPACES: usize = 50;
        const PODS_EACH: usize = 4;
        MEMBER_MATCHES.with(|count| count.set(0));
        let mut cluster = Cluster::new();
        for n in 0..NAMESPACES {
            let namespace = format!("ns-{n}");
            cluster.set_namespace(namespace.as_str(), Default::default());
            for p in 0..PODS_EACH {
                let pod: Pod = serde_json::from_value(serde_json::json!({
                    "metadata": {"namespace": namespace, "name": format!("p{p}")},
                    "spec": {"containers": []},
                    "status": {"phase": "Running", "podIP": format!("10.{n}.0.{}", p + 2)}
                }))
                .unwrap();
                cluster.set_pod(PodInfo::from_api(&pod).unwrap());
            }
            let policy: NetworkPolicy = serde_json::from_value(serde_json::json!({
                "metadata": {"namespace": namespace, "name": "same-namespace"},
                "spec": {"podSelector": {}, "ingress": [{"from": [{"podSelector": {}}]}]}
            }))
            .unwrap();
            cluster.set_policy(Policy::from_api(&policy).unwrap());
        }
        let kept = MEMBER_MATCHES.with(|count| count.replace(0));
        assert_eq!(kept, NAMESPACES * PODS_EACH, "one look at each pod");
        let node = NodeAddresses::default();
        let mut translation = Translation::new(&cluster, &node);
        for n in 0..NAMESPACES {
            let pod = PodKey {
                namespace: format!("ns-{n}"),
                name: "p0".to_owned(),
            };
            translation
                .pending_pod_acls(&pod, &[], &mut NewPodPeers::Inline)
                .unwrap();
            translation
                .namespace_posture(&format!("ns-{n}"), &[], &mut NewPodPeers::Inline)
                .unwrap();
        }
        let matches = MEMBER_MATCHES.with(|count| count.get());
        assert_eq!(matches, 0, "the postures read the kept members");
    }
}
