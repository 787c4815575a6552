//! One `ACL` endpoint policy as HNS reads it: its string settings parsed once, into what a
//! packet is matched against.
//!
//! - `Protocols`: IANA numbers, comma-separated (`"6"`, `"6,17"`); `"256"`, an empty string
//!   or no key is every protocol (Azure NPM sends `""` for any, Calico 256).
//! - `LocalAddresses`, `RemoteAddresses`: IPs and prefixes, comma-separated, or the `Id` of an
//!   IP set of the endpoint's network. No keyword: `"Any"` is refused with
//!   `HCN_E_INVALID_POLICY` (hcsshim#1059: "HNS only accepts IP addresses and lists of IP
//!   addresses"); an empty field matches every address. Which address of the packet each
//!   entry is compared with (the endpoint's or the peer's for addresses, the source or the
//!   destination for sets) is [`super::fields`]'s.
//! - `LocalPorts`, `RemotePorts`: ports and `first-last` ranges, comma-separated (Calico
//!   writes ranges; Azure NPM expands them); local the endpoint's, remote the peer's: every
//!   writer puts the destination's ports in `LocalPorts` inbound and `RemotePorts` outbound
//!   (Calico; Azure NPM `npm/pkg/dataplane/policies/policy_windows.go`).
//! - `Priority`: lower numbers first. A rule without one is priority 0: hcsshim leaves a
//!   zero `Priority` out (`omitempty`), so HNS cannot tell the two apart.
//! - `RuleType`: `Switch` (VFP) when absent.
//!
//! Address lists, port ranges, rule `Id`s and a `Host` rule without a priority need HNS's ACL
//! feature (7.2; hcsshim's `AclNoHostRulePriority` is the same version), protocol 252 its
//! own (11.0); a rule using one on an older host is `HCN_E_INVALID_POLICY`.
//!
//! How long a list HNS takes whole is not documented: production software writes at most
//! [`AclPolicy::KNOWN_LIST_ENTRIES`] entries a list (Calico's cut), and a verdict that rests
//! on a rule with a longer one is refused ([`Rule::list_past_known`]).

use std::ops::RangeInclusive;

use serde::Serialize;

use super::fields::{Address, AddressField, Field, FieldMatch, Seen};
use super::sets::{IpSets, tokens};
use crate::failure::HcnFailure;
use hns::features::{Feature, HnsVersion};
use hns::hresult::HResult;
use hns::schema::AddressOrPrefix;
use hns::schema::policy::{AclAction, AclDirection, AclPolicy, AclRuleType};

/// The `Protocols` number that means every protocol.
const ANY_PROTOCOL: u16 = 256;

/// The protocol that needs HNS's `AclSupportForProtocol252` feature.
const PROTOCOL_252: u8 = 252;

/// Whether a rule matches a packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Match {
    Yes,
    No,
    /// It matches under some reading of its address fields HNS may have and not under
    /// another ([`super::fields`]); `emulated` is the emulator's reading.
    Depends {
        emulated: bool,
        /// The uncertain fields' keys.
        fields: Vec<&'static str>,
    },
}

impl Match {
    /// Whether the rule matches as the emulator reads it.
    pub(crate) fn emulated(&self) -> bool {
        match self {
            Match::Yes => true,
            Match::No => false,
            Match::Depends { emulated, .. } => *emulated,
        }
    }
}

/// A compiled `ACL` policy.
#[derive(Debug, Clone)]
pub struct Rule {
    index: usize,
    policy: AclPolicy,
    /// `None`: every protocol.
    protocols: Option<Vec<u8>>,
    local_addresses: AddressField,
    remote_addresses: AddressField,
    local_ports: Vec<RangeInclusive<u16>>,
    remote_ports: Vec<RangeInclusive<u16>>,
}

impl Rule {
    /// Compiles the ACL at position `index` of an endpoint's policies; a set `Id` must name a
    /// set of `sets`. A value HNS would not take is `HCN_E_INVALID_POLICY`, naming the field.
    pub(crate) fn compile(
        index: usize,
        policy: &AclPolicy,
        sets: &IpSets,
    ) -> Result<Rule, HcnFailure> {
        let field = |name: &str, value: &Option<String>, why: String| {
            HcnFailure::new(
                HResult::HCN_E_INVALID_POLICY,
                format!(
                    "(ACL {name} {:?} {why})",
                    value.as_deref().unwrap_or_default()
                ),
            )
        };
        let addresses = |which: Field, value: &Option<String>| {
            parse_addresses(value.as_deref(), sets)
                .map(|entries| AddressField::new(which, entries))
                .map_err(|why| field(which.key(), value, why))
        };
        let ports = |name: &str, value: &Option<String>| {
            parse_ports(value.as_deref()).map_err(|why| field(name, value, why))
        };
        Ok(Rule {
            index,
            protocols: parse_protocols(policy.protocols.as_deref())
                .map_err(|why| field("Protocols", &policy.protocols, why))?,
            local_addresses: addresses(Field::Local, &policy.local_addresses)?,
            remote_addresses: addresses(Field::Remote, &policy.remote_addresses)?,
            local_ports: ports("LocalPorts", &policy.local_ports)?,
            remote_ports: ports("RemotePorts", &policy.remote_ports)?,
            policy: policy.clone(),
        })
    }

    /// Refuses a rule that uses what `version` does not support, as HNS of that version
    /// would (`HCN_E_INVALID_POLICY`).
    pub(crate) fn check_features(&self, version: HnsVersion) -> Result<(), HcnFailure> {
        let mut needs = Vec::new();
        if self.local_addresses.len() > 1 || self.remote_addresses.len() > 1 {
            needs.push((Feature::Acl, "an address list"));
        }
        let ranges = self.local_ports.iter().chain(&self.remote_ports);
        if ranges.clone().any(|range| range.start() != range.end()) {
            needs.push((Feature::Acl, "a port range"));
        }
        if self.policy.id.is_some() {
            needs.push((Feature::Acl, "a rule Id"));
        }
        if self.layer() == AclRuleType::Host && self.policy.priority.is_none() {
            // Calico writes its Host rule with priority 100 below this (`NewHostRule`).
            needs.push((Feature::Acl, "a Host rule without a Priority"));
        }
        if self
            .protocols
            .as_ref()
            .is_some_and(|list| list.contains(&PROTOCOL_252))
        {
            needs.push((Feature::AclSupportForProtocol252, "protocol 252"));
        }
        match needs
            .into_iter()
            .find(|(feature, _)| !feature.supported_by(version))
        {
            Some((feature, what)) => Err(HcnFailure::new(
                HResult::HCN_E_INVALID_POLICY,
                format!(
                    "(ACL #{} uses {what}, which needs HNS's {} feature; this host runs HNS {version})",
                    self.index,
                    feature.name()
                ),
            )),
            None => Ok(()),
        }
    }

    /// The rule's first address or port list longer than
    /// [`AclPolicy::KNOWN_LIST_ENTRIES`], and its length: whether HNS applies such a rule as
    /// written is not documented.
    pub fn list_past_known(&self) -> Option<(&'static str, usize)> {
        let policy = &self.policy;
        [
            ("LocalAddresses", &policy.local_addresses),
            ("RemoteAddresses", &policy.remote_addresses),
            ("LocalPorts", &policy.local_ports),
            ("RemotePorts", &policy.remote_ports),
        ]
        .into_iter()
        .map(|(key, list)| (key, tokens(list.as_deref().unwrap_or_default()).count()))
        .find(|(_, entries)| *entries > AclPolicy::KNOWN_LIST_ENTRIES)
    }

    /// Position of the policy among the endpoint's policies.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The policy as HNS applies it.
    pub fn policy(&self) -> &AclPolicy {
        &self.policy
    }

    /// `In` or `Out`.
    pub fn direction(&self) -> AclDirection {
        self.policy.direction
    }

    /// `Allow`, `Block` or `Pass`.
    pub fn action(&self) -> AclAction {
        self.policy.action
    }

    /// Where the rule is enforced: `Switch` unless the policy says `Host`.
    pub fn layer(&self) -> AclRuleType {
        self.policy.rule_type.unwrap_or(AclRuleType::Switch)
    }

    /// The rule's priority; 0 when the policy has none.
    pub fn priority(&self) -> u16 {
        self.policy.priority.unwrap_or(0)
    }

    /// The rule's `Id`, if it has one (several rules may share one: Azure NPM gives every
    /// rule of a NetworkPolicy the same).
    pub fn id(&self) -> Option<&str> {
        self.policy.id.as_deref()
    }

    /// The IP set `Id`s the rule names, from its policy's text alone (a removed set's
    /// referrers are found with this even when the set is gone).
    pub(crate) fn set_references(policy: &AclPolicy) -> impl Iterator<Item = &str> {
        [&policy.local_addresses, &policy.remote_addresses]
            .into_iter()
            .flat_map(|list| tokens(list.as_deref().unwrap_or_default()))
            .filter_map(Result::ok)
            .filter(|token| token.parse::<AddressOrPrefix>().is_err())
    }

    /// Whether the packet, seen from the rule's endpoint, matches every condition.
    pub(crate) fn matches(&self, seen: &Seen, sets: &IpSets) -> Match {
        let protocol = self
            .protocols
            .as_ref()
            .is_none_or(|list| list.contains(&seen.protocol));
        // A port condition needs a port: a protocol without ports never matches it.
        let port = |list: &[RangeInclusive<u16>], port: Option<u16>| {
            list.is_empty() || port.is_some_and(|port| list.iter().any(|r| r.contains(&port)))
        };
        let ports = port(&self.local_ports, seen.ports.map(|(local, _)| local))
            && port(&self.remote_ports, seen.ports.map(|(_, remote)| remote));
        if !(protocol && ports) {
            return Match::No;
        }
        let fields = [&self.local_addresses, &self.remote_addresses]
            .map(|field| (field.key(), field.matches(seen, sets)));
        // A field may take a value when it is certain of it or not certain at all.
        let may = |outcome: &FieldMatch, value: bool| outcome.emulated == value || !outcome.certain;
        let may_match = fields.iter().all(|(_, outcome)| may(outcome, true));
        let may_miss = fields.iter().any(|(_, outcome)| may(outcome, false));
        match (may_match, may_miss) {
            (true, false) => Match::Yes,
            (false, _) => Match::No,
            (true, true) => Match::Depends {
                emulated: fields.iter().all(|(_, outcome)| outcome.emulated),
                fields: fields
                    .iter()
                    .filter(|(_, outcome)| !outcome.certain)
                    .map(|(key, _)| *key)
                    .collect(),
            },
        }
    }
}

/// How `hnsctl acl list` and JSON readers see a rule: every setting with its effective value.
impl Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "PascalCase")]
        struct View<'a> {
            index: usize,
            #[serde(skip_serializing_if = "Option::is_none")]
            id: Option<&'a str>,
            direction: AclDirection,
            rule_type: AclRuleType,
            priority: u16,
            action: AclAction,
            protocols: &'a str,
            local_addresses: &'a str,
            local_ports: &'a str,
            remote_addresses: &'a str,
            remote_ports: &'a str,
        }
        fn text(field: &Option<String>) -> &str {
            field.as_deref().unwrap_or_default()
        }
        View {
            index: self.index,
            id: self.id(),
            direction: self.direction(),
            rule_type: self.layer(),
            priority: self.priority(),
            action: self.action(),
            protocols: text(&self.policy.protocols),
            local_addresses: text(&self.policy.local_addresses),
            local_ports: text(&self.policy.local_ports),
            remote_addresses: text(&self.policy.remote_addresses),
            remote_ports: text(&self.policy.remote_ports),
        }
        .serialize(serializer)
    }
}

fn parse_protocols(text: Option<&str>) -> Result<Option<Vec<u8>>, String> {
    let mut numbers = Vec::new();
    for token in tokens(text.unwrap_or_default()) {
        let token = token?;
        match token.parse::<u16>() {
            Ok(ANY_PROTOCOL) => return Ok(None),
            Ok(number) if number < ANY_PROTOCOL => numbers.push(number as u8),
            _ => {
                return Err(format!(
                    "has {token:?}, which is not an IANA protocol number (6 TCP, 17 UDP, 256 any)"
                ));
            }
        }
    }
    Ok((!numbers.is_empty()).then_some(numbers))
}

fn parse_ports(text: Option<&str>) -> Result<Vec<RangeInclusive<u16>>, String> {
    tokens(text.unwrap_or_default())
        .map(|token| {
            let token = token?;
            let port = |text: &str| {
                text.trim().parse::<u16>().map_err(|_| {
                    format!("has {token:?}, which is not a port or a range such as 8000-8080")
                })
            };
            let range = match token.split_once('-') {
                Some((first, last)) => port(first)?..=port(last)?,
                None => port(token)?..=port(token)?,
            };
            if range.is_empty() {
                return Err(format!(
                    "has the range {token:?}, whose first port is above its last"
                ));
            }
            Ok(range)
        })
        .collect()
}

fn parse_addresses(text: Option<&str>, sets: &IpSets) -> Result<Vec<Address>, String> {
    tokens(text.unwrap_or_default())
        .map(|token| {
            let token = token?;
            if let Ok(address) = token.parse::<AddressOrPrefix>() {
                return Ok(Address::Network(address.network()));
            }
            if sets.get(token).is_some() {
                return Ok(Address::Set(token.to_owned()));
            }
            Err(format!(
                "has {token:?}, which is neither an IP address, a prefix nor the Id of an IP set \
                 (SetPolicy) of the endpoint's network; HNS takes no keyword such as \"Any\": \
                 leave the field out to match every address"
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::assert_refused;
    use super::*;

    fn acl(settings: &str) -> AclPolicy {
        serde_json::from_str(settings).unwrap()
    }

    fn compile(settings: &str) -> Result<Rule, HcnFailure> {
        Rule::compile(0, &acl(settings), &IpSets::default())
    }

    fn seen(protocol: u8, local: &str, remote: &str, ports: Option<(u16, u16)>) -> Seen {
        Seen {
            direction: AclDirection::In,
            protocol,
            local: local.parse().unwrap(),
            remote: remote.parse().unwrap(),
            ports,
        }
    }

    #[test]
    fn settings_are_read_as_hns_reads_them() {
        let rule = compile(
            r#"{"Action":"Block","Direction":"In","Protocols":"6,17","RemoteAddresses":"10.0.0.0/8, 192.168.1.7","LocalPorts":"80,8000-8080"}"#,
        )
        .unwrap();
        assert_eq!(
            (rule.layer(), rule.priority(), rule.id()),
            (AclRuleType::Switch, 0, None)
        );
        let sets = IpSets::default();
        let matches = |s: Seen| rule.matches(&s, &sets) == Match::Yes;
        assert!(matches(seen(
            6,
            "10.244.1.5",
            "10.1.2.3",
            Some((80, 40000))
        )));
        assert!(matches(seen(
            17,
            "10.244.1.5",
            "192.168.1.7",
            Some((8080, 40000))
        )));
        assert!(!matches(seen(
            6,
            "10.244.1.5",
            "192.168.1.8",
            Some((80, 40000))
        )));
        assert!(!matches(seen(
            6,
            "10.244.1.5",
            "10.1.2.3",
            Some((8081, 40000))
        )));
        assert!(
            !matches(seen(1, "10.244.1.5", "10.1.2.3", None)),
            "ICMP has no port"
        );
        assert!(!matches(seen(58, "10.244.1.5", "10.1.2.3", None)));
        for any in [r#""Protocols":"256","#, r#""Protocols":"","#, ""] {
            let rule = compile(&format!(r#"{{{any}"Action":"Allow","Direction":"Out"}}"#)).unwrap();
            assert_eq!(
                rule.matches(&seen(47, "fd00::5", "fd00::6", None), &sets),
                Match::Yes,
                "{any}"
            );
        }
    }

    #[test]
    fn values_hns_refuses_are_invalid_policies() {
        for (settings, needle) in [
            (
                r#""LocalAddresses":"Any""#,
                "LocalAddresses \"Any\" has \"Any\"",
            ),
            (r#""RemoteAddresses":"*""#, "neither an IP address"),
            (
                r#""RemoteAddresses":"10.0.0.0/33""#,
                "neither an IP address",
            ),
            (r#""RemoteAddresses":"10.0.0.1,""#, "empty entry"),
            (r#""Protocols":"TCP""#, "not an IANA protocol number"),
            (r#""Protocols":"257""#, "not an IANA protocol number"),
            (r#""LocalPorts":"80-70""#, "first port is above its last"),
            (r#""RemotePorts":"65536""#, "not a port"),
            (r#""LocalPorts":"http""#, "not a port"),
        ] {
            let rule = compile(&format!(
                r#"{{"Action":"Block","Direction":"In",{settings}}}"#
            ));
            assert_refused(rule, HResult::HCN_E_INVALID_POLICY, needle);
        }
    }

    #[test]
    fn lists_ranges_ids_and_protocol_252_need_their_hns_features() {
        let old = HnsVersion::new(7, 1);
        for settings in [
            r#""RemoteAddresses":"10.0.0.1,10.0.0.2""#,
            r#""LocalPorts":"80-81""#,
            r#""Id":"rule-1""#,
            r#""RuleType":"Host""#,
        ] {
            let rule = compile(&format!(
                r#"{{"Action":"Block","Direction":"In",{settings}}}"#
            ))
            .unwrap();
            let failure = rule.check_features(old).unwrap_err();
            assert!(
                failure.detail.contains("HNS's ACL feature"),
                "{}",
                failure.detail
            );
            rule.check_features(HnsVersion::new(7, 2)).unwrap();
        }
        let rule = compile(r#"{"Action":"Allow","Direction":"In","Protocols":"252"}"#).unwrap();
        assert!(rule.check_features(HnsVersion::new(10, 4)).is_err());
        rule.check_features(HnsVersion::new(11, 0)).unwrap();
    }

    #[test]
    fn set_references_are_the_entries_that_are_not_addresses() {
        let policy = acl(
            r#"{"Action":"Allow","Direction":"In","LocalAddresses":"azure-npm-1","RemoteAddresses":"10.0.0.1,azure-npm-2"}"#,
        );
        assert_eq!(
            Rule::set_references(&policy).collect::<Vec<_>>(),
            ["azure-npm-1", "azure-npm-2"]
        );
    }
}
