//! doctor's NetworkPolicy checks, from the snapshot the node's policy agent writes (the path
//! a config's `networkPolicySnapshot` names) and the node's one read of HNS: doctor needs no
//! access to the API server.
//!
//! For each snapshot: whether ADD can use it; the programming mode the host's HNS version
//! allows; each refused policy; per local pod, the policies that select it and whether its
//! endpoint holds the rules the agent expects; and, when policies select pods here, whether
//! kube-proxy's load balancers use DSR (without it, Service traffic reaches pods from the
//! node's address or kube-proxy's source VIP, not the client's).

use std::collections::BTreeSet;
use std::path::Path;

use cni_win_core::network_policy::{self as format, PolicySnapshot};
use cni_win_netpol::Mode;
use hns::schema::{EndpointPolicy, LoadBalancerFlags};

use super::{Reached, Report, Severity};
use crate::node::Network;

const AGENT: &str = "run the node daemon with --network-policy (the DaemonSets' `daemon` \
                     container does: see docs/network-policy.md)";

/// Every NetworkPolicy check of the networks whose configs name a snapshot.
pub(super) fn check(node: Option<&Reached<'_>>, networks: &[Network], report: &mut Report) {
    let paths: BTreeSet<&Path> = networks
        .iter()
        .filter_map(|network| network.config.policy().snapshot.as_deref())
        .collect();
    if paths.is_empty() {
        return;
    }
    if let Some(node) = node {
        let features = node.hns.features;
        let mode = Mode::for_features(features);
        let how = match mode {
            Mode::IpSets => {
                "pod peers are network IP sets (SetPolicy, HNS 13.0): a selector's membership \
                 change is one set update, no endpoint's rules are rewritten"
            }
            Mode::Inline => {
                "HNS has no IP sets before 13.0: rules list their peers, so a selector's \
                 membership change rewrites the rules of each endpoint that names the peer"
            }
        };
        report.pass(
            "NetworkPolicy: programming mode",
            format!("HNS {}: {}; {how}", features.version(), mode.as_str()),
        );
    }
    for path in paths {
        let check = format!("NetworkPolicy: snapshot {}", path.display());
        match format::read(path) {
            Ok(Some(snapshot)) => {
                report.pass(
                    check,
                    format!(
                        "written by the policy agent of node {:?} ({} mode): {} local pod(s), \
                         {} refused policy(ies)",
                        snapshot.node,
                        snapshot.mode,
                        snapshot.pods.len(),
                        snapshot.refused.len()
                    ),
                );
                check_snapshot(node, &snapshot, report);
            }
            Ok(None) => report.add(
                check,
                Severity::Warn,
                "missing: the policy agent has not written it, so new pods start without \
                 NetworkPolicy rules until it programs them"
                    .to_owned(),
                AGENT,
            ),
            Err(unusable) => report.add(
                check,
                Severity::Fail,
                format!("{unusable}: every ADD on the node fails with code 11 until it is usable"),
                "the policy agent rewrites it within a round; without an agent, remove \
                 networkPolicySnapshot from the conflist (NetworkPolicy off) or the file",
            ),
        }
    }
}

fn check_snapshot(node: Option<&Reached<'_>>, snapshot: &PolicySnapshot, report: &mut Report) {
    for (policy, reason) in &snapshot.refused {
        report.add(
            format!("NetworkPolicy {policy:?}"),
            Severity::Warn,
            format!(
                "refused: {reason}; the pods it selects are isolated with nothing allowed until \
                 it is fixed"
            ),
            "correct the policy (`kubectl describe networkpolicy` shows the Event)",
        );
    }
    for (pod, policy) in &snapshot.pods {
        let check = format!("pod {pod:?}: NetworkPolicy");
        let selected = if policy.policies.is_empty() {
            "selected by no policy".to_owned()
        } else {
            format!("selected by {}", policy.policies.join(", "))
        };
        let Some(endpoint) = policy.endpoint else {
            report.pass(
                check,
                format!("{selected}; no endpoint yet (ADD gives it its rules from the snapshot)"),
            );
            continue;
        };
        let Some(node) = node else {
            report.pass(check, format!("{selected}; endpoint {endpoint}"));
            continue;
        };
        let Some(held) = node.hns.endpoints.iter().find(|e| e.id == endpoint) else {
            report.add(
                check,
                Severity::Warn,
                format!("{selected}; its endpoint {endpoint} is gone from HNS"),
                "nothing to do if the pod is being deleted; the agent follows the pod",
            );
            continue;
        };
        let on_endpoint: BTreeSet<&str> = held
            .policies
            .iter()
            .filter_map(|policy| match policy {
                EndpointPolicy::Acl(acl) if cni_win_netpol::is_agents(acl) => acl.id.as_deref(),
                _ => None,
            })
            .collect();
        let expected: BTreeSet<&str> = policy.expected.iter().map(String::as_str).collect();
        let missing = expected.difference(&on_endpoint).count();
        let extra = on_endpoint.difference(&expected).count();
        if missing == 0 && extra == 0 {
            report.pass(
                check,
                format!(
                    "{selected}; endpoint {endpoint} holds its {} rule(s)",
                    expected.len()
                ),
            );
        } else {
            report.add(
                check,
                Severity::Warn,
                format!(
                    "{selected}; endpoint {endpoint} lacks {missing} of its {} rule(s) and holds \
                     {extra} it should not: HNS does not enforce what the policies say",
                    expected.len()
                ),
                "the policy agent puts them back within a round (and at once after any \
                 change); if it does not, look at its log and cniwin_netpol_programming_failures",
            );
        }
    }
    if let Some(node) = node
        && snapshot.pods.values().any(|pod| !pod.policies.is_empty())
    {
        check_dsr(node, report);
    }
}

/// Policies select pods here: Service traffic must keep its client's address, which
/// kube-proxy's winkernel proxier keeps only with DSR.
fn check_dsr(node: &Reached<'_>, report: &mut Report) {
    let check = "NetworkPolicy: kube-proxy DSR";
    let balancers = &node.hns.load_balancers;
    let without: Vec<String> = balancers
        .iter()
        .filter(|lb| !lb.flags.contains(LoadBalancerFlags::DSR))
        .map(|lb| {
            lb.frontend_vips
                .first()
                .map_or_else(|| lb.id.to_string(), ToString::to_string)
        })
        .collect();
    if balancers.is_empty() {
        report.pass(
            check,
            "no load balancer yet (kube-proxy has not synced)".to_owned(),
        );
    } else if without.is_empty() {
        report.pass(
            check,
            format!("all {} load balancers use DSR", balancers.len()),
        );
    } else {
        report.add(
            check,
            Severity::Warn,
            format!(
                "{} of {} load balancers lack the DSR flag (e.g. {}): kube-proxy runs without \
                 DSR, so a ClusterIP connection reaches its pod SNATed to the node's address \
                 (host-gw), which NetworkPolicy always allows, or to kube-proxy's source VIP \
                 (vxlan), which no pod selector matches: ingress rules that select client pods \
                 cannot see the client, and Service traffic is let through or refused regardless \
                 of them",
                without.len(),
                balancers.len(),
                without[0]
            ),
            "run kube-proxy with --enable-dsr (WinDSR, GA from Kubernetes 1.34; the feature \
             gate before)",
        );
    }
}
