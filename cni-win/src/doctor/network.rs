//! doctor's checks of one of cni-win's networks, over the node's one read.

use std::collections::BTreeMap;
use std::net::IpAddr;

use cni_win_core::ConfigReview;
use cni_win_core::ownership::Verdict;
use cni_win_core::snapshot::{Exhausted, NetworkView};
use hns::schema::{EndpointFlags, HostComputeEndpoint};

use super::{Reached, Report, Severity, kube_proxy};
use crate::node::Network;
use crate::shipped::Plugin;
use crate::sweep::{self, AttachmentLocks};

/// Every check of one network: its config, STATUS, free addresses, its store against HNS
/// and, on an overlay network, what kube-proxy needs.
pub(super) fn check(node: Option<&Reached<'_>>, network: &Network, report: &mut Report) {
    let name = network.name();
    let check = |what: &str| format!("network {name:?}: {what}");
    let review = match network.config.review() {
        Ok(review) => review,
        Err(e) => {
            report.add(
                check("config"),
                Severity::Fail,
                e.msg().to_owned(),
                "correct the conflist (`cni-win install` writes one the plugins accept)",
            );
            return;
        }
    };
    report.pass(
        check("config"),
        "the plugin's config code accepts it".to_owned(),
    );
    for ignored in &review.ignored_policy_keys {
        report.add(
            check("policy keys"),
            Severity::Warn,
            ignored.clone(),
            "spell the key as its policy type has it, or remove it: the policy goes to HNS as \
             written (as the reference plugins send it) and does less than it says",
        );
    }
    check_acl_fallback(network, review, report);
    let Some(node) = node else {
        return;
    };
    let view = match node.hns.view(&network.config) {
        Ok(view) => view,
        Err(e) => {
            report.add(
                check("reservations"),
                Severity::Fail,
                e.msg().to_owned(),
                "check the host-local store's directory and permissions",
            );
            return;
        }
    };
    let status = view.status();
    let via = if network.via_flannel {
        " (Flannel's delegate)"
    } else {
        ""
    };
    match status {
        Ok(exhausted) => {
            report.pass(check("ready"), format!("STATUS says ready{via}"));
            check_free_addresses(&exhausted, &check("free addresses"), report);
        }
        Err(e) => report.add(
            check("ready"),
            Severity::Fail,
            e.msg().to_owned(),
            "flanneld (or the node's network setup) must create the network and subnet.env; \
             the config's ipam subnet must be this node's part of the HNS network; a range with \
             no free address (with ipam.notReadyWhenFull) needs `cni-win sweep --apply`",
        ),
    }
    check_store(node, network, &view, report);
    if network.plugin == Plugin::Overlay {
        kube_proxy::check(node, name, &view, report);
    }
}

/// A full range set leaves STATUS ready (so the node keeps its pods) but fails every new pod's
/// ADD: a warning with the fix, since leaked reservations are the usual cause.
fn check_free_addresses(exhausted: &[Exhausted], check: &str, report: &mut Report) {
    if exhausted.is_empty() {
        report.pass(check, "every IPAM range set has a free address".to_owned());
        return;
    }
    let evidence = exhausted
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    report.add(
        check,
        Severity::Warn,
        format!("{evidence}: new pods fail with code 100 (STATUS stays ready)"),
        "run `cni-win sweep --apply` to release leaked addresses, or widen the IPAM range",
    );
}

/// The config's own ACLs keep the pods' other traffic only with an allow-all rule per
/// direction they cover: HNS makes an endpoint with ACLs default-deny on Windows Server 2025
/// (microsoft/Windows-Containers#616) and, as far as production writers found, on Windows
/// Server 2022's L2Bridge and Overlay networks once an ACL blocks (azure-container-networking
/// PR #2617), so the warning holds on every build, as cni-win adds such rules beside the ACLs
/// it writes.
fn check_acl_fallback(network: &Network, review: &ConfigReview, report: &mut Report) {
    if review.acl_directions_without_fallback.is_empty() {
        return;
    }
    let directions = review
        .acl_directions_without_fallback
        .iter()
        .map(|direction| format!("{direction:?}"))
        .collect::<Vec<_>>()
        .join(" and ");
    report.add(
        format!("network {:?}: ACL fallback", network.name()),
        Severity::Warn,
        format!(
            "the config's ACL policies have no allow-all rule {directions}: HNS denies every \
             packet no ACL allows on an endpoint with ACLs (Windows Server 2025; Windows Server \
             2022's L2Bridge and Overlay networks once an ACL blocks), so the pods lose all \
             other traffic {directions}"
        ),
        "add an allow-all ACL per direction at the lowest precedence, e.g. {\"name\": \
         \"EndpointPolicy\", \"value\": {\"Type\": \"ACL\", \"Settings\": {\"Action\": \
         \"Allow\", \"Direction\": \"In\", \"Protocols\": \"256\", \"RuleType\": \
         \"Switch\", \"Priority\": 65500}}} (cni-win adds these beside the ACLs it writes), \
         unless a default-deny is what you mean",
    );
}

/// The store against HNS, as the snapshot shows them.
fn check_store(node: &Reached<'_>, network: &Network, view: &NetworkView<'_>, report: &mut Report) {
    let name = network.name();
    let check = |what: &str| format!("network {name:?}: {what}");
    if view.network.is_none() {
        return;
    }
    // `None`: a delegated IPAM, whose store is its own.
    let reservations = view.reservations.as_ref().map(|_| view.pod_reservations());
    let mut healthy = true;
    // Two endpoints holding one IP; a remote endpoint holding a local pod's IP.
    let mut holders: BTreeMap<IpAddr, Vec<&HostComputeEndpoint>> = BTreeMap::new();
    for endpoint in &node.hns.endpoints {
        for ip in endpoint.ip_configurations.iter().map(|c| c.ip_address) {
            holders.entry(ip).or_default().push(endpoint);
        }
    }
    for (ip, holding) in &holders {
        let names = || {
            holding
                .iter()
                .map(|e| format!("{} ({})", e.name, e.id))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let local_pod_ip = reservations.iter().flatten().any(|r| r.ip == *ip);
        let remote = holding
            .iter()
            .any(|e| e.flags.contains(EndpointFlags::REMOTE_ENDPOINT));
        if local_pod_ip && remote {
            healthy = false;
            report.add(
                check("remote endpoint"),
                Severity::Fail,
                format!(
                    "{ip} is a local pod's address but a remote endpoint holds it: {}",
                    names()
                ),
                "delete the remote endpoint (hnsctl endpoint delete ID); the overlay's controller \
                 made it from a stale lease of another node",
            );
        } else if holding.len() > 1 {
            healthy = false;
            report.add(
                check("duplicate address"),
                Severity::Fail,
                format!("{ip} is held by {} endpoints: {}", holding.len(), names()),
                "delete the endpoint no pod uses (`cni-win sweep --apply` removes dead ones)",
            );
        }
    }
    let owned: Vec<_> = view
        .verdicts()
        .into_iter()
        .filter_map(|(endpoint, verdict)| match verdict {
            Verdict::NotOurs => None,
            Verdict::Alive(attachment) | Verdict::Dead(attachment, _) => {
                Some((attachment, endpoint))
            }
        })
        .collect();
    if let Some(reservations) = &reservations {
        for (owner, endpoint) in &owned {
            if !reservations.iter().any(|r| r.attachment == *owner) {
                healthy = false;
                report.add(
                    check("endpoint without reservation"),
                    Severity::Warn,
                    format!(
                        "endpoint {} ({}) holds {} but host-local holds no address for its attachment",
                        endpoint.name,
                        endpoint.id,
                        endpoint_ips(endpoint)
                    ),
                    "its address may be handed out twice: DEL the pod (or delete the endpoint) and recreate it",
                );
            }
        }
    }
    for (_, row) in sweep::find(view, name, &AttachmentLocks) {
        healthy = false;
        report.add(
            check("stale"),
            Severity::Warn,
            format!("{}: {}", row.object, row.why),
            "run `cni-win sweep --apply` (or as a DaemonSet with --every)",
        );
    }
    if healthy {
        report.pass(
            check("store"),
            format!(
                "{} endpoint(s) of cni-win and {} reservation(s) agree",
                owned.len(),
                reservations.as_ref().map_or(0, Vec::len)
            ),
        );
    }
}

fn endpoint_ips(endpoint: &HostComputeEndpoint) -> String {
    endpoint
        .ip_configurations
        .iter()
        .map(|c| c.ip_address.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
