//! A scratch node on the emulator for the node tools' tests: network `cbr0` (win-bridge,
//! host-local over 10.244.1.0/24) in a config directory, and the means to build what ADD,
//! DEL and crashes leave behind.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use cni::NetConf;
use cni_win_conformance::node::network_settings;
use cni_win_core::node;
use hns::schema::{EndpointFlags, HostComputeEndpoint, HostComputeNamespace, IpConfig, Route};
use hns::{Client, Guid};
use ipam_host_local::HostLocal;

use crate::confdir::{self, Network};
use crate::sweep::{Commands, Pass};

pub struct Node {
    pub client: Client,
    pub engine: hns_emulator::Engine,
    pub networks: Vec<Network>,
    pub host_local: HostLocal,
    _dirs: (tempfile::TempDir, tempfile::TempDir, tempfile::TempDir),
}

impl Node {
    pub fn new() -> Node {
        let state = tempfile::tempdir().unwrap();
        let store = tempfile::tempdir().unwrap();
        let conf_dir = tempfile::tempdir().unwrap();
        let emulator = hns_emulator::Emulator::open(state.path()).unwrap();
        let engine = emulator.engine().clone();
        let client: Client = Client::from_box(Box::new(emulator));
        client
            .create_network(
                Guid::ZERO,
                &network_settings("cbr0", "L2Bridge", &[("10.244.1.0/24", "10.244.1.1")]),
            )
            .unwrap();
        let config = serde_json::json!({
            "cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
            "ipam": {"type": "host-local", "subnet": "10.244.1.0/24",
                     "dataDir": store.path()}
        });
        fs::write(
            conf_dir.path().join("10-cbr0.conf"),
            serde_json::to_vec(&config).unwrap(),
        )
        .unwrap();
        let networks = confdir::read(conf_dir.path(), &[]).unwrap().networks;
        let conf = NetConf::parse(&serde_json::to_vec(&config).unwrap()).unwrap();
        let host_local = HostLocal::from_conf(&conf, &cni::CniArgs::default()).unwrap();
        Node {
            client,
            engine,
            networks,
            host_local,
            _dirs: (state, store, conf_dir),
        }
    }

    /// The config directory holding `10-cbr0.conf`.
    pub fn conf_dir(&self) -> &Path {
        self._dirs.2.path()
    }

    pub fn network_id(&self) -> Guid {
        self.client.find_network_by_name("cbr0").unwrap().id()
    }

    pub fn namespace(&self) -> Guid {
        self.client
            .create_namespace(Guid::ZERO, &HostComputeNamespace::default())
            .unwrap()
            .id
    }

    /// Reserves an address for the attachment, as ADD's IPAM step does.
    pub fn reserve(&self, container_id: &str) -> String {
        self.reserve_as(container_id, "eth0")
    }

    /// Reserves an address under any owner, as a script running host-local directly does.
    pub fn reserve_as(&self, container_id: &str, ifname: &str) -> String {
        let allocation = self.host_local.allocate(container_id, ifname).unwrap();
        allocation.result().ips[0].address.ip().to_string()
    }

    /// An endpoint as cni-win's ADD creates it (its deterministic ID and name).
    pub fn ours(&self, container_id: &str, ip: &str) -> Guid {
        let (id, name) = node::endpoint_identity("cbr0", container_id, "eth0");
        self.endpoint(id, &name, ip, EndpointFlags::NONE)
    }

    pub fn endpoint(&self, id: Guid, name: &str, ip: &str, flags: EndpointFlags) -> Guid {
        let network = self.client.open_network(self.network_id()).unwrap();
        let settings = HostComputeEndpoint {
            name: name.to_owned(),
            flags,
            ip_configurations: vec![IpConfig {
                ip_address: ip.parse().unwrap(),
                prefix_length: None,
            }],
            routes: vec![Route::default_via("10.244.1.1".parse().unwrap())],
            ..HostComputeEndpoint::default()
        };
        network.create_endpoint(id, &settings).unwrap().id()
    }

    pub fn endpoints(&self) -> BTreeSet<String> {
        self.client
            .list_endpoints(None)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect()
    }

    pub fn reserved(&self) -> BTreeSet<String> {
        self.host_local
            .reservations()
            .unwrap()
            .into_iter()
            .map(|(ip, _)| ip.to_string())
            .collect()
    }

    pub fn sweep(&self, commands: &impl Commands, apply: bool) -> Pass {
        crate::sweep::sweep(&self.client, &self.networks, commands, apply)
    }
}
