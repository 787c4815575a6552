//! The emulated Windows node: one HCN emulator state and every Windows binary that touches it
//! (cni-win's plugins and tools, `hnsctl.exe`, `flannel-hns.exe`, kube-proxy.exe) run under one
//! wineserver, whose file locks are the emulator's. Nothing Linux-side reads or writes the state
//! while kube-proxy runs: Wine's `LockFileEx` lives in wineserver, invisible to Linux `flock`,
//! so a native reader could see one of kube-proxy's changes half made.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use conformance::exec::{Exec, Exit, Invocation, execute_with_args};
use conformance::launcher::{Launcher, Wine};
use hns::Guid;
use hns::schema::{HostComputeEndpoint, HostComputeLoadBalancer};
use hns::schema::{IpPrefix, MacAddress};
use hns_emulator::{Engine, HostAdapter, STATE_ENV};
use node_lane::agent_process::Launch;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A tool or plugin call slower than this is killed (each takes well under a second once the
/// wineserver is up; a pod ADD a few).
const CALL_DEADLINE: Duration = Duration::from_secs(60);

/// The container runtime's and the tools' view of one emulated node.
#[derive(Debug)]
pub struct Node {
    wine: Wine,
    windows_bin: PathBuf,
    state: PathBuf,
    dir: PathBuf,
}

/// A pod attached by a plugin, as the runtime remembers it.
#[derive(Debug, Clone)]
pub struct Pod {
    pub name: String,
    pub container_id: String,
    pub namespace: Guid,
    pub ip: IpAddr,
}

impl Node {
    /// A fresh node whose state, configs and stores live under `dir` (emptied first).
    pub fn new(windows_bin: &Path, dir: &Path) -> Result<Node, String> {
        if dir.exists() {
            std::fs::remove_dir_all(dir)
                .map_err(|error| format!("cannot empty {}: {error}", dir.display()))?;
        }
        let state = dir.join("hns");
        for sub in [&state, &dir.join("net.d"), &dir.join("logs")] {
            std::fs::create_dir_all(sub)
                .map_err(|error| format!("cannot create {}: {error}", sub.display()))?;
        }
        Ok(Node {
            wine: Wine::from_env(),
            windows_bin: windows_bin.to_path_buf(),
            state,
            dir: dir.to_path_buf(),
        })
    }

    /// Gives the emulated host the adapter of the lane's network namespace, before any Windows
    /// process runs (the engine is Linux code, which must not overlap Wine's): HNS takes a new
    /// network's management IP from the host's adapter.
    pub fn set_host_adapter(&self, address: IpPrefix, mac: MacAddress) -> Result<(), String> {
        let engine = Engine::open(&self.state).map_err(|failure| failure.to_string())?;
        engine
            .set_adapter(HostAdapter {
                name: "Ethernet".to_owned(),
                address,
                mac_address: mac,
            })
            .map_err(|failure| failure.to_string())
    }

    /// The emulator's engine, for what only a test can ask (ACL verdicts): only while no
    /// Windows process of the node runs (their file locks are wineserver's, not Linux's).
    pub fn engine(&self) -> Result<Engine, String> {
        Engine::open(&self.state).map_err(|failure| failure.to_string())
    }

    /// The node's scratch directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `path` as the node's Windows processes see it (`Z:\...`).
    pub fn windows_path(&self, path: &Path) -> String {
        self.wine.plugin_path(path)
    }

    /// A Windows binary of the node (`name` without `.exe`).
    pub fn exe(&self, name: &str) -> PathBuf {
        self.windows_bin.join(format!("{name}.exe"))
    }

    /// The environment every Windows process of the node gets: the emulator's state.
    pub fn state_env(&self) -> (String, String) {
        (STATE_ENV.to_owned(), self.windows_path(&self.state))
    }

    /// The command line that starts `program` under the node's Wine, for long-lived processes.
    pub fn command(&self, program: &Path) -> std::process::Command {
        let mut command = self.wine.command(program);
        command.envs(self.wine.env());
        let (key, value) = self.state_env();
        command.env(key, value);
        command
    }

    /// How a harness starts the node daemon here (`cni-win.exe daemon` under the node's Wine,
    /// on the node's configs and plugins), its log and kubeconfig in the node's directory.
    pub fn daemon_launch(&self) -> Launch<'_> {
        Launch {
            command: self.command(&self.exe("cni-win")),
            spell: Box::new(|path| self.windows_path(path)),
            dir: self.dir.clone(),
            conf_dir: self.dir.join("net.d"),
            bin_dir: self.windows_bin.clone(),
        }
    }

    /// Runs a Windows tool to completion; its stdout, or an error quoting how it ended.
    pub fn tool(&self, name: &str, args: &[&str]) -> Result<String, String> {
        self.call(name, args, Invocation::new())
    }

    /// Runs a Windows tool with `invocation`'s environment and stdin added.
    pub fn call(
        &self,
        name: &str,
        args: &[&str],
        invocation: Invocation,
    ) -> Result<String, String> {
        let exec = self.execute(name, args, invocation)?;
        let stdout = String::from_utf8_lossy(&exec.stdout).into_owned();
        if exec.exit.success() {
            Ok(stdout)
        } else {
            Err(format!(
                "`{name}.exe {}` ended with {}: {} {}",
                args.join(" "),
                exec.exit,
                stdout.trim(),
                String::from_utf8_lossy(&exec.stderr).trim()
            ))
        }
    }

    /// Runs a Windows tool that reports through its exit status as well as its stdout
    /// (`cni-win doctor` prints its report on an unhealthy node too, and exits 1): whether it
    /// exited 0, and its stdout; an error when it crashed or outlived its deadline.
    pub fn report(&self, name: &str, args: &[&str]) -> Result<(bool, String), String> {
        let exec = self.execute(name, args, Invocation::new())?;
        match exec.exit {
            Exit::Status(status) => Ok((
                status == 0,
                String::from_utf8_lossy(&exec.stdout).into_owned(),
            )),
            ended => Err(format!(
                "`{name}.exe {}` ended with {ended}: {}",
                args.join(" "),
                String::from_utf8_lossy(&exec.stderr).trim()
            )),
        }
    }

    fn execute(&self, name: &str, args: &[&str], invocation: Invocation) -> Result<Exec, String> {
        let (key, value) = self.state_env();
        let invocation = invocation.set(&key, value);
        execute_with_args(
            &self.wine,
            &self.exe(name),
            args,
            &invocation,
            CALL_DEADLINE,
        )
        .map_err(|error| format!("cannot start {name}.exe: {error}"))
    }

    /// `hnsctl.exe --json ARGS`, decoded.
    pub fn hnsctl<T: DeserializeOwned>(&self, args: &[&str]) -> Result<T, String> {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let stdout = self.tool("hnsctl", &all)?;
        serde_json::from_str(&stdout)
            .map_err(|error| format!("`hnsctl {}` printed no such JSON: {error}", args.join(" ")))
    }

    /// Every endpoint on the node, as HNS reports them.
    pub fn endpoints(&self) -> Result<Vec<HostComputeEndpoint>, String> {
        self.hnsctl(&["endpoint", "list"])
    }

    /// Every load balancer on the node, as HNS reports them.
    pub fn load_balancers(&self) -> Result<Vec<HostComputeLoadBalancer>, String> {
        self.hnsctl(&["loadbalancer", "list"])
    }

    /// Creates a pod's namespace as containerd does (an empty `HostComputeNamespace`) and runs
    /// the plugin's ADD for it, as the runtime would.
    pub fn add_pod(&self, plugin: &str, config: &Value, name: &str) -> Result<Pod, String> {
        self.add_pod_with(plugin, config, name, Invocation::new())
    }

    /// [`Node::add_pod`] for the Kubernetes pod `namespace/name`, which containerd's CRI names
    /// to the plugin in `CNI_ARGS`.
    pub fn add_kubernetes_pod(
        &self,
        plugin: &str,
        config: &Value,
        namespace: &str,
        name: &str,
    ) -> Result<Pod, String> {
        let args = format!("IgnoreUnknown=1;K8S_POD_NAMESPACE={namespace};K8S_POD_NAME={name}");
        self.add_pod_with(
            plugin,
            config,
            name,
            Invocation::new().set("CNI_ARGS", args),
        )
    }

    fn add_pod_with(
        &self,
        plugin: &str,
        config: &Value,
        name: &str,
        invocation: Invocation,
    ) -> Result<Pod, String> {
        let namespace: Value = self.hnsctl(&["namespace", "create"])?;
        let namespace: Guid = namespace
            .get("ID")
            .or_else(|| namespace.get("Id"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .parse()
            .map_err(|error| format!("hnsctl namespace create printed no namespace ID: {error}"))?;
        let container_id = format!("{name}-sandbox");
        let result = self.plugin(
            plugin,
            "ADD",
            config,
            &container_id,
            &namespace.to_string(),
            invocation,
        )?;
        let result: Value = serde_json::from_str(&result)
            .map_err(|error| format!("{plugin} ADD printed no result: {error}"))?;
        let ip = result["ips"][0]["address"]
            .as_str()
            .and_then(|address| address.split('/').next())
            .and_then(|address| address.parse().ok())
            .ok_or_else(|| format!("{plugin} ADD's result has no address: {result}"))?;
        Ok(Pod {
            name: name.to_owned(),
            container_id,
            namespace,
            ip,
        })
    }

    /// The runtime's DEL of `pod`.
    pub fn del_pod(&self, plugin: &str, config: &Value, pod: &Pod) -> Result<(), String> {
        self.plugin(
            plugin,
            "DEL",
            config,
            &pod.container_id,
            &pod.namespace.to_string(),
            Invocation::new(),
        )
        .map(drop)
    }

    /// The runtime's GC, naming `alive` as every valid attachment.
    pub fn gc(&self, plugin: &str, config: &Value, alive: &[&Pod]) -> Result<(), String> {
        let mut config = config.clone();
        config["cni.dev/valid-attachments"] = alive
            .iter()
            .map(|pod| json!({ "containerID": pod.container_id, "ifname": "eth0" }))
            .collect();
        let invocation = Invocation::new()
            .set("CNI_COMMAND", "GC")
            .set("CNI_PATH", self.windows_path(&self.windows_bin))
            .config(&config);
        self.call(plugin, &[], invocation).map(drop)
    }

    fn plugin(
        &self,
        plugin: &str,
        command: &str,
        config: &Value,
        container_id: &str,
        netns: &str,
        invocation: Invocation,
    ) -> Result<String, String> {
        let invocation = invocation
            .set("CNI_COMMAND", command)
            .set("CNI_CONTAINERID", container_id)
            .set("CNI_NETNS", netns)
            .set("CNI_IFNAME", "eth0")
            .set("CNI_PATH", self.windows_path(&self.windows_bin))
            .config(config);
        self.call(plugin, &[], invocation)
    }
}
