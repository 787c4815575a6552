//! The node as one run of a node tool reads it: the config directory once, HNS once
//! ([`NodeSnapshot`]), and each of cni-win's networks decoded once by its plugin's code
//! ([`ConfiguredNetwork`], through [`Plugin::configure`]). `sweep`, `doctor`, `source-vip`
//! and each round of the node daemon judge this one read; the daemon reads HNS again only
//! after a round removed something ([`Node::read_hns_again`]).

use std::fmt;

use cni_win_core::configured::ConfiguredNetwork;
use cni_win_core::platform::ConnectError;
use cni_win_core::snapshot::NodeSnapshot;
use hns::{Client, HnsError, SupportedFeatures};

use crate::confdir;
use crate::error::Error;
use crate::paths::NodePaths;
use crate::shipped::Plugin;

/// One read of the node.
#[derive(Debug)]
pub struct Node {
    /// The config directory as read: cni-win's networks, decoded; or why it could not be
    /// listed.
    pub config: Result<Config, Error>,
    /// HNS as read, or why it could not be.
    pub hns: Result<NodeSnapshot, Unread>,
}

/// The config directory as one read found it.
#[derive(Debug, Default)]
pub struct Config {
    /// cni-win's networks, in libcni's order, each decoded once.
    pub networks: Vec<Network>,
    /// The files or entries that could not be read, each with the reason.
    pub problems: Vec<String>,
    /// Every plugin type the loaded files name, each once, in order.
    pub plugin_types: Vec<String>,
}

/// One of cni-win's networks, decoded for this read.
#[derive(Debug)]
pub struct Network {
    /// Which plugin serves it.
    pub plugin: Plugin,
    /// Listed as Flannel's delegate rather than directly.
    pub via_flannel: bool,
    /// Its conflist sets libcni's `disableGC`: nothing of it is collected.
    pub gc_disabled: bool,
    /// The config, decoded by the plugin's code.
    pub config: ConfiguredNetwork,
}

impl Network {
    /// The network's (and its HNS network's) name.
    pub fn name(&self) -> &str {
        self.config.name()
    }
}

/// Why HNS was not read.
#[derive(Debug)]
pub enum Unread {
    /// It could not be reached (the deadline setting, the backend).
    Unreachable(ConnectError),
    /// It was reached but a read failed (HNS not running or restarting, a call past its
    /// deadline): nothing is known of what it holds, so nothing may be judged absent.
    Failed(HnsError),
}

impl fmt::Display for Unread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unread::Unreachable(error) => f.write_str(&crate::chain(error)),
            Unread::Failed(error) => error.fmt(f),
        }
    }
}

impl Node {
    /// Reads the node: HNS through `client` (every call bounded by its deadline), then the
    /// config directory of `paths`. `features` are HNS's from an earlier read, which spares
    /// asking for its version again; `None` reads them too.
    pub fn read(
        client: Result<&Client, &ConnectError>,
        paths: &NodePaths,
        features: Option<SupportedFeatures>,
    ) -> Node {
        let hns = match client {
            Ok(client) => read_hns(client, features).map_err(Unread::Failed),
            Err(error) => Err(Unread::Unreachable(error.clone())),
        };
        let features = hns.as_ref().ok().map(|snapshot| snapshot.features);
        let config = confdir::read(&paths.conf_dir, paths.cni_path()).map(|found| Config {
            networks: found
                .networks
                .into_iter()
                .map(|network| network.decode(features))
                .collect(),
            problems: found.problems,
            plugin_types: found.plugin_types,
        });
        Node { config, hns }
    }

    /// Reads HNS again (after something was removed), keeping the config as decoded.
    pub fn read_hns_again(&mut self, client: &Client) {
        let features = self.hns.as_ref().ok().map(|snapshot| snapshot.features);
        self.hns = read_hns(client, features).map_err(Unread::Failed);
    }

    /// The config directory as read, or why it could not be (the error a command reports).
    pub fn config(&self) -> Result<&Config, Error> {
        self.config.as_ref().map_err(Clone::clone)
    }

    /// HNS as read, or why it could not be (the error a command reports).
    pub fn snapshot(&self) -> Result<&NodeSnapshot, Error> {
        match &self.hns {
            Ok(snapshot) => Ok(snapshot),
            Err(Unread::Unreachable(error)) => Err(Error::Connect(error.clone())),
            Err(Unread::Failed(error)) => Err(Error::hns("read HNS", error.clone())),
        }
    }

    /// The HNS features this read found, if HNS was read.
    pub fn features(&self) -> Option<SupportedFeatures> {
        self.hns.as_ref().ok().map(|snapshot| snapshot.features)
    }

    /// cni-win's networks (none when the config directory could not be read).
    pub fn networks(&self) -> &[Network] {
        self.config
            .as_ref()
            .map(|config| config.networks.as_slice())
            .unwrap_or_default()
    }
}

fn read_hns(
    client: &Client,
    features: Option<SupportedFeatures>,
) -> Result<NodeSnapshot, HnsError> {
    match features {
        Some(features) => NodeSnapshot::read_knowing(client, features),
        None => NodeSnapshot::read(client),
    }
}

impl confdir::Network {
    /// This network decoded by its plugin's code, with the node's HNS `features` (`None`
    /// when HNS could not be read).
    pub fn decode(self, features: Option<SupportedFeatures>) -> Network {
        Network {
            plugin: self.plugin,
            via_flannel: self.via_flannel,
            gc_disabled: self.gc_disabled,
            config: self.plugin.configure(self.request, features),
        }
    }
}
