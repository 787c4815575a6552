//! The NetworkPolicy snapshot: where ADD and the node's policy agent meet.
//!
//! The agent (`cni-win daemon --network-policy`) watches the API server and programs
//! HNS, but a new pod's endpoint is created by ADD, before the agent can see its address. So
//! the agent writes, atomically, a snapshot of what it knows for this node ([`PolicySnapshot`]:
//! the rules for each local pod it has seen, each namespace's posture for a pod it has not,
//! and the posture of a namespace it does not know), and ADD includes the rules for its pod in
//! `HcnCreateEndpoint`'s policies: the pod is protected from its first packet, at no HCN call
//! more than ADD makes anyway. The agent converges the endpoint to its usual form once it
//! sees the pod, without a window.
//!
//! The file is named by the conflist key `networkPolicySnapshot` (`cni-win install --set
//! networkPolicySnapshot=PATH` writes it), and read as every file a root plugin reads: never
//! through a link, never a special file, at most [`MAX_SIZE`] bytes ([`read`]). What ADD does:
//!
//! | the conflist / the file | ADD |
//! | --- | --- |
//! | no `networkPolicySnapshot` | NetworkPolicy is not enabled for the network: no rules |
//! | the file is missing | the agent has not synced once on this node yet (just enabled): the pod starts without rules, a warning is logged, and the agent programs it on its first sync (the window the API docs allow: a pod "may be started unprotected") |
//! | the file is there but cannot be used (a link, a directory, too large, not a snapshot, another layout version, a rule it names missing) | ADD fails with code 11 (try again later), naming the file: a pod is never started open because the node's policy could not be read; the agent rewrites the file every round |
//! | a rule of the snapshot would tie with one of the config's own ACLs (same direction, layer and priority, other action) | ADD fails with code 11: the snapshot was rendered for other config ACLs, and the agent renders it again within a round |
//!
//! Only small serde types live here: the plugins read the file, the agent (in the `cni-win`
//! binary, with the translation) writes it.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::OpenOptions;
use std::path::Path;

use cni::{CniArgs, Error};
use hns::Guid;
use hns::schema::EndpointPolicy;
use hns::schema::policy::AclPolicy;
use rootsafe::file::{self, OpenError};
use serde::{Deserialize, Serialize};

/// The layout version this build reads and writes; a file of another version cannot be used.
pub const VERSION: u32 = 1;

/// The largest snapshot read: a node's pods and namespaces with their rules, peers listed
/// inline, stay far below it; more is damage (or a cluster the snapshot cannot serve).
pub const MAX_SIZE: u64 = 32 * 1024 * 1024;

/// What the agent knows of this node's NetworkPolicy, for ADD, `cni-win doctor` and the
/// support bundle.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct PolicySnapshot {
    /// The layout version ([`VERSION`]).
    pub version: u32,
    /// The node the agent runs on.
    pub node: String,
    /// How the agent programs HNS on this host (`IpSets` or `Inline`), for doctor.
    pub mode: String,
    /// Every rule the snapshot names, by `Id`.
    pub rules: BTreeMap<String, AclPolicy>,
    /// The local pods the agent has seen, by `namespace/name`.
    pub pods: BTreeMap<String, PodPolicy>,
    /// For a new pod of a namespace the agent knows but whose pod it has not seen: the
    /// namespace's posture (isolated in a direction where any policy of the namespace is).
    pub namespaces: BTreeMap<String, Vec<String>>,
    /// For a new pod of a namespace the agent does not know (created since): no policy can
    /// select it yet.
    pub default: Vec<String>,
    /// The policies the agent refused, each with why (`namespace/name` → reason): their pods
    /// are isolated with nothing allowed until the policy is fixed.
    pub refused: BTreeMap<String, String>,
}

/// One local pod as the agent sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct PodPolicy {
    /// The rules ADD writes on the pod's new endpoint (peers listed inline).
    pub add: Vec<String>,
    /// The policies that select the pod (`namespace/name`).
    pub policies: Vec<String>,
    /// The pod's endpoint, once the agent found it by the pod's address.
    pub endpoint: Option<Guid>,
    /// The `Id`s of the agent's rules HNS should hold on that endpoint (which may name IP
    /// sets, so they are not all in [`PolicySnapshot::rules`]).
    pub expected: Vec<String>,
}

/// Why a snapshot file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unusable {
    /// What is wrong.
    pub problem: String,
}

impl fmt::Display for Unusable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.problem)
    }
}

impl std::error::Error for Unusable {}

fn unusable(problem: impl Into<String>) -> Unusable {
    Unusable {
        problem: problem.into(),
    }
}

/// Reads the snapshot at `path`: `None` when nothing is there.
pub fn read(path: &Path) -> Result<Option<PolicySnapshot>, Unusable> {
    let file = match file::open(path, OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(OpenError::Missing) => return Ok(None),
        Err(OpenError::NotRegular(kind)) => {
            return Err(unusable(format!(
                "it is a {kind:?}, not a regular file (never followed)"
            )));
        }
        Err(OpenError::Io(e)) => return Err(unusable(format!("cannot open it: {e}"))),
    };
    let bytes =
        file::read_capped(file, MAX_SIZE).map_err(|e| unusable(format!("cannot read it: {e}")))?;
    PolicySnapshot::from_bytes(&bytes).map(Some)
}

impl PolicySnapshot {
    /// Decodes a snapshot and checks that it can be used: this layout version, and every rule
    /// it names present.
    pub fn from_bytes(bytes: &[u8]) -> Result<PolicySnapshot, Unusable> {
        /// The version alone: another layout's other fields are not this one's.
        #[derive(Deserialize)]
        struct Layout {
            #[serde(rename = "Version")]
            version: u32,
        }
        let not_one = |e: serde_json::Error| unusable(format!("not a NetworkPolicy snapshot: {e}"));
        let layout: Layout = serde_json::from_slice(bytes).map_err(not_one)?;
        if layout.version != VERSION {
            return Err(unusable(format!(
                "layout version {} (this cni-win reads {VERSION})",
                layout.version
            )));
        }
        let snapshot: PolicySnapshot = serde_json::from_slice(bytes).map_err(not_one)?;
        let named = snapshot
            .pods
            .values()
            .flat_map(|pod| &pod.add)
            .chain(snapshot.namespaces.values().flatten())
            .chain(&snapshot.default);
        for id in named {
            if !snapshot.rules.contains_key(id) {
                return Err(unusable(format!("rule {id:?} is named but not listed")));
            }
        }
        Ok(snapshot)
    }

    /// The rules ADD writes for pod `name` of `namespace`: the pod's own when the agent has
    /// seen it, else its namespace's posture, else the posture of a namespace the agent does
    /// not know.
    pub fn rules_for_new_pod(&self, namespace: &str, name: &str) -> Vec<AclPolicy> {
        let ids = match self.pods.get(&object_key(namespace, name)) {
            Some(pod) => &pod.add,
            None => self.namespaces.get(namespace).unwrap_or(&self.default),
        };
        ids.iter()
            .filter_map(|id| self.rules.get(id))
            .cloned()
            .collect()
    }
}

/// The agent's rules ADD adds to a new pod's endpoint from the snapshot at `path` (see the
/// module docs for each case), checked against `composed`, the policies ADD writes besides.
/// The pod is the one `CNI_ARGS` names (`K8S_POD_NAMESPACE`, `K8S_POD_NAME`, as kubelet's
/// runtimes pass them); a runtime that names none starts no Kubernetes pod, which no
/// NetworkPolicy selects.
pub(crate) fn rules_at_add(
    path: &Path,
    args: &CniArgs,
    composed: &[EndpointPolicy],
) -> Result<Vec<EndpointPolicy>, Error> {
    let (Some(namespace), Some(name)) = (args.get("K8S_POD_NAMESPACE"), args.get("K8S_POD_NAME"))
    else {
        log::info!(
            "CNI_ARGS names no Kubernetes pod (K8S_POD_NAMESPACE, K8S_POD_NAME): no NetworkPolicy \
             applies"
        );
        return Ok(Vec::new());
    };
    let fix = "the node's policy agent (`cni-win daemon --network-policy`) rewrites it \
               within a round; `cni-win doctor` shows its state";
    let snapshot = match read(path) {
        Ok(Some(snapshot)) => snapshot,
        Ok(None) => {
            log::warn!(
                "networkPolicySnapshot {}: no snapshot yet (the policy agent has not synced on \
                 this node): pod {namespace}/{name} starts without NetworkPolicy rules until the \
                 agent programs it",
                path.display()
            );
            return Ok(Vec::new());
        }
        Err(unusable) => {
            return Err(Error::try_again_later(format!(
                "networkPolicySnapshot {}: {unusable}: pod {namespace}/{name} is not started \
                 without its NetworkPolicy rules; {fix}",
                path.display()
            )));
        }
    };
    let rules = snapshot.rules_for_new_pod(namespace, name);
    let others = composed.iter().filter_map(|policy| match policy.effect() {
        EndpointPolicy::Acl(acl) => Some(acl),
        _ => None,
    });
    for other in others {
        // The agent renders the snapshot's rules clear of the config's ACLs by a stricter
        // rule (`cni_win_netpol::Priorities::clear_of`, whose tests show it implies no tie):
        // a tie here means the snapshot was rendered for other config ACLs.
        if let Some(rule) = rules.iter().find(|rule| rule.ties_with(&other)) {
            return Err(Error::try_again_later(format!(
                "networkPolicySnapshot {}: rule {} ties with the config's ACL {} (one direction, \
                 layer and priority, another action): the snapshot was rendered for other config \
                 ACLs; {fix}",
                path.display(),
                rule.id.as_deref().unwrap_or_default(),
                serde_json::to_string(&other).unwrap_or_default()
            )));
        }
    }
    Ok(rules.into_iter().map(EndpointPolicy::Acl).collect())
}

/// A namespaced object's key in the snapshot (a pod's in [`PolicySnapshot::pods`], a
/// policy's in [`PodPolicy::policies`] and [`PolicySnapshot::refused`]): `namespace/name`
/// (neither may hold a `/`).
pub fn object_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use hns::schema::policy::{AclAction, AclDirection};

    fn rule(id: &str, action: AclAction, priority: u16) -> AclPolicy {
        AclPolicy {
            id: Some(id.to_owned()),
            ..AclPolicy::all_traffic(action, AclDirection::In, priority)
        }
    }

    fn snapshot() -> PolicySnapshot {
        let block = rule("cni-win-netpol-block", AclAction::Block, 65000);
        let open = rule("cni-win-netpol-open", AclAction::Allow, 65100);
        PolicySnapshot {
            version: VERSION,
            node: "node-1".to_owned(),
            mode: "IpSets".to_owned(),
            rules: [&block, &open]
                .into_iter()
                .map(|acl| (acl.id.clone().unwrap(), acl.clone()))
                .collect(),
            pods: BTreeMap::from([(
                object_key("x", "a"),
                PodPolicy {
                    add: vec!["cni-win-netpol-block".to_owned()],
                    ..PodPolicy::default()
                },
            )]),
            namespaces: BTreeMap::from([("x".to_owned(), vec!["cni-win-netpol-block".into()])]),
            default: vec!["cni-win-netpol-open".to_owned()],
            refused: BTreeMap::new(),
        }
    }

    #[test]
    fn a_new_pod_gets_its_own_rules_then_its_namespaces_then_the_default() {
        let snapshot = snapshot();
        let ids = |namespace, name| -> Vec<String> {
            snapshot
                .rules_for_new_pod(namespace, name)
                .into_iter()
                .filter_map(|acl| acl.id)
                .collect()
        };
        assert_eq!(ids("x", "a"), ["cni-win-netpol-block"]);
        assert_eq!(ids("x", "unseen"), ["cni-win-netpol-block"]);
        assert_eq!(ids("new", "b"), ["cni-win-netpol-open"]);
    }

    #[test]
    fn what_cannot_be_used_is_named() {
        let bytes = serde_json::to_vec(&snapshot()).unwrap();
        assert_eq!(PolicySnapshot::from_bytes(&bytes), Ok(snapshot()));
        let problem = |bytes: &[u8]| PolicySnapshot::from_bytes(bytes).unwrap_err().problem;
        assert!(problem(b"{").contains("not a NetworkPolicy snapshot"));
        assert!(problem(&bytes[..bytes.len() / 2]).contains("not a NetworkPolicy snapshot"));
        let other_version = PolicySnapshot {
            version: VERSION + 1,
            ..snapshot()
        };
        assert!(problem(&serde_json::to_vec(&other_version).unwrap()).contains("layout version"));
        let mut dangling = snapshot();
        dangling.default.push("cni-win-netpol-gone".to_owned());
        assert!(problem(&serde_json::to_vec(&dangling).unwrap()).contains("cni-win-netpol-gone"));
    }
}
