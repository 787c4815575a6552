//! cni-win's HNS fixtures for the generic `conformance` harness, kept out of it so that the
//! harness stays a tool for any CNI plugin.
//!
//! - [`hns::HnsFixture`]: every case on a fresh HCN emulator host made with `hnsctl`, started
//!   through the run's launcher (so the Wine lane runs `hnsctl.exe` too);
//! - [`cases::hns`]: what every cni-win plugin must do on that host;
//! - [`node`]: the emulated node integration tests run plugins and node tools on, made with
//!   one builder ([`node::Node::builder`]: networks, configs, stand-in plugins), panicking on
//!   failure as tests do; [`flannel`]: the networks Flannel leaves on it; [`kube_proxy`]: the
//!   objects kube-proxy creates on it;
//! - [`plugin`]: the integration tests every cni-win plugin runs, written once over the
//!   [`plugin::Plugin`] under test, each plugin's test binary making them tests with
//!   [`plugin_suite!`];
//! - [`suite::HnsSuite`]: the `cni-win-conformance` command line (`cni-conformance` plus
//!   `--hnsctl`/`--hns-network`), which `scripts/test` and the Wine lane run.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cases;
pub mod flannel;
pub mod hns;
pub mod kube_proxy;
pub mod node;
pub mod plugin;
pub mod suite;
