//! The plugin core shared by cni-win's `win-bridge` and `win-overlay`.
//!
//! A plugin is a [`NetworkKind`] (what differs: accepted HNS network types, the pod gateway,
//! the MAC, extra policies and NAT exceptions, its own config keys and checks) and a `main`
//! that calls [`run`]; this crate is everything else, private so the plugins cannot depend on
//! how it is done:
//!
//! - `config`: every key the reference plugins and sdnbridge accept, decoded as Go does;
//! - `prepare`: the prepared attachment every command builds once (validated config, the HNS
//!   network found and checked, the endpoint's identity, IPAM with its gateways excluded);
//! - `policy`: the endpoint's policies (user V1/V2 policies translated, one merged
//!   OutBoundNAT, port mappings with their ACLs and the allow-all fallback, loopback DSR);
//! - `ipam`: host-local in-process, any other IPAM plugin from `CNI_PATH`;
//! - `delegation`: the guard that keeps delegation from looping back into an HNS plugin;
//! - [`identity`]: the deterministic endpoint GUID and name of an attachment;
//! - `requirements`: the HNS features an ADD needs (DSR, dual-stack) and the message when one
//!   is missing;
//! - `stale_holder`: ADD's removal of a dead endpoint that holds the new pod's address;
//! - ADD, DEL, CHECK, GC and STATUS over `hns::Client`, with the raw-call budgets of each
//!   documented in its module; `teardown`: the little of a config DEL reads, so a config
//!   edited after ADD never blocks a pod's teardown;
//! - `flannel`: Flannel-native mode (a config with `subnetFile`: subnet.env read and turned
//!   into the effective config, Flannel's record kept for DEL);
//! - [`hns_deadline`]: how long one HCN call may take (config key, environment variable);
//! - [`platform`]: the platform's HNS, as the plugins and the node tools reach it (one typed
//!   `connect`);
//! - `endpoint`: the endpoint document and the result read back from it;
//! - [`network_policy`]: the NetworkPolicy snapshot the node's policy agent writes and ADD
//!   reads, so a new pod's endpoint is created with its rules;
//!
//! What the node tools (`cni-win sweep`, `doctor`, the node daemon) share with the plugins,
//! so they judge with the plugins' own rules rather than a copy: [`ownership`] (the one rule
//! of what is whose and what is dead, which GC applies too), [`removal`] (how GC and the
//! sweep remove a dead attachment: as its DEL), [`configured`] (a configured network decoded
//! once by its plugin's code: config review, STATUS, the pods' pool, its store),
//! [`snapshot`] (the node read once, each configured network judged and its STATUS answered
//! from that read), [`decodes`] (how often a thread decoded a config), [`identity`] and
//! [`attachment_lock`] (a command in flight);
//! - `codes` and `hns_error`: the plugin error codes (110-114) and how HNS errors map to
//!   CNI codes.
//!
//! HCN V2 only: `CNI_NETNS` must be an HCN namespace GUID (containerd) or a path ending in one
//! (libcni's cnitool); `apiVersion` is accepted whatever its value.
// Unsafe only where Windows has no safe API: the attachment lock's named mutex.
#![deny(unsafe_code)]
#![warn(missing_docs)]

mod acl_fallback;
mod add;
pub mod attachment_lock;
mod check;
mod codes;
mod config;
pub mod configured;
pub mod decodes;
mod del;
mod delegation;
mod endpoint;
mod flannel;
mod gc;
pub mod hns_deadline;
mod hns_error;
pub mod identity;
mod ipam;
mod kind;
mod network_cache;
pub mod network_policy;
pub mod ownership;
pub mod path_keys;
pub mod platform;
mod plugin;
mod policy;
mod port_conflict;
mod prepare;
mod reference;
pub mod removal;
mod requirements;
pub mod snapshot;
mod stale_holder;
mod status;
mod teardown;

pub use config::ConfigReview;
pub use flannel::leased_subnets;
pub use kind::{NatException, NetworkKind};
pub use plugin::run;
