//! `cni-win doctor` on a node of the tests: its config directory, its HNS, and its plugin
//! directory with a stand-in of the plugin its networks name, one release's.

use std::path::PathBuf;

use cni_win::doctor::{Report, diagnose};
use cni_win::paths::NodePaths;
use cni_win_conformance::node::Node;
use hns::Client;

use super::ScratchNode;
use super::overlay::Overlay;

/// A node doctor examines.
pub trait Examined {
    /// The emulated node.
    fn emulated(&self) -> &Node;
    /// A client on its HNS.
    fn hns(&self) -> &Client;
}

impl Examined for ScratchNode {
    fn emulated(&self) -> &Node {
        ScratchNode::emulated(self)
    }

    fn hns(&self) -> &Client {
        &self.client
    }
}

impl Examined for Overlay {
    fn emulated(&self) -> &Node {
        &self.node
    }

    fn hns(&self) -> &Client {
        &self.client
    }
}

/// What the stand-in plugins answer `--version` with: one release, one commit.
pub fn about(plugin: &str) -> String {
    format!("CNI {plugin} plugin 0.1.0 (commit aaaaaaaaaaaa)")
}

/// A node whose plugin directory holds a stand-in `plugin` ([`about`]), and doctor's report on
/// it.
pub struct Doctor<N> {
    pub node: N,
}

impl<N: Examined> Doctor<N> {
    pub fn new(node: N, plugin: &str) -> Doctor<N> {
        node.emulated().stub_plugin(plugin, &about(plugin));
        Doctor { node }
    }

    /// The node's plugin directory.
    pub fn bin(&self) -> PathBuf {
        self.node.emulated().bin_dir()
    }

    /// doctor's report on the node as it is now.
    pub fn report(&self) -> Report {
        let settings = NodePaths::with_bin_dir(self.node.emulated().conf_dir(), self.bin());
        diagnose(Ok(self.node.hns()), &settings)
    }
}
