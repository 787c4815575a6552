//! The network config both plugins read: every key the reference win-bridge/win-overlay and
//! sdnbridge accept, decoded as Go decodes it (keys matched regardless of case, unknown keys
//! ignored) and validated up front, so ADD fails before touching HNS or IPAM.
//!
//! | key | meaning here |
//! | --- | --- |
//! | `name` | the HNS network's name |
//! | `apiVersion` / `ApiVersion` | accepted whatever its value: HCN V2 is always used (the reference's V1 path cannot work with containerd, plugins#1229) |
//! | `policies`, `AdditionalArgs` | entries named `EndpointPolicy` (any case), V1 or V2 shape, read as Go reads hcsshim's `EndpointPolicy` (`Type`/`Settings` and known settings keys in any case); V1 translated to V2; settings keys HNS ignores logged as a warning and sent as written; an ACL whose `Id` begins with the NetworkPolicy agent's prefix (`cni-win-netpol-`) refused; other names are ignored as the reference does |
//! | `loopbackDSR`, `optionalFlags.loopbackDSR` | OutBoundNAT `Destinations` = the pod's IPs (needs HNS DSR support) |
//! | `optionalFlags.localRoutedPortMapping` | PortMapping `Flags` LocalRoutedVip (NodeIP:HostPort from the node) |
//! | `optionalFlags.allowAclPortMapping` | an inbound Allow ACL for each mapped container port, and with them allow-all ACLs In and Out at priority 65500 (Windows Server 2025 makes an endpoint with ACLs default-deny) |
//! | `optionalFlags.*` (others) | accepted; plugin-specific ones are read by the plugin |
//! | `capabilities` | accepted (read by the runtime, which fills `runtimeConfig`) |
//! | `runtimeConfig.portMappings` | one PortMapping policy each |
//! | `runtimeConfig.dns` | overrides `dns` field by field (servers, searches, options) |
//! | `dns` | the endpoint's DNS (each name server must be an IP address) |
//! | `ipam` | `host-local` runs in-process; any other type is executed from `CNI_PATH` |
//! | `networkPolicySnapshot` | cni-win's own: the absolute path ([`cni::path`]) of the node's NetworkPolicy snapshot, whose rules ADD gives a new pod's endpoint (see [`crate::network_policy`]); absent, NetworkPolicy is not enabled for the network |

use std::net::IpAddr;

use cni::path::RootedPath;
use cni::{Error, ErrorCode, NetConf};
use hns::Guid;
use hns::schema::policy::{AclDirection, AclPolicy, IgnoredKey, protocol};
use hns::schema::v1::{Translated, endpoint_policy_from_conf};
use hns::schema::{Dns, EndpointPolicy};
use serde::Deserialize;
use serde_json::Value;

use crate::acl_fallback;
use crate::decodes::Decodes;
use crate::kind::NetworkKind;
use crate::path_keys::NETWORK_POLICY_SNAPSHOT;

/// A validated config: the shared keys plus the plugin's kind, built from its own keys.
#[derive(Debug)]
pub(crate) struct Conf<K> {
    /// The HNS network's name.
    pub network: String,
    /// The plugin's kind, built from its own keys.
    pub kind: K,
    pub flags: OptionalFlags,
    /// `loopbackDSR` at the top level or under `optionalFlags`.
    pub loopback_dsr: bool,
    /// Endpoint policies from `policies` and `AdditionalArgs`, translated to V2, in order.
    pub policies: Vec<UserPolicy>,
    /// `runtimeConfig.portMappings`, validated.
    pub port_mappings: Vec<PortMapping>,
    /// `dns` overridden field by field by `runtimeConfig.dns`.
    pub dns: Dns,
    /// `networkPolicySnapshot`: the node's NetworkPolicy snapshot, when policy is enforced.
    pub network_policy_snapshot: Option<RootedPath>,
}

/// What a config the plugins accept may still do otherwise than its author meant: for
/// `cni-win doctor` to report, since the plugins only log it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigReview {
    /// Each policy key that does nothing, naming its entry: `policies[0]: `exceptionList` is
    /// not a V2 OutBoundNAT key; HNS ignores it; did you mean `Exceptions`?`.
    pub ignored_policy_keys: Vec<String>,
    /// The directions in which the config's own ACL policies have no allow-all rule: where
    /// ACLs make an endpoint default-deny (Windows Server 2025, microsoft/Windows-Containers#616;
    /// likely Windows Server 2022's L2Bridge and Overlay networks once an ACL blocks), the pods
    /// lose all traffic of that direction no rule allows. Empty when the config writes no ACL
    /// of its own.
    pub acl_directions_without_fallback: Vec<AclDirection>,
}

impl<K> Conf<K> {
    /// The ACLs among the config's policies, as HNS receives them.
    pub fn acls(&self) -> Vec<AclPolicy> {
        self.policies
            .iter()
            .filter_map(|user| match user.policy.effect() {
                EndpointPolicy::Acl(acl) => Some(acl),
                _ => None,
            })
            .collect()
    }

    /// The config's [`ConfigReview`].
    pub fn review(&self) -> ConfigReview {
        let acls = self.acls();
        let acl_directions_without_fallback = if acls.is_empty() {
            Vec::new()
        } else {
            [AclDirection::In, AclDirection::Out]
                .into_iter()
                .filter(|direction| {
                    !acls
                        .iter()
                        .any(|acl| acl.direction == *direction && acl_fallback::allows_all(acl))
                })
                .collect()
        };
        ConfigReview {
            ignored_policy_keys: self
                .policies
                .iter()
                .flat_map(|user| {
                    user.ignored_keys
                        .iter()
                        .map(|ignored| format!("{}: {ignored}", user.source))
                })
                .collect(),
            acl_directions_without_fallback,
        }
    }
}

/// `optionalFlags` (sdnbridge's key); every flag defaults to false.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub(crate) struct OptionalFlags {
    #[serde(rename = "localRoutedPortMapping")]
    pub local_routed_port_mapping: bool,
    #[serde(rename = "allowAclPortMapping")]
    pub allow_acl_port_mapping: bool,
    #[serde(rename = "loopbackDSR")]
    pub loopback_dsr: bool,
}

/// One user policy and where it was written, e.g. `policies[2]` or `AdditionalArgs[0]`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UserPolicy {
    pub source: String,
    pub policy: EndpointPolicy,
    /// Keys that do nothing: HNS ignores them (V2), or the V1 translation dropped them.
    pub ignored_keys: Vec<IgnoredKey>,
}

/// A validated runtime port mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PortMapping {
    pub host_port: u16,
    pub container_port: u16,
    /// IP protocol number.
    pub protocol: u32,
    pub host_ip: Option<IpAddr>,
}

/// The shared keys as they appear on the wire.
#[derive(Deserialize, Default)]
#[serde(default)]
struct SharedKeys {
    policies: Vec<NamedEntry>,
    #[serde(rename = "AdditionalArgs")]
    additional_args: Vec<NamedEntry>,
    #[serde(rename = "loopbackDSR")]
    loopback_dsr: bool,
    #[serde(rename = "optionalFlags")]
    optional_flags: OptionalFlags,
    #[serde(rename = "networkPolicySnapshot")]
    network_policy_snapshot: Option<Value>,
}

/// `{"name": ..., "value": ...}`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct NamedEntry {
    name: String,
    value: Value,
}

#[derive(Deserialize)]
struct RawPortMapping {
    #[serde(rename = "hostPort")]
    host_port: u16,
    #[serde(rename = "containerPort")]
    container_port: u16,
    #[serde(default)]
    protocol: String,
    #[serde(rename = "hostIP", default)]
    host_ip: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RuntimeDns {
    servers: Vec<String>,
    searches: Vec<String>,
    options: Vec<String>,
}

impl<K: NetworkKind> Conf<K> {
    /// Reads and validates the whole config; every problem is code 7 naming the key.
    pub fn load(conf: &NetConf) -> Result<Conf<K>, Error> {
        Decodes::count_config();
        let shared: SharedKeys = conf.plugin_config()?;
        let kind = K::from_keys(conf.plugin_config()?)?;
        let mut policies = Vec::new();
        collect_policies("policies", &shared.policies, &mut policies)?;
        collect_policies("AdditionalArgs", &shared.additional_args, &mut policies)?;
        Ok(Conf {
            network: conf.name.clone(),
            kind,
            flags: shared.optional_flags,
            loopback_dsr: shared.loopback_dsr || shared.optional_flags.loopback_dsr,
            policies,
            port_mappings: port_mappings(conf)?,
            dns: dns(conf)?,
            network_policy_snapshot: NETWORK_POLICY_SNAPSHOT
                .decode(shared.network_policy_snapshot.as_ref())?,
        })
    }
}

/// Translates the `EndpointPolicy` entries of one list. A `value` that is not a policy
/// object with a string `Type` is code 7 naming the entry: the reference plugins skip such an
/// entry silently, and a pod then runs without a policy its operator wrote. Keys that do
/// nothing are logged, naming the entry; the policy is kept as the reference sends it.
fn collect_policies(
    key: &str,
    entries: &[NamedEntry],
    into: &mut Vec<UserPolicy>,
) -> Result<(), Error> {
    for (index, entry) in entries.iter().enumerate() {
        if !entry.name.eq_ignore_ascii_case("EndpointPolicy") {
            continue;
        }
        let source = format!("{key}[{index}]");
        let Translated { policy, dropped } = endpoint_policy_from_conf(&entry.value.to_string())
            .map_err(|e| Error::invalid_config(format!("{source}.value: {e}")))?;
        // A type we model with a value that does not fit or a required key missing: HNS
        // would refuse it, so it is refused here, with the entry's name and the setting.
        if let Some(misfit) = policy.misfit() {
            return Err(Error::invalid_config(format!(
                "{source}.value: {} {} does not have the V2 settings HNS accepts for its type: \
                 {misfit} (check the values and the key names under \"Settings\", e.g. \
                 Exceptions rather than ExceptionList)",
                policy.type_name(),
                entry.value
            )));
        }
        if let Some(id) = agents_id(&policy) {
            return Err(Error::invalid_config(format!(
                "{source}.value: ACL Id {id:?} begins with {:?}, which marks the rules of the \
                 node's NetworkPolicy agent: the agent would take this rule for its own and \
                 remove it, and place its rules beside it as if it were not there; give the rule \
                 another Id, or none",
                netpol_ids::RULE_ID_PREFIX
            )));
        }
        let kept_as_written = policy.ignored_keys();
        if !kept_as_written.is_empty() {
            log::warn!(
                "{source}: the {} policy goes to HNS as written, as the reference plugins send it",
                policy.type_name()
            );
        }
        let mut ignored_keys = dropped;
        ignored_keys.extend(kept_as_written);
        for ignored in &ignored_keys {
            log::warn!("{source}: {ignored}");
        }
        into.push(UserPolicy {
            source,
            policy,
            ignored_keys,
        });
    }
    Ok(())
}

/// The `Id` of an ACL spelt as one of the NetworkPolicy agent's ([`netpol_ids::is_agents`]).
fn agents_id(policy: &EndpointPolicy) -> Option<String> {
    match policy.effect() {
        EndpointPolicy::Acl(acl) => acl.id.filter(|id| netpol_ids::is_agents(id)),
        _ => None,
    }
}

fn port_mappings(conf: &NetConf) -> Result<Vec<PortMapping>, Error> {
    let raw: Vec<RawPortMapping> = conf.runtime_config("portMappings")?.unwrap_or_default();
    raw.iter()
        .enumerate()
        .map(|(index, mapping)| {
            let field = |name: &str| format!("runtimeConfig.portMappings[{index}].{name}");
            let protocol = parse_protocol(&mapping.protocol).ok_or_else(|| {
                Error::invalid_config(format!(
                    "{}: unknown protocol {}; use tcp, udp, icmpv4, icmpv6, igmp or a protocol number",
                    field("protocol"),
                    cni::quoted(&mapping.protocol)
                ))
            })?;
            let host_ip = match mapping.host_ip.trim() {
                "" => None,
                text => Some(text.parse::<IpAddr>().map_err(|_| {
                    Error::invalid_config(format!(
                        "{}: {} is not an IP address",
                        field("hostIP"),
                        cni::quoted(text)
                    ))
                })?),
            };
            Ok(PortMapping {
                host_port: mapping.host_port,
                container_port: mapping.container_port,
                protocol,
                host_ip,
            })
        })
        .collect()
}

/// A protocol name (`tcp`, case-insensitive) or number (`"6"`).
fn parse_protocol(text: &str) -> Option<u32> {
    protocol::number(text).or_else(|| text.trim().parse::<u8>().ok().map(u32::from))
}

/// The endpoint's DNS: `dns`, overridden field by field by `runtimeConfig.dns`. Name servers
/// are parsed here, so a typo is code 7 naming the key rather than an HNS refusal.
fn dns(conf: &NetConf) -> Result<Dns, Error> {
    let configured = conf.dns()?;
    let mut servers = ("dns.nameservers", configured.nameservers);
    let mut search = configured.search;
    let mut options = configured.options;
    if let Some(runtime) = conf.runtime_config::<RuntimeDns>("dns")? {
        if !runtime.servers.is_empty() {
            servers = ("runtimeConfig.dns.servers", runtime.servers);
        }
        if !runtime.searches.is_empty() {
            search = runtime.searches;
        }
        if !runtime.options.is_empty() {
            options = runtime.options;
        }
    }
    let (key, servers) = servers;
    let server_list = servers
        .iter()
        .enumerate()
        .map(|(index, server)| {
            server.trim().parse::<IpAddr>().map_err(|_| {
                Error::invalid_config(format!(
                    "{key}[{index}]: {} is not an IP address (expected e.g. 10.96.0.10)",
                    cni::quoted(server)
                ))
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(Dns {
        domain: configured.domain.unwrap_or_default(),
        search,
        server_list,
        options,
    })
}

/// The HCN namespace `CNI_NETNS` names: a namespace GUID (containerd), braced or not, or a path
/// whose last component is one (libcni's cnitool makes the value absolute). A docker-style value
/// (`none`, `container:<id>`) is dockershim's HNS V1 hot-attach, which is not supported.
pub(crate) fn namespace_guid(netns: &str) -> Result<Guid, Error> {
    let refused = |problem: &str| {
        Error::new(
            ErrorCode::InvalidEnvironment,
            format!("CNI_NETNS {} {problem}", cni::quoted(netns)),
        )
        .with_details(format!("CNI_NETNS as received: {netns:?}"))
    };
    if netns == "none" || netns.starts_with("container:") {
        return Err(refused(
            "is a docker-style network namespace (dockershim / HNS V1 hot-attach), which is not \
             supported: run the pod with containerd, which passes an HCN namespace GUID",
        ));
    }
    netns
        .parse()
        .or_else(|_| cni::env::netns_last_component(netns).parse())
        .map_err(|_| {
            refused(
                "is not an HCN namespace GUID (containerd passes one, e.g. \
                 5f3f8c1e-0b49-4b36-9a0e-6f1c2b3d4e5f) nor a path ending in one",
            )
        })
}
