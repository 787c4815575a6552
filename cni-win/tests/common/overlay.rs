//! An emulated Flannel vxlan node for the node tools: `flannel.4096` as flanneld's vxlan
//! backend leaves it and a config directory with its win-overlay config.

use std::fs;
use std::path::PathBuf;

use cni::NetConf;
use cni_win::paths::NodePaths;
use cni_win::source_vip::Settings;
use cni_win_conformance::node::{Node, network_settings};
use hns::Client;
use hns::schema::policy::{IsolationIdPolicy, ProviderAddressPolicy, VxlanPortPolicy};
use hns::schema::{NetworkPolicy, SubnetPolicy};
use ipam_host_local::HostLocal;
use serde_json::{Value, json};

pub const HOST_MAC: &str = "00-15-5D-52-C0-01";

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
        let node = Node::new("cni-win", "source-vip");
        let mut network = network_settings(
            "flannel.4096",
            network_type,
            &[("10.244.1.0/24", "10.244.1.1")],
        );
        for subnet in network.ipams.iter_mut().flat_map(|ipam| &mut ipam.subnets) {
            subnet.policies = vec![SubnetPolicy::Vsid(IsolationIdPolicy { isolation_id: 4096 })];
        }
        network.policies = vec![
            NetworkPolicy::VxlanPort(VxlanPortPolicy { port: 4789 }),
            NetworkPolicy::ProviderAddress(ProviderAddressPolicy {
                provider_address: "10.127.130.38".parse().unwrap(),
            }),
        ];
        node.create_network(&network);
        let overlay = Overlay {
            client: node.client(),
            node,
        };
        fs::create_dir_all(overlay.conf_dir()).unwrap();
        overlay.write_config(&json!({
            "cniVersion": "1.0.0", "name": "flannel.4096", "type": plugin,
            "ipam": {"type": "host-local", "subnet": "10.244.1.0/24",
                     "dataDir": overlay.node.ipam_dir()}
        }));
        overlay
    }

    pub fn conf_dir(&self) -> PathBuf {
        self.node.dir().join("net.d")
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

    /// kube-proxy's remote endpoint on `ip` (a Service's ClusterIP, a pod of another node): the
    /// host's MAC, `RemoteEndpoint`, the node IP as ProviderAddress, as the proxier makes it.
    pub fn kube_proxy_remote_endpoint(&self, ip: &str) {
        let document = json!({
            "SchemaVersion": {"Major": 2, "Minor": 0},
            "IpConfigurations": [{"IpAddress": ip}],
            "MacAddress": HOST_MAC,
            "Flags": 1,
            "Policies": [{"Type": "ProviderAddress", "Settings": {"ProviderAddress": "10.127.130.38"}}]
        });
        let raw = self.client.raw();
        let id = self
            .client
            .find_network_by_name("flannel.4096")
            .unwrap()
            .id();
        let network = raw.open_network(&id).unwrap();
        let endpoint = raw
            .create_endpoint(&network, &hns::Guid::ZERO, &document.to_string())
            .unwrap();
        raw.close_endpoint(endpoint).unwrap();
        raw.close_network(network).unwrap();
    }
}
