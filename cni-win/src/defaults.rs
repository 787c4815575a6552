//! Where cni-win keeps the plugins and the config on a node. `install` writes there and points
//! containerd there; `doctor`, `sweep` and `uninstall` look there unless told otherwise, so the
//! commands agree without flags. These are the directories the field's node set-up scripts
//! (sig-windows-tools, Flannel's Windows guides) use.

/// The plugin binaries (containerd's `bin_dir`).
#[cfg(windows)]
pub const BIN_DIR: &str = r"C:\opt\cni\bin";
/// The network configs (containerd's `conf_dir`).
#[cfg(windows)]
pub const CONF_DIR: &str = r"C:\etc\cni\net.d";
/// The plugin binaries (libcni's default).
#[cfg(not(windows))]
pub const BIN_DIR: &str = "/opt/cni/bin";
/// The network configs (libcni's default).
#[cfg(not(windows))]
pub const CONF_DIR: &str = "/etc/cni/net.d";
/// Flannel's subnet.env (flanneld's `--subnet-file` default; the plugins' default for an
/// empty `subnetFile`, `/run/flannel/subnet.env` on the system drive).
#[cfg(windows)]
pub const SUBNET_FILE: &str = r"C:\run\flannel\subnet.env";
/// Flannel's subnet.env (flanneld's `--subnet-file` default).
#[cfg(not(windows))]
pub const SUBNET_FILE: &str = "/run/flannel/subnet.env";
