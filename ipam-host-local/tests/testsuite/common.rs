//! Helpers shared by the integration tests: scratch directories and configs.

use cni::{CniArgs, NetConf};
use ipam_host_local::HostLocal;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// A unique scratch directory, removed on drop.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(label: &str) -> Scratch {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ipam-host-local-{label}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A full network config with `ipam` (its `type` and `dataDir` filled in).
pub fn net_conf(data_dir: &Path, mut ipam: Value, extra: Value) -> Value {
    ipam["type"] = json!("host-local");
    ipam["dataDir"] = json!(data_dir);
    let mut conf =
        json!({"cniVersion": "1.1.0", "name": "net", "type": "win-bridge", "ipam": ipam});
    if let (Some(map), Value::Object(extra)) = (conf.as_object_mut(), extra) {
        map.extend(extra);
    }
    conf
}

pub fn host_local_with(data_dir: &Path, ipam: Value, extra: Value, cni_args: &str) -> HostLocal {
    let conf = NetConf::parse(net_conf(data_dir, ipam, extra).to_string().as_bytes()).unwrap();
    HostLocal::from_conf(&conf, &CniArgs::parse(cni_args).unwrap()).unwrap()
}

pub fn host_local(data_dir: &Path, ipam: Value) -> HostLocal {
    host_local_with(data_dir, ipam, json!({}), "")
}

pub fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

/// The reservation files of a network directory: address file name -> content.
pub fn reservations(net_dir: &Path) -> BTreeMap<String, String> {
    let Ok(listing) = std::fs::read_dir(net_dir) else {
        return BTreeMap::new();
    };
    listing
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_file())
        .map(|e| e.file_name().into_string().unwrap())
        .filter(|name| name.parse::<IpAddr>().is_ok())
        .map(|name| {
            let content = std::fs::read_to_string(net_dir.join(&name)).unwrap();
            (name, content)
        })
        .collect()
}

/// Releases like the reference's DEL: walks the whole network directory (subdirectories too)
/// and deletes every file whose trimmed content is `id\r\nifname`.
pub fn reference_release(net_dir: &Path, id: &str, ifname: &str) {
    let wanted = format!("{id}\r\n{ifname}");
    let mut stack = vec![net_dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else if std::fs::read_to_string(entry.path())
                .map(|c| c.trim() == wanted)
                .unwrap_or(false)
            {
                std::fs::remove_file(entry.path()).unwrap();
            }
        }
    }
}

/// The `host-local` binary this package builds.
pub const BINARY: &str = env!("CARGO_BIN_EXE_host-local");

/// Starts the binary as a runtime runs it: `command` for attachment `id`/`eth0` in netns `ns`
/// with `CNI_PATH` set, `env` adding or overriding variables, `conf` on stdin.
pub fn spawn(command: &str, id: &str, conf: &Value, env: &[(&str, &str)]) -> Child {
    spawn_in(&std::env::temp_dir(), command, id, conf, env)
}

/// [`spawn`] with `dir` as the working directory, where a relative path in a hostile config
/// (a log file) lands.
pub fn spawn_in(dir: &Path, command: &str, id: &str, conf: &Value, env: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(BINARY);
    cmd.current_dir(dir)
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", id)
        .env("CNI_IFNAME", "eth0")
        .env("CNI_NETNS", "ns")
        .env("CNI_PATH", "/opt/cni/bin");
    for (key, value) in env {
        cmd.env(key, value);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(conf.to_string().as_bytes()).unwrap();
    child
}

/// What one run of the binary printed, once it exited.
#[derive(Debug)]
pub struct Output {
    /// Exit status 0.
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// The JSON on stdout, `Null` when it printed nothing.
    pub fn json(&self) -> Value {
        if self.stdout.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&self.stdout)
                .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
        }
    }
}

/// Waits for `child` and collects what it printed.
pub fn wait(child: Child) -> Output {
    let output = child.wait_with_output().unwrap();
    Output {
        success: output.status.success(),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}
