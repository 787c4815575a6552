//! The plugin core shared by cni-win's `win-bridge` and `win-overlay`.
//!
//! A plugin is a [`NetworkKind`] (what differs: accepted HNS network types, the pod gateway,
//! the MAC, extra policies and config keys, feature checks) handed to [`HnsPlugin`]; this
//! crate is everything else:
//!
//! - [`config`]: every key the reference plugins and sdnbridge accept, decoded as Go does;
//! - [`policy`]: the endpoint's policies (user V1/V2 policies translated, one merged
//!   OutBoundNAT, port mappings, loopback DSR);
//! - [`ipam`]: host-local in-process, any other IPAM plugin from `CNI_PATH`;
//! - [`identity`]: the deterministic endpoint GUID and name of an attachment;
//! - ADD, DEL, CHECK, GC and STATUS over `hns::Client`, with the raw-call budgets of each
//!   documented in its module;
//! - [`endpoint`]: the endpoint document and the result read back from it;
//! - [`hns_deadline`]: how long one HCN call may take (config key, environment variable);
//! - [`codes`] and [`hns_error`]: the plugin error codes (110-114) and how HNS errors map to
//!   CNI codes.
//!
//! HCN V2 only: `CNI_NETNS` must be an HCN namespace GUID (containerd); `apiVersion` is
//! accepted whatever its value.
#![forbid(unsafe_code)]

mod add;
mod check;
pub mod codes;
pub mod config;
mod del;
pub mod endpoint;
mod gc;
pub mod hns_deadline;
pub mod hns_error;
pub mod identity;
pub mod ipam;
pub mod kind;
mod network;
mod plugin;
pub mod policy;
mod status;

pub use config::Conf;
pub use kind::{NatException, NetworkKind, Requirement};
pub use plugin::HnsPlugin;
