//! One module per subcommand: its clap arguments, the settings it hands the library, and what
//! it prints. The work is the `cni_win` library's. The node's paths are one set of flags
//! ([`NodePathArgs`]) every command takes alike.

pub mod daemon;
pub mod doctor;
pub mod install;
pub mod source_vip;
pub mod support_bundle;
pub mod sweep;
pub mod uninstall;

use std::path::PathBuf;

use cni_win::paths::NodePaths;
use cni_win::{Error, defaults};

/// Where the runtime finds the plugins: `--bin-dir`, for the commands that read only that.
#[derive(Debug, clap::Args)]
pub struct BinDirArgs {
    /// A directory the runtime finds the plugins in (containerd's `bin_dir`, or each of its
    /// `bin_dirs`); repeat it for several, in search order (libcni's CNI_PATH).
    #[arg(long = "bin-dir", value_name = "DIR", default_value = defaults::BIN_DIR)]
    pub bin_dirs: Vec<PathBuf>,
}

/// The node's CNI paths: the config directory and where the plugins are.
#[derive(Debug, clap::Args)]
pub struct NodePathArgs {
    /// The CNI config directory the runtime reads (containerd's `conf_dir`).
    #[arg(long, value_name = "DIR", default_value = defaults::CONF_DIR)]
    pub conf_dir: PathBuf,
    #[command(flatten)]
    pub bin: BinDirArgs,
}

impl NodePathArgs {
    /// The paths as the library takes them.
    pub fn paths(self) -> Result<NodePaths, Error> {
        NodePaths::new(self.conf_dir, self.bin.bin_dirs)
    }
}
