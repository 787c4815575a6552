//! The flags both harnesses take alike (clap arguments each one's parser flattens), and what
//! both do with them first: an empty scratch directory and the control plane started in it.

use std::path::PathBuf;

use hns::schema::IpPrefix;

use crate::control_plane::ControlPlane;

/// Where a harness runs: the Kubernetes binaries, cni-win's Linux build, its scratch
/// directory, and the address of its network namespace's adapter.
#[derive(Debug, clap::Args)]
pub struct HarnessArgs {
    /// kube-apiserver and kubectl (Linux), and kube-proxy.exe for the node lane
    #[arg(long, value_name = "DIR")]
    pub kube_bin: PathBuf,
    /// cni-win's native Linux build: the NetworkPolicy agent
    #[arg(long, value_name = "FILE")]
    pub cni_win: PathBuf,
    /// Emptied, then used for the control plane's and each node's state
    #[arg(long, value_name = "DIR")]
    pub scratch: PathBuf,
    /// The network namespace adapter's address and prefix (e.g. 192.168.1.10/24): the API
    /// server advertises it, its certificate names it, and the emulated host's adapter holds it
    #[arg(long, value_name = "CIDR")]
    pub node_ip: IpPrefix,
}

impl HarnessArgs {
    /// Empties the scratch directory and starts the control plane in it, advertising the
    /// node's address.
    pub fn start_control_plane(&self) -> Result<ControlPlane, String> {
        if self.scratch.exists() {
            std::fs::remove_dir_all(&self.scratch)
                .map_err(|error| format!("cannot empty {}: {error}", self.scratch.display()))?;
        }
        ControlPlane::start(
            &self.kube_bin,
            &self.scratch.join("control-plane"),
            &self.node_ip.ip().to_string(),
        )
    }
}
