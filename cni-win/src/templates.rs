//! The conflists install writes: one template per way of running cni-win, each at cniVersion
//! 1.1.0 (so containerd 2 calls STATUS and a runtime may call GC) with the `portMappings` and
//! `dns` capabilities (without them hostPort and pod DNS silently break, nerdctl#5157, WCN#83).
//!
//! The Flannel templates are in the Flannel-native form: `win-overlay` / `win-bridge` listed
//! directly with `subnetFile`, the path of flanneld's `subnet.env`, instead of the `flannel`
//! meta plugin delegating to them.
//!
//! Each template has settings with defaults, changed with `--set KEY=VALUE`.

use std::fmt;
use std::net::IpAddr;

use ipnetwork::IpNetwork;
use serde_json::{Value, json};

use crate::error::Error;

/// A conflist template, by the name `--conflist` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Template {
    /// Flannel's vxlan backend: win-overlay on the `flannel.4096` Overlay network.
    FlannelVxlan,
    /// Flannel's host-gw backend: win-bridge on the `cbr0` L2Bridge network.
    FlannelHostGw,
    /// win-bridge with host-local over a pod subnet given by `--set subnet=`.
    WinBridge,
    /// win-overlay with host-local over a pod subnet given by `--set subnet=`.
    WinOverlay,
}

/// The version every template is written at.
pub const CNI_VERSION: &str = "1.1.0";

/// The settings a template reads, their defaults, and what they mean (for errors and help).
const SETTINGS: [(&str, &str); 10] = [
    ("name", "the network's name, which is the HNS network's"),
    ("clusterCidr", "the pod network, excluded from outbound NAT"),
    (
        "serviceCidr",
        "the service network: excluded from NAT, routed encapsulated",
    ),
    ("dnsServer", "the cluster DNS service's address"),
    ("dnsSearch", "DNS search domains, comma-separated"),
    ("subnetFile", "flanneld's subnet.env (Flannel templates)"),
    (
        "subnet",
        "this node's pod subnet (win-bridge, win-overlay templates; required)",
    ),
    (
        "nodeSubnet",
        "the nodes' own subnet, excluded from NAT (bridge templates; optional)",
    ),
    (
        "vni",
        "the VXLAN network identifier, at least 4096 (overlay templates)",
    ),
    (
        "networkPolicySnapshot",
        "where the node's NetworkPolicy agent (cni-win daemon --network-policy) writes the \
         rules new pods start with, e.g. C:\\var\\lib\\cni-win\\network-policy.json \
         (unset: NetworkPolicy off)",
    ),
];

impl Template {
    fn uses(self, setting: &str) -> bool {
        let flannel = matches!(self, Template::FlannelVxlan | Template::FlannelHostGw);
        let overlay = matches!(self, Template::FlannelVxlan | Template::WinOverlay);
        match setting {
            "subnetFile" => flannel,
            "subnet" => !flannel,
            "nodeSubnet" => !overlay,
            "vni" => overlay,
            _ => true,
        }
    }

    fn default_name(self) -> &'static str {
        match self {
            Template::FlannelVxlan | Template::WinOverlay => "flannel.4096",
            Template::FlannelHostGw | Template::WinBridge => "cbr0",
        }
    }

    fn settable(self) -> Vec<&'static str> {
        SETTINGS
            .iter()
            .map(|(key, _)| *key)
            .filter(|key| self.uses(key))
            .collect()
    }

    /// The conflist with `sets` applied over the defaults.
    pub fn render(self, sets: &[(String, String)]) -> Result<Value, Error> {
        let settings = Settings::resolve(self, sets)?;
        let mut exceptions = vec![settings.cluster_cidr, settings.service_cidr.clone()];
        exceptions.extend(settings.node_subnet);
        let overlay = matches!(self, Template::FlannelVxlan | Template::WinOverlay);
        let mut plugin = json!({
            "type": if overlay { "win-overlay" } else { "win-bridge" },
            "capabilities": {"portMappings": true, "dns": true},
            "dns": {"nameservers": [settings.dns_server], "search": settings.dns_search},
            "policies": [
                {"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT",
                    "Settings": {"Exceptions": exceptions}}},
                {"name": "EndpointPolicy", "value": {"Type": "SDNRoute",
                    "Settings": {"DestinationPrefix": settings.service_cidr, "NeedEncap": true}}},
            ],
        });
        let entries = plugin.as_object_mut().expect("a JSON object literal");
        if overlay {
            entries.insert("vni".into(), json!(settings.vni));
            entries.insert("vxlanPort".into(), json!(4789));
            entries.insert("endpointMacPrefix".into(), json!("0E-2A"));
        }
        if let Some(snapshot) = settings.network_policy_snapshot {
            entries.insert("networkPolicySnapshot".into(), json!(snapshot));
        }
        match (settings.subnet_file, settings.subnet) {
            (Some(file), _) => entries.insert("subnetFile".into(), json!(file)),
            (None, Some(subnet)) => entries.insert(
                "ipam".into(),
                json!({"type": "host-local", "subnet": subnet}),
            ),
            (None, None) => {
                return Err(Error::new(format!(
                    "the {self} template needs this node's pod subnet: add --set subnet=<CIDR>, e.g. subnet=10.244.1.0/24"
                )));
            }
        };
        Ok(json!({
            "cniVersion": CNI_VERSION,
            "name": settings.name,
            "plugins": [plugin],
        }))
    }
}

impl fmt::Display for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = clap::ValueEnum::to_possible_value(self).expect("no variant is skipped");
        f.write_str(value.get_name())
    }
}

/// A template's settings, parsed and checked.
struct Settings {
    name: String,
    cluster_cidr: String,
    service_cidr: String,
    dns_server: IpAddr,
    dns_search: Vec<String>,
    subnet_file: Option<String>,
    subnet: Option<String>,
    node_subnet: Option<String>,
    vni: u32,
    network_policy_snapshot: Option<String>,
}

impl Settings {
    fn resolve(template: Template, sets: &[(String, String)]) -> Result<Settings, Error> {
        let mut settings = Settings {
            name: template.default_name().to_owned(),
            cluster_cidr: cidr("clusterCidr", "10.244.0.0/16")?,
            service_cidr: cidr("serviceCidr", "10.96.0.0/12")?,
            dns_server: IpAddr::from([10, 96, 0, 10]),
            dns_search: vec!["svc.cluster.local".to_owned()],
            // flanneld's subnet.env where this node has it: the plugins refuse a path that is
            // not absolute here, and a Windows path is not one elsewhere.
            subnet_file: matches!(template, Template::FlannelVxlan | Template::FlannelHostGw)
                .then(|| crate::defaults::SUBNET_FILE.to_owned()),
            subnet: None,
            node_subnet: None,
            vni: 4096,
            network_policy_snapshot: None,
        };
        for (key, value) in sets {
            if !template.uses(key) {
                return Err(Error::new(format!(
                    "--set {key}: the {template} template has no such setting; it has {}",
                    template.settable().join(", ")
                )));
            }
            match key.as_str() {
                "name" => settings.name = value.clone(),
                "clusterCidr" => settings.cluster_cidr = cidr(key, value)?,
                "serviceCidr" => settings.service_cidr = cidr(key, value)?,
                "dnsServer" => {
                    settings.dns_server = value.parse().map_err(|_| {
                        Error::new(format!("--set dnsServer={value}: not an IP address"))
                    })?;
                }
                "dnsSearch" => {
                    settings.dns_search = value
                        .split(',')
                        .map(str::trim)
                        .filter(|domain| !domain.is_empty())
                        .map(str::to_owned)
                        .collect();
                }
                "subnetFile" => settings.subnet_file = Some(value.clone()),
                "subnet" => settings.subnet = Some(cidr(key, value)?),
                "nodeSubnet" => settings.node_subnet = Some(cidr(key, value)?),
                "vni" => {
                    settings.vni = value.parse().map_err(|_| {
                        Error::new(format!(
                            "--set vni={value}: not a number (use 4096 or more)"
                        ))
                    })?;
                }
                "networkPolicySnapshot" => {
                    settings.network_policy_snapshot = Some(value.clone());
                }
                _ => unreachable!("every setting a template uses is handled"),
            }
        }
        Ok(settings)
    }
}

/// A checked CIDR, as written.
fn cidr(key: &str, value: &str) -> Result<String, Error> {
    value
        .parse::<IpNetwork>()
        .map(|_| value.to_owned())
        .map_err(|_| {
            Error::new(format!(
                "--set {key}={value}: not a CIDR such as 10.244.0.0/16"
            ))
        })
}

/// Parses one `--set KEY=VALUE`.
pub fn parse_set(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!(
            "expected KEY=VALUE, one of: {}",
            SETTINGS.map(|(key, _)| key).join(", ")
        )),
    }
}

/// One line per setting, for `install --help`.
pub fn settings_help() -> String {
    SETTINGS
        .iter()
        .map(|(key, meaning)| format!("  {key}: {meaning}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(key: &str, value: &str) -> (String, String) {
        (key.to_owned(), value.to_owned())
    }

    #[test]
    fn flannel_templates_are_flannel_native() {
        let vxlan = Template::FlannelVxlan.render(&[]).unwrap();
        assert_eq!(vxlan["cniVersion"], "1.1.0");
        assert_eq!(vxlan["name"], "flannel.4096");
        let plugin = &vxlan["plugins"][0];
        assert_eq!(plugin["type"], "win-overlay");
        assert_eq!(plugin["subnetFile"], crate::defaults::SUBNET_FILE);
        assert_eq!(plugin["vni"], 4096);
        assert_eq!(plugin["vxlanPort"], 4789);
        assert_eq!(
            plugin["capabilities"],
            json!({"portMappings": true, "dns": true})
        );
        assert!(plugin.get("ipam").is_none());
        let host_gw = Template::FlannelHostGw
            .render(&[set("nodeSubnet", "10.127.130.0/24")])
            .unwrap();
        assert_eq!(host_gw["plugins"][0]["type"], "win-bridge");
        assert_eq!(
            host_gw["plugins"][0]["policies"][0]["value"]["Settings"]["Exceptions"],
            json!(["10.244.0.0/16", "10.96.0.0/12", "10.127.130.0/24"])
        );
    }

    /// An absolute path on the node install runs on.
    const SNAPSHOT: &str = if cfg!(windows) {
        r"C:\var\lib\cni-win\network-policy.json"
    } else {
        "/var/lib/cni-win/network-policy.json"
    };

    #[test]
    fn network_policy_is_off_unless_a_snapshot_is_set() {
        for template in [Template::FlannelVxlan, Template::FlannelHostGw] {
            let off = template.render(&[]).unwrap();
            assert!(off["plugins"][0].get("networkPolicySnapshot").is_none());
            let on = template
                .render(&[set("networkPolicySnapshot", SNAPSHOT)])
                .unwrap();
            assert_eq!(on["plugins"][0]["networkPolicySnapshot"], SNAPSHOT);
            crate::lint::check(&on).unwrap();
        }
    }

    /// The plugins refuse a path that is not absolute on the node, so install does not write
    /// one: a relative path anywhere, a Windows one off Windows.
    #[test]
    fn paths_that_are_not_absolute_on_the_node_are_refused_naming_the_key() {
        let mut relative = vec!["network-policy.json"];
        if !cfg!(windows) {
            relative.push(r"C:\var\lib\cni-win\network-policy.json");
        }
        for path in relative {
            for key in ["networkPolicySnapshot", "subnetFile"] {
                let conflist = Template::FlannelHostGw.render(&[set(key, path)]).unwrap();
                let err = crate::lint::check(&conflist).unwrap_err().to_string();
                assert!(
                    err.contains(&format!("refuses it: {key}: ")),
                    "{key}={path}: {err}"
                );
            }
        }
    }

    #[test]
    fn plain_templates_need_a_subnet() {
        let err = Template::WinBridge.render(&[]).unwrap_err();
        assert!(err.to_string().contains("--set subnet="), "{err}");
        let conf = Template::WinOverlay
            .render(&[set("subnet", "10.244.1.0/24")])
            .unwrap();
        assert_eq!(
            conf["plugins"][0]["ipam"],
            json!({"type": "host-local", "subnet": "10.244.1.0/24"})
        );
    }

    #[test]
    fn refuses_settings_the_template_does_not_have_and_bad_values() {
        let err = Template::FlannelVxlan
            .render(&[set("subnet", "10.0.0.0/24")])
            .unwrap_err();
        assert!(err.to_string().contains("has no such setting"), "{err}");
        assert!(
            Template::FlannelVxlan
                .render(&[set("serviceCidr", "10.96/12")])
                .is_err()
        );
        assert!(
            Template::FlannelVxlan
                .render(&[set("dnsServer", "dns")])
                .is_err()
        );
        assert!(parse_set("novalue").is_err());
        assert_eq!(parse_set("a=b=c").unwrap(), set("a", "b=c"));
    }
}
