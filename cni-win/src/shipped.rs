//! What a cni-win release ships, from one table (`cni-win/shipped-binaries`, compiled in and
//! read by the release scripts too): install copies every binary, uninstall and doctor know
//! them, and the config directory decides from [`Plugin`] which plugin a config's `type`
//! means; [`Plugin::configure`] is the one place a configured network is decoded by its
//! plugin's code.

use std::sync::LazyLock;

use cni::NetworkRequest;
use cni_win_bridge::Bridge;
use cni_win_core::configured::ConfiguredNetwork;
use cni_win_overlay::Overlay;
use hns::SupportedFeatures;

/// The table's text: `name role` per line, `#` comments.
const TABLE: &str = include_str!("../shipped-binaries");

/// Which of cni-win's HNS plugins a config's `type` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plugin {
    /// `win-bridge`: L2Bridge networks (Flannel host-gw).
    Bridge,
    /// `win-overlay`: Overlay networks (Flannel vxlan).
    Overlay,
}

impl Plugin {
    /// Every plugin.
    pub const ALL: [Plugin; 2] = [Plugin::Bridge, Plugin::Overlay];

    /// The plugin's `type` in a config, and its binary's name.
    pub fn type_name(self) -> &'static str {
        match self {
            Plugin::Bridge => "win-bridge",
            Plugin::Overlay => "win-overlay",
        }
    }

    /// The plugin a config `type` names, exactly as libcni matches it.
    pub fn of(plugin_type: &str) -> Option<Plugin> {
        Plugin::ALL
            .into_iter()
            .find(|plugin| plugin.type_name() == plugin_type)
    }

    /// The network `request` configures, decoded by this plugin's own code: the one place the
    /// node tools choose the plugin's kind; what they ask afterwards (config review, STATUS,
    /// the pods' pool, what is stale) is the same for every kind. `features` are the node's
    /// HNS features, `None` when HNS could not be read.
    pub fn configure(
        self,
        request: NetworkRequest,
        features: Option<SupportedFeatures>,
    ) -> ConfiguredNetwork {
        match self {
            Plugin::Bridge => ConfiguredNetwork::load::<Bridge>(request, features),
            Plugin::Overlay => ConfiguredNetwork::load::<Overlay>(request, features),
        }
    }
}

/// What a shipped binary is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// An HNS CNI plugin.
    Plugin(Plugin),
    /// An IPAM plugin.
    Ipam,
    /// An operator's command.
    Tool,
}

impl Role {
    /// Whether the runtime executes it (a plugin or an IPAM plugin).
    pub fn is_cni_plugin(self) -> bool {
        !matches!(self, Role::Tool)
    }
}

/// One shipped binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binary {
    /// Its name without `.exe`.
    pub name: &'static str,
    /// What it is.
    pub role: Role,
}

impl Binary {
    /// Its file name on this platform (`win-bridge.exe` on Windows).
    pub fn file_name(&self) -> String {
        format!("{}{}", self.name, std::env::consts::EXE_SUFFIX)
    }
}

/// Every binary a release ships, in the table's order.
pub fn binaries() -> &'static [Binary] {
    static BINARIES: LazyLock<Vec<Binary>> = LazyLock::new(|| {
        parse(TABLE).unwrap_or_else(|line| panic!("cni-win/shipped-binaries: {line}"))
    });
    &BINARIES
}

/// The table's rows; the offending line when one is not `name role` with a known role (or a
/// `plugin` row names no [`Plugin`]). A test parses the compiled-in table, so a release
/// cannot carry one that does not.
fn parse(text: &'static str) -> Result<Vec<Binary>, &'static str> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let mut words = line.split_whitespace();
            let (Some(name), Some(role), None) = (words.next(), words.next(), words.next()) else {
                return Err(line);
            };
            let role = match role {
                "plugin" => Role::Plugin(Plugin::of(name).ok_or(line)?),
                "ipam" => Role::Ipam,
                "tool" => Role::Tool,
                _ => return Err(line),
            };
            Ok(Binary { name, role })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_ships_every_plugin_host_local_and_the_tools() {
        let names: Vec<&str> = binaries().iter().map(|b| b.name).collect();
        assert_eq!(
            names,
            [
                "win-bridge",
                "win-overlay",
                "host-local",
                "hnsctl",
                "cni-win"
            ]
        );
        for plugin in Plugin::ALL {
            assert!(
                binaries().contains(&Binary {
                    name: plugin.type_name(),
                    role: Role::Plugin(plugin)
                }),
                "{plugin:?}"
            );
        }
    }

    #[test]
    fn a_malformed_row_is_named() {
        assert_eq!(parse("x plugin"), Err("x plugin"));
        assert_eq!(parse("x"), Err("x"));
        assert_eq!(parse("x tool extra"), Err("x tool extra"));
        assert_eq!(parse("x daemon"), Err("x daemon"));
        assert_eq!(parse("# only\n\n"), Ok(Vec::new()));
    }
}
