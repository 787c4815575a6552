//! A node for the tests: an HCN emulator state with the Flannel host-gw network `cbr0`
//! (L2Bridge 10.244.1.0/24, HNS gateway .1), namespaces, a host-local store, and the real
//! `win-bridge` binary run the way a runtime runs it.
#![allow(dead_code)] // each test binary uses its own subset

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use hns::emulator::{Emulator, Engine};
use hns::schema::{
    HostComputeEndpoint, HostComputeNamespace, HostComputeNetwork, Ipam, Route, Subnet,
};
use hns::{Client, Guid};
use serde_json::{Value, json};

pub const PLUGIN: &str = env!("CARGO_BIN_EXE_win-bridge");
pub const NETWORK: &str = "cbr0";

/// A fresh emulated node under the temp dir, removed on drop.
pub struct Node {
    dir: PathBuf,
}

/// What one plugin call returned.
#[derive(Debug)]
pub struct Reply {
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Reply {
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
    pub command: &'a str,
    pub container_id: &'a str,
    pub ifname: &'a str,
    pub netns: Option<&'a str>,
    pub config: &'a Value,
}

impl Node {
    /// A node whose `cbr0` is L2Bridge 10.244.1.0/24 with gateway .1 (Flannel host-gw's).
    pub fn new(label: &str) -> Node {
        let node = Node::empty(label);
        node.create_network(NETWORK, "L2Bridge", &[("10.244.1.0/24", "10.244.1.1")]);
        node
    }

    /// A node without networks.
    pub fn empty(label: &str) -> Node {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "win-bridge-{label}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Node { dir }
    }

    pub fn state(&self) -> PathBuf {
        self.dir.join("hcn")
    }

    pub fn ipam_dir(&self) -> PathBuf {
        self.dir.join("ipam")
    }

    pub fn client(&self) -> Client {
        Client::from_box(Box::new(Emulator::open(&self.state()).unwrap()))
    }

    pub fn engine(&self) -> Engine {
        Emulator::open(&self.state()).unwrap().engine().clone()
    }

    /// Creates a network with one subnet per (prefix, gateway).
    pub fn create_network(&self, name: &str, network_type: &str, subnets: &[(&str, &str)]) -> Guid {
        let settings = HostComputeNetwork {
            name: name.to_owned(),
            network_type: hns::schema::NetworkType::parse(network_type),
            ipams: vec![Ipam {
                ipam_type: "Static".to_owned(),
                subnets: subnets
                    .iter()
                    .map(|(prefix, gateway)| Subnet {
                        ip_address_prefix: (*prefix).to_owned(),
                        routes: vec![Route {
                            next_hop: (*gateway).to_owned(),
                            destination_prefix: if prefix.contains(':') {
                                "::/0"
                            } else {
                                "0.0.0.0/0"
                            }
                            .to_owned(),
                            metric: None,
                        }],
                        ..Subnet::default()
                    })
                    .collect(),
            }],
            ..HostComputeNetwork::default()
        };
        self.client()
            .create_network(Guid::ZERO, &settings)
            .unwrap()
            .id()
    }

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

    /// The plain win-bridge V2 config for `cbr0` in `version`.
    pub fn config(&self, version: &str) -> Value {
        json!({
            "cniVersion": version, "name": NETWORK, "type": "win-bridge", "apiVersion": 2,
            "capabilities": {"portMappings": true, "dns": true},
            "ipam": {"type": "host-local", "subnet": "10.244.1.0/24", "dataDir": self.ipam_dir()},
            "dns": {"nameservers": ["10.96.0.10"], "search": ["svc.cluster.local"]},
            "policies": [
                {"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16", "10.96.0.0/12"]}}},
                {"name": "EndpointPolicy", "value": {"Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": true}}}
            ]
        })
    }

    /// Runs the real binary with the call's environment and config on stdin.
    pub fn run(&self, call: &Call<'_>) -> Reply {
        self.run_with(call, &BTreeMap::new())
    }

    pub fn run_with(&self, call: &Call<'_>, extra_env: &BTreeMap<&str, String>) -> Reply {
        let mut command = Command::new(PLUGIN);
        command
            .env_clear()
            .env("CNI_COMMAND", call.command)
            .env("CNI_CONTAINERID", call.container_id)
            .env("CNI_IFNAME", call.ifname)
            .env("CNI_PATH", self.dir.join("bin"))
            .env(hns::emulator::STATE_ENV, self.state())
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

    pub fn add(&self, container_id: &str, netns: &str, config: &Value) -> Reply {
        self.run(&Call {
            command: "ADD",
            container_id,
            ifname: "eth0",
            netns: Some(netns),
            config,
        })
    }

    pub fn del(&self, container_id: &str, netns: Option<&str>, config: &Value) -> Reply {
        self.run(&Call {
            command: "DEL",
            container_id,
            ifname: "eth0",
            netns,
            config,
        })
    }

    pub fn check(&self, container_id: &str, netns: &str, config: &Value) -> Reply {
        self.run(&Call {
            command: "CHECK",
            container_id,
            ifname: "eth0",
            netns: Some(netns),
            config,
        })
    }

    /// The endpoints of `cbr0`.
    pub fn endpoints(&self) -> Vec<HostComputeEndpoint> {
        let id = self.network_id(NETWORK);
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

    /// The addresses host-local has reserved for `cbr0` (its reservation files).
    pub fn reservations(&self) -> Vec<String> {
        let Ok(listing) = std::fs::read_dir(self.ipam_dir().join(NETWORK)) else {
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

    /// Raw HCN calls since the last reset, not counting handle closes, and counting them.
    pub fn calls(&self) -> (u64, u64) {
        let stats = self.engine().reset_stats().unwrap();
        let total: u64 = stats.values().sum();
        let closes: u64 = stats
            .iter()
            .filter(|(name, _)| hns::Function::from_name(name).is_some_and(hns::Function::is_close))
            .map(|(_, n)| n)
            .sum();
        (total - closes, total)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
