//! Whether one endpoint's ACLs let a packet through in one direction.

use std::fmt;
use std::net::IpAddr;

use serde::Serialize;

use super::rule::{Rule, Seen};
use super::sets::IpSets;
use crate::failure::HcnFailure;
use hns::features::WindowsBuild;
use hns::schema::EndpointPolicy;
use hns::schema::policy::{AclAction, AclDirection, AclPolicy, AclRuleType};

/// The layers an ACL is enforced in, in the order a decision is reported.
const LAYERS: [AclRuleType; 2] = [AclRuleType::Switch, AclRuleType::Host];

/// The first packet of a connection (replies of an allowed connection are not modelled:
/// VFP tracks connections).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Packet {
    /// Where the packet comes from.
    pub source: IpAddr,
    /// Where it goes.
    pub destination: IpAddr,
    /// IANA protocol number (6 TCP, 17 UDP, 1 ICMP, ...).
    pub protocol: u8,
    /// Source and destination ports, for a protocol that has them.
    pub ports: Option<Ports>,
}

/// A packet's ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Ports {
    /// The source port.
    pub source: u16,
    /// The destination port.
    pub destination: u16,
}

impl Packet {
    /// The source port a packet gets unless told otherwise: the first of the dynamic range
    /// (IANA's, and Windows' default), where a client's port comes from.
    pub const EPHEMERAL_PORT: u16 = 49152;

    /// A TCP connection's first packet to `port`, from [`Packet::EPHEMERAL_PORT`].
    pub fn tcp(source: IpAddr, destination: IpAddr, port: u16) -> Packet {
        Packet::with_ports(source, destination, 6, port)
    }

    /// A UDP datagram to `port`, from [`Packet::EPHEMERAL_PORT`].
    pub fn udp(source: IpAddr, destination: IpAddr, port: u16) -> Packet {
        Packet::with_ports(source, destination, 17, port)
    }

    /// A packet of `protocol` to `port`, from [`Packet::EPHEMERAL_PORT`].
    pub fn with_ports(source: IpAddr, destination: IpAddr, protocol: u8, port: u16) -> Packet {
        Packet {
            source,
            destination,
            protocol,
            ports: Some(Ports {
                source: Packet::EPHEMERAL_PORT,
                destination: port,
            }),
        }
    }

    /// The same packet from source port `port` (no change for a protocol without ports).
    pub fn from_port(mut self, port: u16) -> Packet {
        if let Some(ports) = &mut self.ports {
            ports.source = port;
        }
        self
    }

    /// The packet as the endpoint on its `direction` side sees it: for `Out` the endpoint
    /// sends it (the source is local), for `In` it receives it.
    pub(crate) fn seen(&self, direction: AclDirection) -> Seen {
        let (local, remote) = match direction {
            AclDirection::Out => (self.source, self.destination),
            AclDirection::In => (self.destination, self.source),
        };
        Seen {
            protocol: self.protocol,
            local,
            remote,
            ports: self.ports.map(|ports| match direction {
                AclDirection::Out => (ports.source, ports.destination),
                AclDirection::In => (ports.destination, ports.source),
            }),
        }
    }
}

impl fmt::Display for Packet {
    /// `tcp 10.244.1.5:49152 -> 10.244.1.6:80`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self.protocol {
            6 => "tcp".to_owned(),
            17 => "udp".to_owned(),
            1 => "icmp".to_owned(),
            58 => "icmpv6".to_owned(),
            other => format!("protocol {other}"),
        };
        let end = |ip: IpAddr, port: Option<u16>| match (ip, port) {
            (IpAddr::V6(ip), Some(port)) => format!("[{ip}]:{port}"),
            (ip, Some(port)) => format!("{ip}:{port}"),
            (ip, None) => ip.to_string(),
        };
        write!(
            f,
            "{name} {} -> {}",
            end(self.source, self.ports.map(|p| p.source)),
            end(self.destination, self.ports.map(|p| p.destination))
        )
    }
}

/// What happens to a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// It passes.
    Allowed,
    /// It is dropped.
    Denied,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Allowed => "allowed",
            Verdict::Denied => "denied",
        })
    }
}

/// The rule that decided, as a reader finds it among the endpoint's policies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct RuleRef {
    /// Position of the policy among the endpoint's `Policies`.
    pub index: usize,
    /// The rule's `Id`, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Its priority (0 when the policy has none).
    pub priority: u16,
    /// Its action.
    pub action: AclAction,
    /// The layer it is enforced in.
    pub rule_type: AclRuleType,
}

impl RuleRef {
    fn of(rule: &Rule) -> RuleRef {
        RuleRef {
            index: rule.index(),
            id: rule.id().map(str::to_owned),
            priority: rule.priority(),
            action: rule.action(),
            rule_type: rule.layer(),
        }
    }
}

impl fmt::Display for RuleRef {
    /// `rule #3 (Switch, priority 100, Block, id azure-acl-x-deny)`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rule #{} ({:?}, priority {}, {:?}, id {})",
            self.index,
            self.rule_type,
            self.priority,
            self.action,
            self.id.as_deref().unwrap_or("-")
        )
    }
}

/// Why an endpoint decided as it did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "Kind")]
pub enum Reason {
    /// The endpoint has no ACL: HNS filters nothing.
    NoAcl,
    /// A rule matched.
    Rule(RuleRef),
    /// No rule matched: the build's default. `RuleType` is the layer whose rules did not
    /// match, absent when no layer has a rule for the direction.
    #[serde(rename_all = "PascalCase")]
    Default {
        /// The layer whose rules did not match.
        #[serde(skip_serializing_if = "Option::is_none")]
        rule_type: Option<AclRuleType>,
        /// The build whose default applied.
        windows_build: WindowsBuild,
    },
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::NoAcl => f.write_str("the endpoint has no ACL"),
            Reason::Rule(rule) => write!(f, "{rule}"),
            Reason::Default {
                rule_type,
                windows_build,
            } => {
                let posture = if windows_build.acls_default_deny() {
                    "denies what no rule allows"
                } else {
                    "lets through what no rule matches"
                };
                match rule_type {
                    Some(layer) => write!(
                        f,
                        "no {layer:?} rule matches; build {windows_build} {posture}"
                    ),
                    None => write!(
                        f,
                        "no rule for this direction; build {windows_build} {posture}"
                    ),
                }
            }
        }
    }
}

/// One endpoint's decision for one direction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Decision {
    /// The direction, seen from the endpoint.
    pub direction: AclDirection,
    /// The outcome.
    pub verdict: Verdict,
    /// Why.
    pub reason: Reason,
    /// Rules that match at the deciding rule's priority with an action that lets the packet
    /// through while the deciding rule blocks it. HNS's tie-break between rules of one
    /// priority is not documented (Calico spreads such rules over priorities because HNS's
    /// "is different"): the emulator lets `Block` win, and a verdict that rests on this is
    /// not one to assert.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tie: Vec<RuleRef>,
}

/// An endpoint's ACL rules, compiled, with the IP sets of its network they may name.
#[derive(Debug, Clone)]
pub struct EndpointAcls {
    rules: Vec<Rule>,
    sets: IpSets,
}

impl EndpointAcls {
    /// The `ACL` policies among an endpoint's `policies` (read as HNS applies them, keys it
    /// ignores left out), against its network's `sets`. A rule HNS would not have taken is
    /// the `HCN_E_INVALID_POLICY` HNS would have answered.
    pub fn new(policies: &[EndpointPolicy], sets: &IpSets) -> Result<EndpointAcls, HcnFailure> {
        let rules = acls(policies)
            .map(|(index, acl)| Rule::compile(index, &acl, sets))
            .collect::<Result<_, _>>()?;
        Ok(EndpointAcls {
            rules,
            sets: sets.clone(),
        })
    }

    /// Whether the endpoint has no ACL at all.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules as HNS evaluates them: per direction (`In`, `Out`) and layer (`Switch`,
    /// `Host`), lowest priority first, and at one priority `Block` first (the emulator's
    /// tie-break), then in the order given.
    pub fn in_evaluation_order(&self) -> Vec<&Rule> {
        let mut rules: Vec<&Rule> = self.rules.iter().collect();
        rules.sort_by_key(|rule| {
            (
                rule.direction() == AclDirection::Out,
                rule.layer() == AclRuleType::Host,
                rule.priority(),
                rule.action() != AclAction::Block,
                rule.index(),
            )
        });
        rules
    }

    /// One layer's outcome; `None` when it has no rule for the direction.
    fn layer(
        &self,
        layer: AclRuleType,
        direction: AclDirection,
        seen: &Seen,
        build: WindowsBuild,
    ) -> Option<Decision> {
        let rules: Vec<&Rule> = self
            .rules
            .iter()
            .filter(|rule| rule.layer() == layer && rule.direction() == direction)
            .collect();
        if rules.is_empty() {
            return None;
        }
        let matching: Vec<&Rule> = rules
            .into_iter()
            .filter(|rule| rule.matches(seen, &self.sets))
            .collect();
        let Some(top) = matching.iter().map(|rule| rule.priority()).min() else {
            return Some(Decision {
                direction,
                verdict: default_verdict(build),
                reason: Reason::Default {
                    rule_type: Some(layer),
                    windows_build: build,
                },
                tie: Vec::new(),
            });
        };
        let first: Vec<&Rule> = matching
            .into_iter()
            .filter(|rule| rule.priority() == top)
            .collect();
        let blocks = |rule: &Rule| rule.action() == AclAction::Block;
        let deciding = first.iter().find(|rule| blocks(rule)).unwrap_or(&first[0]);
        let (verdict, tie) = if blocks(deciding) {
            let others = first
                .iter()
                .filter(|rule| !blocks(rule))
                .map(|rule| RuleRef::of(rule));
            (Verdict::Denied, others.collect())
        } else {
            // Allow and Pass both let the packet through this layer.
            (Verdict::Allowed, Vec::new())
        };
        Some(Decision {
            direction,
            verdict,
            reason: Reason::Rule(RuleRef::of(deciding)),
            tie,
        })
    }
}

/// Whether `acls` let `packet` through in `direction`, on a host of `build`:
///
/// - an endpoint without ACLs filters nothing;
/// - each layer (`Switch`, `Host`) with rules for the direction decides on its own: its
///   rules in priority order, the first that matches decides (`Allow` and `Pass` let the
///   packet through the layer, `Block` drops it); when none matches, the build's default:
///   through before build 26100, dropped from 26100 (Windows Server 2025) on;
/// - the packet passes when every layer with rules lets it through; with no rule for the
///   direction at all, the build's default decides (Windows Server 2025 denies it, since
///   the endpoint has ACLs).
pub fn evaluate(
    acls: &EndpointAcls,
    direction: AclDirection,
    packet: &Packet,
    build: WindowsBuild,
) -> Decision {
    if acls.is_empty() {
        return Decision {
            direction,
            verdict: Verdict::Allowed,
            reason: Reason::NoAcl,
            tie: Vec::new(),
        };
    }
    let seen = packet.seen(direction);
    let layers: Vec<Decision> = LAYERS
        .into_iter()
        .filter_map(|layer| acls.layer(layer, direction, &seen, build))
        .collect();
    let denied = |decision: &&Decision| decision.verdict == Verdict::Denied;
    // A layer that denies without a tie decides before one whose denial rests on a tie.
    let deciding = layers
        .iter()
        .filter(denied)
        .find(|decision| decision.tie.is_empty())
        .or_else(|| layers.iter().find(denied))
        .or_else(|| {
            layers
                .iter()
                .find(|decision| matches!(decision.reason, Reason::Rule(_)))
        })
        .or_else(|| layers.first());
    match deciding {
        Some(decision) => decision.clone(),
        None => Decision {
            direction,
            verdict: default_verdict(build),
            reason: Reason::Default {
                rule_type: None,
                windows_build: build,
            },
            tie: Vec::new(),
        },
    }
}

fn default_verdict(build: WindowsBuild) -> Verdict {
    if build.acls_default_deny() {
        Verdict::Denied
    } else {
        Verdict::Allowed
    }
}

/// The ACL settings of an `ACL` policy as HNS applies them; `None` for other types.
pub(crate) fn acl_of(policy: &EndpointPolicy) -> Option<AclPolicy> {
    match policy.effect() {
        EndpointPolicy::Acl(acl) => Some(acl),
        _ => None,
    }
}

/// The `ACL` policies among an endpoint's `policies`, with their positions.
pub(crate) fn acls(policies: &[EndpointPolicy]) -> impl Iterator<Item = (usize, AclPolicy)> + '_ {
    policies
        .iter()
        .enumerate()
        .filter_map(|(index, policy)| acl_of(policy).map(|acl| (index, acl)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD: &str = "10.244.1.5";
    const PEER: &str = "10.244.1.6";

    fn acls(rules: &[&str]) -> EndpointAcls {
        let policies: Vec<EndpointPolicy> = rules
            .iter()
            .map(|settings| {
                serde_json::from_str(&format!(r#"{{"Type":"ACL","Settings":{settings}}}"#)).unwrap()
            })
            .collect();
        EndpointAcls::new(&policies, &IpSets::default()).unwrap()
    }

    fn inbound(port: u16) -> Packet {
        Packet::tcp(PEER.parse().unwrap(), POD.parse().unwrap(), port)
    }

    fn decide(acls: &EndpointAcls, packet: &Packet, build: WindowsBuild) -> Decision {
        evaluate(acls, AclDirection::In, packet, build)
    }

    #[test]
    fn the_lowest_priority_that_matches_decides() {
        let rules = acls(&[
            r#"{"Action":"Allow","Direction":"In","Protocols":"256","Priority":65500}"#,
            r#"{"Action":"Block","Direction":"In","Protocols":"6","LocalPorts":"80","Priority":200}"#,
            r#"{"Action":"Allow","Direction":"In","Protocols":"6","LocalPorts":"80","RemoteAddresses":"10.244.1.6","Priority":100}"#,
        ]);
        let build = WindowsBuild::SERVER_2025;
        let allowed = decide(&rules, &inbound(80), build);
        assert_eq!(allowed.verdict, Verdict::Allowed);
        assert!(
            matches!(&allowed.reason, Reason::Rule(rule) if rule.index == 2),
            "{allowed:?}"
        );
        let other = Packet::tcp("10.244.1.7".parse().unwrap(), POD.parse().unwrap(), 80);
        let blocked = decide(&rules, &other, build);
        assert!(
            matches!(&blocked.reason, Reason::Rule(rule) if rule.index == 1 && rule.priority == 200)
        );
        assert_eq!(blocked.verdict, Verdict::Denied);
        assert_eq!(
            decide(&rules, &inbound(81), build).verdict,
            Verdict::Allowed
        );
        let order: Vec<usize> = rules
            .in_evaluation_order()
            .iter()
            .map(|rule| rule.index())
            .collect();
        assert_eq!(order, [2, 1, 0]);
    }

    #[test]
    fn no_match_is_the_builds_default_and_no_acl_allows() {
        let rules =
            acls(&[r#"{"Action":"Allow","Direction":"In","Protocols":"6","LocalPorts":"443"}"#]);
        let on = |build| decide(&rules, &inbound(80), build);
        assert_eq!(on(WindowsBuild::SERVER_2022).verdict, Verdict::Allowed);
        assert_eq!(on(WindowsBuild::SERVER_2025).verdict, Verdict::Denied);
        assert_eq!(
            on(WindowsBuild::SERVER_2025).reason,
            Reason::Default {
                rule_type: Some(AclRuleType::Switch),
                windows_build: WindowsBuild::SERVER_2025
            }
        );
        // Rules for the other direction only: Windows Server 2025 denies this one too.
        let out_only = acls(&[r#"{"Action":"Allow","Direction":"Out"}"#]);
        let denied = decide(&out_only, &inbound(80), WindowsBuild::SERVER_2025);
        assert_eq!(
            (denied.verdict, &denied.reason),
            (
                Verdict::Denied,
                &Reason::Default {
                    rule_type: None,
                    windows_build: WindowsBuild::SERVER_2025
                }
            )
        );
        assert_eq!(
            decide(&out_only, &inbound(80), WindowsBuild::SERVER_2022).verdict,
            Verdict::Allowed
        );
        let none = acls(&[]);
        let open = decide(&none, &inbound(80), WindowsBuild::SERVER_2025);
        assert_eq!(
            (open.verdict, open.reason),
            (Verdict::Allowed, Reason::NoAcl)
        );
    }

    #[test]
    fn every_layer_with_rules_must_let_the_packet_through() {
        let rules = acls(&[
            r#"{"Action":"Allow","Direction":"In","RuleType":"Switch","Priority":100}"#,
            r#"{"Action":"Block","Direction":"In","RuleType":"Host","Protocols":"6","LocalPorts":"22","Priority":100}"#,
            r#"{"Action":"Allow","Direction":"In","RuleType":"Host","Priority":200}"#,
        ]);
        let ssh = decide(&rules, &inbound(22), WindowsBuild::SERVER_2022);
        assert_eq!(ssh.verdict, Verdict::Denied);
        assert!(matches!(&ssh.reason, Reason::Rule(rule) if rule.rule_type == AclRuleType::Host));
        let web = decide(&rules, &inbound(80), WindowsBuild::SERVER_2022);
        assert!(
            matches!(&web.reason, Reason::Rule(rule) if rule.index == 0),
            "{web:?}"
        );
        // A Host layer whose rules do not match denies on Windows Server 2025.
        let host_only = acls(&[
            r#"{"Action":"Allow","Direction":"In","RuleType":"Switch"}"#,
            r#"{"Action":"Allow","Direction":"In","RuleType":"Host","Protocols":"17"}"#,
        ]);
        let tcp = decide(&host_only, &inbound(80), WindowsBuild::SERVER_2025);
        assert_eq!(tcp.verdict, Verdict::Denied);
        assert_eq!(
            tcp.reason,
            Reason::Default {
                rule_type: Some(AclRuleType::Host),
                windows_build: WindowsBuild::SERVER_2025
            }
        );
    }

    #[test]
    fn opposite_actions_at_one_priority_deny_and_say_so() {
        let rules = acls(&[
            r#"{"Id":"allow","Action":"Allow","Direction":"In","Priority":100}"#,
            r#"{"Id":"block","Action":"Block","Direction":"In","Priority":100}"#,
            r#"{"Id":"pass","Action":"Pass","Direction":"In","Priority":100}"#,
        ]);
        let tied = decide(&rules, &inbound(80), WindowsBuild::SERVER_2022);
        assert_eq!(tied.verdict, Verdict::Denied);
        assert!(matches!(&tied.reason, Reason::Rule(rule) if rule.id.as_deref() == Some("block")));
        let ids: Vec<_> = tied
            .tie
            .iter()
            .map(|rule| rule.id.clone().unwrap())
            .collect();
        assert_eq!(ids, ["allow", "pass"]);
        // The same action twice at one priority is no tie.
        let twice = acls(&[
            r#"{"Action":"Block","Direction":"In","Priority":100}"#,
            r#"{"Action":"Block","Direction":"In","Priority":100,"Protocols":"6"}"#,
        ]);
        assert!(
            decide(&twice, &inbound(80), WindowsBuild::SERVER_2022)
                .tie
                .is_empty()
        );
        // A layer that denies cleanly decides before a tied one.
        let clean = acls(&[
            r#"{"Action":"Allow","Direction":"In","Priority":100}"#,
            r#"{"Action":"Block","Direction":"In","Priority":100}"#,
            r#"{"Action":"Block","Direction":"In","RuleType":"Host","Priority":5}"#,
        ]);
        let decision = decide(&clean, &inbound(80), WindowsBuild::SERVER_2022);
        assert!(
            decision.tie.is_empty() && decision.verdict == Verdict::Denied,
            "{decision:?}"
        );
    }

    #[test]
    fn pass_lets_the_packet_through_its_layer() {
        let rules = acls(&[
            r#"{"Action":"Pass","Direction":"In","Priority":100}"#,
            r#"{"Action":"Block","Direction":"In","Priority":200}"#,
        ]);
        let passed = decide(&rules, &inbound(80), WindowsBuild::SERVER_2025);
        assert_eq!(passed.verdict, Verdict::Allowed);
        assert!(matches!(&passed.reason, Reason::Rule(rule) if rule.action == AclAction::Pass));
    }

    #[test]
    fn egress_sees_the_endpoint_as_local() {
        let rules = acls(&[
            r#"{"Action":"Allow","Direction":"Out","Protocols":"17","RemoteAddresses":"10.96.0.10","RemotePorts":"53","LocalAddresses":"10.244.1.5"}"#,
        ]);
        let dns = Packet::udp(POD.parse().unwrap(), "10.96.0.10".parse().unwrap(), 53);
        assert_eq!(
            evaluate(&rules, AclDirection::Out, &dns, WindowsBuild::SERVER_2025).verdict,
            Verdict::Allowed
        );
        let elsewhere = Packet::udp(POD.parse().unwrap(), "10.96.0.11".parse().unwrap(), 53);
        assert_eq!(
            evaluate(
                &rules,
                AclDirection::Out,
                &elsewhere,
                WindowsBuild::SERVER_2025
            )
            .verdict,
            Verdict::Denied
        );
        assert_eq!(
            dns.from_port(5353).to_string(),
            "udp 10.244.1.5:5353 -> 10.96.0.10:53"
        );
    }
}
