//! cni-win's integration tests, one binary: the node tools (install, uninstall, sweep and the
//! node daemon, doctor, source-vip, support-bundle) run as an operator runs them, on nodes made
//! with cni-win-conformance's builder ([`cni_win_conformance::node::Node::builder`]). What
//! needs the HCN emulator, which exists only off Windows, is left out of a Windows build.

mod docs;
mod install;
mod layout;
mod tracked_paths;
mod version;

#[cfg(not(windows))]
mod daemon;
#[cfg(not(windows))]
mod doctor;
#[cfg(not(windows))]
mod doctor_kube_proxy;
#[cfg(not(windows))]
mod drift;
#[cfg(not(windows))]
mod drift_campaign;
#[cfg(not(windows))]
mod metrics;
#[cfg(not(windows))]
mod network_policy;
#[cfg(not(windows))]
mod network_policy_refusals;
#[cfg(not(windows))]
mod read_only;
#[cfg(not(windows))]
mod source_vip;
#[cfg(not(windows))]
mod support;
#[cfg(not(windows))]
mod support_bundle;
#[cfg(not(windows))]
mod sweep;
