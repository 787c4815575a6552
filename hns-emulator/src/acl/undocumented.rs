//! What an endpoint's verdict may rest on that HNS does not document. Where the emulator has
//! to choose (a tie, a set's reading, a `Pass`, an unknown default), it still gives a verdict,
//! so `hnsctl acl check` can print one; but a verdict another reading would turn over is no
//! evidence, and [`super::PathVerdict::verdict`] refuses it.

use std::fmt;

use serde::Serialize;

use super::evaluate::{Packet, RuleRef, Verdict};
use super::unmatched::Fallback;
use hns::guid::Guid;

/// One undocumented thing a decision rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "Kind")]
pub enum Undocumented {
    /// Rules of one priority that match with opposite actions: HNS's tie-break is not
    /// documented (Calico spreads such rules over priorities because HNS's "is different",
    /// `policysets.go`); the emulator lets `Block` win.
    #[serde(rename_all = "PascalCase")]
    Tie {
        /// The rules, `Block` first.
        rules: Vec<RuleRef>,
    },
    /// A rule whose match depends on how HNS reads an IP set in an address field no
    /// production writer lays out so (`super::fields`); the emulator reads sets as Azure
    /// NPM's comment says, source and destination.
    #[serde(rename_all = "PascalCase")]
    SetReading {
        /// The rule.
        rule: RuleRef,
        /// The fields whose reading decides (`LocalAddresses`, `RemoteAddresses`).
        fields: Vec<&'static str>,
    },
    /// A `Pass` rule matches: outside `TierAcl` its meaning is not documented (Calico resolves
    /// Pass before writing, projectcalico/calico#13208); the emulator lets the packet through
    /// its layer.
    #[serde(rename_all = "PascalCase")]
    Pass {
        /// The rule.
        rule: RuleRef,
    },
    /// A rule that matches lists more entries in one address or port list than production
    /// software writes in one HNS rule (`AclPolicy::KNOWN_LIST_ENTRIES`, Calico's 4,000):
    /// whether HNS applies it as written is not documented.
    #[serde(rename_all = "PascalCase")]
    LongList {
        /// The rule.
        rule: RuleRef,
        /// The list (`RemoteAddresses`, ...).
        field: &'static str,
        /// How many entries it lists.
        entries: usize,
    },
    /// What a layer does with a packet none of its rules matches is not known here.
    Default(Fallback),
    /// The source's egress rules decide a packet to a load balancer's frontend one way on the
    /// packet as sent and the other way on the packet the load balancer rewrote for a
    /// backend: whether HNS matches egress ACLs before or after that rewrite is not documented
    /// (`super::service`); the emulator's pick is after.
    #[serde(rename_all = "PascalCase")]
    ServiceNat {
        /// The packet as the source sent it, to the frontend.
        sent: Packet,
        /// The verdict on it.
        before: Verdict,
        /// The packet rewritten toward one backend.
        rewritten: Packet,
        /// The verdict on that.
        after: Verdict,
    },
    /// A packet to a load balancer's frontend is let through toward one backend and dropped
    /// toward another: which backend HNS picks for a connection (a hash of its addresses and
    /// ports) is not documented.
    #[serde(rename_all = "PascalCase")]
    Backend {
        /// A backend endpoint the packet reaches.
        allowed: Guid,
        /// A backend endpoint it does not.
        denied: Guid,
    },
}

impl fmt::Display for Undocumented {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Undocumented::Tie { rules } => {
                let rules: Vec<String> = rules.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "{} match at one priority with opposite actions; HNS's tie-break is not \
                     documented (the emulator lets Block win): give them different priorities",
                    rules.join(" and ")
                )
            }
            Undocumented::SetReading { rule, fields } => write!(
                f,
                "{rule} matches only under one reading of the IP sets in its {}; no production \
                 writer lays sets out so (Azure NPM: an ingress peer set in LocalAddresses, an \
                 egress one in RemoteAddresses, never sets and addresses in one field)",
                fields.join(" and ")
            ),
            Undocumented::Pass { rule } => write!(
                f,
                "{rule} is a Pass, whose meaning outside TierAcl is not documented: use Allow or \
                 Block"
            ),
            Undocumented::LongList {
                rule,
                field,
                entries,
            } => write!(
                f,
                "{rule} lists {entries} entries in its {field}, past the {} production software \
                 writes in one rule (Calico, on Microsoft's advice); whether HNS applies it as \
                 written is not documented: split it into rules of that many",
                hns::schema::policy::AclPolicy::KNOWN_LIST_ENTRIES
            ),
            Undocumented::Default(fallback) => write!(f, "{fallback}"),
            Undocumented::ServiceNat {
                sent,
                before,
                rewritten,
                after,
            } => write!(
                f,
                "egress is {before} for {sent} as sent and {after} for {rewritten} after the \
                 load balancer's rewrite; whether HNS matches egress ACLs before or after that \
                 rewrite is not documented (the emulator's pick is after): allow both the \
                 frontend and the backends"
            ),
            Undocumented::Backend { allowed, denied } => write!(
                f,
                "the packet is let through toward backend {allowed} and dropped toward backend \
                 {denied}; which backend HNS picks for a connection is not documented"
            ),
        }
    }
}
