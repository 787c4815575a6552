//! The benchmark's node: a native HCN emulator state with Flannel host-gw's `cbr0` and the
//! local pods' endpoints as ADD makes them, and the native Linux `cni-win` agent on it.

use std::net::Ipv4Addr;
use std::path::Path;

use cni_win_conformance::flannel;
use cni_win_conformance::node::Node;
use cni_win_core::identity::Identity;
use hns::Guid;
use hns::features::HnsVersion;
use hns::schema::{HostComputeEndpoint, IpConfig, Route};
use hns_emulator::Engine;
use node_lane::agent_process::{AgentProcess, Launch};
use node_lane::control_plane::ControlPlane;
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

    /// Starts the agent on the node: the native Linux `cni-win` at `binary`, authenticated to
    /// `plane`.
    pub fn start_agent(&self, plane: &ControlPlane, binary: &Path) -> Result<AgentProcess, String> {
        let launch = Launch::native(
            binary,
            &self.node.state(),
            self.node.dir().to_path_buf(),
            self.node.conf_dir(),
            self.node.bin_dir(),
        );
        AgentProcess::start(plane, launch)
    }

    /// The snapshot new pods start from, as the agent wrote it: its size and what it holds
    /// (it grows with the node's pods and the policies, not with the cluster's pods).
    pub fn snapshot_size(&self) -> Result<String, String> {
        let path = self.node.dir().join("network-policy.json");
        let bytes = std::fs::metadata(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .len();
        let found = cni_win_core::network_policy::read(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .ok_or_else(|| format!("{}: not written", path.display()))?;
        let policy = found
            .snapshot
            .policy
            .ok_or_else(|| format!("{}: not synced", path.display()))?;
        Ok(format!(
            "{:.1} KiB ({:?} form): {} local pods, {} namespace postures, {} rules",
            bytes as f64 / 1024.0,
            policy.form,
            policy.pods.len(),
            policy.namespaces.len(),
            policy.rules.len()
        ))
    }
}
