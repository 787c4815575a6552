//! What HNS should hold: every local endpoint's ACLs and the IP sets they name.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use hns::Guid;
use hns::schema::policy::AclPolicy;

use crate::cluster::{Cluster, PodKey};
use crate::render::{
    IpSet, Mode, Priorities, PriorityConflict, Renderer, host_directions, is_agents,
};
use crate::rules::{self, GroupAddresses, Subject};
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

/// One state of the cluster translated for this node, for as many questions as a pass asks.
///
/// Each group of pods that rules name is matched against the cluster's pods once, however
/// many endpoints, new pods and namespaces' postures name it: matching is what translation
/// spends its time on (5,000 pods, 100 endpoints and a few groups each would otherwise be
/// millions of selector matches a pass).
#[derive(Debug)]
pub struct Translation<'c> {
    cluster: &'c Cluster,
    node: &'c NodeAddresses,
    groups: GroupAddresses,
}

impl<'c> Translation<'c> {
    /// A translation of `cluster` for `node`; the cluster cannot change while it lives.
    pub fn new(cluster: &'c Cluster, node: &'c NodeAddresses) -> Translation<'c> {
        Translation {
            cluster,
            node,
            groups: GroupAddresses::default(),
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
            match self.endpoint_acls(subject, &endpoint.ips, &endpoint.others, mode, &mut sets) {
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
    /// endpoint: its rules name their peers, never the pod's own address. Peers are listed
    /// inline, so the endpoint needs no network set to exist; the agent later converges it to
    /// its usual form without a window (rules are added before others are removed). `others`
    /// are the ACLs ADD writes besides (the conflist's, `allowAclPortMapping`'s).
    ///
    /// A pod the agent has not seen gets [`Translation::namespace_posture`].
    pub fn pending_pod_acls(
        &mut self,
        pod: &PodKey,
        others: &[AclPolicy],
    ) -> Result<Vec<AclPolicy>, PriorityConflict> {
        let Some(info) = self.cluster.pod(pod) else {
            return self.namespace_posture(&pod.namespace, others);
        };
        let subject = Subject {
            namespace: &pod.namespace,
            labels: Some(&info.labels),
            named_ports: &info.named_ports,
        };
        self.addressless_acls(subject, others)
    }

    /// The ACLs for a new pod of `namespace` that the agent has not seen: a direction is open
    /// only when no policy of the namespace isolates any pod in it; otherwise the pod is
    /// isolated, allowed its node and what the policies selecting every pod of the namespace
    /// allow (those surely select it; rules naming its own named ports cannot be resolved
    /// yet). It fails closed until the agent sees the pod: narrower than its policies, never
    /// wider.
    pub fn namespace_posture(
        &mut self,
        namespace: &str,
        others: &[AclPolicy],
    ) -> Result<Vec<AclPolicy>, PriorityConflict> {
        let subject = Subject {
            namespace,
            labels: None,
            named_ports: &[],
        };
        self.addressless_acls(subject, others)
    }

    /// The ACLs of an endpoint whose own addresses are not known yet, with every peer
    /// inline: what ADD writes before the agent has programmed the pod.
    fn addressless_acls(
        &mut self,
        subject: Subject<'_>,
        others: &[AclPolicy],
    ) -> Result<Vec<AclPolicy>, PriorityConflict> {
        self.endpoint_acls(subject, &[], others, Mode::Inline, &mut Sets::default())
    }

    fn endpoint_acls(
        &mut self,
        subject: Subject<'_>,
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
        let policy = rules::pod_policy(self.cluster, subject);
        Ok(renderer.endpoint(&policy, &self.node.addresses, own))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::api::networking::v1::NetworkPolicy;

    use super::*;
    use crate::cluster::{PodInfo, PodKey};
    use crate::policy::Policy;
    use crate::rules::PEER_MATCHES;

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

    /// A translation finds each group's members once, however many endpoints, new pods and
    /// postures name the group: the cost of a pass grows with pods plus endpoints, not with
    /// their product.
    #[test]
    fn a_translation_matches_each_group_against_the_pods_once() {
        let (cluster, endpoints) = node_of_web_pods();
        let node = NodeAddresses::default();
        for mode in [Mode::Inline, Mode::IpSets] {
            PEER_MATCHES.with(|count| count.set(0));
            let mut translation = Translation::new(&cluster, &node);
            let desired = translation.desired(&endpoints, mode);
            for endpoint in &endpoints {
                let pending = translation.pending_pod_acls(&endpoint.pod, &[]).unwrap();
                assert!(
                    pending.iter().any(|acl| acl
                        .remote_addresses
                        .as_deref()
                        .is_some_and(|remote| remote.split(',').count() == PODS)),
                    "{mode:?}: {pending:?}"
                );
            }
            translation.namespace_posture("x", &[]).unwrap();
            let matches = PEER_MATCHES.with(|count| count.get());
            // One group per address family.
            assert_eq!(matches, 2 * PODS, "{mode:?}");
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
    /// in its namespace only, so every namespace's posture together costs the cluster's pods
    /// once per address family, not the namespaces times the pods.
    #[test]
    fn groups_of_one_namespace_cost_that_namespaces_pods() {
        const NAMESPACES: usize = 50;
        const PODS_EACH: usize = 4;
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
        let node = NodeAddresses::default();
        let mut translation = Translation::new(&cluster, &node);
        PEER_MATCHES.with(|count| count.set(0));
        for n in 0..NAMESPACES {
            let pod = PodKey {
                namespace: format!("ns-{n}"),
                name: "p0".to_owned(),
            };
            translation.pending_pod_acls(&pod, &[]).unwrap();
            translation
                .namespace_posture(&format!("ns-{n}"), &[])
                .unwrap();
        }
        let matches = PEER_MATCHES.with(|count| count.get());
        assert_eq!(
            matches,
            2 * NAMESPACES * PODS_EACH,
            "one look at each pod per family"
        );
    }
}
