//! The benchmark's node: a native HCN emulator state with Flannel host-gw's `cbr0` and the
//! local pods' endpoints as ADD makes them, and the native Linux `cni-win` agent on it.

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use cni_win_conformance::flannel;
use cni_win_conformance::node::Node;
use cni_win_core::identity::Identity;
use hns::Guid;
use hns::features::HnsVersion;
use hns::schema::{HostComputeEndpoint, IpConfig, Route};
use hns_emulator::{Engine, STATE_ENV};
use serde_json::json;

use crate::cluster::{self, ClusterPod};

/// The emulated node, under the temp dir (removed when dropped).
#[derive(Debug)]
pub struct BenchNode {
    node: Node,
    network: Guid,
    namespace: Guid,
}

impl BenchNode {
    /// A node whose HNS reports `version` (which decides the agent's mode), with `cbr0` and
    /// its config naming the NetworkPolicy snapshot, as `cni-win install --set
    /// networkPolicySnapshot=…` writes it.
    pub fn new(version: HnsVersion) -> BenchNode {
        let node = Node::builder("netpol-bench")
            .network(flannel::host_gw(
                "cbr0",
                &[(cluster::LOCAL_SUBNET, cluster::LOCAL_GATEWAY)],
            ))
            .config("10-cbr0.conf", |node| {
                json!({"cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
                       "ipam": {"type": "host-local", "subnet": cluster::LOCAL_SUBNET,
                                "dataDir": node.ipam_dir()},
                       "networkPolicySnapshot": node.dir().join("network-policy.json")})
            })
            .build();
        node.engine()
            .set_version(version)
            .expect("the emulator's host state");
        let network = node.network_id("cbr0");
        let namespace = node.namespace().parse().expect("the namespace's GUID");
        BenchNode {
            node,
            network,
            namespace,
        }
    }

    /// The emulator's engine: counters, verdicts.
    pub fn engine(&self) -> Engine {
        self.node.engine()
    }

    /// Creates and attaches the endpoint cni-win's ADD makes for `pod` (its derived ID and
    /// name), without the snapshot's rules: what is timed is the agent's programming.
    pub fn add_endpoint(&self, pod: &ClusterPod) -> Result<(), String> {
        let identity = Identity::of("cbr0", &format!("{}-sandbox", pod.name), "eth0");
        let client = self.node.client();
        let network = client
            .open_network(self.network)
            .map_err(|error| error.to_string())?;
        let gateway: Ipv4Addr = cluster::LOCAL_GATEWAY.parse().map_err(|_| "gateway")?;
        let settings = HostComputeEndpoint {
            name: identity.name.clone(),
            ip_configurations: vec![IpConfig {
                ip_address: pod.ip.into(),
                prefix_length: None,
            }],
            routes: vec![Route::default_via(gateway.into())],
            ..HostComputeEndpoint::default()
        };
        let endpoint = network
            .create_endpoint(identity.guid, &settings)
            .map_err(|error| format!("endpoint of {}: {error}", pod.name))?;
        client
            .attach_endpoint(self.namespace, endpoint.id())
            .map_err(|error| format!("attach {}: {error}", pod.name))
    }

    fn dir(&self) -> &Path {
        self.node.dir()
    }
}

/// The native `cni-win sweep --network-policy` process; killed when dropped.
#[derive(Debug)]
pub struct Agent {
    child: Child,
    metrics: SocketAddr,
    log: PathBuf,
}

impl Agent {
    /// Starts `binary` on `node` with `kubeconfig`, its metrics on a free loopback port. Its
    /// daemon rounds are an hour apart: what the benchmark times is its reaction to the
    /// watches, not a round.
    pub fn start(binary: &Path, node: &BenchNode, kubeconfig: &Path) -> Result<Agent, String> {
        let metrics = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|error| format!("a free port for the metrics: {error}"))?;
        let log = node.dir().join("agent.log");
        let out = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out
            .try_clone()
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let child = Command::new(binary)
            .args(["sweep", "--every", "1h", "--network-policy"])
            .args(["--node-name", cluster::NODE])
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--metrics-address")
            .arg(metrics.to_string())
            .arg("--conf-dir")
            .arg(node.node.conf_dir())
            .arg("--bin-dir")
            .arg(node.node.bin_dir())
            .env(STATE_ENV, node.node.state())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|error| format!("cannot start {}: {error}", binary.display()))?;
        Ok(Agent {
            child,
            metrics,
            log,
        })
    }

    /// Whether it still runs; an error quoting its log when it does not.
    pub fn running(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            _ => Err(format!("the agent exited: {}", self.log_tail())),
        }
    }

    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(6)..].join("\n")
    }

    /// The agent's metrics, as Prometheus scrapes them.
    pub fn scrape(&self) -> Result<String, String> {
        let failed = |error: std::io::Error| format!("metrics at {}: {error}", self.metrics);
        let mut stream =
            TcpStream::connect_timeout(&self.metrics, Duration::from_secs(5)).map_err(failed)?;
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(failed)?;
        write!(
            stream,
            "GET /metrics HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.metrics
        )
        .map_err(failed)?;
        let mut response = String::new();
        stream.read_to_string(&mut response).map_err(failed)?;
        Ok(response
            .split_once("\r\n\r\n")
            .map_or(response.clone(), |(_, body)| body.to_owned()))
    }

    /// `VmHWM` and `VmRSS` from /proc (kB), the peak and current resident set.
    pub fn memory(&self) -> Result<(u64, u64), String> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .map_err(|error| format!("the agent's /proc status: {error}"))?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
                .ok_or_else(|| format!("no {name} in the agent's /proc status"))
        };
        Ok((field("VmHWM:")?, field("VmRSS:")?))
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of a metric line `name` (labels included) in `metrics`.
pub fn metric(metrics: &str, name: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let rest = line.strip_prefix(name)?;
        rest.strip_prefix(' ')?.trim().parse().ok()
    })
}
