//! The paths the plugins' own config code reads, each decoded by the one rule of
//! [`cni::path`] (a path from a root of this platform; a relative one is code 7 naming the
//! key): here so that a node tool reading the same key of a config (the support bundle
//! collecting the files a config names) reads it as the plugins do. host-local's
//! `ipam.dataDir` is [`ipam_host_local::config::DATA_DIR`], `logFile` is
//! [`cni::logging::FILE_KEY`].

use cni::path::{DefaultedPathKey, PathKey};

/// Flannel-native mode's `subnetFile`: flanneld's subnet.env, which ADD, CHECK and STATUS
/// read. Absent from a config, the config is not Flannel-native; present and null or empty,
/// Flannel's default (on Windows `C:\run\flannel\subnet.env`, the current drive's).
pub const SUBNET_FILE: DefaultedPathKey = DefaultedPathKey {
    name: "subnetFile",
    default: "/run/flannel/subnet.env",
};

/// Flannel-native mode's top-level `dataDir`: where Flannel's record of each pod is (ADD
/// writes it, DEL removes it), Flannel's default when absent, null or empty.
pub const FLANNEL_DATA_DIR: DefaultedPathKey = DefaultedPathKey {
    name: "dataDir",
    default: "/var/lib/cni/flannel",
};

/// `networkPolicySnapshot`: the node's NetworkPolicy snapshot, whose rules ADD gives a new
/// pod's endpoint ([`crate::network_policy`]); absent, NetworkPolicy is not enabled.
pub const NETWORK_POLICY_SNAPSHOT: PathKey = PathKey {
    name: "networkPolicySnapshot",
    example: "/var/lib/cni-win/network-policy.json",
};
