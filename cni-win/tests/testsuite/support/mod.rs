//! The node tools' nodes, made with cni-win-conformance's builder: [`ScratchNode`] (network
//! `cbr0`, win-bridge, host-local over 10.244.1.0/24, in a config directory, and the means to
//! build what ADD, DEL and crashes leave behind), [`overlay::Overlay`] (Flannel vxlan), the one
//! [`doctor::Doctor`] fixture over either, and the node daemon as a process ([`daemon`]).
#![allow(dead_code)] // each test module uses part of it

pub mod daemon;
pub mod doctor;
pub mod network_policy;
pub mod overlay;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use cni::NetConf;
use cni_win::confdir;
use cni_win::node::Network;
use cni_win::shutdown::Shutdown;
use cni_win::sweep::{self, Commands, Pass};
use cni_win_conformance::flannel;
use cni_win_conformance::node::Node;
use cni_win_core::identity::Identity;
use cni_win_core::snapshot::NodeSnapshot;
use hns::schema::{
    EndpointFlags, HostComputeEndpoint, HostComputeNetwork, IpConfig, NetworkFlags, Route,
};
use hns::{Client, Guid};
use hns_emulator::Engine;
use ipam_host_local::HostLocal;

/// `cbr0` as flanneld's host-gw backend makes it, with `flags`.
fn cbr0(flags: NetworkFlags) -> HostComputeNetwork {
    HostComputeNetwork {
        flags,
        ..flannel::host_gw("cbr0", &[("10.244.1.0/24", "10.244.1.1")])
    }
}

/// The scratch node: the emulated node, a client and the engine's controls on it, its
/// configured networks and the store's host-local.
pub struct ScratchNode {
    pub client: Client,
    pub engine: Engine,
    pub host_local: HostLocal,
    node: Node,
    _alone: MutexGuard<'static, ()>,
}

/// Held by each [`ScratchNode`] for its life: one at a time in the test binary. Every scratch
/// node's network is `cbr0` and the tests name their pods alike (`live`, `killed`, `a`), while
/// attachment locks are the machine's and sweep, the daemon and doctor try them: two tests at
/// once would see each other's commands in flight and leave what they came to remove.
static SCRATCH_NODES: Mutex<()> = Mutex::new(());

impl ScratchNode {
    pub fn new() -> ScratchNode {
        ScratchNode::with_flags(NetworkFlags::NONE)
    }

    /// `cbr0` made non-persistent, as flanneld makes its networks: a reboot drops it.
    pub fn non_persistent() -> ScratchNode {
        ScratchNode::with_flags(NetworkFlags::ENABLE_NON_PERSISTENT)
    }

    fn with_flags(flags: NetworkFlags) -> ScratchNode {
        // A test that failed holding it says nothing about the next one.
        let alone = SCRATCH_NODES
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let node = Node::builder("tools")
            .network(cbr0(flags))
            .config("10-cbr0.conf", cbr0_config)
            .build();
        let conf = NetConf::parse(&serde_json::to_vec(&cbr0_config(&node)).unwrap()).unwrap();
        ScratchNode {
            client: node.client(),
            engine: node.engine(),
            host_local: HostLocal::from_conf(&conf, &cni::CniArgs::default()).unwrap(),
            node,
            _alone: alone,
        }
    }

    /// flanneld starting after a reboot: `cbr0` made again, non-persistent, under a new ID.
    pub fn flanneld_recreates_cbr0(&self) -> Guid {
        self.node
            .create_network(&cbr0(NetworkFlags::ENABLE_NON_PERSISTENT))
    }

    /// The config directory holding `10-cbr0.conf`.
    pub fn conf_dir(&self) -> PathBuf {
        self.node.conf_dir()
    }

    /// The networks the config directory configures now, decoded by their plugins' code.
    pub fn networks(&self) -> Vec<Network> {
        confdir::read(&self.conf_dir(), &[])
            .unwrap()
            .networks
            .into_iter()
            .map(|network| network.decode(None))
            .collect()
    }

    pub fn network_id(&self) -> Guid {
        self.node.network_id("cbr0")
    }

    pub fn namespace(&self) -> Guid {
        self.node.namespace().parse().unwrap()
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
        let identity = Identity::of("cbr0", container_id, "eth0");
        self.endpoint(identity.guid, &identity.name, ip, EndpointFlags::NONE)
    }

    pub fn endpoint(&self, id: Guid, name: &str, ip: &str, flags: EndpointFlags) -> Guid {
        self.try_endpoint(id, name, ip, flags).unwrap()
    }

    /// [`ScratchNode::endpoint`], or HNS's refusal (an address another endpoint holds).
    pub fn try_endpoint(
        &self,
        id: Guid,
        name: &str,
        ip: &str,
        flags: EndpointFlags,
    ) -> Result<Guid, hns::CreateEndpointError> {
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
        Ok(network.create_endpoint(id, &settings)?.id())
    }

    /// An endpoint on `cbr0` holding `ip` whoever else holds it (`Guid::ZERO`: a new ID), as
    /// the field finds duplicates: the emulator's injection, past HNS's create check.
    pub fn inject_endpoint(&self, id: Guid, name: &str, ip: &str, remote: bool) -> Guid {
        self.engine
            .inject(&hns_emulator::Injection::Endpoint {
                id,
                network: self.network_id(),
                name: name.to_owned(),
                ip: ip.parse().unwrap(),
                remote,
            })
            .unwrap()
    }

    pub fn endpoints(&self) -> BTreeSet<String> {
        self.client
            .list_endpoints(None)
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect()
    }

    /// Every address an endpoint holds, on any network.
    pub fn endpoints_holding(&self) -> BTreeSet<String> {
        self.client
            .list_endpoints(None)
            .unwrap()
            .into_iter()
            .flat_map(|e| e.ip_configurations)
            .map(|config| config.ip_address.to_string())
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

    /// One sweep pass over the configured networks, on a fresh read of the node.
    pub fn sweep(&self, commands: &impl Commands, apply: bool) -> Pass {
        self.sweep_networks(&self.networks(), commands, apply)
    }

    /// One sweep pass over `networks`.
    pub fn sweep_networks(
        &self,
        networks: &[Network],
        commands: &impl Commands,
        apply: bool,
    ) -> Pass {
        let snapshot = NodeSnapshot::read(&self.client).unwrap();
        sweep::sweep(
            &self.client,
            &snapshot,
            networks,
            commands,
            apply,
            &Shutdown::new(),
        )
    }

    /// Raw HCN calls since the last reading, without and with the `HcnClose*` calls.
    pub fn calls(&self) -> (u64, u64) {
        self.node.calls()
    }

    /// Another client on the node's HNS, for an operation that takes its own.
    pub fn new_client(&self) -> Client {
        self.node.client()
    }

    /// The emulator's state directory: `HCN_EMULATOR_STATE` for a command run on this node.
    pub fn state(&self) -> PathBuf {
        self.node.state()
    }

    /// The emulated node's scratch root.
    pub fn dir(&self) -> &Path {
        self.node.dir()
    }

    /// The emulated node itself.
    pub fn emulated(&self) -> &Node {
        &self.node
    }
}

/// win-bridge's config for `cbr0`, host-local over `node`'s store.
fn cbr0_config(node: &Node) -> serde_json::Value {
    serde_json::json!({
        "cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
        "ipam": {"type": "host-local", "subnet": "10.244.1.0/24",
                 "dataDir": node.ipam_dir()}
    })
}

/// doctor's findings that are not a pass, as (check, verdict).
pub fn problems(report: &cni_win::doctor::Report) -> Vec<(String, cni_win::doctor::Severity)> {
    report
        .findings
        .iter()
        .filter(|f| f.severity != cni_win::doctor::Severity::Pass)
        .map(|f| (f.check.clone(), f.severity))
        .collect()
}
