//! The NetworkPolicy snapshot: where ADD and the node's policy agent meet.
//!
//! The agent (`cni-win daemon --network-policy`) watches the API server and programs
//! HNS, but a new pod's endpoint is created by ADD, before the agent can see its address. So
//! the agent writes, atomically, a snapshot of what it knows for this node ([`PolicySnapshot`]:
//! the rules for each local pod it has seen, the posture of each namespace that has a policy
//! for a pod it has not, and the posture of any other namespace), and ADD includes the rules
//! for its pod in `HcnCreateEndpoint`'s policies: the pod is protected from its first packet,
//! at no HCN call more than ADD makes anyway. The agent converges the endpoint to its usual
//! form once it sees the pod, without a window.
//!
//! The file is named by the conflist key `networkPolicySnapshot` (`cni-win install --set
//! networkPolicySnapshot=PATH` writes it), and read as every file a root plugin reads: never
//! through a link (the file's directory included), never a special file, at most
//! [`MAX_SIZE`] bytes, no JSON key twice in one object ([`read`]).
//!
//! **Whose and how fresh.** A snapshot names the HNS network(s) it was rendered for, by the ID
//! HNS gave each when it created it: a GUID of this host, so a file from another node (an
//! image baked with one) or from before the network was created again (a reboot of
//! non-persistent networks) names another. Its age is the file's modification time, on the
//! node's own clock (the agent sets it, ADD compares it with the same clock): the agent
//! stamps the file each time it confirms the content is current (synced, every watch
//! answering), and at least every tenth of the file's own `MaxAgeSeconds`
//! (`cni-win daemon --snapshot-max-age`, default [`DEFAULT_MAX_AGE`]), so a snapshot older
//! than that is one the agent stopped vouching for: stopped, or cut off from the API server.
//! What ADD does:
//!
//! | the conflist / the file | ADD |
//! | --- | --- |
//! | no `networkPolicySnapshot` | NetworkPolicy is not enabled for the network: no rules |
//! | the file is missing | the agent has never run on this node (just enabled): the pod starts without rules, a warning is logged, and the agent programs it on its first sync (the window the API docs allow: a pod "may be started unprotected") |
//! | the agent runs and has not synced yet (the file holds no policy), for at most `MaxAgeSeconds` since it started | as when the file is missing |
//! | the same, for longer | ADD fails with code 11 (try again later): an agent that cannot sync (RBAC, a wrong node name, an API server it cannot reach) never leaves the node starting pods open |
//! | the file cannot be used (a link, in a linked directory, a directory, too large, not a snapshot, another layout version, a key twice, a rule it names missing), was not rendered for this HNS network, or was last stamped more than `MaxAgeSeconds` ago (or ahead: the clock was set back) | ADD fails with code 11, naming the file and what is wrong: a pod is never started open because the node's policy could not be read or may be stale; the agent rewrites or stamps the file within a round of being able to |
//! | a rule of the snapshot would tie with one of the config's own ACLs (same direction, layer and priority, other action) | ADD fails with code 11: the snapshot was rendered for other config ACLs, and the agent renders it again within a round |
//! | HNS refuses the endpoint with the snapshot's rules (one names an IP set HNS no longer has: the agent removed it since ADD read the file) | ADD fails with code 11 naming the snapshot (`crate::add`) |
//!
//! Only small serde types live here: the plugins read the file, the agent (in the `cni-win`
//! binary, with the translation) writes it.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::fs::OpenOptions;
use std::path::Path;
use std::time::{Duration, SystemTime};

use cni::{CniArgs, Error};
use hns::Guid;
use hns::schema::EndpointPolicy;
use hns::schema::policy::AclPolicy;
use rootsafe::file::{self, Kind, OpenError};
use rootsafe::writers::{self, Writers};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

/// The layout version this build reads and writes; a file of another version cannot be used.
pub const VERSION: u32 = 2;

/// The largest snapshot read, and written: a node's pods and the namespaces that have
/// policies, with their rules, stay far below it even with peers listed inline; the agent
/// writes a narrower form ([`Form::Narrowed`]) rather than more.
pub const MAX_SIZE: u64 = 32 * 1024 * 1024;

/// How long after its last stamp a snapshot is used when the agent was not told otherwise
/// (`cni-win daemon --snapshot-max-age`): well above what a restart of the agent, a relist
/// after an API server restart (its watches back within seconds, the reflector's backoff at
/// most 30 s) or an upgrade of the agent's container take, so none of them stops new pods;
/// and minutes, not the hours a stopped agent or an unreachable API server would otherwise
/// leave new pods on rules that no longer hold (a pod address reused, a policy added).
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(300);

/// What the agent knows of this node's NetworkPolicy, for ADD, `cni-win doctor` and the
/// support bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct PolicySnapshot {
    /// The layout version ([`VERSION`]).
    pub version: u32,
    /// The node the agent runs as (its `--node-name`), for doctor and the operator.
    pub node: String,
    /// Each network whose config names this file, and the ID of the HNS network of that
    /// name the agent rendered it for: ADD uses the file on that network only.
    pub networks: BTreeMap<String, Guid>,
    /// How long after its last stamp (the file's modification time) the file may be used.
    pub max_age_seconds: u64,
    /// What the agent knows of the node's policy; `None` while it has not synced once (the
    /// file's modification time is then when it started).
    pub policy: Option<NodePolicy>,
}

/// What the agent knows of the node's policy once it has synced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct NodePolicy {
    /// How the agent programs HNS on this host (`ip-sets` or `inline`): in `ip-sets` mode the
    /// rules name the network's IP sets, which the agent keeps while a snapshot names them.
    pub mode: String,
    /// Whether the rules are the policies' (full) or a narrower form that fitted.
    pub form: Form,
    /// Every rule the snapshot names, by `Id`.
    pub rules: BTreeMap<String, AclPolicy>,
    /// The local pods the agent has seen, by `namespace/name`.
    pub pods: BTreeMap<String, PodPolicy>,
    /// For a new pod of a namespace that has policies, whose pod the agent has not seen: the
    /// namespace's posture (isolated in a direction where any policy of the namespace is).
    pub namespaces: BTreeMap<String, Vec<String>>,
    /// For a new pod of any other namespace: no policy selects it.
    pub default: Vec<String>,
    /// The policies the agent refused, each with why (`namespace/name` → reason): their pods
    /// are isolated with nothing allowed until the policy is fixed.
    pub refused: BTreeMap<String, String>,
}

/// Which rules a snapshot gives new pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Form {
    /// The rules the policies make.
    Full,
    /// The full form would exceed [`MAX_SIZE`]: every policy allow whose peers are pods is
    /// left out, so a new pod is isolated where its policies isolate it and allowed its node
    /// and address blocks only, until the agent sees it (narrower, never wider).
    Narrowed,
}

/// One local pod as the agent sees it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
pub struct PodPolicy {
    /// The rules ADD writes on the pod's new endpoint.
    pub add: Vec<String>,
    /// The policies that select the pod (`namespace/name`).
    pub policies: Vec<String>,
    /// The pod's endpoint, once the agent found it by the pod's address.
    pub endpoint: Option<Guid>,
    /// The `Id`s of the agent's rules HNS should hold on that endpoint (which may name IP
    /// sets, so they are not all in [`NodePolicy::rules`]).
    pub expected: Vec<String>,
    /// Why the agent could not write the endpoint's rules (HNS's answer, with its HRESULT),
    /// while it tries again; absent when it holds them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing: Option<String>,
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

/// A snapshot as found on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// What it holds.
    pub snapshot: PolicySnapshot,
    /// When the agent last stamped it: the file's modification time.
    pub stamped: SystemTime,
}

/// What a snapshot found on disk is to a new pod of one network.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Usable<'s> {
    /// The agent runs here and has not synced yet, since `running` ago (within the file's
    /// bound): the pod starts without rules, as if there were no file.
    NotSynced {
        /// How long the agent has run without syncing.
        running: Duration,
    },
    /// The agent's policy, current within the file's bound.
    Policy(&'s NodePolicy),
}

/// Reads the snapshot at `path`: `None` when nothing is there.
pub fn read(path: &Path) -> Result<Option<Found>, Unusable> {
    // A link in place of the file's directory would make the plugin read wherever it
    // points; the file itself is opened without following a link.
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        match Kind::at(dir) {
            Ok(Some(Kind::Directory)) => {}
            Ok(None) => return Ok(None),
            Ok(Some(kind)) => {
                return Err(unusable(format!(
                    "its directory {} is a {kind:?}, not a directory (never followed)",
                    dir.display()
                )));
            }
            Err(e) => {
                return Err(unusable(format!(
                    "cannot inspect its directory {}: {e}",
                    dir.display()
                )));
            }
        }
    }
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
    // Whoever may write the file or its directory decides every new pod's rules.
    for (what, at) in path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| ("its directory", dir))
        .into_iter()
        .chain([("it", path)])
    {
        match writers::of(at) {
            Ok(Writers::Administrators) => {}
            Ok(others) => {
                return Err(unusable(format!(
                    "{what} ({}): {others}, so it decides new pods' rules; only SYSTEM and \
                     Administrators may write where the snapshot is (the policy agent restricts \
                     its directory when it writes; by hand: icacls DIR /inheritance:r /grant \
                     SYSTEM:(OI)(CI)F Administrators:(OI)(CI)F Users:(OI)(CI)R)",
                    at.display()
                )));
            }
            Err(e) => {
                return Err(unusable(format!(
                    "cannot tell who may write {what} ({}): {e}",
                    at.display()
                )));
            }
        }
    }
    let stamped = file
        .metadata()
        .and_then(|metadata| metadata.modified())
        .map_err(|e| unusable(format!("cannot read when it was written: {e}")))?;
    let bytes =
        file::read_capped(file, MAX_SIZE).map_err(|e| unusable(format!("cannot read it: {e}")))?;
    let snapshot = PolicySnapshot::from_bytes(&bytes)?;
    Ok(Some(Found { snapshot, stamped }))
}

impl PolicySnapshot {
    /// Decodes a snapshot and checks that it can be used: this layout version, no key twice
    /// in one object, and every rule it names present.
    pub fn from_bytes(bytes: &[u8]) -> Result<PolicySnapshot, Unusable> {
        let not_one = |e: serde_json::Error| unusable(format!("not a NetworkPolicy snapshot: {e}"));
        // The version first: another layout's other fields are not this one's.
        let mut version = None;
        Checked {
            version: Some(&mut version),
        }
        .deserialize(&mut serde_json::Deserializer::from_slice(bytes))
        .map_err(not_one)?;
        if version != Some(u64::from(VERSION)) {
            return Err(unusable(match version {
                Some(version) => format!("layout version {version} (this cni-win reads {VERSION})"),
                None => "not a NetworkPolicy snapshot: it has no numeric Version".to_owned(),
            }));
        }
        let snapshot: PolicySnapshot = serde_json::from_slice(bytes).map_err(not_one)?;
        if let Some(policy) = &snapshot.policy {
            let named = policy
                .pods
                .values()
                .flat_map(|pod| &pod.add)
                .chain(policy.namespaces.values().flatten())
                .chain(&policy.default);
            for id in named {
                if !policy.rules.contains_key(id) {
                    return Err(unusable(format!("rule {id:?} is named but not listed")));
                }
            }
        }
        Ok(snapshot)
    }
}

impl Found {
    /// What the snapshot is to a new pod of `network` (HNS network `id`) at `now`: usable
    /// when it was rendered for that very network and stamped within its bound (see the
    /// module docs).
    pub fn usable(&self, network: &str, id: Guid, now: SystemTime) -> Result<Usable<'_>, Unusable> {
        let snapshot = &self.snapshot;
        match snapshot.networks.get(network) {
            Some(rendered) if *rendered == id => {}
            Some(rendered) => {
                return Err(unusable(format!(
                    "it was rendered on node {:?} for HNS network {network:?} with ID {rendered}, \
                     but this network's ID is {id} (the network was created again since, or the \
                     file comes from another host)",
                    snapshot.node
                )));
            }
            None => {
                let listed: Vec<&str> = snapshot.networks.keys().map(String::as_str).collect();
                return Err(unusable(format!(
                    "it was rendered on node {:?} for HNS network(s) {listed:?}, not for network \
                     {network:?} (ID {id})",
                    snapshot.node
                )));
            }
        }
        let bound = Duration::from_secs(snapshot.max_age_seconds);
        let (age, ahead) = match now.duration_since(self.stamped) {
            Ok(age) => (age, false),
            Err(ahead) => (ahead.duration(), true),
        };
        if age > bound {
            let when = if ahead {
                format!(
                    "is stamped {} s ahead of this node's clock (set back since?)",
                    age.as_secs()
                )
            } else {
                format!("was last stamped {} s ago", age.as_secs())
            };
            return Err(unusable(match snapshot.policy {
                Some(_) => format!(
                    "it {when}, more than its MaxAgeSeconds {}: the policy agent has not \
                     confirmed it since (stopped, or cut off from the API server)",
                    bound.as_secs()
                ),
                None => format!(
                    "the policy agent started {} and has not synced since, for more than \
                     MaxAgeSeconds {}",
                    if ahead {
                        "at a time ahead of this node's clock".to_owned()
                    } else {
                        format!("{} s ago", age.as_secs())
                    },
                    bound.as_secs()
                ),
            }));
        }
        Ok(match &snapshot.policy {
            Some(policy) => Usable::Policy(policy),
            None => Usable::NotSynced {
                running: if ahead { Duration::ZERO } else { age },
            },
        })
    }
}

impl NodePolicy {
    /// The rules ADD writes for pod `name` of `namespace`: the pod's own when the agent has
    /// seen it, else its namespace's posture, else the posture of a namespace without
    /// policies.
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

/// The network a new pod's endpoint is created on: the config's name and the ID of the HNS
/// network ADD opened.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OnNetwork<'n> {
    pub name: &'n str,
    pub id: Guid,
}

/// The agent's rules ADD adds to a new pod's endpoint on `network` from the snapshot at
/// `path` (see the module docs for each case), checked against `composed`, the policies ADD
/// writes besides. The pod is the one `CNI_ARGS` names (`K8S_POD_NAMESPACE`, `K8S_POD_NAME`,
/// as kubelet's runtimes pass them); a runtime that names none starts no Kubernetes pod,
/// which no NetworkPolicy selects.
pub(crate) fn rules_at_add(
    path: &Path,
    args: &CniArgs,
    network: OnNetwork<'_>,
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
    let fix = "the node's policy agent (`cni-win daemon --network-policy`) rewrites or stamps \
               it within a round of being able to; `cni-win doctor` shows its state";
    let refused = |unusable: Unusable| {
        Error::try_again_later(format!(
            "networkPolicySnapshot {}: {unusable}: pod {namespace}/{name} is not started \
             without its NetworkPolicy rules; {fix}",
            path.display()
        ))
    };
    let found = match read(path) {
        Ok(Some(found)) => found,
        Ok(None) => {
            log::warn!(
                "networkPolicySnapshot {}: no snapshot yet (the policy agent has never run on \
                 this node): pod {namespace}/{name} starts without NetworkPolicy rules until the \
                 agent programs it",
                path.display()
            );
            return Ok(Vec::new());
        }
        Err(unusable) => return Err(refused(unusable)),
    };
    let policy = match found.usable(network.name, network.id, SystemTime::now()) {
        Ok(Usable::Policy(policy)) => policy,
        Ok(Usable::NotSynced { running }) => {
            log::warn!(
                "networkPolicySnapshot {}: the policy agent has run for {} s and not synced yet: \
                 pod {namespace}/{name} starts without NetworkPolicy rules until the agent \
                 programs it (after MaxAgeSeconds {} without a sync, ADD fails instead)",
                path.display(),
                running.as_secs(),
                found.snapshot.max_age_seconds
            );
            return Ok(Vec::new());
        }
        Err(unusable) => return Err(refused(unusable)),
    };
    let rules = policy.rules_for_new_pod(namespace, name);
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

/// A namespaced object's key in the snapshot (a pod's in [`NodePolicy::pods`], a policy's in
/// [`PodPolicy::policies`] and [`NodePolicy::refused`]): `namespace/name` (neither may hold
/// a `/`).
pub fn object_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// A walk over a JSON document that refuses an object naming one key twice, and gives the
/// top-level `Version` when it is a number. serde reads a map's second entry of a key over
/// the first: a second entry for a pod, a rule or a network would silently replace the one
/// a reader of the file sees first.
struct Checked<'v> {
    /// Where the top-level object's `Version` goes; `None` below the top.
    version: Option<&'v mut Option<u64>>,
}

impl<'de> DeserializeSeed<'de> for Checked<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Checked<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Checked { version: None })?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Checked { mut version } = self;
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format!(
                    "the key {key:?} appears twice in one object (a reader would take one, \
                     another reader the other)"
                )));
            }
            match version.as_deref_mut() {
                Some(top) if key == "Version" => {
                    *top = map.next_value::<serde_json::Value>()?.as_u64();
                }
                _ => map.next_value_seed(Checked { version: None })?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hns::schema::policy::{AclAction, AclDirection};

    const NETWORK: Guid = Guid::from_u128(0x1234);

    fn rule(id: &str, action: AclAction, priority: u16) -> AclPolicy {
        AclPolicy {
            id: Some(id.to_owned()),
            ..AclPolicy::all_traffic(action, AclDirection::In, priority)
        }
    }

    fn policy() -> NodePolicy {
        let block = rule("cni-win-netpol-block", AclAction::Block, 65000);
        let open = rule("cni-win-netpol-open", AclAction::Allow, 65100);
        NodePolicy {
            mode: "ip-sets".to_owned(),
            form: Form::Full,
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

    fn snapshot() -> PolicySnapshot {
        PolicySnapshot {
            version: VERSION,
            node: "node-1".to_owned(),
            networks: BTreeMap::from([("cbr0".to_owned(), NETWORK)]),
            max_age_seconds: 300,
            policy: Some(policy()),
        }
    }

    #[test]
    fn a_new_pod_gets_its_own_rules_then_its_namespaces_then_the_default() {
        let policy = policy();
        let ids = |namespace, name| -> Vec<String> {
            policy
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
        assert!(problem(b"{\"Version\": \"2\"}").contains("no numeric Version"));
        let other_version = PolicySnapshot {
            version: VERSION + 1,
            ..snapshot()
        };
        assert!(problem(&serde_json::to_vec(&other_version).unwrap()).contains("layout version"));
        assert!(problem(br#"{"Version": 1, "Rules": {}}"#).contains("layout version 1"));
        let mut dangling = snapshot();
        let policy = dangling.policy.as_mut().unwrap();
        policy.default.push("cni-win-netpol-gone".to_owned());
        assert!(problem(&serde_json::to_vec(&dangling).unwrap()).contains("cni-win-netpol-gone"));
        let mut stray = serde_json::to_value(snapshot()).unwrap();
        stray["Pods"] = serde_json::json!({});
        assert!(problem(&serde_json::to_vec(&stray).unwrap()).contains("unknown field"));
    }

    /// serde takes the last of two equal keys of a map: a second entry for a pod would start
    /// it on other rules than a reader of the file sees first. Refused wherever it is.
    #[test]
    fn a_key_twice_in_one_object_is_refused() {
        let text = serde_json::to_string_pretty(&snapshot()).unwrap();
        let twice = |needle: &str, with: &str| {
            assert!(text.contains(needle), "{needle} in {text}");
            let hostile = text.replacen(needle, with, 1);
            let problem = PolicySnapshot::from_bytes(hostile.as_bytes())
                .unwrap_err()
                .problem;
            assert!(problem.contains("appears twice"), "{with}: {problem}");
        };
        // A second entry for pod x/a, opening it.
        twice(
            "\"x/a\": {",
            "\"x/a\": {\"Add\": [\"cni-win-netpol-open\"], \"Policies\": [], \"Endpoint\": null, \
             \"Expected\": []}, \"x/a\": {",
        );
        twice("\"cbr0\":", "\"cbr0\": \"\", \"cbr0\":");
        twice("\"Version\": 2", "\"Version\": 2, \"Version\": 2");
        twice(
            "\"Action\": \"Block\"",
            "\"Action\": \"Allow\", \"Action\": \"Block\"",
        );
    }

    fn found(stamped: SystemTime, policy: Option<NodePolicy>) -> Found {
        Found {
            snapshot: PolicySnapshot {
                policy,
                ..snapshot()
            },
            stamped,
        }
    }

    /// Used only on the HNS network it was rendered for, and only within its bound: after
    /// it, an agent that synced once and one that never did are both refused.
    #[test]
    fn a_snapshot_is_used_on_its_network_within_its_bound() {
        let now = SystemTime::now();
        let minutes = |m: u64| Duration::from_secs(60 * m);
        let current = found(now - minutes(1), Some(policy()));
        assert!(matches!(
            current.usable("cbr0", NETWORK, now),
            Ok(Usable::Policy(_))
        ));
        let problem = |found: &Found, network: &str, id: Guid| {
            found.usable(network, id, now).unwrap_err().problem
        };
        let other_id = problem(&current, "cbr0", Guid::from_u128(7));
        assert!(
            other_id.contains("created again since") && other_id.contains(&NETWORK.to_string()),
            "{other_id}"
        );
        assert!(problem(&current, "flannel.4096", NETWORK).contains("not for network"));

        let stale = found(now - minutes(6), Some(policy()));
        let message = problem(&stale, "cbr0", NETWORK);
        assert!(message.contains("last stamped 360 s ago"), "{message}");
        let ahead = found(now + minutes(6), Some(policy()));
        assert!(problem(&ahead, "cbr0", NETWORK).contains("ahead of this node's clock"));

        let starting = found(now - minutes(2), None);
        assert_eq!(
            starting.usable("cbr0", NETWORK, now),
            Ok(Usable::NotSynced {
                running: minutes(2)
            })
        );
        let stuck = found(now - minutes(6), None);
        assert!(problem(&stuck, "cbr0", NETWORK).contains("has not synced since"));
    }
}
