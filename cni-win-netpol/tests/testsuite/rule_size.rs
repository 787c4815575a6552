//! No rule the agent writes lists more addresses or ports than production software puts in one
//! HNS rule ([`cni_win_netpol::render::MAX_RULE_ENTRIES`], Calico's 4,000): a longer rule is
//! written as several that match the same, in every mode and in the rules ADD writes.

#![cfg(not(windows))]

use std::net::Ipv4Addr;

use cni_win_netpol::render::MAX_RULE_ENTRIES;
use cni_win_netpol::{Mode, NewPodPeers, PodKey, Translation};
use hns::WindowsBuild;
use hns::schema::EndpointPolicy;
use hns::schema::policy::{AclAction, AclDirection, AclPolicy};
use hns_emulator::acl::{EndpointAcls, IpSets, Packet, Verdict, evaluate};

use crate::support::Changes;

/// 300 host addresses spread over the IPv4 space, none of the cluster's or the node's.
fn excepts() -> Vec<Ipv4Addr> {
    (0..300u32)
        .map(|i| Ipv4Addr::from(0x0b00_0000 + i * 0x00a3_5c19))
        .collect()
}

/// x/a may send anywhere but to the excepts.
fn anywhere_but_excepts() -> k8s_openapi::api::networking::v1::NetworkPolicy {
    let except: Vec<String> = excepts().iter().map(|ip| format!("{ip}/32")).collect();
    serde_json::from_value(serde_json::json!({
        "metadata": {"namespace": "x", "name": "anywhere-but"},
        "spec": {
            "podSelector": {"matchLabels": {"pod": "a"}},
            "policyTypes": ["Egress"],
            "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": except}}]}]
        }
    }))
    .unwrap()
}

fn entries(list: Option<&str>) -> usize {
    list.map_or(0, |list| list.split(',').count())
}

/// The egress allows among `acls`: the rules the `ipBlock` became.
fn egress_allows(acls: &[AclPolicy]) -> Vec<&AclPolicy> {
    acls.iter()
        .filter(|acl| {
            acl.direction == AclDirection::Out
                && acl.action == AclAction::Allow
                && acl.priority == Some(4300)
        })
        .collect()
}

/// `ipBlock` `0.0.0.0/0` less 300 `/32`s is thousands of prefixes: two rules of at most
/// 4,000 each, at one priority, on the programmed endpoint in both modes and in what ADD
/// writes; and every verdict is the policy's: each except refused, its neighbours allowed,
/// on both builds.
#[test]
fn an_except_list_past_the_limit_is_two_rules_with_the_policys_verdicts() {
    let changes = Changes::default();
    let (cluster, refused) = crate::support::cluster(&changes, &[anywhere_but_excepts()]);
    assert!(refused.is_empty(), "{refused:?}");
    let x_a = crate::support::endpoint_id("x/a");
    let from = crate::support::pod_ip("x/a", false);

    let node = crate::support::node(false);
    let pending = Translation::new(&cluster, &node)
        .pending_pod_acls(
            &PodKey {
                namespace: "x".into(),
                name: "a".into(),
            },
            &[],
            &mut NewPodPeers::Inline,
        )
        .unwrap();
    let mut renderings = vec![("ADD".to_owned(), pending)];
    for mode in [Mode::Inline, Mode::IpSets] {
        let mut hns = crate::support::fresh_hns();
        let (_, writes) = crate::support::round(&cluster, &changes, &hns, mode);
        crate::support::apply(&mut hns, &writes);
        renderings.push((format!("{mode:?}"), hns.endpoints[&x_a].clone()));
    }

    for (rendering, acls) in renderings {
        let allows = egress_allows(&acls);
        let total: usize = allows
            .iter()
            .map(|acl| entries(acl.remote_addresses.as_deref()))
            .sum();
        assert!(total > MAX_RULE_ENTRIES, "{rendering}: {total} prefixes");
        assert_eq!(
            allows.len(),
            2,
            "{rendering}: {total} prefixes in two rules"
        );
        for acl in &allows {
            assert!(
                entries(acl.remote_addresses.as_deref()) <= MAX_RULE_ENTRIES,
                "{rendering}"
            );
        }
        assert_ne!(allows[0].id, allows[1].id, "{rendering}");

        let policies: Vec<EndpointPolicy> = acls.into_iter().map(EndpointPolicy::Acl).collect();
        let sets = IpSets::default();
        for network_type in &crate::support::NETWORK_TYPES {
            let acls = EndpointAcls::new(&policies, &sets, network_type.clone())
                .expect("the emulator takes the rules");
            for build in [WindowsBuild::SERVER_2022, WindowsBuild::SERVER_2025] {
                let label = format!("{rendering} {network_type} {build}");
                let verdict = |to: Ipv4Addr| {
                    let packet = Packet::tcp(from, to.into(), 443);
                    let decision = evaluate(&acls, AclDirection::Out, &packet, build);
                    assert!(decision.undocumented.is_empty(), "{label}: {decision:?}");
                    decision.verdict
                };
                for except in excepts() {
                    assert_eq!(verdict(except), Verdict::Denied, "{label} {except}");
                    for neighbour in [u32::from(except) - 1, u32::from(except) + 1] {
                        let neighbour = Ipv4Addr::from(neighbour);
                        assert_eq!(verdict(neighbour), Verdict::Allowed, "{label} {neighbour}");
                    }
                }
            }
        }
    }
}
