//! An emulated Flannel vxlan node for the node tools: `flannel.4096` as flanneld's vxlan
//! backend leaves it and a config directory with its win-overlay config.

use std::fs;
use std::path::PathBuf;

use cni::NetConf;
use cni_win::paths::NodePaths;
use cni_win::source_vip::Settings;
use cni_win_conformance::node::Node;
use cni_win_conformance::{flannel, kube_proxy};
use hns::Client;
use hns::schema::{HostComputeNetwork, NetworkType};
use ipam_host_local::HostLocal;
use serde_json::{Value, json};

pub struct Overlay {
    pub node: Node,
    pub client: Client,
}

impl Overlay {
    /// `flannel.4096` as flanneld's vxlan backend leaves it (Overlay 10.244.1.0/24, HNS
    /// gateway .1, VNI 4096, the provider address) and its plain win-overlay config.
    pub fn new() -> Overlay {
        Overlay::with("Overlay", "win-overlay")
    }

    pub fn with(network_type: &str, plugin: &str) -> Overlay {
        let network = HostComputeNetwork {
            network_type: NetworkType::parse(network_type),
            ..flannel::vxlan(
                "flannel.4096",
                &[("10.244.1.0/24", "10.244.1.1")],
                flannel::VNI,
            )
        };
        let plugin = plugin.to_owned();
        let node = Node::builder("source-vip")
            .network(network)
            .config("10-net.conf", move |node| {
                json!({
                    "cniVersion": "1.0.0", "name": "flannel.4096", "type": plugin,
                    "ipam": {"type": "host-local", "subnet": "10.244.1.0/24",
                             "dataDir": node.ipam_dir()}
                })
            })
            .build();
        Overlay {
            client: node.client(),
            node,
        }
    }

    pub fn conf_dir(&self) -> PathBuf {
        self.node.conf_dir()
    }

    pub fn write_config(&self, config: &Value) {
        fs::write(
            self.conf_dir().join("10-net.conf"),
            serde_json::to_vec(config).unwrap(),
        )
        .unwrap();
    }

    pub fn settings(&self) -> Settings {
        Settings {
            paths: NodePaths::with_bin_dir(self.conf_dir(), self.node.dir().join("bin")),
            network: None,
        }
    }

    /// host-local over the pods' store, as a script running it by hand would.
    pub fn script(&self) -> HostLocal {
        let conf = NetConf::parse(
            &serde_json::to_vec(&json!({
                "cniVersion": "0.2.0", "name": "flannel.4096",
                "ipam": {"type": "host-local", "subnet": "10.244.1.0/24",
                         "dataDir": self.node.ipam_dir()}
            }))
            .unwrap(),
        )
        .unwrap();
        HostLocal::from_conf(&conf, &cni::CniArgs::default()).unwrap()
    }

    pub fn reservations(&self) -> Vec<String> {
        self.node.reservations("flannel.4096")
    }

    /// kube-proxy's remote endpoint on `ip` (a Service's ClusterIP, a pod of another node),
    /// as the proxier makes it ([`kube_proxy::remote_endpoint`]).
    pub fn kube_proxy_remote_endpoint(&self, ip: &str) {
        self.node
            .create_raw_endpoint("flannel.4096", &kube_proxy::remote_endpoint(ip));
    }
}
