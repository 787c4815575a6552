//! Where the node's runtime keeps its CNI configs and plugins, as every command takes them:
//! one config directory (containerd's `conf_dir`) and the plugin directories in the order the
//! runtime searches them (containerd 1.x's `bin_dir`, 2.x's `bin_dirs`; libcni's `CNI_PATH`).

use std::path::{Path, PathBuf};

use crate::defaults;
use crate::error::Error;

/// The node's CNI paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePaths {
    /// The CNI config directory the runtime reads.
    pub conf_dir: PathBuf,
    /// The directories the runtime finds plugins in, in search order: never empty.
    bin_dirs: Vec<PathBuf>,
}

impl NodePaths {
    /// `conf_dir` and `bin_dirs` (in search order); refused when `bin_dirs` is empty.
    pub fn new(conf_dir: PathBuf, bin_dirs: Vec<PathBuf>) -> Result<NodePaths, Error> {
        if bin_dirs.is_empty() {
            return Err(Error::new("give at least one plugin directory (--bin-dir)"));
        }
        Ok(NodePaths { conf_dir, bin_dirs })
    }

    /// The config directory and the one plugin directory.
    pub fn with_bin_dir(conf_dir: PathBuf, bin_dir: PathBuf) -> NodePaths {
        NodePaths {
            conf_dir,
            bin_dirs: vec![bin_dir],
        }
    }

    /// Where install writes and the runtime looks first.
    pub fn bin_dir(&self) -> &Path {
        &self.bin_dirs[0]
    }

    /// Every plugin directory, in search order: `CNI_PATH` for a delegated IPAM plugin.
    pub fn cni_path(&self) -> &[PathBuf] {
        &self.bin_dirs
    }

    /// The plugin directory, for a command that writes to or reads from exactly one
    /// (install, uninstall); refused when several were given.
    pub fn only_bin_dir(&self) -> Result<&Path, Error> {
        only_one(&self.bin_dirs)
    }

    /// Where the runtime finds binary `file`: the first plugin directory that has it, as
    /// libcni's search does; `None` when none has.
    pub fn find_binary(&self, file: &str) -> Option<PathBuf> {
        self.bin_dirs
            .iter()
            .map(|dir| dir.join(file))
            .find(|path| path.is_file())
    }
}

/// The one directory of `bin_dirs`, for a command that works on exactly one (install writes
/// there, uninstall reads install's record there); refused when there are several or none.
pub fn only_one(bin_dirs: &[PathBuf]) -> Result<&Path, Error> {
    match bin_dirs {
        [one] => Ok(one),
        _ => Err(Error::new(
            "this command works on one plugin directory: give --bin-dir once",
        )),
    }
}

impl Default for NodePaths {
    /// The directories install writes to and points containerd at ([`defaults`]).
    fn default() -> NodePaths {
        NodePaths::with_bin_dir(
            PathBuf::from(defaults::CONF_DIR),
            PathBuf::from(defaults::BIN_DIR),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binaries_are_found_in_search_order() {
        let first = tempfile::tempdir().unwrap();
        let second = tempfile::tempdir().unwrap();
        std::fs::write(second.path().join("win-bridge"), "").unwrap();
        std::fs::write(first.path().join("host-local"), "").unwrap();
        std::fs::write(second.path().join("host-local"), "").unwrap();
        let paths = NodePaths::new(
            PathBuf::from("conf"),
            vec![first.path().to_owned(), second.path().to_owned()],
        )
        .unwrap();
        assert_eq!(
            paths.find_binary("win-bridge"),
            Some(second.path().join("win-bridge"))
        );
        assert_eq!(
            paths.find_binary("host-local"),
            Some(first.path().join("host-local"))
        );
        assert_eq!(paths.find_binary("win-overlay"), None);
        assert_eq!(paths.bin_dir(), first.path());
        assert!(paths.only_bin_dir().is_err());
        assert!(NodePaths::new(PathBuf::from("conf"), Vec::new()).is_err());
    }
}
