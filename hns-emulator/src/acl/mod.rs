//! The emulator enforces what HNS enforces: endpoint `ACL` policies and network IP sets are
//! stored, validated as HNS validates them, and *evaluated*, so a NetworkPolicy agent's
//! output can be judged by what it lets through, not by its JSON.
//!
//! # The model and its evidence
//!
//! Public sources only; what none of them settles is decided here and listed in docs/why-an-emulator.md
//! ("Why an emulator") as not confirmed on a real host.
//!
//! - **Rules** ([`Rule`]): the `ACL` settings of hcsshim's `AclPolicySetting`; `Protocols`
//!   a string of IANA numbers, 256 any; addresses IPs and prefixes, never a keyword
//!   (hcsshim#1059: `"Any"` is `HCN_E_INVALID_POLICY` 0x803B000D); ports and ranges; local
//!   the endpoint's side (Calico's Windows dataplane, hcsshim#1059's answer). Several rules
//!   may share an `Id` (Azure NPM gives every rule of one NetworkPolicy its policy's).
//! - **Order**: per endpoint and direction, lowest `Priority` first, the first rule that
//!   matches decides (every peer puts exceptions at lower numbers than defaults; Microsoft's
//!   Windows Server 2025 workaround is an allow-all at a higher number, W-C#616). Two
//!   matching rules of one priority with opposite actions: undocumented (Calico spreads
//!   them over priorities because HNS's tie-break "is different"); the emulator lets
//!   `Block` win and marks the decision ([`Decision::tie`]), and [`PathVerdict::verdict`]
//!   refuses to answer from it.
//! - **Layers**: `Switch` (VFP) and `Host` (WFP) rules are separate lists; a packet must
//!   pass every layer that has rules for its direction.
//! - **Default**: an endpoint without ACLs filters nothing. With ACLs, a packet no rule
//!   matches passes before build 26100 and is dropped from 26100 (Windows Server 2025) on,
//!   in both directions, even one without rules (W-C#616, Microsoft 2026-05-11: "by
//!   design"; `WindowsBuild::acls_default_deny`).
//! - **Writes** (`HcnModifyEndpoint` `Policy`): `Add` appends, `Remove` removes identical
//!   policies (Azure NPM avoids `Remove` for a "remove bug" it does not describe; nothing
//!   says what it is, so here it works). `Update` replaces the endpoint's policies of the
//!   types the request carries and keeps the others (likely: hcsshim's ncproxy sends an
//!   `Update` holding only an `Iov` policy to endpoints with other policies,
//!   `cmd/ncproxy/ncproxy.go:123-147`, which a whole-list replace would strip; Azure NPM's
//!   read-modify-`Update` of all an endpoint keeps fits both). An `Update` carrying no policy
//!   is refused: what it replaces is where the two readings differ.
//! - **IP sets** ([`IpSets`]): `SetPolicy` network policies (HNS 13.0; `NESTEDIPSET` 15.0),
//!   changed with `HcnModifyNetwork` `Add`/`Update`/`Remove` of the sets alone, named by
//!   `Id` in an ACL's address fields (Azure NPM). A set named by an ACL or a nested set
//!   cannot be removed (`HCN_E_ENTITY_HAS_REFERENCES`); an empty nested set matches every
//!   address (ACN PR #1431).
//! - **Paths** ([`Engine::check_packet`](crate::Engine::check_packet)): egress on the
//!   source if it is a local endpoint, ingress on the destination if it is one; remote
//!   endpoints are filtered by their own host; traffic from the host is ingress only.
//! - **Writes counted** ([`PolicyWrites`]): each successful policy request and the rules
//!   and sets it touched.

mod evaluate;
mod path;
mod rule;
mod sets;
mod validate;
mod writes;

pub use evaluate::{Decision, EndpointAcls, Packet, Ports, Reason, RuleRef, Verdict, evaluate};
pub use path::{EndpointRules, PathVerdict, Side, UndocumentedTie};
pub use rule::Rule;
pub use sets::{IpSet, IpSets};
pub use writes::PolicyWrites;

/// Asserts that `result` is HNS's refusal with `code`, its record naming `needle`.
#[cfg(test)]
fn assert_refused<T: std::fmt::Debug>(
    result: Result<T, crate::HcnFailure>,
    code: hns::HResult,
    needle: &str,
) {
    let failure = result.expect_err(needle);
    assert_eq!(failure.code, code, "{}", failure.detail);
    assert!(
        failure.detail.contains(needle),
        "{needle:?} not in {}",
        failure.detail
    );
}
