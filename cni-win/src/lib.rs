//! `cni-win`: what an operator does to a Windows node's pod networking, as a library the
//! `cni-win` command is a thin binary over (the way cargo's commands are thin over `cargo::ops`).
//!
//! The operations, each taking its settings and reporting what it did or found, never
//! printing: [`install`] puts the plugins and a conflist in place (what a HostProcess init
//! container runs), [`uninstall`] takes back exactly what install wrote, [`sweep`] removes the
//! endpoints and reservations of dead attachments, [`doctor`] checks the node and says what to
//! fix, [`source_vip`] reserves kube-proxy's source VIP in the pods' store, [`support_bundle`]
//! collects what a bug report needs into one zip, and [`daemon`] is the node daemon: rounds of
//! the sweep, the [`drift`] report and doctor's checks, with its [`metrics`], until
//! [`shutdown`], and with [`network_policy`], the NetworkPolicy agent, as one more task of its
//! rounds. `sweep`, `doctor`, `source_vip` and each round of the daemon read the node
//! once ([`node`]: the config directory, HNS, each network decoded once) and judge it by the
//! plugins' own rule ([`cni_win_core::ownership`]).
//!
//! What they share: the node's CNI paths ([`paths`]), the shipped binaries and plugin kinds
//! ([`shipped`], where a network's plugin kind is chosen, once), the CNI config directory as
//! libcni reads it ([`confdir`]), the binary swap ([`binaries`]), `SHA256SUMS`
//! ([`checksums`]), the conflist templates ([`templates`]) and their validation by the plugins'
//! own config code ([`lint`]), what install recorded ([`record`]), safe file writes
//! ([`fsutil`]), containerd's config ([`containerd`]) and the default directories
//! ([`defaults`]).

// `unsafe` is denied but where the stop signals' handlers are installed ([`shutdown`]): an FFI
// call on each platform, the one thing the node's operations cannot do without it.
#![deny(unsafe_code)]
// Every public item says why it is there: this library is what the `cni-win` command and its
// tests drive.
#![warn(missing_docs)]

pub mod binaries;
pub mod checksums;
pub mod confdir;
pub mod containerd;
pub mod daemon;
pub mod defaults;
pub mod doctor;
pub mod drift;
mod error;
pub mod fsutil;
pub mod install;
pub mod lint;
pub mod metrics;
pub mod network_policy;
pub mod node;
pub mod paths;
pub mod record;
pub mod shipped;
pub mod shutdown;
pub mod source_vip;
pub mod support_bundle;
pub mod sweep;
pub mod templates;
pub mod uninstall;

pub use error::{Error, chain};
