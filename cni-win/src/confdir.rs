//! The networks cni-win serves on this node, found as libcni finds configs: the regular files
//! of the CNI config directory ending in `.conf`, `.conflist` or `.json`, in lexical order,
//! a file with `plugins` being a list (each entry gets the list's `cniVersion` and `name`),
//! any other a single plugin config. A network is cni-win's when its plugin is `win-bridge`
//! or `win-overlay`, or Flannel's (`type: flannel`) delegating to one of them: then the
//! delegate's config is what Flannel hands it, in Flannel-native form (`subnetFile`,
//! `dataDir`), so its DEL releases from Flannel's store and drops Flannel's record as
//! Flannel's own DEL would. The first file to name a network wins, as with libcni's lookup by
//! name. Links and other special files are never followed.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use cni::{NetConf, NetworkRequest};
use serde_json::{Map, Value};

use crate::error::Error;
use crate::lint::plugin_conf;
use crate::shipped::Plugin;

/// The file extensions libcni loads.
const EXTENSIONS: [&str; 3] = ["conf", "conflist", "json"];

/// A network cni-win serves: which plugin and the config it runs with.
#[derive(Debug, Clone)]
pub struct Network {
    /// The cni-win plugin the config names (directly or as Flannel's delegate).
    pub plugin: Plugin,
    /// Listed as Flannel's delegate rather than directly.
    pub via_flannel: bool,
    /// The conflist sets libcni's `disableGC`: its owner wants nothing of it collected, so
    /// `sweep` leaves it alone.
    pub gc_disabled: bool,
    /// The plugin's config (and its bytes) as the runtime hands it, with `CNI_PATH`.
    pub request: NetworkRequest,
}

impl Network {
    /// The network's `name`: its HNS network's and its host-local store's.
    pub fn name(&self) -> &str {
        &self.request.config.name
    }
}

/// What the directory holds: cni-win's networks and the files or entries that could not be
/// read (each with the reason). Other plugins' networks are neither.
#[derive(Debug, Default)]
pub struct ConfDir {
    /// cni-win's networks, in the order libcni loads their files.
    pub networks: Vec<Network>,
    /// The files or entries that could not be read, each with the reason.
    pub problems: Vec<String>,
    /// Every plugin type the loaded files name, each once, in order: the runtime executes
    /// each from its `bin_dir`.
    pub plugin_types: Vec<String>,
}

/// Reads `dir` as libcni does; `cni_path` is the `CNI_PATH` a delegated IPAM runs from.
pub fn read(dir: &Path, cni_path: &[PathBuf]) -> Result<ConfDir, Error> {
    let listing = fs::read_dir(dir).map_err(|e| Error::io("list", dir, &e))?;
    let mut files = Vec::new();
    for entry in listing {
        let entry = entry.map_err(|e| Error::io("list", dir, &e))?;
        let path = entry.path();
        let loadable = path
            .extension()
            .and_then(|ext| ext.to_str())
            .is_some_and(|ext| EXTENSIONS.contains(&ext));
        // file_type() does not follow links: a link is skipped like a directory.
        let regular = entry.file_type().is_ok_and(|t| t.is_file());
        if loadable && regular {
            files.push(path);
        }
    }
    files.sort();
    let mut found = ConfDir::default();
    for file in files {
        match networks_of(&file, cni_path, &mut found.plugin_types) {
            Ok(networks) => {
                for network in networks {
                    if found.networks.iter().any(|n| n.name() == network.name()) {
                        continue;
                    }
                    found.networks.push(network);
                }
            }
            Err(problem) => found.problems.push(problem),
        }
    }
    Ok(found)
}

/// cni-win's networks in one file.
fn networks_of(
    file: &Path,
    cni_path: &[PathBuf],
    plugin_types: &mut Vec<String>,
) -> Result<Vec<Network>, String> {
    let at = |message: String| format!("{}: {message}", file.display());
    let mut bytes = Vec::new();
    fs::File::open(file)
        .and_then(|f| {
            f.take(cni::config::MAX_CONFIG_BYTES + 1)
                .read_to_end(&mut bytes)
        })
        .map_err(|e| at(format!("cannot read it: {e}")))?;
    if bytes.len() as u64 > cni::config::MAX_CONFIG_BYTES {
        return Err(at("larger than a config may be".to_owned()));
    }
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| at(format!("not JSON: {e}")))?;
    let Value::Object(object) = value else {
        return Err(at("not a JSON object".to_owned()));
    };
    let gc_disabled = match cni::case_insensitive::get(&object, "disableGC") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(disabled)) => *disabled,
        Some(_) => {
            return Err(at(
                "\"disableGC\" is not true or false (libcni does not load this file)".to_owned(),
            ));
        }
    };
    let entries: Vec<Value> = match object.get("plugins") {
        Some(Value::Array(plugins)) => plugins
            .iter()
            .map(|entry| match entry {
                Value::Object(entry) => Ok(plugin_conf(&object, entry)),
                _ => Err(at("a plugins entry is not a JSON object".to_owned())),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(at("\"plugins\" is not a list".to_owned())),
        None => vec![Value::Object(object.clone())],
    };
    let mut networks = Vec::new();
    for (index, conf) in entries.iter().enumerate() {
        let at = |message: String| at(format!("plugins[{index}]: {message}"));
        let Some(entry) = conf.as_object() else {
            continue;
        };
        let plugin_type = entry.get("type").and_then(Value::as_str).unwrap_or("");
        if !plugin_type.is_empty() && !plugin_types.iter().any(|t| t == plugin_type) {
            plugin_types.push(plugin_type.to_owned());
        }
        let (plugin, via_flannel, conf) = if plugin_type == "flannel" {
            match flannel_delegate(entry) {
                Some((plugin, conf)) => {
                    // Flannel executes its delegate from the same bin_dir.
                    if !plugin_types.iter().any(|t| t == plugin.type_name()) {
                        plugin_types.push(plugin.type_name().to_owned());
                    }
                    (plugin, true, conf)
                }
                None => continue,
            }
        } else {
            match Plugin::of(plugin_type) {
                Some(plugin) => (plugin, false, conf.clone()),
                None => continue,
            }
        };
        let stdin = serde_json::to_vec(&conf).expect("a JSON value always serializes");
        let config = NetConf::parse(&stdin).map_err(|e| at(e.to_string()))?;
        networks.push(Network {
            plugin,
            via_flannel,
            gc_disabled,
            request: NetworkRequest {
                config,
                stdin,
                cni_path: cni_path.to_vec(),
            },
        });
    }
    Ok(networks)
}

/// The config Flannel's plugin hands its delegate when that is one of ours, in Flannel-native
/// form: the delegate section with the network's `name` and `cniVersion`, and Flannel's
/// `subnetFile` and `dataDir` (defaults when unset), so DEL finds Flannel's store and record.
fn flannel_delegate(entry: &Map<String, Value>) -> Option<(Plugin, Value)> {
    let delegate = entry.get("delegate")?.as_object()?;
    let plugin = Plugin::of(delegate.get("type")?.as_str()?)?;
    let mut conf = delegate.clone();
    for key in ["name", "cniVersion"] {
        if let Some(value) = entry.get(key) {
            conf.insert(key.to_owned(), value.clone());
        }
    }
    let subnet_file = entry.get("subnetFile").cloned().unwrap_or(Value::from(""));
    conf.insert("subnetFile".to_owned(), subnet_file);
    if let Some(data_dir) = entry.get("dataDir") {
        conf.insert("dataDir".to_owned(), data_dir.clone());
    }
    Some((plugin, Value::Object(conf)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn write(dir: &Path, name: &str, value: &Value) {
        fs::write(dir.join(name), serde_json::to_vec(value).unwrap()).unwrap();
    }

    #[test]
    fn finds_direct_and_delegated_networks_in_libcni_order() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "10-flannel.conflist",
            &json!({"cniVersion": "0.3.0", "name": "vxlan0", "plugins": [
                {"type": "flannel", "delegate": {"type": "win-overlay", "hairpinMode": true}},
                {"type": "portmap"}
            ]}),
        );
        write(
            dir.path(),
            "20-bridge.conf",
            &json!({"cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
                    "ipam": {"type": "host-local", "subnet": "10.244.1.0/24"}}),
        );
        // Same name later: libcni's lookup by name finds the first.
        write(
            dir.path(),
            "30-again.json",
            &json!({"cniVersion": "1.1.0", "name": "cbr0", "type": "win-overlay"}),
        );
        write(
            dir.path(),
            "40-other.conflist",
            &json!({"cniVersion": "1.1.0", "name": "x", "plugins": [{"type": "bridge"}]}),
        );
        write(
            dir.path(),
            "50-ignored.txt",
            &json!({"name": "y", "type": "win-bridge"}),
        );
        fs::write(dir.path().join("60-broken.conf"), b"{").unwrap();

        let found = read(dir.path(), &[]).unwrap();
        let names: Vec<_> = found
            .networks
            .iter()
            .map(|n| (n.name().to_owned(), n.plugin, n.via_flannel))
            .collect();
        assert_eq!(
            names,
            [
                ("vxlan0".to_owned(), Plugin::Overlay, true),
                ("cbr0".to_owned(), Plugin::Bridge, false)
            ]
        );
        let delegate = found.networks[0].request.config.raw();
        assert_eq!(delegate["subnetFile"], json!(""));
        assert_eq!(delegate["hairpinMode"], json!(true));
        assert_eq!(
            found.plugin_types,
            ["flannel", "win-overlay", "portmap", "win-bridge", "bridge"]
        );
        assert_eq!(found.problems.len(), 1, "{:?}", found.problems);
        assert!(found.problems[0].contains("60-broken.conf"));
        assert!(found.networks.iter().all(|n| !n.gc_disabled));
    }

    #[test]
    fn disable_gc_is_read_as_libcni_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let list = |name: &str, disable: Value| {
            json!({"cniVersion": "1.1.0", "name": name, "disableGC": disable, "plugins": [
                {"type": "win-bridge", "ipam": {"type": "host-local", "subnet": "10.244.1.0/24"}}
            ]})
        };
        write(dir.path(), "10-off.conflist", &list("off", json!(true)));
        write(dir.path(), "20-on.conflist", &list("on", json!(false)));
        write(dir.path(), "30-bad.conflist", &list("bad", json!("yes")));
        let mut upper = list("upper", json!(true));
        upper["DisableGC"] = upper.as_object_mut().unwrap().remove("disableGC").unwrap();
        write(dir.path(), "40-upper.conflist", &upper);
        let found = read(dir.path(), &[]).unwrap();
        let disabled: Vec<_> = found
            .networks
            .iter()
            .map(|n| (n.name().to_owned(), n.gc_disabled))
            .collect();
        assert_eq!(
            disabled,
            [
                ("off".to_owned(), true),
                ("on".to_owned(), false),
                ("upper".to_owned(), true)
            ]
        );
        assert_eq!(found.problems.len(), 1, "{:?}", found.problems);
        assert!(found.problems[0].contains("disableGC"));
    }
}
