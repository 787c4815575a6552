//! doctor's checks of what kube-proxy's winkernel proxier needs on an `Overlay` network, from
//! the node's one read of HNS: HNS supports remote subnets (else kube-proxy refuses the network),
//! a source VIP is reserved in the pods' store by a node component inside the network's
//! subnets, no pod holds it, an endpoint holds it once kube-proxy has synced (kube-proxy
//! creates that endpoint, and programs no service while it cannot), kube-proxy once synced
//! holds a load balancer on the network (the `kubernetes` Service always exists). Load
//! balancers half-created or sending to an endpoint that is gone are HNS drift
//! ([`crate::drift`]), found on every network type.

use std::net::IpAddr;

use cni_win_core::ownership::Verdict;
use cni_win_core::snapshot::NetworkView;
use hns::schema::{EndpointFlags, HostComputeEndpoint};
use hns::{Feature, Guid};
use ipam_host_local::layout::Content;

use super::{Reached, Report, Severity};

const RESERVE: &str = "run `cni-win source-vip` and start kube-proxy with its flags \
    (`cni-win source-vip --format flags`; deploy/kube-proxy.yaml does both)";

/// Every kube-proxy check of overlay network `name`.
pub(super) fn check(node: &Reached<'_>, name: &str, view: &NetworkView<'_>, report: &mut Report) {
    let check = |what: &str| format!("network {name:?}: kube-proxy {what}");
    let Some(network) = view.network else {
        return;
    };
    if node.hns.features.supports(Feature::RemoteSubnet) {
        report.pass(
            check("remote subnets"),
            "HNS supports RemoteSubnet".to_owned(),
        );
    } else {
        report.add(
            check("remote subnets"),
            Severity::Fail,
            format!(
                "HNS {} has no RemoteSubnet support: kube-proxy's winkernel proxier refuses an \
                 overlay network without it",
                node.hns.features.version()
            ),
            "update Windows (HNS 9.2 or later, Windows Server 2019 on)",
        );
    }
    let Some(reservations) = &view.reservations else {
        return;
    };
    let vips: Vec<(IpAddr, String)> = reservations
        .iter()
        .filter_map(|(ip, content)| match content {
            Content::Owned(owner) if owner.is_node_component() => Some((*ip, owner.to_string())),
            _ => None,
        })
        .collect();
    let in_network = |ip: IpAddr| {
        network
            .subnets()
            .any(|subnet| subnet.ip_address_prefix.network().contains(ip))
    };
    let listed = || {
        vips.iter()
            .map(|(ip, owner)| format!("{ip} ({owner})"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let current: Vec<IpAddr> = vips
        .iter()
        .map(|(ip, _)| *ip)
        .filter(|ip| in_network(*ip))
        .collect();
    let vip = match current.as_slice() {
        [] if vips.is_empty() => {
            report.add(
                check("source VIP"),
                Severity::Warn,
                "no source VIP is reserved in the pods' store: kube-proxy (winkernel) refuses an \
                 overlay network without --source-vip, and one reserved elsewhere may be \
                 handed to a pod"
                    .to_owned(),
                RESERVE,
            );
            return;
        }
        [] => {
            report.add(
                check("source VIP"),
                Severity::Warn,
                format!(
                    "the source VIP reserved, {}, is outside the network's subnets (the node's \
                     pod subnet changed)",
                    listed()
                ),
                "run `cni-win source-vip --release`, then `cni-win source-vip`, and restart \
                 kube-proxy with the new --source-vip",
            );
            return;
        }
        [vip] if vips.len() == 1 => {
            report.pass(check("source VIP"), format!("reserved: {}", listed()));
            *vip
        }
        [vip, ..] => {
            report.add(
                check("source VIP"),
                Severity::Warn,
                format!("several node components' reservations: {}", listed()),
                "keep the one kube-proxy runs with (its --source-vip): release the others with \
                 `cni-win source-vip --release` and reserve again",
            );
            *vip
        }
    };
    check_holder(view, vip, &check, report);
    check_load_balancers(node, view, vip, &check, report);
}

/// Who holds the VIP: a pod must not; kube-proxy's endpoint should, once it has synced.
fn check_holder(
    view: &NetworkView<'_>,
    vip: IpAddr,
    check: &dyn Fn(&str) -> String,
    report: &mut Report,
) {
    let holds = |endpoint: &HostComputeEndpoint| {
        endpoint
            .ip_configurations
            .iter()
            .any(|config| config.ip_address == vip)
    };
    let pods: Vec<String> = view
        .verdicts()
        .into_iter()
        .filter(|(endpoint, verdict)| !matches!(verdict, Verdict::NotOurs) && holds(endpoint))
        .map(|(endpoint, _)| format!("{} ({})", endpoint.name, endpoint.id))
        .collect();
    if !pods.is_empty() {
        report.add(
            check("source VIP endpoint"),
            Severity::Fail,
            format!("the source VIP {vip} is held by a pod's endpoint: {}", pods.join(", ")),
            "delete that pod (it got the address before the VIP was reserved), then restart kube-proxy",
        );
        return;
    }
    match view.endpoints().find(|endpoint| holds(endpoint)) {
        Some(endpoint) => {
            let place = if endpoint.flags.contains(EndpointFlags::REMOTE_ENDPOINT) {
                "remote"
            } else {
                "local"
            };
            report.pass(
                check("source VIP endpoint"),
                format!("{place} endpoint {} holds {vip}", endpoint.id),
            );
        }
        None => report.add(
            check("source VIP endpoint"),
            Severity::Warn,
            format!(
                "no endpoint holds the source VIP {vip} yet: kube-proxy creates it on its first \
                 sync and programs no service until it can"
            ),
            "start kube-proxy with --source-vip and --network-name (`cni-win source-vip --format \
             flags`); if it runs, look in its log for \"Source Vip endpoint creation failed\"",
        ),
    }
}

/// kube-proxy, once synced, holds load balancers on this network. Their backends, on every
/// network type, are judged by the drift report (`load-balancer-backend-gone`).
fn check_load_balancers(
    node: &Reached<'_>,
    view: &NetworkView<'_>,
    vip: IpAddr,
    check: &dyn Fn(&str) -> String,
    report: &mut Report,
) {
    let on_network: Vec<Guid> = view.endpoints().map(|endpoint| endpoint.id).collect();
    let synced = view.endpoints().any(|endpoint| {
        endpoint
            .ip_configurations
            .iter()
            .any(|config| config.ip_address == vip)
    });
    let programmed = node
        .hns
        .load_balancers
        .iter()
        .filter(|balancer| {
            balancer.source_vip == Some(vip)
                || balancer
                    .host_compute_endpoints
                    .iter()
                    .any(|id| on_network.contains(id))
        })
        .count();
    if synced && programmed == 0 {
        report.add(
            check("load balancers"),
            Severity::Warn,
            format!(
                "kube-proxy has synced (its endpoint holds the source VIP {vip}) but holds no \
                 load balancer on this network, though every cluster has the `kubernetes` \
                 Service: it is failing to program Services"
            ),
            "look in kube-proxy's log for \"Policy creation failed\" and the HNS error it names",
        );
        return;
    }
    let balancers = node
        .hns
        .load_balancers
        .iter()
        .filter(|balancer| balancer.source_vip == Some(vip))
        .count();
    report.pass(
        check("load balancers"),
        format!(
            "{balancers} load balancer(s) on the source VIP ({} endpoint(s) on the network; \
             their backends are the drift check's)",
            view.endpoints().count()
        ),
    );
}
