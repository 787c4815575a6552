//! The lane's vocabulary, which every story speaks: the [`Lane`] a story is given (the control
//! plane, the binaries, the node's adapter), the cluster's two Nodes, the two Flannel
//! [`Backend`]s, and a node's network and conflist made as flanneld and `cni-win install` make
//! them.

use std::path::{Path, PathBuf};

use hns::schema::{IpPrefix, MacAddress};
use node_lane::NODE_NAME;
use node_lane::control_plane::ControlPlane;
use serde_json::{Value, json};

use crate::node::Node;

/// The node another node's pods live on (kube-proxy reaches them through remote endpoints).
pub const REMOTE_NODE: &str = "node2";

/// The remote node's address: the provider address of its pod subnet in flanneld's
/// `RemoteSubnetRoute` (hns-emulator/tests/data).
const REMOTE_NODE_IP: &str = "192.168.1.11";

/// What every story is given: the running control plane, the binaries, and the adapter of the
/// lane's network namespace, which each story's emulated host gets.
#[derive(Debug)]
pub struct Lane {
    /// kube-apiserver and kubectl (Linux), and kube-proxy.exe.
    pub kube_bin: PathBuf,
    /// cni-win's `.exe` files, hnsctl.exe, flannel-hns.exe and hns-drift.exe with the emulator
    /// DLLs.
    pub windows_bin: PathBuf,
    /// cni-win's Linux build (the NetworkPolicy agent of the truth tables).
    pub cni_win: PathBuf,
    /// Each story keeps its nodes' state under `scratch/<story>`.
    pub scratch: PathBuf,
    /// The host adapter's address and prefix.
    pub node_address: IpPrefix,
    /// The host adapter's address alone, as kube-proxy's flags and the Node object spell it.
    pub node_ip: String,
    /// The host adapter's MAC (kube-proxy's host MAC on the overlay).
    pub node_mac: MacAddress,
    pub control_plane: ControlPlane,
}

impl Lane {
    /// Registers this node and the remote one, as their kubelets would: kube-proxy reads its
    /// own node's address from the API, the NetworkPolicy agent its node's.
    pub fn register_nodes(&self) -> Result<String, String> {
        let node = |name: &str, ip: &str| {
            json!({
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": { "name": name, "labels": { "kubernetes.io/os": "windows" } },
                "status": { "addresses": [
                    { "type": "InternalIP", "address": ip },
                    { "type": "Hostname", "address": name },
                ] },
            })
        };
        let nodes = json!({
            "apiVersion": "v1",
            "kind": "List",
            "items": [node(NODE_NAME, &self.node_ip), node(REMOTE_NODE, REMOTE_NODE_IP)],
        });
        self.control_plane.kubectl.apply(&nodes)?;
        Ok(format!(
            "kube-apiserver and etcd; {NODE_NAME} at {}",
            self.node_ip
        ))
    }

    /// A fresh emulated node under `scratch/<dir>` whose host adapter is the lane's, before
    /// any Windows process of it runs.
    pub fn node(&self, dir: &str) -> Result<Node, String> {
        let node = Node::new(&self.windows_bin, &self.scratch.join(dir))?;
        node.set_host_adapter(self.node_address, self.node_mac)?;
        Ok(node)
    }

    /// Runs `flannel-hns.exe` on `node` with flanneld's documents for `backend` (the
    /// emulator's test data, whose addresses are the lane's node's).
    pub fn flanneld(&self, backend: Backend, node: &Node) -> Result<String, String> {
        let documents = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../hns-emulator/tests/data");
        let data = |name: &str| node.windows_path(&documents.join(format!("flanneld-{name}.json")));
        let args: Vec<String> = match backend {
            Backend::Vxlan => vec![
                "vxlan".to_owned(),
                data("vxlan-network"),
                data("vxlan-remote-subnet-route"),
                data("vxlan-host-route"),
            ],
            Backend::HostGw => vec![
                "host-gw".to_owned(),
                data("host-gw-network"),
                data("host-gw-bridge-endpoint"),
            ],
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = node.tool("flannel-hns", &args)?;
        let made: Value =
            serde_json::from_str(&out).map_err(|error| format!("flannel-hns: {error}"))?;
        if made["managementIp"] != self.node_ip {
            return Err(format!(
                "HNS gave {} the management IP {}, not the host adapter's {}",
                backend.network(),
                made["managementIp"],
                self.node_ip
            ));
        }
        Ok(format!(
            "{} {} with management IP {} (filled in by HNS)",
            backend.network(),
            made["network"].as_str().unwrap_or_default(),
            made["managementIp"].as_str().unwrap_or_default()
        ))
    }
}

/// What differs between the two Flannel backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Flannel vxlan: `flannel.4096`, `win-overlay`, kube-proxy with a source VIP.
    Vxlan,
    /// Flannel host-gw: `cbr0`, `win-bridge`, kube-proxy on the node IP.
    HostGw,
}

impl Backend {
    /// The HNS network flanneld makes, which the conflist names.
    pub fn network(self) -> &'static str {
        match self {
            Backend::Vxlan => "flannel.4096",
            Backend::HostGw => "cbr0",
        }
    }

    /// The plugin the conflist names.
    pub fn plugin(self) -> &'static str {
        match self {
            Backend::Vxlan => "win-overlay",
            Backend::HostGw => "win-bridge",
        }
    }
}

/// subnet.env as flanneld writes it, and the Flannel-native conflist the runtime reads, with
/// `networkPolicySnapshot` when `snapshot` names one (as `cni-win install --set
/// networkPolicySnapshot=…` writes it); the plugin's own config (the conflist's plugin with its
/// name and version), as the runtime passes it.
pub fn write_config(
    node: &Node,
    backend: Backend,
    snapshot: Option<&Path>,
) -> Result<Value, String> {
    let subnet_env = node.dir().join("subnet.env");
    std::fs::write(
        &subnet_env,
        "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n",
    )
    .map_err(|error| format!("subnet.env: {error}"))?;
    let mut plugin = json!({
        "type": backend.plugin(),
        "subnetFile": node.windows_path(&subnet_env),
        "dataDir": node.windows_path(&node.dir().join("flannel")),
        "ipam": { "dataDir": node.windows_path(&node.dir().join("ipam")) },
        "capabilities": { "portMappings": true, "dns": true },
        "apiVersion": 2,
        "dns": { "nameservers": ["10.96.0.10"], "search": ["svc.cluster.local"] },
        "policies": [
            { "name": "EndpointPolicy", "value": { "Type": "OutBoundNAT", "Settings": { "Exceptions": ["10.96.0.0/12", "10.244.0.0/16"] } } },
        ],
    });
    if backend == Backend::Vxlan {
        plugin["policies"].as_array_mut().expect("an array").push(json!(
            { "name": "EndpointPolicy", "value": { "Type": "SDNRoute", "Settings": { "DestinationPrefix": "10.96.0.0/12", "NeedEncap": true } } }
        ));
    }
    if let Some(snapshot) = snapshot {
        plugin["networkPolicySnapshot"] = json!(node.windows_path(snapshot));
    }
    let conflist =
        json!({ "name": backend.network(), "cniVersion": "1.1.0", "plugins": [plugin.clone()] });
    let file = node
        .dir()
        .join("net.d")
        .join(format!("10-{}.conflist", backend.plugin()));
    std::fs::write(&file, conflist.to_string())
        .map_err(|error| format!("{}: {error}", file.display()))?;
    plugin["name"] = json!(backend.network());
    plugin["cniVersion"] = json!("1.1.0");
    Ok(plugin)
}
