//! doctor's NetworkPolicy checks, from the snapshot the node's policy agent writes (the path
//! a config's `networkPolicySnapshot` names) and the node's one read of HNS: doctor needs no
//! access to the API server.
//!
//! For each snapshot and each network whose config names it: whether ADD can use it there,
//! judged as ADD judges it (the HNS network it was rendered for, its age, an agent that has
//! not synced); the programming mode the host's HNS version
//! allows; each refused policy; per local pod, the policies that select it and whether its
//! endpoint holds the rules the agent expects (or why the agent could not write them, as it
//! recorded HNS's answer in the snapshot); and, when policies select pods here, whether
//! kube-proxy runs with DSR (without it, Service traffic reaches pods from the node's address
//! or kube-proxy's source VIP, not the client's: a failure) and which Services still reach
//! selected pods SNATed (an `externalTrafficPolicy: Cluster` address: a warning).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::SystemTime;

use cni_win_core::network_policy::{self as format, Form, Found, NodePolicy, Usable};
use cni_win_netpol::Mode;
use hns::Guid;
use hns::schema::{
    EndpointPolicy, HostComputeLoadBalancer, LoadBalancerFlags, LoadBalancerPortMappingFlags,
};

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
            Ok(Some(found)) => {
                let of_path: Vec<&str> = networks
                    .iter()
                    .filter(|network| network.config.policy().snapshot.as_deref() == Some(path))
                    .map(Network::name)
                    .collect();
                check_found(node, &of_path, &check, &found, report);
            }
            Ok(None) => report.add(
                check,
                Severity::Warn,
                "missing: the policy agent has never run on this node, so new pods start \
                 without NetworkPolicy rules until it programs them"
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

/// What ADD makes of a snapshot on each network whose config names it, as ADD judges it
/// (the HNS network it was rendered for, its age), then the policy view it holds.
fn check_found(
    node: Option<&Reached<'_>>,
    networks: &[&str],
    check: &str,
    found: &Found,
    report: &mut Report,
) {
    let snapshot = &found.snapshot;
    let now = SystemTime::now();
    let age = now.duration_since(found.stamped).map_or_else(
        |_| "ahead of this node's clock".to_owned(),
        |age| format!("{} s ago", age.as_secs()),
    );
    let mut policy = None;
    for network in networks {
        let check = format!("{check} on network {network:?}");
        let Some(id) = node.and_then(|node| {
            node.hns
                .networks
                .iter()
                .find(|held| held.name == *network)
                .map(|held| held.id)
        }) else {
            continue;
        };
        match found.usable(network, id, now) {
            Ok(Usable::Policy(usable)) => {
                report.pass(
                    check,
                    format!(
                        "rendered for HNS network {id} by the policy agent of node {:?} ({} mode), \
                         last stamped {age} (ADD uses it for {} s after): {} local pod(s), {} \
                         refused policy(ies)",
                        snapshot.node,
                        usable.mode,
                        snapshot.max_age_seconds,
                        usable.pods.len(),
                        usable.refused.len()
                    ),
                );
                policy = Some(usable);
            }
            Ok(Usable::NotSynced { running }) => report.add(
                check,
                Severity::Warn,
                format!(
                    "the policy agent of node {:?} has run for {} s without syncing: new pods \
                     start without NetworkPolicy rules, and ADD refuses them once it has run {} s",
                    snapshot.node,
                    running.as_secs(),
                    snapshot.max_age_seconds
                ),
                "look at the agent's log and cniwin_netpol_api_up: the API server, its RBAC \
                 (deploy/rbac.yaml) and --node-name",
            ),
            Err(unusable) => report.add(
                check,
                Severity::Fail,
                format!("{unusable}: every ADD on the network fails with code 11 until it is"),
                "the policy agent renders and stamps it within a round of running synced with \
                 the API server; look at its log and cniwin_netpol_api_up",
            ),
        }
    }
    let Some(policy) = policy else {
        return;
    };
    if policy.form == Form::Narrowed {
        report.add(
            format!("{check}: form"),
            Severity::Warn,
            format!(
                "narrowed: the full form is larger than the {} bytes ADD reads, so new pods get \
                 no rule allowing pod peers until the agent sees them",
                format::MAX_SIZE
            ),
            "fewer or broader policies for the node's namespaces; or HNS 13.0 or later, where \
             rules name IP sets",
        );
    }
    check_snapshot(node, policy, report);
}

fn check_snapshot(node: Option<&Reached<'_>>, snapshot: &NodePolicy, report: &mut Report) {
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
        if let Some(why) = &policy.failing {
            report.add(
                check,
                Severity::Warn,
                format!(
                    "{selected}; endpoint {endpoint}: the agent could not write its rules: {why}; \
                     it keeps the rules it holds"
                ),
                "the policy agent tries again on a backoff (every other endpoint is programmed \
                 meanwhile); if HNS keeps refusing, its log names the write, and \
                 cniwin_netpol_hns_refusals_total counts HNS's HRESULTs",
            );
            continue;
        }
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
    let selected: BTreeSet<Guid> = snapshot
        .pods
        .values()
        .filter(|pod| !pod.policies.is_empty())
        .filter_map(|pod| pod.endpoint)
        .collect();
    if let Some(node) = node
        && snapshot.pods.values().any(|pod| !pod.policies.is_empty())
    {
        check_dsr(node, report);
        check_snat(node, &selected, report);
    }
}

/// Whether `lb` is a NodePort's: kube-proxy marks the node's own frontend LocalRoutedVIP.
fn is_node_port(lb: &HostComputeLoadBalancer) -> bool {
    lb.port_mappings.iter().any(|mapping| {
        mapping
            .flags
            .contains(LoadBalancerPortMappingFlags::LOCAL_ROUTED_VIP)
    })
}

/// Whether `lb` lacks DSR though a load balancer of the same ports (its Service's ClusterIP)
/// has it: an external IP or load balancer ingress of a Service with
/// `externalTrafficPolicy: Cluster` under a kube-proxy with `--enable-dsr`.
fn external_beside_dsr(lb: &HostComputeLoadBalancer, all: &[HostComputeLoadBalancer]) -> bool {
    !lb.flags.contains(LoadBalancerFlags::DSR)
        && all.iter().any(|twin| {
            twin.flags.contains(LoadBalancerFlags::DSR) && twin.port_mappings == lb.port_mappings
        })
}

/// The load balancer's first frontend, or its ID, for a finding.
fn named(lb: &HostComputeLoadBalancer) -> String {
    lb.frontend_vips
        .first()
        .map_or_else(|| lb.id.to_string(), ToString::to_string)
}

/// Policies select pods here: Service traffic must keep its client's address, which
/// kube-proxy's winkernel proxier keeps only with `--enable-dsr`.
///
/// What the flag decides is seen on the load balancers of Service addresses (not
/// NodePorts'): kube-proxy gives every ClusterIP's the DSR flag with `--enable-dsr`, and an
/// external IP's or a load balancer ingress's only with `externalTrafficPolicy: Local`
/// (`localTrafficDSR`). So a Service address without DSR whose Service has none with it
/// either (no load balancer of the same ports with DSR) shows kube-proxy without the flag;
/// the `kubernetes` Service's ClusterIP, in every cluster, always shows it.
fn check_dsr(node: &Reached<'_>, report: &mut Report) {
    let check = "NetworkPolicy: kube-proxy DSR";
    let all = &node.hns.load_balancers;
    let vips: Vec<&HostComputeLoadBalancer> = all.iter().filter(|lb| !is_node_port(lb)).collect();
    let without: Vec<String> = vips
        .iter()
        .filter(|lb| !lb.flags.contains(LoadBalancerFlags::DSR) && !external_beside_dsr(lb, all))
        .map(|lb| named(lb))
        .collect();
    if vips.is_empty() {
        report.pass(
            check,
            "no Service load balancer yet (kube-proxy has not synced)".to_owned(),
        );
    } else if without.is_empty() {
        report.pass(
            check,
            format!(
                "kube-proxy runs with DSR: every Service's ClusterIP load balancer has the flag \
                 ({} Service load balancer(s))",
                vips.len()
            ),
        );
    } else {
        report.add(
            check,
            Severity::Fail,
            format!(
                "{} of {} Service load balancers lack the DSR flag (e.g. {}): kube-proxy runs \
                 without --enable-dsr, so a ClusterIP connection reaches its pod SNATed to the \
                 node's address (host-gw), which NetworkPolicy always lets in, or to \
                 kube-proxy's source VIP (vxlan), which no pod selector matches: ingress rules \
                 that select client pods cannot see the client, and Service traffic is let \
                 through, or refused, regardless of them",
                without.len(),
                vips.len(),
                without[0]
            ),
            "run kube-proxy with --enable-dsr (deploy/kube-proxy-*.yaml do; below Kubernetes \
             1.33 also --feature-gates=WinDSR=true, which `cni-win source-vip --format flags \
             --kube-proxy-version` adds)",
        );
    }
}

/// Even with DSR, a NodePort, external IP or load balancer ingress of a Service with
/// `externalTrafficPolicy: Cluster` reaches its backends SNATed to the node (kube-proxy
/// gives those load balancers DSR only with `Local`), which ingress policy always lets in:
/// for a backend here that policies select, that path bypasses them.
fn check_snat(node: &Reached<'_>, selected: &BTreeSet<Guid>, report: &mut Report) {
    let check = "NetworkPolicy: Services with externalTrafficPolicy Cluster";
    let all = &node.hns.load_balancers;
    let bypassing: Vec<String> = all
        .iter()
        .filter(|lb| {
            (is_node_port(lb) && !lb.flags.contains(LoadBalancerFlags::DSR))
                || external_beside_dsr(lb, all)
        })
        .filter(|lb| {
            lb.host_compute_endpoints
                .iter()
                .any(|e| selected.contains(e))
        })
        .map(|lb| {
            let ports: Vec<String> = lb
                .port_mappings
                .iter()
                .map(|m| m.external_port.to_string())
                .collect();
            format!("{} port {}", named(lb), ports.join(","))
        })
        .collect();
    if bypassing.is_empty() {
        report.pass(
            check,
            "no NodePort or external address reaches a pod that policies select here SNATed to \
             the node"
                .to_owned(),
        );
    } else {
        report.add(
            check,
            Severity::Warn,
            format!(
                "{} load balancer(s) without DSR reach pods that policies select here SNATed to \
                 the node, which ingress policy always lets in: {}",
                bypassing.len(),
                bypassing.join("; ")
            ),
            "set externalTrafficPolicy: Local on those Services (kube-proxy then keeps the \
             client's address with DSR, and sends only to local backends)",
        );
    }
}
