//! The emulator enforces what HNS enforces: endpoint `ACL` policies and network IP sets are
//! stored, validated as HNS validates them, and *evaluated*, so a NetworkPolicy agent's
//! output can be judged by what it lets through, not by its JSON.
//!
//! # The model and its evidence
//!
//! Public sources only (what production software that passes NetworkPolicy conformance on
//! real hosts writes: Azure NPM for IP sets, Calico and NPM for plain addresses, Host rules
//! and priorities); each reading is listed with its source and confidence in
//! docs/why-an-emulator.md, and a verdict that rests on what no source settles is refused
//! ([`Undocumented`], [`PathVerdict::verdict`]), never guessed.
//!
//! - **Rules** ([`Rule`]): the `ACL` settings of hcsshim's `AclPolicySetting`; `Protocols`
//!   a string of IANA numbers, 256 any; addresses IPs and prefixes, never a keyword
//!   (hcsshim#1059: `"Any"` is `HCN_E_INVALID_POLICY` 0x803B000D); ports and ranges. Several
//!   rules may share an `Id` (Azure NPM gives every rule of one NetworkPolicy its policy's).
//! - **Address fields** (`fields`): plain addresses are the endpoint's side (`Local`) and
//!   the peer's (`Remote`) in both directions (Calico, Azure NPM's probe rule, hcsshim#1059);
//!   a set `Id` is the packet's source (`Local`) or destination (`Remote`), as Azure NPM writes
//!   and says ("LocalAddresses = Source Sets, RemoteAddresses = Destination Sets"). A layout
//!   no writer uses (a set in an inbound rule's `RemoteAddresses`, sets and addresses in one
//!   field) is matched under each reading; where they disagree the verdict is undocumented.
//! - **Order**: per endpoint, direction and layer, lowest `Priority` first, the first rule
//!   that matches decides (Microsoft, W-C#616 and hcsshim#1059; Azure NPM PR #4823). Two
//!   matching rules of one priority with opposite actions: undocumented (Calico spreads them
//!   over priorities because HNS's tie-break "is different"); the emulator lets `Block` win.
//!   A `Pass` outside `TierAcl`: undocumented (calico#13208).
//! - **Layers**: `Switch` (VFP) and `Host` (WFP) rules are separate lists, and a packet must
//!   pass both on an endpoint with ACLs. Calico and Azure NPM write Host allow-alls, In and
//!   Out, beside every endpoint's switch rules ("Required by l2bridge network"); Azure CNI
//!   writes none on its L2Bridge network: what a Host layer without a matching rule does is
//!   undocumented, but on NAT without Host rules (W-C#616).
//! - **What no rule matches** ([`Fallback`], `unmatched`): an endpoint without ACLs filters
//!   nothing. With ACLs, Windows Server 2025 (build 26100) drops outbound traffic no rule
//!   allows (W-C#616, confirmed) and inbound where it has inbound rules; before 26100, an
//!   L2Bridge or Overlay endpoint with a `Block` drops it (ACN PR #2617, likely), a NAT one
//!   lets it through (W-C#616's WS2019 report). Everything else is undocumented.
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
//! - **Load balancers** (`service`): a packet to a frontend goes on to each backend, its
//!   destination rewritten; whether HNS matches the source's egress ACLs before or after
//!   that rewrite is not documented, so a verdict the two readings decide differently is
//!   refused (production software's conformance runs point to after, by inference only).
//! - **Writes counted** ([`PolicyWrites`]): each successful policy request and the rules
//!   and sets it touched.

mod evaluate;
mod fields;
mod path;
mod rule;
mod service;
mod sets;
mod undocumented;
mod unmatched;
mod validate;
mod writes;

pub use evaluate::{Decision, EndpointAcls, Packet, Ports, Reason, RuleRef, Verdict, evaluate};
pub use path::{BackendPath, EndpointRules, PathVerdict, Side, UndocumentedVerdict};
pub use rule::Rule;
pub use service::egress_through;
pub use sets::{IpSet, IpSets};
pub use undocumented::Undocumented;
pub use unmatched::Fallback;
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
