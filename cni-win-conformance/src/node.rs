//! An emulated Windows node for the plugins' own integration tests: an HCN emulator state, a
//! host-local store, and the real plugin binary run the way a runtime runs it.
//!
//! The [`crate::cases::hns`] catalogue proves what every cni-win plugin must do through
//! `hnsctl`; a plugin's tests use a [`Node`] for what only that plugin decides (the endpoint
//! document HNS received for each field config, its own errors), with in-process access to the
//! emulator for what `hnsctl` cannot do quickly (hundreds of filler endpoints, the HNS version).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use hns::schema::{
    EndpointFlags, HostComputeEndpoint, HostComputeNamespace, HostComputeNetwork, IpConfig, Ipam,
    NetworkType, Subnet,
};
use hns::{Client, Guid};
use hns_emulator::{Emulator, Engine};
use ipnetwork::IpNetwork;
use serde_json::{Value, json};

pub use conformance::hostile::Variant;
use conformance::schema::{SPEC_VERSIONS, is_at_least};
use conformance::{Harness, Verdict};

use crate::cases;
use crate::hns::HnsFixture;

/// A fresh emulated node under the temp dir, removed on drop: its HCN emulator state, its
/// networks, the CNI config directory and plugin directory a runtime reads, host-local's store,
/// and the plugin its tests run. Made with [`Node::builder`].
///
/// Only what the builder was asked for exists: a directory nothing put there is not created
/// (`cni-win install` is tested against a node whose directories it creates).
#[derive(Debug)]
pub struct Node {
    dir: tempfile::TempDir,
    plugin: Option<PathBuf>,
}

/// What a [`Node`] starts with; [`NodeBuilder::build`] makes it.
///
/// ```no_run
/// # use cni_win_conformance::{flannel, node::Node};
/// let node = Node::builder("doctor")
///     .network(flannel::host_gw("cbr0", &[("10.244.1.0/24", "10.244.1.1")]))
///     .config("10-cbr0.conf", |node| {
///         serde_json::json!({"cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
///             "ipam": {"type": "host-local", "subnet": "10.244.1.0/24", "dataDir": node.ipam_dir()}})
///     })
///     .build();
/// ```
#[must_use = "a builder makes nothing until `build`"]
pub struct NodeBuilder {
    label: String,
    plugin: Option<PathBuf>,
    networks: Vec<HostComputeNetwork>,
    configs: Vec<(String, ConfigOf)>,
    stub_plugins: Vec<(String, String)>,
}

/// A config written once the node's directories are known (host-local's `dataDir`).
type ConfigOf = Box<dyn FnOnce(&Node) -> Value>;

impl std::fmt::Debug for NodeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeBuilder")
            .field("label", &self.label)
            .field("plugin", &self.plugin)
            .field("networks", &self.networks.len())
            .field(
                "configs",
                &self
                    .configs
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .field("stub_plugins", &self.stub_plugins)
            .finish()
    }
}

impl NodeBuilder {
    /// The plugin binary [`Node::run`] and its ADD, CHECK and DEL run.
    pub fn plugin(mut self, binary: impl Into<PathBuf>) -> NodeBuilder {
        self.plugin = Some(binary.into());
        self
    }

    /// An HNS network the node has before anything runs, as Flannel or an operator makes it.
    pub fn network(mut self, settings: HostComputeNetwork) -> NodeBuilder {
        self.networks.push(settings);
        self
    }

    /// A file of the CNI config directory ([`Node::conf_dir`]), written from what `config`
    /// makes of the node (its store, its directories).
    pub fn config(
        mut self,
        file_name: &str,
        config: impl FnOnce(&Node) -> Value + 'static,
    ) -> NodeBuilder {
        self.configs.push((file_name.to_owned(), Box::new(config)));
        self
    }

    /// A stand-in for the plugin `name` in the plugin directory ([`Node::bin_dir`]) that
    /// answers `--version` with `about`, as doctor asks it, and does nothing else.
    #[cfg(unix)]
    pub fn stub_plugin(mut self, name: &str, about: &str) -> NodeBuilder {
        self.stub_plugins.push((name.to_owned(), about.to_owned()));
        self
    }

    /// Makes the node: its scratch directory, then its networks, configs and plugins.
    pub fn build(self) -> Node {
        let stem = self
            .plugin
            .as_deref()
            .and_then(Path::file_stem)
            .map_or_else(|| "node".into(), |stem| stem.to_string_lossy().into_owned());
        let dir = tempfile::Builder::new()
            .prefix(&format!("{stem}-{}-", self.label))
            .tempdir()
            .unwrap();
        let node = Node {
            dir,
            plugin: self.plugin,
        };
        for network in &self.networks {
            node.create_network(network);
        }
        for (file_name, config) in self.configs {
            let config = config(&node);
            std::fs::create_dir_all(node.conf_dir()).unwrap();
            std::fs::write(
                node.conf_dir().join(file_name),
                serde_json::to_vec(&config).unwrap(),
            )
            .unwrap();
        }
        #[cfg(unix)]
        for (name, about) in self.stub_plugins {
            node.stub_plugin(&name, &about);
        }
        node
    }
}

/// What one plugin call returned.
#[derive(Debug)]
pub struct Reply {
    /// The exit status; `None` when a signal ended the plugin, which no CNI caller accepts.
    pub status: Option<i32>,
    /// Everything the plugin printed on stdout: the protocol's result or error JSON, nothing else.
    pub stdout: String,
    /// The plugin's logs, kept apart so a test can show them when an assertion fails.
    pub stderr: String,
}

impl Reply {
    /// Whether the plugin exited 0, the only status a runtime treats as success.
    pub fn ok(&self) -> bool {
        self.status == Some(0)
    }

    /// The JSON printed on stdout (result or error).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    /// Asserts success and returns the result.
    pub fn result(&self) -> Value {
        assert!(self.ok(), "expected success: {self:?}");
        self.json()
    }

    /// Asserts success with nothing printed (DEL, CHECK, GC, STATUS).
    pub fn silent(&self) {
        assert!(
            self.ok() && self.stdout.trim().is_empty(),
            "expected silent success: {self:?}"
        );
    }

    /// Asserts a CNI error with `code` and returns its message.
    pub fn error(&self, code: u64) -> String {
        assert_eq!(self.status, Some(1), "expected failure: {self:?}");
        let json = self.json();
        assert_eq!(json["code"], code, "{json}");
        json["msg"].as_str().unwrap_or_default().to_owned()
    }
}

/// One plugin invocation: the attachment and the config.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    /// `CNI_COMMAND`: ADD, DEL, CHECK, GC, STATUS or VERSION.
    pub command: &'a str,
    /// `CNI_CONTAINERID`; empty for network-wide calls, which have no attachment.
    pub container_id: &'a str,
    /// `CNI_IFNAME`; the second half of the attachment key the plugins lock and record.
    pub ifname: &'a str,
    /// `CNI_NETNS`: the HCN namespace GUID; `None` leaves it unset, as DEL and GC may.
    pub netns: Option<&'a str>,
    /// The network config, sent on stdin.
    pub config: &'a Value,
}

impl<'a> Call<'a> {
    /// A network-wide call (GC, STATUS): no attachment.
    pub fn network(command: &'a str, config: &'a Value) -> Call<'a> {
        Call {
            command,
            container_id: "",
            ifname: "",
            netns: None,
            config,
        }
    }
}

/// Raw HCN calls of one operation: (without handle closes, with them).
pub type Calls = (u64, u64);

/// The raw calls of a new pod's ADD (on a cold and a warm network cache), a repeated ADD, a
/// CHECK and a DEL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// A new pod's ADD with no network cache (the node's first ADD): the network is found by
    /// name.
    pub cold_add: Calls,
    /// A new pod's ADD on a warm network cache: the figure the call-count budget of docs/performance.md
    /// promises.
    pub add: Calls,
    /// An ADD for an attachment that already exists, which runtimes repeat after a timeout.
    pub repeated_add: Calls,
    /// A CHECK of a live pod.
    pub check: Calls,
    /// A DEL of an attached pod.
    pub del: Calls,
}

impl Budget {
    /// Whether every figure is at most `limits`' (both without and with closes).
    pub fn within(&self, limits: &Budget) -> bool {
        let pairs = [
            (self.cold_add, limits.cold_add),
            (self.add, limits.add),
            (self.repeated_add, limits.repeated_add),
            (self.check, limits.check),
            (self.del, limits.del),
        ];
        pairs
            .iter()
            .all(|((calls, all), (max, max_all))| calls <= max && all <= max_all)
    }
}

/// A network document with one subnet per (prefix, gateway), the gateway as its default route.
pub fn network_settings(
    name: &str,
    network_type: &str,
    subnets: &[(&str, &str)],
) -> HostComputeNetwork {
    HostComputeNetwork {
        name: name.to_owned(),
        network_type: NetworkType::parse(network_type),
        ipams: vec![Ipam {
            ipam_type: "Static".to_owned(),
            subnets: subnets
                .iter()
                .map(|(prefix, gateway)| {
                    Subnet::with_gateway(
                        prefix.parse().expect("the fixture's subnet is a CIDR"),
                        gateway
                            .parse()
                            .expect("the fixture's gateway is an address"),
                    )
                })
                .collect(),
        }],
        ..HostComputeNetwork::default()
    }
}

impl Node {
    /// A node to be made, named `label` in its directory's name.
    pub fn builder(label: &str) -> NodeBuilder {
        NodeBuilder {
            label: label.to_owned(),
            plugin: None,
            networks: Vec::new(),
            configs: Vec::new(),
            stub_plugins: Vec::new(),
        }
    }

    /// The node's scratch root; tests put extra configs and CNI_PATH binaries under it.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The CNI config directory a runtime (and `cni-win`) reads.
    pub fn conf_dir(&self) -> PathBuf {
        self.dir.path().join("net.d")
    }

    /// The plugin directory: `CNI_PATH` of every plugin run, where a runtime finds plugins.
    pub fn bin_dir(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    /// Puts a stand-in for the plugin `name` in [`Node::bin_dir`] ([`stub_plugin`]).
    #[cfg(unix)]
    pub fn stub_plugin(&self, name: &str, about: &str) {
        std::fs::create_dir_all(self.bin_dir()).unwrap();
        stub_plugin(&self.bin_dir(), name, about);
    }

    /// The emulator's state directory, what `HCN_EMULATOR_STATE` points the plugin at.
    pub fn state(&self) -> PathBuf {
        self.dir.path().join("hcn")
    }

    /// Where the configs' host-local keeps its reservations (`ipam.dataDir`).
    pub fn ipam_dir(&self) -> PathBuf {
        self.dir.path().join("ipam")
    }

    /// A typed client on the node's emulator, to set up or inspect HNS objects as an operator would.
    pub fn client(&self) -> Client {
        Client::from_box(Box::new(Emulator::open(&self.state()).unwrap()))
    }

    /// The emulator's controls: call counters, faults, the HNS version.
    pub fn engine(&self) -> Engine {
        Emulator::open(&self.state()).unwrap().engine().clone()
    }

    /// Reboots the emulated host: endpoints, namespaces and non-persistent networks are gone.
    pub fn reboot(&self) {
        self.engine().suffer(hns_emulator::Outage::Reboot).unwrap();
    }

    /// Creates an HNS network, as Flannel or an operator does before the first pod starts.
    pub fn create_network(&self, settings: &HostComputeNetwork) -> Guid {
        self.client()
            .create_network(Guid::ZERO, settings)
            .unwrap()
            .id()
    }

    /// The GUID of the network named `name`, which plugins find by name from the config.
    pub fn network_id(&self, name: &str) -> Guid {
        self.client().find_network_by_name(name).unwrap().id()
    }

    /// A new HCN namespace, as containerd makes one per pod; its GUID is CNI_NETNS.
    pub fn namespace(&self) -> String {
        self.client()
            .create_namespace(Guid::ZERO, &HostComputeNamespace::default())
            .unwrap()
            .id
            .to_string()
    }

    /// Runs the real binary with the call's environment and config on stdin.
    pub fn run(&self, call: &Call<'_>) -> Reply {
        self.run_with(call, &BTreeMap::new())
    }

    /// Like [`Node::run`], with extra environment variables (e.g. a shorter HNS deadline).
    pub fn run_with(&self, call: &Call<'_>, extra_env: &BTreeMap<&str, String>) -> Reply {
        let plugin = self
            .plugin
            .as_ref()
            .expect("the node runs a plugin: NodeBuilder::plugin");
        let mut command = Command::new(plugin);
        // A relative path in a config (a hostile test's log file) lands in the node's dir.
        command
            .current_dir(self.dir.path())
            .env_clear()
            .env("CNI_COMMAND", call.command)
            .env("CNI_CONTAINERID", call.container_id)
            .env("CNI_IFNAME", call.ifname)
            .env("CNI_PATH", self.bin_dir())
            .env(hns_emulator::STATE_ENV, self.state())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(netns) = call.netns {
            command.env("CNI_NETNS", netns);
        }
        for (key, value) in extra_env {
            command.env(key, value);
        }
        let mut child = command.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(call.config.to_string().as_bytes())
            .unwrap();
        let Output {
            status,
            stdout,
            stderr,
        } = child.wait_with_output().unwrap();
        Reply {
            status: status.code(),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }

    fn attachment<'a>(
        command: &'a str,
        container_id: &'a str,
        netns: Option<&'a str>,
        config: &'a Value,
    ) -> Call<'a> {
        Call {
            command,
            container_id,
            ifname: "eth0",
            netns,
            config,
        }
    }

    /// ADD of `container_id`'s `eth0` in the namespace `netns`.
    pub fn add(&self, container_id: &str, netns: &str, config: &Value) -> Reply {
        self.run(&Node::attachment("ADD", container_id, Some(netns), config))
    }

    /// DEL of `container_id`'s `eth0`; `netns` may be absent, as kubelet sends it after a reboot.
    pub fn del(&self, container_id: &str, netns: Option<&str>, config: &Value) -> Reply {
        self.run(&Node::attachment("DEL", container_id, netns, config))
    }

    /// CHECK of `container_id`'s `eth0`, which must find what ADD created.
    pub fn check(&self, container_id: &str, netns: &str, config: &Value) -> Reply {
        self.run(&Node::attachment(
            "CHECK",
            container_id,
            Some(netns),
            config,
        ))
    }

    /// The endpoints of the network named `network`.
    pub fn endpoints(&self, network: &str) -> Vec<HostComputeEndpoint> {
        let id = self.network_id(network);
        self.client().list_endpoints(Some(id)).unwrap()
    }

    /// The endpoint named `name`.
    pub fn endpoint(&self, name: &str) -> HostComputeEndpoint {
        self.client()
            .find_endpoint_by_name(name)
            .unwrap()
            .unwrap_or_else(|| panic!("no endpoint {name}"))
            .into_properties()
    }

    /// The addresses host-local has reserved for `network` (its reservation files).
    pub fn reservations(&self, network: &str) -> Vec<String> {
        let Ok(listing) = std::fs::read_dir(self.ipam_dir().join(network)) else {
            return Vec::new();
        };
        let mut names: Vec<String> = listing
            .filter_map(|entry| entry.ok())
            .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .filter(|name| name.parse::<std::net::IpAddr>().is_ok())
            .collect();
        names.sort();
        names
    }

    /// Raw HCN calls since the last reading.
    pub fn calls(&self) -> Calls {
        let stats = self.engine().reset_stats().unwrap();
        let total: u64 = stats.values().sum();
        let closes: u64 = stats
            .iter()
            .filter(|(name, _)| hns::Function::from_name(name).is_some_and(hns::Function::is_close))
            .map(|(_, n)| n)
            .sum();
        (total - closes, total)
    }

    /// Creates an endpoint directly, as another component (flanneld, kube-proxy) would.
    pub fn foreign_endpoint(
        &self,
        network: &str,
        name: &str,
        ip: &str,
        flags: EndpointFlags,
    ) -> Guid {
        let client = self.client();
        let open = client.find_network_by_name(network).unwrap();
        let settings = HostComputeEndpoint {
            name: name.to_owned(),
            ip_configurations: vec![IpConfig {
                ip_address: ip.parse().expect("the fixture's address is an IP"),
                prefix_length: None,
            }],
            flags,
            ..HostComputeEndpoint::default()
        };
        open.create_endpoint(Guid::ZERO, &settings).unwrap().id()
    }

    /// Creates an endpoint on `network` from the raw HCN document `document` under an ID HNS
    /// chooses, as another component's hcsshim calls do (`HcnCreateEndpoint`), attached to
    /// nothing.
    pub fn create_raw_endpoint(&self, network: &str, document: &Value) {
        let client = self.client();
        let raw = client.raw();
        let network = raw.open_network(&self.network_id(network)).unwrap();
        let endpoint = raw
            .create_endpoint(&network, &Guid::ZERO, &document.to_string())
            .unwrap();
        raw.close_endpoint(endpoint).unwrap();
        raw.close_network(network).unwrap();
    }

    /// Creates an endpoint on `network` from the raw HCN document `document` (which names it)
    /// under an ID HNS chooses and attaches it to `netns`, as the reference plugins' V2 ADD does
    /// (`HcnCreateEndpoint`, then `HcnModifyNamespace`); returns it as HNS then reports it.
    pub fn raw_endpoint(
        &self,
        network: &str,
        document: &Value,
        netns: &str,
    ) -> HostComputeEndpoint {
        self.create_raw_endpoint(network, document);
        let name = document["Name"]
            .as_str()
            .expect("the document names the endpoint");
        self.client()
            .attach_endpoint(netns.parse().unwrap(), self.endpoint(name).id)
            .unwrap();
        self.endpoint(name)
    }

    /// Fills the node with `count` foreign endpoints: a fifth on `network` (from the top of its
    /// first subnet, away from the addresses pods get), the rest on a new L2Bridge network.
    pub fn fill(&self, network: &str, count: u32) {
        let subnet: IpNetwork = self
            .client()
            .find_network_by_name(network)
            .unwrap()
            .properties()
            .subnets()
            .next()
            .expect("the network has a subnet")
            .ip_address_prefix
            .network();
        let IpNetwork::V4(subnet) = subnet else {
            panic!("fill needs an IPv4 subnet, {network} has {subnet}");
        };
        let local = count / 5;
        let top = u32::from(subnet.broadcast());
        for i in 0..local {
            let ip = std::net::Ipv4Addr::from(top - 1 - i);
            self.foreign_endpoint(
                network,
                &format!("filler-{i}_{network}"),
                &ip.to_string(),
                EndpointFlags::NONE,
            );
        }
        self.create_network(&network_settings(
            "filler",
            "L2Bridge",
            &[("10.250.0.0/16", "10.250.0.1")],
        ));
        for i in 0..count - local {
            let ip = format!("10.250.{}.{}", 1 + i / 200, 2 + i % 200);
            self.foreign_endpoint(
                "filler",
                &format!("filler-{i}_filler"),
                &ip,
                EndpointFlags::NONE,
            );
        }
    }

    /// Where a plugin with host-local in [`Node::ipam_dir`] caches `network`'s HNS network.
    pub fn network_cache(&self, network: &str) -> PathBuf {
        self.ipam_dir()
            .join(network)
            .join(".cni-win")
            .join("hns-network")
    }

    /// Removes [`Node::network_cache`] if it is there, so the next ADD finds `network` by name.
    pub fn forget_network_cache(&self, network: &str) {
        if let Err(e) = std::fs::remove_file(self.network_cache(network)) {
            assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
        }
    }

    /// The raw calls with `config` (a version with CHECK) of: a new pod's ADD with no network
    /// cache, another new pod's ADD (the cache now warm), its repeated ADD, its CHECK and its
    /// DEL. Both pods are gone afterwards.
    pub fn budget(&self, container_id: &str, config: &Value) -> Budget {
        let network = config["name"].as_str().unwrap_or_default();
        let cold = (format!("{container_id}-cold"), self.namespace());
        let netns = self.namespace();
        self.forget_network_cache(network);
        self.calls();
        self.add(&cold.0, &cold.1, config).result();
        let cold_add = self.calls();
        self.add(container_id, &netns, config).result();
        let add = self.calls();
        let result = self.add(container_id, &netns, config).result();
        let repeated_add = self.calls();
        let mut checked = config.clone();
        checked["prevResult"] = result;
        self.check(container_id, &netns, &checked).silent();
        let check = self.calls();
        self.del(container_id, Some(&netns), config).silent();
        let del = self.calls();
        self.del(&cold.0, Some(&cold.1), config).silent();
        self.calls();
        Budget {
            cold_add,
            add,
            repeated_add,
            check,
            del,
        }
    }

    /// For every spec version: ADDs a pod in a new namespace with `config(version)`, asserts
    /// its first address has `gateway` (and is not it), hands the result to `inspect` (with the
    /// version and the namespace), CHECKs it where the version has CHECK, DELs it; then asserts
    /// `network` has no endpoint and no reservation left.
    pub fn in_every_version(
        &self,
        network: &str,
        gateway: &str,
        config: impl Fn(&str) -> Value,
        inspect: impl Fn(&str, &str, &Value),
    ) {
        for (i, version) in SPEC_VERSIONS.into_iter().enumerate() {
            let container = format!("pod-{i}");
            let netns = self.namespace();
            let mut config = config(version);
            let result = self.add(&container, &netns, &config).result();
            assert_eq!(result["cniVersion"], version);
            let (address, given) = first_address(&result);
            assert_eq!(given, gateway, "{version}: {result}");
            assert!(
                !address.starts_with(&format!("{gateway}/")),
                "{version}: {result}"
            );
            inspect(version, &netns, &result);
            config["prevResult"] = result;
            if is_at_least(version, "0.4.0") {
                self.check(&container, &netns, &config).silent();
            }
            self.del(&container, Some(&netns), &config).silent();
        }
        assert!(self.endpoints(network).is_empty());
        assert!(self.reservations(network).is_empty());
    }

    /// Measures [`Node::budget`] with 1 endpoint on the node and again after [`Node::fill`]ing
    /// it with 500, prints both, and asserts they are equal and within the plugin's `limits`.
    pub fn assert_budgets(
        &self,
        network: &str,
        config: &Value,
        limits: &Budget,
    ) -> (Budget, Budget) {
        let few = self.budget("budget-1", config);
        self.fill(network, 500);
        let many = self.budget("budget-501", config);
        eprintln!(
            "raw HCN calls (without closes, with closes)\n  1 endpoint:    {few:?}\n  501 endpoints: {many:?}"
        );
        assert_eq!(
            few, many,
            "the call counts depend on the endpoints on the node"
        );
        assert!(few.within(limits), "over budget {limits:?}: {few:?}");
        (few, many)
    }
}

/// Field configs: how tests feed the configs people run to a node.
impl Node {
    /// Points host-local at the node's store (the only change a test makes to a field config).
    pub fn with_data_dir(&self, mut config: Value) -> Value {
        config["ipam"]["dataDir"] = json!(self.ipam_dir());
        config
    }

    /// What `plugin_type` receives when Flannel on Windows delegates to it (flannel-io/cni-plugin):
    /// the flannel config's `delegate` with `name`, `type` (switched to `plugin_type` whatever
    /// it named, e.g. sdnoverlay), `ipMasq`, `ipMasqNetwork` (the cluster network 10.244.0.0/16),
    /// `cniVersion` (0.2.0 unless the flannel config sets one) and host-local IPAM with only
    /// the node's `subnet` (10.244.1.0/24) set.
    pub fn rendered_by_flannel(&self, flannel: &Value, plugin_type: &str) -> Value {
        let mut delegate = flannel["delegate"].clone();
        delegate["name"] = flannel["name"].clone();
        delegate["type"] = json!(plugin_type);
        delegate["ipMasq"] = json!(true);
        delegate["ipMasqNetwork"] = json!("10.244.0.0/16");
        delegate["cniVersion"] = flannel.get("cniVersion").cloned().unwrap_or(json!("0.2.0"));
        delegate["ipam"] = json!({"type": "host-local", "subnet": "10.244.1.0/24"});
        self.with_data_dir(delegate)
    }

    /// Runs the pod `pod`'s whole life with `config`: ADD in a new namespace, CHECK, DEL, each
    /// asserted to succeed, then asserts nothing of the pod is left. A config whose version
    /// predates CHECK (0.4.0) is CHECKed as 1.0.0 with the ADD result as prevResult, so its
    /// policies are held to what CHECK compares. Returns the endpoint HNS held after ADD, as
    /// JSON, and ADD's log (stderr).
    pub fn pod_life_cycle(&self, config: &Value) -> (Value, String) {
        let netns = self.namespace();
        let added = self.add("pod", &netns, config);
        let result = added.result();
        let network = go_member(config, "name").as_str().unwrap_or_default();
        let endpoint = serde_json::to_value(self.endpoint(&format!("pod_{network}"))).unwrap();
        let mut check = config.clone();
        let version = go_member(config, "cniVersion").as_str().unwrap_or("0.1.0");
        if !is_at_least(version, "0.4.0") {
            check
                .as_object_mut()
                .unwrap()
                .retain(|key, _| !key.eq_ignore_ascii_case("cniVersion"));
            check["cniVersion"] = json!("1.0.0");
        }
        check["prevResult"] = result;
        self.check("pod", &netns, &check).silent();
        self.del("pod", Some(&netns), config).silent();
        assert!(
            self.endpoints(network).is_empty(),
            "{network}: endpoint left"
        );
        assert!(
            self.reservations(network).is_empty(),
            "{network}: reservation left"
        );
        (endpoint, added.stderr)
    }

    /// ADDs the pod `pod` with `config` in a new namespace and returns the endpoint HNS holds
    /// for it, as JSON.
    pub fn pod_endpoint(&self, config: &Value) -> Value {
        let netns = self.namespace();
        self.add("pod", &netns, config).result();
        let network = config["name"].as_str().unwrap_or_default();
        serde_json::to_value(self.endpoint(&format!("pod_{network}"))).unwrap()
    }
}

/// The member `key` of the object `config` as the Go plugins read it: the exact key, else one
/// that differs only in case (`Null` when there is none).
fn go_member<'a>(config: &'a Value, key: &str) -> &'a Value {
    config.get(key).unwrap_or_else(|| {
        config
            .as_object()
            .and_then(|object| object.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)))
            .map_or(&Value::Null, |(_, value)| value)
    })
}

/// What [`Node::del_with_every_variant`] found.
#[derive(Debug)]
pub struct HostileDel {
    /// How many distinct hostile configs DEL was given.
    pub inputs: usize,
    /// How many of them change a key that identifies the attachment's state.
    pub identifying: usize,
    /// The others whose DEL failed or left something behind, each with why.
    pub blocked: Vec<String>,
}

/// Teardown with a config that changed after ADD.
impl Node {
    /// How many pods [`Node::del_with_every_variant`] runs at once.
    const HOSTILE_WORKERS: usize = 3;

    /// A name for this process's `run`th call of [`Node::del_with_every_variant`]: attachment
    /// locks are the machine's, so two runs in one test binary must not share pod names.
    fn hostile_run() -> usize {
        static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// After an ADD with a good config, DEL with each hostile variant of it
    /// ([`conformance::hostile::variants`]) that `selected` accepts; when something of
    /// the pod is left then, DEL with the good config must clean it up before the next. A
    /// variant that changes none of `identifying` (keys as the variant's path spells them)
    /// must return 0 and leave nothing of the pod: no endpoint on `network`, no reservation,
    /// nothing `leftover` reports for its container ID (a test's own state, e.g. Flannel's
    /// record). Every variant must get a CNI answer: exit 0, or 1 with an error that is not a
    /// crash. A few pods run at once, each through its share of the variants: `good(n)` is
    /// the good config of the `n`th, the same for all but what pods on one node cannot share
    /// (a host port).
    pub fn del_with_every_variant(
        &self,
        good: &(dyn Fn(usize) -> Value + Sync),
        network: &str,
        selected: &(dyn Fn(&Variant) -> bool + Sync),
        identifying: &[&str],
        leftover: &(dyn Fn(&str) -> Option<String> + Sync),
    ) -> HostileDel {
        let variants_of = |worker: usize| -> Vec<Variant> {
            let mut variants = conformance::hostile::variants(&good(worker));
            variants.retain(|variant| selected(variant));
            variants
        };
        let variants = variants_of(0);
        let run = Self::hostile_run();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let blocked = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for worker in 0..Self::HOSTILE_WORKERS {
                let (next, blocked, variants_of) = (&next, &blocked, &variants_of);
                scope.spawn(move || {
                    let good = good(worker);
                    let variants = variants_of(worker);
                    let pod = format!("hostile-{run}-{worker}");
                    let netns = self.namespace();
                    let left = || self.left_of(network, &pod, leftover);
                    loop {
                        let index = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(variant) = variants.get(index) else {
                            break;
                        };
                        self.add(&pod, &netns, &good).result();
                        let reply = self.del(&pod, None, &variant.config);
                        let what = format!("{} = {}", variant.path, variant.change);
                        assert!(
                            reply.ok() || (reply.status == Some(1) && reply.json()["code"] != 999),
                            "{what}: {reply:?}"
                        );
                        let problem = if variant.changes_any(identifying) {
                            None
                        } else if !reply.ok() {
                            Some(format!("{what}: failed: {}", reply.stdout.trim()))
                        } else {
                            let left = left();
                            (!left.is_empty())
                                .then(|| format!("{what}: returned 0 but left {left:?}"))
                        };
                        blocked.lock().unwrap().extend(problem);
                        if !left().is_empty() {
                            self.del(&pod, None, &good).silent();
                            assert_eq!(
                                left(),
                                Vec::<String>::new(),
                                "{what}: the good config's DEL"
                            );
                        }
                    }
                });
            }
        });
        let mut blocked = blocked.into_inner().unwrap();
        blocked.sort();
        HostileDel {
            inputs: variants.len(),
            identifying: variants
                .iter()
                .filter(|v| v.changes_any(identifying))
                .count(),
            blocked,
        }
    }

    /// What is left of `container_id`'s `eth0` on `network`: its endpoint, its reservations
    /// and what `leftover` reports.
    fn left_of(
        &self,
        network: &str,
        container_id: &str,
        leftover: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<String> {
        let store = self.ipam_dir().join(network);
        let owner = format!("{container_id}\r\neth0");
        let mut left: Vec<String> = self
            .endpoints(network)
            .into_iter()
            .filter(|endpoint| endpoint.name.starts_with(&format!("{container_id}_")))
            .map(|endpoint| format!("endpoint {}", endpoint.name))
            .chain(
                self.reservations(network)
                    .into_iter()
                    .filter(|ip| std::fs::read_to_string(store.join(ip)).is_ok_and(|c| c == owner))
                    .map(|ip| format!("reservation {ip}")),
            )
            .collect();
        left.extend(leftover(container_id));
        left
    }
}

/// Puts a stand-in for the plugin `name` in the directory `dir` that answers `--version` with
/// `about`, as doctor asks it, and does nothing else.
#[cfg(unix)]
pub fn stub_plugin(dir: &Path, name: &str, about: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\necho '{about}'\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The first address of a result of any version and its gateway (`ips[0]`, or 0.1/0.2's `ip4`).
pub fn first_address(result: &Value) -> (String, String) {
    let ip = if result.get("ip4").is_some() {
        &result["ip4"]
    } else {
        &result["ips"][0]
    };
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (
        text(ip.get("ip").unwrap_or(&ip["address"])),
        text(&ip["gateway"]),
    )
}

/// A JSON file of the workspace (a field config or an example).
pub fn load_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The endpoint policies as HNS holds them, for asserting on endpoint documents.
pub mod policy {
    use serde_json::{Value, json};

    /// OutBoundNAT with these exceptions.
    pub fn nat(exceptions: &[&str]) -> Value {
        json!({"Type": "OutBoundNAT", "Settings": {"Exceptions": exceptions}})
    }

    /// An encapsulated SDNRoute to `prefix`.
    pub fn route(prefix: &str) -> Value {
        json!({"Type": "SDNRoute", "Settings": {"DestinationPrefix": prefix, "NeedEncap": true}})
    }

    /// Loopback DSR for the pod address `ip`.
    pub fn dsr(ip: &str) -> Value {
        json!({"Type": "OutBoundNAT", "Settings": {"Destinations": [ip]}})
    }

    /// The host's provider address (overlay).
    pub fn provider_address(ip: &str) -> Value {
        json!({"Type": "ProviderAddress", "Settings": {"ProviderAddress": ip}})
    }
}

/// `hnsctl` from the plugin's target directory, built first if this test run did not build it.
pub fn hnsctl_beside(plugin: &Path) -> PathBuf {
    built_beside(plugin, "hnsctl", "hnsctl")
}

/// The binary `bin` of `package` from the target directory of `exe` (a binary of this test
/// run), built first if this test run did not build it.
pub fn built_beside(exe: &Path, package: &str, bin: &str) -> PathBuf {
    let dir = exe.parent().expect("the binary has a directory");
    let path = dir.join(format!("{bin}{}", std::env::consts::EXE_SUFFIX));
    if !path.is_file() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", package, "--bin", bin])
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building {bin} failed");
    }
    path
}

/// Runs the protocol and HNS catalogues against `plugin` (natively), each case on a fresh
/// emulated host with the network `network_args` make, with the JSON file `template` as the
/// valid config; prints the table and panics unless every case passed.
pub fn assert_catalogues_pass(plugin: &Path, template: &Path, network_args: &str) {
    let fixture = HnsFixture::new(hnsctl_beside(plugin), network_args).unwrap();
    let mut catalogue = conformance::cases::protocol();
    catalogue.extend(cases::hns(&fixture));
    let report = Harness::new(plugin)
        .with_fixture(Arc::new(fixture))
        .with_config_template(load_json(template))
        .unwrap()
        .run(&catalogue, "");
    eprint!("{}", report.table());
    assert!(report.cases.iter().any(|c| c.id.starts_with("hns.")));
    assert!(
        report.cases.iter().all(|c| c.verdict == Verdict::Pass),
        "{}",
        report.table()
    );
}
