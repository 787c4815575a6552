//! kube-proxy.exe, built for Windows from Kubernetes' source, run under the node's Wine in
//! kernelspace (winkernel) mode, so every HNS call it makes reaches the emulator through the
//! emulated `computenetwork.dll` and `vmcompute.dll`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use node_lane::NODE_NAME;

use crate::node::Node;

/// A running kube-proxy.exe, killed when dropped.
#[derive(Debug)]
pub struct KubeProxy {
    child: Child,
    log: PathBuf,
}

impl KubeProxy {
    /// Starts kube-proxy with `flags` (network, source VIP, feature gates) added to the
    /// lane's own (kubeconfig, kernelspace mode, the node's name and address, verbosity 3,
    /// which logs each load balancer it programs).
    pub fn start(
        node: &Node,
        kube_bin: &Path,
        kubeconfig: &Path,
        node_ip: &str,
        flags: &[String],
        log: &Path,
    ) -> Result<KubeProxy, String> {
        let out = File::options()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|error| format!("{}: {error}", log.display()))?;
        let err = out
            .try_clone()
            .map_err(|error| format!("{}: {error}", log.display()))?;
        let mut command = node.command(&kube_bin.join("kube-proxy.exe"));
        command
            .arg(format!("--kubeconfig={}", node.windows_path(kubeconfig)))
            .arg("--proxy-mode=kernelspace")
            .arg(format!("--hostname-override={NODE_NAME}"))
            .arg(format!("--bind-address={node_ip}"))
            .arg("--cluster-cidr=10.244.0.0/16")
            .arg("--v=3")
            .args(flags)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let child = command
            .spawn()
            .map_err(|error| format!("cannot start kube-proxy.exe under Wine: {error}"))?;
        Ok(KubeProxy {
            child,
            log: log.to_path_buf(),
        })
    }

    /// Whether kube-proxy chose its kernelspace proxier (1.20 falls back to userspace when
    /// HNS does not answer its policy-list probe).
    pub fn kernel_proxier(&self) -> Option<bool> {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        if log.contains("Using Kernelspace Proxier") {
            Some(true)
        } else if log.contains("Using userspace Proxier") {
            Some(false)
        } else {
            None
        }
    }

    /// The last lines of its log, quoted when a check fails.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log
            .lines()
            .filter(|line| !line.contains("flags.go"))
            .collect();
        lines[lines.len().saturating_sub(8)..].join("\n")
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

/// Dropping kube-proxy ends it at once, as a node's service manager kills a stopped service.
impl Drop for KubeProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
