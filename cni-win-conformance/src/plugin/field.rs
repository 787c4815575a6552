//! A config from the field (reference samples, Flannel's, the distributions', the repo's
//! examples) run through a pod's ADD, CHECK and DEL by the plugin, and the endpoint HNS received
//! asserted: what each plugin's table of field configs is made of.

use std::net::Ipv4Addr;
use std::path::Path;

use serde_json::{Value, json};

use super::{Plugin, first_plugin};
use crate::node::policy::{nat, route};
use crate::node::{Node, load_json};

/// The endpoint policies the reference plugins' V1 sample configs (`sample.conf`: the same in
/// win-bridge's and win-overlay's) ask for, in order: their two routes, then one OutBoundNAT with
/// their exceptions and the plugin's `more` ones. A plugin's own policies come after.
pub fn reference_sample_policies(more: &[&str]) -> Vec<Value> {
    let exceptions = [&["192.168.0.0/16", "11.0.0.0/8", "10.137.196.0/23"], more].concat();
    vec![
        route("11.0.0.0/8"),
        route("10.137.198.27/32"),
        nat(&exceptions),
    ]
}

/// How a field config reaches the plugin.
#[derive(Debug, Clone, Copy)]
pub enum Form {
    /// The file is the plugin's config (host-local pointed at the node's store).
    Plugin,
    /// The file is a flannel config whose delegate Flannel renders for the plugin.
    Flannel,
    /// The file is a conflist whose first plugin is such a flannel config.
    FlannelConflist,
}

/// One field config and the endpoint it must produce.
#[derive(Debug, Clone)]
pub struct FieldConfig {
    /// Relative to the plugin's crate.
    pub file: &'static str,
    /// How it reaches the plugin.
    pub form: Form,
    /// `runtimeConfig` the runtime adds (port mappings), if any.
    pub runtime_config: Option<Value>,
    /// The endpoint's policies.
    pub policies: Value,
    /// The endpoint's DNS, where the config's is worth pinning.
    pub dns: Option<Value>,
}

impl FieldConfig {
    /// `file` reaching the plugin as `form`, whose endpoint carries `policies`.
    pub fn new(file: &'static str, form: Form, policies: Value) -> FieldConfig {
        FieldConfig {
            file,
            form,
            runtime_config: None,
            policies,
            dns: None,
        }
    }

    /// With `runtimeConfig` added by the runtime.
    pub fn runtime_config(self, runtime_config: Value) -> FieldConfig {
        FieldConfig {
            runtime_config: Some(runtime_config),
            ..self
        }
    }

    /// With the endpoint's DNS pinned.
    pub fn dns(self, dns: Value) -> FieldConfig {
        FieldConfig {
            dns: Some(dns),
            ..self
        }
    }

    /// The config as `plugin` receives it on `node`.
    pub fn config(&self, plugin: &Plugin, node: &Node, raw: Value) -> Value {
        let mut config = match self.form {
            Form::Plugin => node.with_data_dir(raw),
            Form::Flannel => node.rendered_by_flannel(&raw, plugin.name),
            Form::FlannelConflist => node.rendered_by_flannel(&first_plugin(&raw), plugin.name),
        };
        if let Some(runtime) = &self.runtime_config {
            config["runtimeConfig"] = runtime.clone();
        }
        config
    }

    /// Runs one pod's ADD, CHECK and DEL on a node whose network is named as the config says
    /// and asserts the endpoint HNS received: the node's first pod address, the plugin's
    /// gateway as its default route and MAC, the policies and DNS. Returns the endpoint and
    /// ADD's log.
    pub fn assert_endpoint(&self, plugin: &Plugin) -> (Value, String) {
        let raw = load_json(&Path::new(plugin.crate_dir).join(self.file));
        let network = raw
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or(plugin.network);
        let node = plugin.node_with(network, "field");
        let (endpoint, log) = node.pod_life_cycle(&self.config(plugin, &node, raw.clone()));
        let file = self.file;
        let first = plugin.first_address();
        if let Some(mac) = plugin.mac {
            let ip: Ipv4Addr = first.parse().unwrap();
            assert_eq!(endpoint["MacAddress"], mac(ip), "{file}");
        }
        assert_eq!(
            endpoint["IpConfigurations"],
            json!([{"IpAddress": first, "PrefixLength": 24}]),
            "{file}"
        );
        assert_eq!(
            endpoint["Routes"],
            json!([{"NextHop": plugin.gateway(), "DestinationPrefix": "0.0.0.0/0"}]),
            "{file}"
        );
        assert_eq!(endpoint["Policies"], self.policies, "{file}: {endpoint:#}");
        if let Some(dns) = &self.dns {
            assert_eq!(&endpoint["Dns"], dns, "{file}");
        }
        (endpoint, log)
    }
}
