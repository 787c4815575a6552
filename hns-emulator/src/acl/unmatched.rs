//! What HNS does with a packet none of a layer's rules matches, on an endpoint that has ACLs
//! (an endpoint without any filters nothing: Microsoft Learn, "Network isolation and
//! security", Windows Server containers allow all traffic by default).
//!
//! No Microsoft document describes it beyond Windows Server 2025's outbound default; the rest
//! is read from what production writers had to add, and what nothing settles is refused:
//!
//! | layer | platform | a packet no rule matches | evidence | confidence |
//! | --- | --- | --- | --- | --- |
//! | Switch | build 26100 on (Windows Server 2025), outbound | dropped | microsoft/Windows-Containers#616 (Microsoft, 2026-05-11, "by design"): "When any ACL policy is applied on an HNS endpoint, HNS switches the endpoint to a default-deny posture — meaning all outbound traffic not explicitly allowed by an ACL rule gets blocked" | confirmed |
//! | Switch | build 26100 on, inbound, with inbound Switch rules | dropped | the same "default-deny posture" | likely |
//! | Switch | build 26100 on, inbound, no inbound Switch rule | undocumented | #616 speaks of outbound traffic; every workaround writes allow-alls both ways | unknown |
//! | Switch | before 26100, L2Bridge or Overlay, the endpoint has a `Block` | dropped | a lone outbound Block "breaks all connectivity of a Windows multitenancy pod", fixed with Allow In and Out (azure-container-networking PR #2617); "you'll need to apply default allow rules" (Microsoft, hcsshim#1059) | likely |
//! | Switch | before 26100, L2Bridge or Overlay, no `Block` | undocumented | nothing says | unknown |
//! | Switch | before 26100, NAT | passes | #616's reporter: a lone Block on a NAT network "worked on WS2019" | likely |
//! | Switch | before 26100, other network types | undocumented | nothing says | unknown |
//! | Host | NAT, no Host rule for the direction | passes | #616's lone Switch Block worked on NAT, and Microsoft's Windows Server 2025 fix adds no Host rule | likely |
//! | Host | L2Bridge, Overlay, any other | undocumented | the sources disagree: Calico adds Host allow-alls to every endpoint, "Required by l2bridge network" (`policysets.NewHostRule`), and Azure NPM added them to Calico's endpoints to "fix connectivity" (ACN PR #1752); but Azure CNI, on AKS's Windows nodes, writes switch ACLs without Host rules (Azure/AgentBaker `staging/cse/windows/azurecnifunc.ps1`) on its bridge-mode network, an L2Bridge (ACN `network/network_windows.go`) | unknown |
//!
//! An undocumented default still gives the emulator's verdict (dropped), so `hnsctl acl
//! check` can print one; a verdict that rests on it is refused ([`super::PathVerdict::verdict`]).

use std::fmt;

use serde::Serialize;

use super::evaluate::Verdict;
use hns::features::WindowsBuild;
use hns::schema::NetworkType;
use hns::schema::policy::{AclDirection, AclRuleType};

/// What a layer of an endpoint with ACLs does with a packet none of its rules matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct Fallback {
    /// The layer.
    pub rule_type: AclRuleType,
    /// The emulator's verdict (dropped where HNS's is unknown).
    pub verdict: Verdict,
    /// Whether public evidence gives the verdict; when not, a verdict resting on it is
    /// refused.
    pub documented: bool,
    /// What it rests on.
    pub evidence: &'static str,
}

/// The facts of one endpoint and direction a fallback depends on.
pub(crate) struct Endpoint<'a> {
    pub(crate) build: WindowsBuild,
    pub(crate) network_type: &'a NetworkType,
    /// Whether the layer has a rule for the direction.
    pub(crate) has_rules: bool,
    /// Whether the endpoint has a `Block` rule, of any layer and direction.
    pub(crate) has_block: bool,
}

impl Fallback {
    /// The fallback of `layer` for `direction` on `endpoint` (see the module documentation).
    pub(crate) fn of(layer: AclRuleType, direction: AclDirection, endpoint: &Endpoint<'_>) -> Self {
        let known = |verdict, evidence| Fallback {
            rule_type: layer,
            verdict,
            documented: true,
            evidence,
        };
        let unknown = |evidence| Fallback {
            rule_type: layer,
            verdict: Verdict::Denied,
            documented: false,
            evidence,
        };
        let vfp = matches!(
            endpoint.network_type,
            NetworkType::L2Bridge | NetworkType::Overlay
        );
        match layer {
            AclRuleType::Switch if endpoint.build >= WindowsBuild::SERVER_2025 => {
                match (direction, endpoint.has_rules) {
                    (AclDirection::Out, _) => known(
                        Verdict::Denied,
                        "Windows Server 2025 drops outbound traffic no ACL allows once an endpoint \
                         has any (microsoft/Windows-Containers#616)",
                    ),
                    (AclDirection::In, true) => known(
                        Verdict::Denied,
                        "Windows Server 2025 makes an endpoint with ACLs default-deny \
                         (microsoft/Windows-Containers#616)",
                    ),
                    (AclDirection::In, false) => unknown(
                        "what Windows Server 2025 does inbound on an endpoint whose ACLs have no \
                         inbound rule is not documented (#616 speaks of outbound traffic): write \
                         an allow-all or a block for the direction",
                    ),
                }
            }
            AclRuleType::Switch if vfp && endpoint.has_block => known(
                Verdict::Denied,
                "an L2Bridge or Overlay endpoint with a Block ACL drops what no ACL allows \
                 (azure-container-networking PR #2617, hcsshim#1059)",
            ),
            AclRuleType::Switch if vfp => unknown(
                "what an L2Bridge or Overlay endpoint whose ACLs block nothing does with what \
                 they do not match is not documented: write an allow-all or a block per direction",
            ),
            AclRuleType::Switch if *endpoint.network_type == NetworkType::Nat => known(
                Verdict::Allowed,
                "a NAT endpoint lets through what no ACL matches before Windows Server 2025 \
                 (microsoft/Windows-Containers#616: a lone Block worked on WS2019)",
            ),
            AclRuleType::Switch => unknown(
                "what this network type does with what no ACL matches before Windows Server \
                 2025 is not documented: write an allow-all or a block per direction",
            ),
            AclRuleType::Host
                if *endpoint.network_type == NetworkType::Nat && !endpoint.has_rules =>
            {
                known(
                    Verdict::Allowed,
                    "a NAT endpoint's Host layer without rules lets traffic through \
                     (microsoft/Windows-Containers#616)",
                )
            }
            AclRuleType::Host => unknown(
                "what the Host layer of an endpoint with ACLs does with what no Host rule allows \
                 is not documented (Calico and Azure NPM add Host allow-alls, \"Required by \
                 l2bridge network\"; Azure CNI writes none on its L2Bridge): write Host \
                 allow-alls, In and Out, as Calico and Azure NPM do",
            ),
        }
    }
}

impl fmt::Display for Fallback {
    /// `no Switch rule matches: denied (…evidence…)`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = if self.documented {
            self.verdict.to_string()
        } else {
            format!("undocumented, {} here", self.verdict)
        };
        write!(
            f,
            "no {:?} rule matches: {how} ({})",
            self.rule_type, self.evidence
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fallback(
        layer: AclRuleType,
        direction: AclDirection,
        build: WindowsBuild,
        network_type: NetworkType,
        has_rules: bool,
        has_block: bool,
    ) -> (Verdict, bool) {
        let endpoint = Endpoint {
            build,
            network_type: &network_type,
            has_rules,
            has_block,
        };
        let fallback = Fallback::of(layer, direction, &endpoint);
        (fallback.verdict, fallback.documented)
    }

    const DENIED: (Verdict, bool) = (Verdict::Denied, true);
    const ALLOWED: (Verdict, bool) = (Verdict::Allowed, true);
    const UNKNOWN: (Verdict, bool) = (Verdict::Denied, false);

    #[test]
    fn windows_server_2025_denies_outbound_and_leaves_an_inbound_direction_without_rules_unknown() {
        use AclDirection::{In, Out};
        let build = WindowsBuild::SERVER_2025;
        for network in [
            NetworkType::L2Bridge,
            NetworkType::Overlay,
            NetworkType::Nat,
        ] {
            let switch = |direction, has_rules| {
                fallback(
                    AclRuleType::Switch,
                    direction,
                    build,
                    network.clone(),
                    has_rules,
                    false,
                )
            };
            assert_eq!(switch(Out, true), DENIED);
            assert_eq!(switch(Out, false), DENIED, "any ACL: all outbound traffic");
            assert_eq!(switch(In, true), DENIED);
            assert_eq!(switch(In, false), UNKNOWN);
        }
    }

    #[test]
    fn before_2025_a_vfp_endpoint_with_a_block_denies_and_nat_lets_through() {
        let build = WindowsBuild::SERVER_2022;
        for direction in [AclDirection::In, AclDirection::Out] {
            for network in [NetworkType::L2Bridge, NetworkType::Overlay] {
                let switch = |has_block| {
                    fallback(
                        AclRuleType::Switch,
                        direction,
                        build,
                        network.clone(),
                        true,
                        has_block,
                    )
                };
                assert_eq!(switch(true), DENIED, "{network} {direction:?}");
                assert_eq!(switch(false), UNKNOWN, "{network} {direction:?}");
            }
            let nat = fallback(
                AclRuleType::Switch,
                direction,
                build,
                NetworkType::Nat,
                true,
                true,
            );
            assert_eq!(nat, ALLOWED);
            let tunnel = fallback(
                AclRuleType::Switch,
                direction,
                build,
                NetworkType::L2Tunnel,
                true,
                true,
            );
            assert_eq!(tunnel, UNKNOWN);
        }
    }

    #[test]
    fn the_host_layer_is_unknown_but_on_nat_without_host_rules() {
        for build in [WindowsBuild::SERVER_2022, WindowsBuild::SERVER_2025] {
            for has_rules in [false, true] {
                let host = |network| {
                    fallback(
                        AclRuleType::Host,
                        AclDirection::In,
                        build,
                        network,
                        has_rules,
                        true,
                    )
                };
                assert_eq!(host(NetworkType::L2Bridge), UNKNOWN);
                assert_eq!(host(NetworkType::Overlay), UNKNOWN);
                let nat = if has_rules { UNKNOWN } else { ALLOWED };
                assert_eq!(host(NetworkType::Nat), nat);
            }
        }
    }
}
