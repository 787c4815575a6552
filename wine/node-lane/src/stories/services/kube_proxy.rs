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
    /// which logs each load balancer it programs and the end of every sync).
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

    /// The last lines of its log, quoted when a check fails: klog's own lines only (not the
    /// object dumps that follow some of them), its flags left out.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log
            .lines()
            .filter(|line| is_klog_line(line) && !line.contains("flags.go"))
            .collect();
        lines[lines.len().saturating_sub(8)..].join("\n")
    }

    /// How long its log is now: where [`KubeProxy::log_since`] starts reading.
    pub fn log_len(&self) -> usize {
        std::fs::metadata(&self.log).map_or(0, |meta| meta.len() as usize)
    }

    /// What it logged after `offset` (a [`KubeProxy::log_len`]), klog's own lines only.
    pub fn log_since(&self, offset: usize) -> Vec<String> {
        let log = std::fs::read(&self.log).unwrap_or_default();
        String::from_utf8_lossy(log.get(offset..).unwrap_or_default())
            .lines()
            .filter(|line| is_klog_line(line))
            .map(str::to_owned)
            .collect()
    }

    /// The panic it ended with after `offset` (a [`KubeProxy::log_len`]), as Go reported it.
    pub fn panic_since(&self, offset: usize) -> Option<String> {
        let log = std::fs::read(&self.log).unwrap_or_default();
        panic_in(&String::from_utf8_lossy(
            log.get(offset..).unwrap_or_default(),
        ))
    }

    /// Whether it is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

/// Go's report of a panic in `log`, if it has one: its message, and the function and source
/// line it happened in (`panic: … in …(*Proxier).syncProxyRules at
/// pkg/proxy/winkernel/proxier.go:1124`).
fn panic_in(log: &str) -> Option<String> {
    let mut lines = log.lines().skip_while(|line| !line.starts_with("panic: "));
    let message = lines.next()?;
    let mut frame = lines.skip_while(|line| !line.starts_with("goroutine "));
    let (function, source) = (frame.nth(1)?, frame.next()?);
    // Go prints the call's arguments as words (`syncProxyRules(0xc000488900)`): not its name.
    let function = function.rsplit_once('(').map_or(function, |(name, _)| name);
    let source = source.trim().split(' ').next().unwrap_or_default();
    let source = source
        .find("/pkg/")
        .map_or(source, |start| &source[start + 1..]);
    Some(format!("{message} in {function} at {source}"))
}

/// Whether `line` is one of klog's (`I1128 21:12:43.218283 …`, or `W`, `E`, `F`), not a line of
/// an object it dumps or of a library writing to the same stream.
fn is_klog_line(line: &str) -> bool {
    let mut chars = line.chars();
    matches!(chars.next(), Some('I' | 'W' | 'E' | 'F'))
        && chars.take(4).filter(char::is_ascii_digit).count() == 4
}

/// Dropping kube-proxy ends it at once, as a node's service manager kills a stopped service.
impl Drop for KubeProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_told_by_its_message_function_and_line() {
        let log = "I1128 21:20:41.933941    1384 proxier.go:967] Syncing Policies\n\
                   panic: runtime error: invalid memory address or nil pointer dereference\n\
                   [signal 0xc0000005 code=0x0 addr=0x0 pc=0x158a445]\n\
                   \n\
                   goroutine 79 [running]:\n\
                   k8s.io/kubernetes/pkg/proxy/winkernel.(*Proxier).syncProxyRules(0xc000425e00)\n\
                   \t/build/_output/local/go/src/k8s.io/kubernetes/pkg/proxy/winkernel/proxier.go:1124 +0x4105\n";
        assert_eq!(
            panic_in(log).as_deref(),
            Some(
                "panic: runtime error: invalid memory address or nil pointer dereference in \
                 k8s.io/kubernetes/pkg/proxy/winkernel.(*Proxier).syncProxyRules at \
                 pkg/proxy/winkernel/proxier.go:1124"
            )
        );
        assert_eq!(
            panic_in("I1128 21:20:41.933941    1384 proxier.go:967] Syncing"),
            None
        );
    }

    #[test]
    fn only_klogs_own_lines_are_its_lines() {
        assert!(is_klog_line(
            "E1128 21:20:11.841793    1384 hnsV2.go:41] hcnEnumerateNetworks failed"
        ));
        assert!(!is_klog_line(
            " BaseServiceInfo: (*proxy.BaseServiceInfo)(0xc0004b2600)({"
        ));
        assert!(!is_klog_line(
            "time=\"2026-11-28T21:12:32Z\" level=info msg=\"…\""
        ));
        assert!(!is_klog_line("Ignored"));
    }
}
