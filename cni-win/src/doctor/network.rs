//! doctor's checks of one of cni-win's networks, over the node's one read.

use cni_win_core::ConfigReview;
use cni_win_core::ownership::Verdict;
use cni_win_core::snapshot::{Exhausted, NetworkView};

use super::{Reached, Report, Severity, kube_proxy};
use crate::drift::Drift;
use crate::node::Network;
use crate::shipped::Plugin;
use crate::sweep::{self, AttachmentLocks};

/// Every check of one network: its config, STATUS, free addresses, its store against HNS
/// and, on an overlay network, what kube-proxy needs.
/// `drift` is what the node's drift report found on the network, less what the sweep removes.
pub(super) fn check(
    node: Option<&Reached<'_>>,
    network: &Network,
    drift: &[&Drift],
    report: &mut Report,
) {
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
    check_store(network, &view, drift, report);
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

/// The store against HNS, as the snapshot shows them: the drift found on the network (each
/// line says what it is, whose it is and what to do) and what a sweep would remove.
fn check_store(network: &Network, view: &NetworkView<'_>, drift: &[&Drift], report: &mut Report) {
    let name = network.name();
    let check = |what: &str| format!("network {name:?}: {what}");
    if view.network.is_none() {
        return;
    }
    // `None`: a delegated IPAM, whose store is its own.
    let reservations = view.reservations.as_ref().map(|_| view.pod_reservations());
    let mut healthy = true;
    for drift in drift {
        healthy = false;
        super::add_drift(drift, report);
    }
    let owned = view
        .verdicts()
        .into_iter()
        .filter(|(_, verdict)| !matches!(verdict, Verdict::NotOurs))
        .count();
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
                owned,
                reservations.as_ref().map_or(0, Vec::len)
            ),
        );
    }
}
