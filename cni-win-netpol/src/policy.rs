//! NetworkPolicy objects (`networking.k8s.io/v1`), validated into what the translation reads.
//!
//! A policy is validated once, when the agent sees it, and either becomes a [`Policy`] or is
//! [`Refused`]. A refused policy is never dropped (that would silently widen what its pods
//! accept) nor half-applied: it is replaced by a stand-in that keeps its isolation and allows
//! nothing, so the pods it selects fail closed until it is fixed, and the refusal names the
//! field for the Event. The one exception is SCTP, which no Windows pod can send or receive:
//! its port entries are dropped and the rest of the policy holds exactly, still reported.

use ipnetwork::IpNetwork;
use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::cidr;
use crate::invalid::Invalid;
use crate::ports::{self, ApiProtocol, PortRange, Protocol};
use crate::selector::Selector;

/// A policy's namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PolicyKey {
    /// The policy's namespace: the pods it selects and its `podSelector`-only peers live there.
    pub namespace: String,
    /// The policy's name.
    pub name: String,
}

/// A validated NetworkPolicy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Which policy.
    pub key: PolicyKey,
    /// The pods of the policy's namespace it selects.
    pub pod_selector: Selector,
    /// Allowed ingress, when the policy isolates its pods for ingress; an empty list allows
    /// nothing.
    pub ingress: Option<Vec<Rule>>,
    /// Allowed egress, when the policy isolates its pods for egress.
    pub egress: Option<Vec<Rule>>,
}

/// One ingress or egress rule: traffic with any of its peers on any of its ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Whom the rule allows.
    pub peers: Peers,
    /// On which ports.
    pub ports: Ports,
}

/// A rule's `from` or `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peers {
    /// Absent or empty: every source or destination.
    Any,
    /// Any of these.
    These(Vec<Peer>),
}

/// One `from`/`to` entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Peer {
    /// Pods selected by labels (`podSelector`, `namespaceSelector`, or both: both must hold).
    Pods(PodPeer),
    /// `ipBlock`: the prefixes left of `cidr` once `except` is taken out, one family.
    Block(Vec<IpNetwork>),
}

/// Pods of some namespaces with some labels.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodPeer {
    /// Which namespaces.
    pub namespaces: Namespaces,
    /// Which pods of those (everything when the peer has only a `namespaceSelector`).
    pub pods: Selector,
}

/// The namespaces a pod peer looks in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Namespaces {
    /// No `namespaceSelector`: this one namespace, the policy's own.
    Named(String),
    /// `namespaceSelector`: namespaces whose labels it selects (`{}`: all of them).
    Matching(Selector),
}

/// A rule's `ports`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ports {
    /// Absent or empty: every port of every protocol.
    Any,
    /// Any of these; empty only when every entry was SCTP, which then allows nothing.
    These(Vec<PortSpec>),
}

/// One `ports` entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortSpec {
    /// The protocol (TCP when absent).
    pub protocol: Protocol,
    /// Which ports of it.
    pub port: PortRef,
}

/// The ports of a `ports` entry.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PortRef {
    /// No `port`: all ports of the protocol.
    All,
    /// `port` (with `endPort`, a range).
    Numbers(PortRange),
    /// A named container port, resolved on each destination pod.
    Named(String),
}

/// A policy that cannot be enforced as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("NetworkPolicy {}/{}: {reason}", key.namespace, key.name)]
pub struct Refused {
    /// Which policy.
    pub key: PolicyKey,
    /// The first field found wrong.
    pub reason: Invalid,
    /// What is enforced instead: the policy's isolation with nothing allowed (the policy
    /// itself less its SCTP entries, when SCTP is all that is wrong); `None` when the object
    /// has no namespace or name to enforce anything in.
    pub stand_in: Option<Policy>,
}

impl Policy {
    /// Validates an API object. `Err` still carries what to enforce (see [`Refused`]).
    pub fn from_api(api: &NetworkPolicy) -> Result<Policy, Box<Refused>> {
        let key = PolicyKey {
            namespace: api.metadata.namespace.clone().unwrap_or_default(),
            name: api.metadata.name.clone().unwrap_or_default(),
        };
        let no_spec = NetworkPolicySpec::default();
        let spec = api.spec.as_ref().unwrap_or(&no_spec);
        if key.namespace.is_empty() || key.name.is_empty() {
            let field = if key.namespace.is_empty() {
                "metadata.namespace"
            } else {
                "metadata.name"
            };
            return Err(Box::new(Refused {
                key,
                reason: Invalid::new(
                    field,
                    "missing: a NetworkPolicy is a named, namespaced object",
                ),
                stand_in: None,
            }));
        }
        let mut reader = Reader {
            namespace: &key.namespace,
            sctp: None,
        };
        match reader.policy(&key, spec) {
            Ok(policy) => match reader.sctp {
                None => Ok(policy),
                Some(reason) => Err(Box::new(Refused {
                    key,
                    reason,
                    stand_in: Some(policy),
                })),
            },
            Err(reason) => {
                let stand_in = isolation_only(&key, spec);
                Err(Box::new(Refused {
                    key,
                    reason,
                    stand_in: Some(stand_in),
                }))
            }
        }
    }

    /// Whether the policy isolates pods for ingress.
    pub fn isolates_ingress(&self) -> bool {
        self.ingress.is_some()
    }

    /// Whether the policy isolates pods for egress.
    pub fn isolates_egress(&self) -> bool {
        self.egress.is_some()
    }
}

/// Which directions a policy isolates: `policyTypes`, or when absent, Ingress always and
/// Egress when the policy has egress rules (the API's defaulting, which current API servers
/// write into the object and older ones leave to the reader).
fn policy_types(spec: &NetworkPolicySpec) -> Result<(bool, bool), Invalid> {
    let Some(types) = spec.policy_types.as_ref().filter(|types| !types.is_empty()) else {
        let has_egress = spec.egress.as_ref().is_some_and(|rules| !rules.is_empty());
        return Ok((true, has_egress));
    };
    let (mut ingress, mut egress) = (false, false);
    for (index, value) in types.iter().enumerate() {
        match value.as_str() {
            "Ingress" => ingress = true,
            "Egress" => egress = true,
            other => {
                return Err(Invalid::new(
                    format!("spec.policyTypes[{index}]"),
                    format!("{other:?} is not a policy type (Ingress, Egress)"),
                ));
            }
        }
    }
    Ok((ingress, egress))
}

/// The stand-in of a policy refused for something other than SCTP: its pods (all of its
/// namespace when its `podSelector` is what is wrong) isolated in its directions (both when
/// `policyTypes` is what is wrong), nothing allowed.
fn isolation_only(key: &PolicyKey, spec: &NetworkPolicySpec) -> Policy {
    let pod_selector = spec
        .pod_selector
        .as_ref()
        .map_or(Ok(Selector::everything()), |s| {
            Selector::from_api(s, "spec.podSelector")
        })
        .unwrap_or_else(|_| Selector::everything());
    let (ingress, egress) = policy_types(spec).unwrap_or((true, true));
    Policy {
        key: key.clone(),
        pod_selector,
        ingress: ingress.then(Vec::new),
        egress: egress.then(Vec::new),
    }
}

/// Reads one policy; remembers the first SCTP entry it drops.
struct Reader<'a> {
    namespace: &'a str,
    sctp: Option<Invalid>,
}

impl Reader<'_> {
    fn policy(&mut self, key: &PolicyKey, spec: &NetworkPolicySpec) -> Result<Policy, Invalid> {
        let pod_selector = match &spec.pod_selector {
            Some(selector) => Selector::from_api(selector, "spec.podSelector")?,
            None => Selector::everything(),
        };
        let (isolates_ingress, isolates_egress) = policy_types(spec)?;
        let mut ingress = Vec::new();
        for (index, rule) in spec.ingress.iter().flatten().enumerate() {
            let at = format!("spec.ingress[{index}]");
            ingress.push(self.rule(&at, "from", rule.from.as_deref(), rule.ports.as_deref())?);
        }
        let mut egress = Vec::new();
        for (index, rule) in spec.egress.iter().flatten().enumerate() {
            let at = format!("spec.egress[{index}]");
            egress.push(self.rule(&at, "to", rule.to.as_deref(), rule.ports.as_deref())?);
        }
        Ok(Policy {
            key: key.clone(),
            pod_selector,
            ingress: isolates_ingress.then_some(ingress),
            egress: isolates_egress.then_some(egress),
        })
    }

    fn rule(
        &mut self,
        at: &str,
        peers_key: &str,
        peers: Option<&[NetworkPolicyPeer]>,
        ports: Option<&[NetworkPolicyPort]>,
    ) -> Result<Rule, Invalid> {
        let peers = match peers {
            None | Some([]) => Peers::Any,
            Some(list) => Peers::These(
                list.iter()
                    .enumerate()
                    .map(|(index, peer)| self.peer(&format!("{at}.{peers_key}[{index}]"), peer))
                    .collect::<Result<_, _>>()?,
            ),
        };
        let ports = match ports {
            None | Some([]) => Ports::Any,
            Some(list) => {
                let mut specs = Vec::new();
                for (index, port) in list.iter().enumerate() {
                    if let Some(spec) = self.port(&format!("{at}.ports[{index}]"), port)? {
                        specs.push(spec);
                    }
                }
                Ports::These(specs)
            }
        };
        Ok(Rule { peers, ports })
    }

    fn peer(&self, at: &str, peer: &NetworkPolicyPeer) -> Result<Peer, Invalid> {
        match (&peer.ip_block, &peer.namespace_selector, &peer.pod_selector) {
            (Some(block), None, None) => {
                Ok(Peer::Block(ip_block(&format!("{at}.ipBlock"), block)?))
            }
            (Some(_), _, _) => Err(Invalid::new(
                format!("{at}.ipBlock"),
                "may not be combined with podSelector or namespaceSelector in one peer",
            )),
            (None, None, None) => Err(Invalid::new(
                at,
                "a peer needs podSelector, namespaceSelector or ipBlock",
            )),
            (None, namespaces, pods) => {
                let namespaces = match namespaces {
                    Some(selector) => Namespaces::Matching(Selector::from_api(
                        selector,
                        &format!("{at}.namespaceSelector"),
                    )?),
                    None => Namespaces::Named(self.namespace.to_owned()),
                };
                let pods = match pods {
                    Some(selector) => Selector::from_api(selector, &format!("{at}.podSelector"))?,
                    None => Selector::everything(),
                };
                Ok(Peer::Pods(PodPeer { namespaces, pods }))
            }
        }
    }

    /// One `ports` entry; `None` for an SCTP entry, which is dropped and remembered.
    fn port(&mut self, at: &str, port: &NetworkPolicyPort) -> Result<Option<PortSpec>, Invalid> {
        let protocol = Protocol::from_api(port.protocol.as_deref(), &format!("{at}.protocol"))?;
        let end_field = format!("{at}.endPort");
        let port_ref = match (&port.port, port.end_port) {
            (None, None) => PortRef::All,
            (None, Some(_)) => return Err(Invalid::new(end_field, "may not be set without port")),
            (Some(IntOrString::Int(number)), end) => {
                let first = ports::port_number(*number, &format!("{at}.port"))?;
                let last = match end {
                    None => first,
                    Some(end) => {
                        let last = ports::port_number(end, &end_field)?;
                        if last < first {
                            return Err(Invalid::new(
                                end_field,
                                format!("{last} is below port {first}"),
                            ));
                        }
                        last
                    }
                };
                PortRef::Numbers(PortRange { first, last })
            }
            (Some(IntOrString::String(name)), end) => {
                ports::check_port_name(name, &format!("{at}.port"))?;
                if end.is_some() {
                    return Err(Invalid::new(
                        end_field,
                        format!(
                            "may not be set with the named port {name:?}: a range needs numbers"
                        ),
                    ));
                }
                PortRef::Named(name.clone())
            }
        };
        match protocol {
            ApiProtocol::Matched(protocol) => Ok(Some(PortSpec {
                protocol,
                port: port_ref,
            })),
            ApiProtocol::Sctp => {
                self.sctp.get_or_insert_with(|| {
                    Invalid::new(
                        format!("{at}.protocol"),
                        "SCTP cannot be enforced: Windows has no SCTP and HNS ACLs match ports of \
                         TCP and UDP only; the entry is left out (no Windows pod sends or \
                         receives SCTP) and the rest of the policy is enforced",
                    )
                });
                Ok(None)
            }
        }
    }
}

/// `ipBlock`: `cidr` less `except`, each exception strictly inside `cidr` as the API requires.
fn ip_block(at: &str, block: &IPBlock) -> Result<Vec<IpNetwork>, Invalid> {
    let cidr = cidr::parse(&block.cidr, &format!("{at}.cidr"))?;
    let mut excepts = Vec::new();
    for (index, text) in block.except.iter().flatten().enumerate() {
        let field = format!("{at}.except[{index}]");
        let except = cidr::parse(text, &field)?;
        if !cidr::covers(cidr, except) || except.prefix() == cidr.prefix() {
            return Err(Invalid::new(
                field,
                format!("{except} is not strictly inside cidr {cidr}"),
            ));
        }
        excepts.push(except);
    }
    Ok(cidr::subtract(cidr, &excepts))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A policy from its JSON spec, in namespace `x`, as the API server sends it.
    fn policy(spec: serde_json::Value) -> Result<Policy, Box<Refused>> {
        let api: NetworkPolicy = serde_json::from_value(serde_json::json!({
            "metadata": {"namespace": "x", "name": "p"},
            "spec": spec,
        }))
        .unwrap();
        Policy::from_api(&api)
    }

    fn refusal(spec: serde_json::Value) -> Box<Refused> {
        policy(spec).expect_err("refused")
    }

    fn everything() -> Selector {
        Selector::everything()
    }

    #[test]
    fn policy_types_default_to_ingress_and_to_egress_when_egress_rules_exist() {
        let ingress_only = policy(serde_json::json!({"podSelector": {}})).unwrap();
        assert!(ingress_only.isolates_ingress() && !ingress_only.isolates_egress());

        let with_egress = policy(serde_json::json!({"podSelector": {}, "egress": [{}]})).unwrap();
        assert!(with_egress.isolates_ingress() && with_egress.isolates_egress());

        let empty_egress = policy(serde_json::json!({"podSelector": {}, "egress": []})).unwrap();
        assert!(
            !empty_egress.isolates_egress(),
            "an empty egress list is no egress rule"
        );

        let egress_type = policy(serde_json::json!({
            "podSelector": {}, "policyTypes": ["Egress"], "ingress": [{}]
        }))
        .unwrap();
        assert_eq!(
            egress_type.ingress, None,
            "ingress rules of an egress-only policy do not count"
        );
        assert_eq!(egress_type.egress, Some(Vec::new()));
    }

    #[test]
    fn absent_and_empty_peers_and_ports_mean_any() {
        let any = policy(serde_json::json!({
            "podSelector": {}, "ingress": [{"from": [], "ports": []}, {}]
        }))
        .unwrap();
        let rules = any.ingress.unwrap();
        assert_eq!(rules.len(), 2);
        for rule in rules {
            assert_eq!(rule.peers, Peers::Any);
            assert_eq!(rule.ports, Ports::Any);
        }
    }

    #[test]
    fn peers_scope_their_namespaces() {
        let parsed = policy(serde_json::json!({
            "podSelector": {},
            "ingress": [{"from": [
                {"podSelector": {"matchLabels": {"pod": "b"}}},
                {"namespaceSelector": {}},
                {"namespaceSelector": {"matchLabels": {"ns": "y"}}, "podSelector": {}}
            ]}]
        }))
        .unwrap();
        let Peers::These(peers) = &parsed.ingress.as_ref().unwrap()[0].peers else {
            panic!("peers");
        };
        let pods = |peer: &Peer| match peer {
            Peer::Pods(pods) => pods.clone(),
            Peer::Block(_) => panic!("a pod peer"),
        };
        assert_eq!(
            pods(&peers[0]).namespaces,
            Namespaces::Named("x".into()),
            "podSelector alone: own namespace"
        );
        assert_eq!(
            pods(&peers[1]).namespaces,
            Namespaces::Matching(everything())
        );
        assert!(
            pods(&peers[1]).pods.is_everything(),
            "namespaceSelector alone: all their pods"
        );
        assert!(
            matches!(pods(&peers[2]).namespaces, Namespaces::Matching(ref s) if !s.is_everything())
        );
    }

    #[test]
    fn ports_read_with_protocol_range_and_name() {
        let parsed = policy(serde_json::json!({
            "podSelector": {},
            "ingress": [{"ports": [
                {"port": 80},
                {"protocol": "UDP", "port": 53, "endPort": 60},
                {"port": "serve-81-tcp"},
                {"protocol": "UDP"}
            ]}]
        }))
        .unwrap();
        let Ports::These(ports) = &parsed.ingress.as_ref().unwrap()[0].ports else {
            panic!("ports");
        };
        assert_eq!(
            ports,
            &[
                PortSpec {
                    protocol: Protocol::Tcp,
                    port: PortRef::Numbers(PortRange::single(80))
                },
                PortSpec {
                    protocol: Protocol::Udp,
                    port: PortRef::Numbers(PortRange {
                        first: 53,
                        last: 60
                    })
                },
                PortSpec {
                    protocol: Protocol::Tcp,
                    port: PortRef::Named("serve-81-tcp".into())
                },
                PortSpec {
                    protocol: Protocol::Udp,
                    port: PortRef::All
                },
            ]
        );
    }

    #[test]
    fn ip_block_is_the_cidr_less_its_exceptions() {
        let parsed = policy(serde_json::json!({
            "podSelector": {},
            "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/30", "except": ["10.0.0.1/32"]}}]}]
        }))
        .unwrap();
        let Peers::These(peers) = &parsed.egress.as_ref().unwrap()[0].peers else {
            panic!("peers");
        };
        let expected: Vec<IpNetwork> = ["10.0.0.0/32", "10.0.0.2/31"]
            .iter()
            .map(|n| n.parse().unwrap())
            .collect();
        assert_eq!(peers, &[Peer::Block(expected)]);
    }

    /// Each object that makes no sense is refused naming the field, and its stand-in isolates
    /// what the policy selects in the directions it names, allowing nothing.
    #[test]
    fn refusals_name_the_field_and_fail_closed() {
        let cases = [
            (
                serde_json::json!({"podSelector": {"matchLabels": {"pod": "a"}},
                "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}]}),
                "spec.ingress[0].from[0].ipBlock.cidr",
            ),
            (
                serde_json::json!({"podSelector": {"matchLabels": {"pod": "a"}},
                "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.1.0.0/24"]}}]}]}),
                "spec.ingress[0].from[0].ipBlock.except[0]",
            ),
            (
                serde_json::json!({"podSelector": {"matchLabels": {"pod": "a"}},
                "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.0.0.0/16"]}}]}]}),
                "spec.ingress[0].from[0].ipBlock.except[0]",
            ),
            (
                serde_json::json!({"podSelector": {"matchLabels": {"pod": "a"}},
                "ingress": [{"ports": [{"port": 90, "endPort": 80}]}]}),
                "spec.ingress[0].ports[0].endPort",
            ),
            (
                serde_json::json!({"podSelector": {"matchLabels": {"pod": "a"}},
                "ingress": [{"ports": [{"port": "http", "endPort": 90}]}]}),
                "spec.ingress[0].ports[0].endPort",
            ),
            (
                serde_json::json!({"podSelector": {"matchLabels": {"pod": "a"}},
                "ingress": [{"ports": [{"endPort": 90}]}]}),
                "spec.ingress[0].ports[0].endPort",
            ),
            (
                serde_json::json!({"podSelector": {"matchLabels": {"pod": "a"}},
                "ingress": [{"ports": [{"port": 0}]}]}),
                "spec.ingress[0].ports[0].port",
            ),
            (
                serde_json::json!({"podSelector": {"matchLabels": {"pod": "a"}},
                "ingress": [{"ports": [{"port": 80, "protocol": "ICMP"}]}]}),
                "spec.ingress[0].ports[0].protocol",
            ),
            (
                serde_json::json!({"podSelector": {"matchLabels": {"pod": "a"}},
                "ingress": [{"from": [{}]}]}),
                "spec.ingress[0].from[0]",
            ),
            (
                serde_json::json!({"podSelector": {"matchLabels": {"pod": "a"}},
                "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}]}]}),
                "spec.ingress[0].from[0].ipBlock",
            ),
            (
                serde_json::json!({"podSelector": {"matchLabels": {"pod": "a"}},
                "ingress": [{"from": [{"podSelector": {"matchExpressions": [{"key": "k", "operator": "Like"}]}}]}]}),
                "spec.ingress[0].from[0].podSelector.matchExpressions[0].operator",
            ),
        ];
        let selects_a = Selector::from_api(
            &serde_json::from_value(serde_json::json!({"matchLabels": {"pod": "a"}})).unwrap(),
            "s",
        )
        .unwrap();
        for (spec, field) in cases {
            let refused = refusal(spec.clone());
            assert_eq!(refused.reason.field, field, "{spec}");
            let stand_in = refused.stand_in.expect("a stand-in");
            assert_eq!(stand_in.pod_selector, selects_a, "{spec}");
            assert_eq!(
                stand_in.ingress,
                Some(Vec::new()),
                "{spec}: isolated, nothing allowed"
            );
            assert_eq!(
                stand_in.egress, None,
                "{spec}: only the policy's own directions"
            );
        }
    }

    #[test]
    fn a_bad_pod_selector_isolates_the_whole_namespace() {
        let refused = refusal(serde_json::json!({
            "podSelector": {"matchExpressions": [{"key": "pod", "operator": "In"}]},
            "policyTypes": ["Egress"],
            "egress": [{}]
        }));
        assert_eq!(
            refused.reason.field,
            "spec.podSelector.matchExpressions[0].values"
        );
        let stand_in = refused.stand_in.unwrap();
        assert!(stand_in.pod_selector.is_everything());
        assert_eq!(
            (stand_in.ingress, stand_in.egress),
            (None, Some(Vec::new()))
        );
    }

    #[test]
    fn a_bad_policy_type_isolates_both_directions() {
        let refused =
            refusal(serde_json::json!({"podSelector": {}, "policyTypes": ["Ingress", "Sideways"]}));
        assert_eq!(refused.reason.field, "spec.policyTypes[1]");
        let stand_in = refused.stand_in.unwrap();
        assert_eq!(
            (stand_in.ingress, stand_in.egress),
            (Some(Vec::new()), Some(Vec::new()))
        );
    }

    #[test]
    fn sctp_entries_are_refused_and_the_rest_enforced() {
        let refused = refusal(serde_json::json!({
            "podSelector": {},
            "ingress": [
                {"ports": [{"port": 80, "protocol": "SCTP"}, {"port": 81}]},
                {"ports": [{"port": 82, "protocol": "SCTP"}]}
            ]
        }));
        assert_eq!(refused.reason.field, "spec.ingress[0].ports[0].protocol");
        assert!(
            refused.reason.problem.contains("SCTP"),
            "{}",
            refused.reason
        );
        let rules = refused.stand_in.unwrap().ingress.unwrap();
        assert_eq!(
            rules[0].ports,
            Ports::These(vec![PortSpec {
                protocol: Protocol::Tcp,
                port: PortRef::Numbers(PortRange::single(81))
            }])
        );
        assert_eq!(
            rules[1].ports,
            Ports::These(Vec::new()),
            "an SCTP-only list allows nothing, not everything"
        );
    }

    #[test]
    fn an_object_without_namespace_or_name_has_no_stand_in() {
        let api: NetworkPolicy =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "p"}})).unwrap();
        let refused = Policy::from_api(&api).unwrap_err();
        assert_eq!(refused.reason.field, "metadata.namespace");
        assert_eq!(refused.stand_in, None);
    }
}
