//! Whether one endpoint's ACLs let a packet through in one direction.

use std::fmt;
use std::net::IpAddr;

use serde::Serialize;

use super::fields::Seen;
use super::rule::{Match, Rule};
use super::sets::IpSets;
use super::undocumented::Undocumented;
use super::unmatched::{self, Fallback};
use crate::failure::HcnFailure;
use hns::features::WindowsBuild;
use hns::schema::policy::{AclAction, AclDirection, AclPolicy, AclRuleType};
use hns::schema::{EndpointPolicy, NetworkType};

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
            direction,
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

impl Verdict {
    fn of(action: AclAction) -> Verdict {
        match action {
            AclAction::Block => Verdict::Denied,
            // What the emulator does with a Pass (undocumented: `Undocumented::Pass`).
            AclAction::Allow | AclAction::Pass => Verdict::Allowed,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Allowed => "allowed",
            Verdict::Denied => "denied",
        })
    }
}

/// The verdicts a layer may reach under every reading HNS may have.
#[derive(Debug, Clone, Copy, Default)]
struct Possible {
    allowed: bool,
    denied: bool,
}

impl Possible {
    fn add(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Allowed => self.allowed = true,
            Verdict::Denied => self.denied = true,
        }
    }

    fn both(self) -> bool {
        self.allowed && self.denied
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
    /// No rule of the layer matched: what the layer does then ([`Fallback`]).
    Default(Fallback),
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::NoAcl => f.write_str("the endpoint has no ACL"),
            Reason::Rule(rule) => write!(f, "{rule}"),
            Reason::Default(fallback) => write!(f, "{fallback}"),
        }
    }
}

/// One endpoint's decision for one direction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Decision {
    /// The direction, seen from the endpoint.
    pub direction: AclDirection,
    /// The emulator's verdict.
    pub verdict: Verdict,
    /// Why.
    pub reason: Reason,
    /// What HNS does not document that the verdict rests on: when not empty, another reading
    /// of these gives the other verdict, and the verdict is no evidence.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub undocumented: Vec<Undocumented>,
}

/// An endpoint's ACL rules, compiled, with what they are judged against: the IP sets of its
/// network they may name and its network's type (what HNS does with what no rule matches
/// depends on it).
#[derive(Debug, Clone)]
pub struct EndpointAcls {
    rules: Vec<Rule>,
    sets: IpSets,
    network_type: NetworkType,
}

impl EndpointAcls {
    /// The `ACL` policies among the `policies` of an endpoint of a `network_type` network
    /// (read as HNS applies them, keys it ignores left out), against its network's `sets`. A
    /// rule HNS would not have taken is the `HCN_E_INVALID_POLICY` HNS would have answered.
    pub fn new(
        policies: &[EndpointPolicy],
        sets: &IpSets,
        network_type: NetworkType,
    ) -> Result<EndpointAcls, HcnFailure> {
        let rules = acls(policies)
            .map(|(index, acl)| Rule::compile(index, &acl, sets))
            .collect::<Result<_, _>>()?;
        Ok(EndpointAcls {
            rules,
            sets: sets.clone(),
            network_type,
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

    /// One layer's decision: its rules walked in evaluation order, the first that matches
    /// deciding; none, its [`Fallback`]. Walked again under every reading HNS may have (a rule
    /// that may or may not match, a tie, a Pass, an unknown fallback), the decision is
    /// undocumented when those readings reach both verdicts.
    fn layer(
        &self,
        layer: AclRuleType,
        direction: AclDirection,
        seen: &Seen,
        build: WindowsBuild,
    ) -> Decision {
        let rules: Vec<&Rule> = self
            .in_evaluation_order()
            .into_iter()
            .filter(|rule| rule.layer() == layer && rule.direction() == direction)
            .collect();
        let mut emulated: Option<&Rule> = None;
        let mut possible = Possible::default();
        let mut undocumented = Vec::new();
        // A rule surely matched at a priority walked: every reading has decided.
        let mut settled = false;
        for group in rules.chunk_by(|a, b| a.priority() == b.priority()) {
            let matching: Vec<(&Rule, Match)> = group
                .iter()
                .map(|rule| (*rule, rule.matches(seen, &self.sets)))
                .filter(|(_, found)| *found != Match::No)
                .collect();
            if emulated.is_none() {
                // Block first at one priority: the emulator's tie-break.
                emulated = matching
                    .iter()
                    .find(|(_, found)| found.emulated())
                    .map(|(rule, _)| *rule);
            }
            if !settled && !matching.is_empty() {
                for (rule, found) in &matching {
                    possible.add(Verdict::of(rule.action()));
                    if rule.action() == AclAction::Pass {
                        possible.add(Verdict::Denied);
                        undocumented.push(Undocumented::Pass {
                            rule: RuleRef::of(rule),
                        });
                    }
                    if let Match::Depends { fields, .. } = found {
                        undocumented.push(Undocumented::SetReading {
                            rule: RuleRef::of(rule),
                            fields: fields.clone(),
                        });
                    }
                    if let Some((field, entries)) = rule.list_past_known() {
                        // HNS may not hold the rule as written: either verdict.
                        possible.add(Verdict::Allowed);
                        possible.add(Verdict::Denied);
                        undocumented.push(Undocumented::LongList {
                            rule: RuleRef::of(rule),
                            field,
                            entries,
                        });
                    }
                }
                let blocks = |rule: &Rule| rule.action() == AclAction::Block;
                if matching.iter().any(|(rule, _)| blocks(rule))
                    && matching.iter().any(|(rule, _)| !blocks(rule))
                {
                    undocumented.push(Undocumented::Tie {
                        rules: matching.iter().map(|(rule, _)| RuleRef::of(rule)).collect(),
                    });
                }
                settled = matching.iter().any(|(_, found)| *found == Match::Yes);
            }
            if settled && emulated.is_some() {
                break;
            }
        }
        let endpoint = unmatched::Endpoint {
            build,
            network_type: &self.network_type,
            has_rules: !rules.is_empty(),
            has_block: self.rules.iter().any(|r| r.action() == AclAction::Block),
        };
        let fallback = || Fallback::of(layer, direction, &endpoint);
        if !settled {
            let fallback = fallback();
            possible.add(fallback.verdict);
            if !fallback.documented {
                possible.add(Verdict::Allowed);
                possible.add(Verdict::Denied);
                undocumented.push(Undocumented::Default(fallback));
            }
        }
        let (verdict, reason) = match emulated {
            Some(rule) => (Verdict::of(rule.action()), Reason::Rule(RuleRef::of(rule))),
            None => {
                let fallback = fallback();
                (fallback.verdict, Reason::Default(fallback))
            }
        };
        Decision {
            direction,
            verdict,
            reason,
            undocumented: if possible.both() {
                undocumented
            } else {
                Vec::new()
            },
        }
    }
}

/// Whether `acls` let `packet` through in `direction`, on a host of `build`:
///
/// - an endpoint without ACLs filters nothing;
/// - each layer (`Switch`, `Host`) decides on its own: its rules in priority order, the
///   first that matches decides (`Allow` lets the packet through the layer, `Block` drops
///   it); when none matches, the layer's [`Fallback`] on this build and network type;
/// - the packet passes when every layer lets it through. A layer that surely drops it
///   decides; otherwise a layer whose decision rests on something undocumented makes the
///   verdict undocumented ([`Decision::undocumented`]).
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
            undocumented: Vec::new(),
        };
    }
    let seen = packet.seen(direction);
    let layers = LAYERS.map(|layer| acls.layer(layer, direction, &seen, build));
    let certain = |decision: &&Decision| decision.undocumented.is_empty();
    if let Some(denied) = layers
        .iter()
        .filter(certain)
        .find(|decision| decision.verdict == Verdict::Denied)
    {
        return denied.clone();
    }
    let uncertain: Vec<&Decision> = layers.iter().filter(|d| !certain(d)).collect();
    if let Some(first) = uncertain.first() {
        let deciding = uncertain
            .iter()
            .find(|decision| decision.verdict == Verdict::Denied)
            .unwrap_or(first);
        return Decision {
            undocumented: uncertain
                .iter()
                .flat_map(|decision| decision.undocumented.clone())
                .collect(),
            ..(*deciding).clone()
        };
    }
    let [switch, host] = layers;
    if matches!(host.reason, Reason::Rule(_)) && !matches!(switch.reason, Reason::Rule(_)) {
        host
    } else {
        switch
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

    /// Calico's and Azure NPM's Host allow-alls, In and Out.
    const HOST_ALLOW_ALL: [&str; 2] = [
        r#"{"Action":"Allow","Direction":"In","RuleType":"Host","Protocols":"256"}"#,
        r#"{"Action":"Allow","Direction":"Out","RuleType":"Host","Protocols":"256"}"#,
    ];

    fn policies(rules: &[&str]) -> Vec<EndpointPolicy> {
        rules
            .iter()
            .map(|settings| {
                serde_json::from_str(&format!(r#"{{"Type":"ACL","Settings":{settings}}}"#)).unwrap()
            })
            .collect()
    }

    /// An L2Bridge endpoint's ACLs, with the Host allow-alls production writes beside them.
    fn acls(rules: &[&str]) -> EndpointAcls {
        let with_host: Vec<&str> = rules.iter().copied().chain(HOST_ALLOW_ALL).collect();
        on(NetworkType::L2Bridge, &with_host)
    }

    fn on(network_type: NetworkType, rules: &[&str]) -> EndpointAcls {
        EndpointAcls::new(&policies(rules), &IpSets::default(), network_type).unwrap()
    }

    fn inbound(port: u16) -> Packet {
        Packet::tcp(PEER.parse().unwrap(), POD.parse().unwrap(), port)
    }

    fn decide(acls: &EndpointAcls, packet: &Packet, build: WindowsBuild) -> Decision {
        evaluate(acls, AclDirection::In, packet, build)
    }

    fn fallback_of(decision: &Decision) -> &Fallback {
        match &decision.reason {
            Reason::Default(fallback) => fallback,
            other => panic!("not a fallback: {other:?}"),
        }
    }

    /// A rule that lists more entries than production software writes in one rule decides
    /// nothing documented: at 4,000 the verdict stands, at 4,001 it is refused.
    #[test]
    fn a_verdict_resting_on_a_list_past_4000_entries_is_undocumented() {
        let allow_from = |entries: u32| {
            let addresses: Vec<String> = (0..entries)
                .map(|i| std::net::Ipv4Addr::from(0x0a00_0000 + i).to_string())
                .chain([PEER.to_owned()])
                .collect();
            format!(
                r#"{{"Action":"Allow","Direction":"In","Protocols":"6","RemoteAddresses":"{}","Priority":100}}"#,
                addresses.join(",")
            )
        };
        let block = r#"{"Action":"Block","Direction":"In","Protocols":"256","Priority":200}"#;
        let build = WindowsBuild::SERVER_2025;
        let within = decide(&acls(&[&allow_from(3999), block]), &inbound(80), build);
        assert_eq!(
            (within.verdict, within.undocumented.len()),
            (Verdict::Allowed, 0)
        );
        let past = decide(&acls(&[&allow_from(4000), block]), &inbound(80), build);
        assert!(
            matches!(
                &past.undocumented[..],
                [Undocumented::LongList {
                    field: "RemoteAddresses",
                    entries: 4001,
                    ..
                }]
            ),
            "{past:?}"
        );
        let other = Packet::tcp("10.255.0.1".parse().unwrap(), POD.parse().unwrap(), 80);
        let unmatched = decide(&acls(&[&allow_from(4000), block]), &other, build);
        assert_eq!(
            (unmatched.verdict, unmatched.undocumented.len()),
            (Verdict::Denied, 0),
            "a long rule that does not match decides nothing"
        );
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
        assert_eq!(order, [2, 1, 0, 3, 4]);
    }

    #[test]
    fn what_no_rule_matches_falls_back_by_build_and_network() {
        let allow_443 = r#"{"Action":"Allow","Direction":"In","Protocols":"6","LocalPorts":"443"}"#;
        let block_22 =
            r#"{"Action":"Block","Direction":"In","Protocols":"6","LocalPorts":"22","Priority":9}"#;
        // Windows Server 2025: dropped (W-C#616).
        let rules = acls(&[allow_443, block_22]);
        let on_2025 = decide(&rules, &inbound(80), WindowsBuild::SERVER_2025);
        assert_eq!(on_2025.verdict, Verdict::Denied);
        assert!(on_2025.undocumented.is_empty());
        assert_eq!(fallback_of(&on_2025).rule_type, AclRuleType::Switch);
        // Before: an L2Bridge endpoint with a Block drops it too (ACN PR #2617).
        let on_2022 = decide(&rules, &inbound(80), WindowsBuild::SERVER_2022);
        assert_eq!(
            (on_2022.verdict, on_2022.undocumented.len()),
            (Verdict::Denied, 0)
        );
        // Without a Block, what it does is not documented.
        let allows_only = decide(&acls(&[allow_443]), &inbound(80), WindowsBuild::SERVER_2022);
        assert_eq!(allows_only.verdict, Verdict::Denied, "the emulator's pick");
        assert!(
            matches!(&allows_only.undocumented[..], [Undocumented::Default(f)] if !f.documented),
            "{allows_only:?}"
        );
        // A NAT endpoint lets it through before 2025 (W-C#616's WS2019 report).
        let nat = on(NetworkType::Nat, &[allow_443, block_22]);
        let through = decide(&nat, &inbound(80), WindowsBuild::SERVER_2022);
        assert_eq!(
            (through.verdict, through.undocumented.len()),
            (Verdict::Allowed, 0)
        );
        // No ACL at all: HNS filters nothing.
        let open = decide(
            &on(NetworkType::L2Bridge, &[]),
            &inbound(80),
            WindowsBuild::SERVER_2025,
        );
        assert_eq!(
            (open.verdict, open.reason),
            (Verdict::Allowed, Reason::NoAcl)
        );
    }

    /// W-C#616 speaks of outbound traffic: on Windows Server 2025 a direction with no rule is
    /// denied outbound and undocumented inbound.
    #[test]
    fn windows_server_2025_leaves_an_inbound_direction_without_rules_undocumented() {
        let out_only =
            acls(&[r#"{"Action":"Allow","Direction":"Out","Protocols":"6","RemotePorts":"53"}"#]);
        let inbound = decide(&out_only, &inbound(80), WindowsBuild::SERVER_2025);
        assert!(
            matches!(&inbound.undocumented[..], [Undocumented::Default(f)] if f.rule_type == AclRuleType::Switch),
            "{inbound:?}"
        );
        let in_only =
            acls(&[r#"{"Action":"Allow","Direction":"In","Protocols":"6","LocalPorts":"80"}"#]);
        let outbound = Packet::tcp(POD.parse().unwrap(), PEER.parse().unwrap(), 443);
        let decision = evaluate(
            &in_only,
            AclDirection::Out,
            &outbound,
            WindowsBuild::SERVER_2025,
        );
        assert_eq!(
            (decision.verdict, decision.undocumented.len()),
            (Verdict::Denied, 0)
        );
    }

    /// Calico and Azure NPM write Host allow-alls beside switch rules, "Required by l2bridge
    /// network", where Azure CNI writes none on its L2Bridge: without them, what the Host layer
    /// does is undocumented but on NAT, whose Host layer lets traffic through (W-C#616).
    #[test]
    fn an_endpoint_with_acls_needs_its_host_layer_to_allow_too() {
        let switch_only = [
            r#"{"Action":"Allow","Direction":"In","Protocols":"256","Priority":100}"#,
            r#"{"Action":"Allow","Direction":"Out","Protocols":"256","Priority":100}"#,
        ];
        for build in [WindowsBuild::SERVER_2022, WindowsBuild::SERVER_2025] {
            for network_type in [NetworkType::L2Bridge, NetworkType::Overlay] {
                let unknown = decide(&on(network_type, &switch_only), &inbound(80), build);
                assert!(
                    matches!(&unknown.undocumented[..], [Undocumented::Default(f)] if f.rule_type == AclRuleType::Host),
                    "{unknown:?}"
                );
            }
            let nat = decide(&on(NetworkType::Nat, &switch_only), &inbound(80), build);
            assert_eq!((nat.verdict, nat.undocumented.len()), (Verdict::Allowed, 0));
            let allowed = decide(&acls(&switch_only), &inbound(80), build);
            assert_eq!(
                (allowed.verdict, allowed.undocumented.len()),
                (Verdict::Allowed, 0)
            );
            assert!(
                matches!(&allowed.reason, Reason::Rule(rule) if rule.rule_type == AclRuleType::Switch),
                "the switch rule is reported: {allowed:?}"
            );
        }
        // A Host rule that blocks decides like any other.
        let rules = on(
            NetworkType::L2Bridge,
            &[
                r#"{"Action":"Allow","Direction":"In","RuleType":"Switch","Priority":100}"#,
                r#"{"Action":"Block","Direction":"In","RuleType":"Host","Protocols":"6","LocalPorts":"22","Priority":100}"#,
                r#"{"Action":"Allow","Direction":"In","RuleType":"Host","Priority":200}"#,
            ],
        );
        let ssh = decide(&rules, &inbound(22), WindowsBuild::SERVER_2022);
        assert_eq!(ssh.verdict, Verdict::Denied);
        assert!(matches!(&ssh.reason, Reason::Rule(rule) if rule.rule_type == AclRuleType::Host));
    }

    #[test]
    fn opposite_actions_at_one_priority_are_undocumented() {
        let rules = acls(&[
            r#"{"Id":"allow","Action":"Allow","Direction":"In","Priority":100}"#,
            r#"{"Id":"block","Action":"Block","Direction":"In","Priority":100}"#,
        ]);
        let tied = decide(&rules, &inbound(80), WindowsBuild::SERVER_2022);
        assert_eq!(tied.verdict, Verdict::Denied);
        assert!(matches!(&tied.reason, Reason::Rule(rule) if rule.id.as_deref() == Some("block")));
        let [Undocumented::Tie { rules }] = &tied.undocumented[..] else {
            panic!("{tied:?}");
        };
        let ids: Vec<_> = rules.iter().map(|rule| rule.id.clone().unwrap()).collect();
        assert_eq!(ids, ["block", "allow"]);
        // The same action twice at one priority is no tie.
        let twice = acls(&[
            r#"{"Action":"Block","Direction":"In","Priority":100}"#,
            r#"{"Action":"Block","Direction":"In","Priority":100,"Protocols":"6"}"#,
        ]);
        assert!(
            decide(&twice, &inbound(80), WindowsBuild::SERVER_2022)
                .undocumented
                .is_empty()
        );
        // A layer that surely denies decides before a tied one.
        let clean = on(
            NetworkType::L2Bridge,
            &[
                r#"{"Action":"Allow","Direction":"In","Priority":100}"#,
                r#"{"Action":"Block","Direction":"In","Priority":100}"#,
                r#"{"Action":"Block","Direction":"In","RuleType":"Host","Priority":5}"#,
            ],
        );
        let decision = decide(&clean, &inbound(80), WindowsBuild::SERVER_2022);
        assert!(
            decision.undocumented.is_empty() && decision.verdict == Verdict::Denied,
            "{decision:?}"
        );
    }

    /// Pass has no documented meaning outside TierAcl (calico#13208): the emulator lets the
    /// packet through its layer, and says the verdict is no evidence.
    #[test]
    fn a_pass_is_undocumented() {
        let rules = acls(&[
            r#"{"Action":"Pass","Direction":"In","Priority":100}"#,
            r#"{"Action":"Block","Direction":"In","Priority":200}"#,
        ]);
        let passed = decide(&rules, &inbound(80), WindowsBuild::SERVER_2025);
        assert_eq!(passed.verdict, Verdict::Allowed);
        assert!(matches!(
            &passed.undocumented[..],
            [Undocumented::Pass { .. }]
        ));
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
