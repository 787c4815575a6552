//! The paths the plugins' own config code reads, each decoded by the one rule of
//! [`cni::path`] (a path from a root of this platform; a relative one is code 7 naming the
//! key): here so that a node tool reading the same key of a config (the support bundle
//! collecting the files a config names) reads it as the plugins do. host-local's
//! `ipam.dataDir` is [`ipam_host_local::config::DATA_DIR`], `logFile` is
//! [`cni::logging::FILE_KEY`].

use cni::path::PathKey;

/// `networkPolicySnapshot`: the node's NetworkPolicy snapshot, whose rules ADD gives a new
/// pod's endpoint ([`crate::network_policy`]); absent, NetworkPolicy is not enabled.
pub const NETWORK_POLICY_SNAPSHOT: PathKey = PathKey {
    name: "networkPolicySnapshot",
    example: "/var/lib/cni-win/network-policy.json",
};
