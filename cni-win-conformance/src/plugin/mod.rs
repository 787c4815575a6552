//! The integration tests every cni-win plugin runs, written once: each case takes the
//! [`Plugin`] under test, and [`plugin_suite!`](crate::plugin_suite) makes a `#[test]` of every
//! case in the plugin's own test binary.
//!
//! A case is here when what it asserts holds for both plugins, the plugin's parameters aside
//! (its network, config, pod gateway, MAC, call budgets, the reference plugin's endpoint); what
//! only one plugin decides stays in that plugin's tests. The [`crate::cases::hns`] catalogue
//! runs through `hnsctl` and the `cni-win-conformance` command line (and so under Wine); these
//! cases run on a [`Node`] with in-process access to the emulator.

pub mod field;
pub mod flannel_native;
pub mod hostile_del;
pub mod ipam;
pub mod life_cycle;
pub mod network_policy;
pub mod upgrade;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use hns::schema::HostComputeNetwork;
use serde_json::{Value, json};

use crate::node::{Budget, Node, assert_catalogues_pass, load_json};

/// The node's IPv4 subnet, as Flannel gives it (HNS's gateway at .1).
pub const SUBNET: (&str, &str) = ("10.244.1.0/24", "10.244.1.1");
/// The node's IPv6 subnet on a dual-stack node (HNS's gateway at ::1).
pub const SUBNET_V6: (&str, &str) = ("fd00:10:244:1::/64", "fd00:10:244:1::1");

/// A cni-win plugin under test: what the shared cases need to know of it.
#[derive(Debug, Clone, Copy)]
pub struct Plugin {
    /// The plugin's binary, built for this test run (`env!("CARGO_BIN_EXE_win-bridge")`).
    pub binary: &'static str,
    /// Its `type` in a config, and its name in `examples/`.
    pub name: &'static str,
    /// The plugin's crate directory (`env!("CARGO_MANIFEST_DIR")`), which holds its `testdata`.
    pub crate_dir: &'static str,
    /// The HNS network a node runs the plugin's pods on (Flannel's name for it).
    pub network: &'static str,
    /// That network's document: named as given, one subnet per (prefix, HNS gateway).
    pub network_document: fn(&str, &[(&str, &str)]) -> HostComputeNetwork,
    /// `hnsctl network create` arguments for the same network, for the catalogues.
    pub hnsctl_network: &'static str,
    /// The plain V2 config for [`Plugin::network`] in the spec version given, host-local over
    /// the node's store.
    pub config: fn(&Node, &str) -> Value,
    /// A config with every key the plugin and host-local read, for the `n`th of pods run at
    /// once (what pods on one node cannot share, a host port, differs).
    pub every_key_config: fn(&Node, usize) -> Value,
    /// Which host of each subnet a pod's default route goes through: 1 for HNS's gateway, 2
    /// where the plugin keeps the address after it for its own gateway. host-local hands out
    /// neither, so a node's first pod gets the host after it.
    pub gateway_host: u8,
    /// The MAC the plugin gives a pod, from its IPv4 address, where the plugin decides it.
    pub mac: Option<fn(Ipv4Addr) -> String>,
    /// The raw HCN calls of a pod's commands: exact, and what docs/performance.md promises.
    pub budget: Budget,
    /// The Flannel-native conflist in `examples/<name>`, and the `type: flannel` conflist
    /// whose delegate attaches the same pods.
    pub flannel_examples: (&'static str, &'static str),
    /// The config a node ran the reference plugin with and keeps with cni-win.
    pub reference_config: fn(&Node) -> Value,
    /// The policies the reference plugin's V2 ADD gives a pod's endpoint for a config, in its
    /// order ([`Plugin::reference_add`]).
    pub reference_policies: fn(&Value) -> Vec<Value>,
    /// The MAC the reference plugin gives a pod, as it spells it, where it decides it.
    pub reference_mac: Option<fn(Ipv4Addr) -> String>,
}

impl Plugin {
    /// A node with the plugin's network on [`SUBNET`].
    pub fn node(&self, label: &str) -> Node {
        self.node_with(self.network, label)
    }

    /// A node with the plugin's network on [`SUBNET`], named `network`.
    pub fn node_with(&self, network: &str, label: &str) -> Node {
        Node::builder(label)
            .plugin(self.binary)
            .network((self.network_document)(network, &[SUBNET]))
            .build()
    }

    /// A node with the plugin's network on [`SUBNET`] and [`SUBNET_V6`].
    pub fn dual_stack_node(&self, label: &str) -> Node {
        Node::builder(label)
            .plugin(self.binary)
            .network((self.network_document)(self.network, &[SUBNET, SUBNET_V6]))
            .build()
    }

    /// A node without networks, as before Flannel made one.
    pub fn node_without_network(&self, label: &str) -> Node {
        Node::builder(label).plugin(self.binary).build()
    }

    /// [`Plugin::config`] for `node` in `version`.
    pub fn config(&self, node: &Node, version: &str) -> Value {
        (self.config)(node, version)
    }

    /// The gateway of the pods on [`SUBNET`].
    pub fn gateway(&self) -> String {
        format!("10.244.1.{}", self.gateway_host)
    }

    /// The address of a node's first pod on [`SUBNET`].
    pub fn first_address(&self) -> String {
        format!("10.244.1.{}", self.gateway_host + 1)
    }

    /// The first pod's `ips` on [`Plugin::dual_stack_node`]: one address per family.
    pub fn first_dual_stack_ips(&self) -> Value {
        let host = self.gateway_host;
        json!([
            {"address": format!("{}/24", self.first_address()), "gateway": self.gateway(), "interface": 0},
            {"address": format!("fd00:10:244:1::{}/64", host + 1), "gateway": format!("fd00:10:244:1::{host}"), "interface": 0}
        ])
    }

    /// The endpoint name the plugin gives `container_id`'s `eth0` on its network.
    pub fn endpoint_name(&self, container_id: &str) -> String {
        format!("{container_id}_{}", self.network)
    }

    /// A file of the plugin's `testdata`.
    pub fn testdata(&self, path: &str) -> PathBuf {
        Path::new(self.crate_dir).join("testdata").join(path)
    }

    /// A file of `examples/<name>`, as JSON.
    pub fn example(&self, file_name: &str) -> Value {
        load_json(
            &Path::new(self.crate_dir)
                .join("../examples")
                .join(self.name)
                .join(file_name),
        )
    }
}

/// The plain V2 config a node runs `plugin_type` with on `network` in `version`: host-local
/// over the node's store on [`SUBNET`], the cluster's DNS, Flannel's OutBoundNAT exceptions
/// (cluster and service networks) and the encapsulated route to the services, with the
/// plugin's `own` keys added.
pub fn v2_config(
    node: &Node,
    version: &str,
    plugin_type: &str,
    network: &str,
    own: Value,
) -> Value {
    let mut config = json!({
        "cniVersion": version, "name": network, "type": plugin_type, "apiVersion": 2,
        "capabilities": {"portMappings": true, "dns": true},
        "ipam": {"type": "host-local", "subnet": SUBNET.0, "dataDir": node.ipam_dir()},
        "dns": {"nameservers": ["10.96.0.10"], "search": ["svc.cluster.local"]},
        "policies": [
            {"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT", "Settings": {"Exceptions": ["10.244.0.0/16", "10.96.0.0/12"]}}},
            {"name": "EndpointPolicy", "value": {"Type": "SDNRoute", "Settings": {"DestinationPrefix": "10.96.0.0/12", "NeedEncap": true}}}
        ]
    });
    if let (Some(config), Value::Object(own)) = (config.as_object_mut(), own) {
        config.extend(own);
    }
    config
}

/// The conflist `list`'s first plugin as libcni hands it over (with the list's `name` and
/// `cniVersion`).
pub fn first_plugin(list: &Value) -> Value {
    let mut plugin = list["plugins"][0].clone();
    plugin["name"] = list["name"].clone();
    plugin["cniVersion"] = list["cniVersion"].clone();
    plugin
}

/// The protocol and HNS catalogues against the plugin, each case on a fresh HCN emulator host
/// with the plugin's network made with `hnsctl`, its `testdata/conformance.json` the valid
/// config.
pub fn passes_the_protocol_and_hns_catalogues_on_the_emulator(plugin: &Plugin) {
    assert_catalogues_pass(
        Path::new(plugin.binary),
        &plugin.testdata("conformance.json"),
        plugin.hnsctl_network,
    );
}

/// Makes a `#[test]` of every shared case ([`crate::plugin`]) for the [`Plugin`] at `$plugin`
/// (a path to a constant of the test binary, e.g. `crate::PLUGIN`), in a module `suite` with a
/// module per topic: `cargo test suite::flannel_native` runs one topic.
#[macro_export]
macro_rules! plugin_suite {
    ($plugin:path) => {
        /// The cases every cni-win plugin runs, on this plugin ([`cni_win_conformance::plugin`]).
        mod suite {
            $crate::plugin_suite!(@cases $plugin; plugin:
                passes_the_protocol_and_hns_catalogues_on_the_emulator,
            );
            mod life_cycle {
                $crate::plugin_suite!(@cases $plugin; plugin::life_cycle:
                    add_check_del_in_every_version,
                    call_budgets_do_not_depend_on_the_number_of_endpoints,
                );
            }
            mod hostile_del {
                $crate::plugin_suite!(@cases $plugin; plugin::hostile_del:
                    del_tears_down_whatever_else_the_config_gets_wrong,
                );
            }
            mod ipam {
                $crate::plugin_suite!(@cases $plugin; plugin::ipam:
                    a_range_outside_the_hns_subnet_is_refused_before_anything_is_allocated,
                );
                #[cfg(target_os = "linux")]
                mod delegation_loops {
                    $crate::plugin_suite!(@cases $plugin; plugin::ipam::delegation_loops:
                        an_ipam_type_naming_an_hns_plugin_is_refused_for_every_command,
                        a_renamed_copy_of_the_plugin_as_ipam_stops_at_the_depth_bound,
                    );
                }
            }
            mod flannel_native {
                $crate::plugin_suite!(@cases $plugin; plugin::flannel_native:
                    the_native_example_attaches_pods_as_flannels_delegate_would,
                    a_node_switches_between_flannel_and_the_native_conflist_with_pods_running,
                    del_never_needs_subnet_env,
                    gc_never_needs_subnet_env,
                    gc_removes_what_del_would_flannels_record_included,
                    a_torn_subnet_env_is_read_again,
                    an_incomplete_subnet_env_is_named_by_its_missing_key,
                    #[cfg(unix)] subnet_env_is_never_read_through_a_link,
                    check_reports_a_node_subnet_that_changed_since_the_pod_was_added,
                    the_ipv6_subnet_is_a_second_range_set_when_hns_has_dual_stack,
                    relative_flannel_paths_are_refused_naming_the_key,
                );
            }
            mod upgrade {
                $crate::plugin_suite!(@cases $plugin; plugin::upgrade:
                    a_reference_pod_is_checked_adopted_and_deleted,
                    a_reference_pod_with_acls_passes_check,
                );
            }
            mod network_policy {
                $crate::plugin_suite!(@cases $plugin; plugin::network_policy:
                    a_pod_the_agent_has_seen_is_protected_from_its_first_packet_at_no_call_more,
                    a_pod_the_agent_has_not_seen_gets_its_namespaces_posture_or_the_default,
                    a_snapshot_without_host_rules_gets_them_at_add,
                    without_the_key_or_before_the_agents_first_snapshot_a_pod_has_no_policy_rules,
                    #[cfg(unix)] an_unusable_snapshot_fails_add_with_code_11_and_leaves_nothing,
                    a_snapshot_of_another_network_or_past_its_bound_fails_add_with_code_11,
                    an_agent_that_has_not_synced_leaves_pods_open_only_within_the_bound,
                    a_snapshot_rule_hns_refuses_fails_add_with_code_11_naming_the_snapshot,
                    a_config_acl_spelt_as_the_agents_is_refused_with_code_7,
                    a_snapshot_rule_that_ties_with_the_configs_own_acl_fails_add,
                    the_snapshot_path_must_be_absolute,
                );
            }
        }
    };
    (@cases $plugin:path; $($module:ident)::+ : $($(#[$attr:meta])* $case:ident),* $(,)?) => {
        use $crate::$($module)::+ as cases;
        $(
            $(#[$attr])*
            #[test]
            fn $case() {
                cases::$case(&$plugin)
            }
        )*
    };
}
