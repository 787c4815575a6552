//! Drift between flanneld's lease and HNS, for a Flannel network (Flannel-native, or Flannel's
//! delegate, which the config directory's read makes Flannel-native): subnet.env names this
//! node's pod subnet, which the HNS network flanneld makes must hold. Reported only: the
//! network is flanneld's, which re-creates it when it restarts.

use hns::schema::HostComputeNetwork;

use super::{Drift, Reason};
use crate::node::Network;

/// The drift between `network`'s subnet.env and its HNS network (`None`: HNS has none of that
/// name); nothing when the config is not Flannel-native or subnet.env cannot be read.
pub(super) fn find(network: &Network, held: Option<&HostComputeNetwork>) -> Option<Drift> {
    let leased = cni_win_core::leased_subnets(&network.config.request().config)?;
    let listed = || {
        leased
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (reason, object) = match held {
        None => (
            Reason::FlannelNetworkMissing,
            format!(
                "subnet.env leases this node {} but HNS holds no network {:?}",
                listed(),
                network.name()
            ),
        ),
        Some(held) => {
            let holds = |lease: &ipnetwork::IpNetwork| {
                held.subnets().any(|subnet| {
                    let subnet = subnet.ip_address_prefix.network();
                    subnet.contains(lease.network()) && subnet.prefix() <= lease.prefix()
                })
            };
            if leased.iter().all(holds) {
                return None;
            }
            let subnets: Vec<String> = held
                .subnets()
                .map(|subnet| subnet.ip_address_prefix.to_string())
                .collect();
            (
                Reason::FlannelNetworkStale,
                format!(
                    "subnet.env leases this node {} but HNS network {:?} ({}) holds {}",
                    listed(),
                    held.name,
                    held.id,
                    subnets.join(", ")
                ),
            )
        }
    };
    Some(Drift {
        reason,
        network: Some(network.name().to_owned()),
        object,
        repair: None,
    })
}
