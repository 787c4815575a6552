//! The result layouts of every spec version, checked structurally from the JSON.
//!
//! This is the harness's own reading of the spec (cni-spec §9.1), written without the `cni`
//! crate: a checker that shared the plugin's types would accept whatever those types produce.

use serde_json::{Map, Value};
use std::net::IpAddr;

/// The released spec versions, oldest first.
pub const SPEC_VERSIONS: [&str; 7] = [
    "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
];

/// Whether `version` is a released version no older than `minimum` (both from [`SPEC_VERSIONS`]).
pub fn is_at_least(version: &str, minimum: &str) -> bool {
    let rank = |v: &str| SPEC_VERSIONS.iter().position(|known| *known == v);
    matches!((rank(version), rank(minimum)), (Some(v), Some(m)) if v >= m)
}

/// The ADD result layouts of §9.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// 0.1.0, 0.2.0: `ip4`/`ip6`.
    Legacy,
    /// 0.3.0 to 0.4.0: `interfaces`, `ips` with a required `version`, `routes`.
    Versioned,
    /// 1.0.0: as above without `ips[].version`.
    V1_0,
    /// 1.1.0: 1.0.0 plus optional interface and route fields.
    V1_1,
}

impl Layout {
    fn of(version: &str) -> Option<Layout> {
        match version {
            "0.1.0" | "0.2.0" => Some(Layout::Legacy),
            "0.3.0" | "0.3.1" | "0.4.0" => Some(Layout::Versioned),
            "1.0.0" => Some(Layout::V1_0),
            "1.1.0" => Some(Layout::V1_1),
            _ => None,
        }
    }
}

/// Every way `result` departs from the ADD result layout of `version`, each naming the field.
/// Empty when the result is well formed. The caller checks `cniVersion` itself.
pub fn result_violations(result: &Value, version: &str) -> Vec<String> {
    let mut problems = Problems::default();
    let Some(layout) = Layout::of(version) else {
        problems.add(format!("{version:?} is not a released CNI version"));
        return problems.0;
    };
    let Some(top) = problems.object("result", result) else {
        return problems.0;
    };
    if layout == Layout::Legacy {
        problems.known_keys("result", top, &["cniVersion", "ip4", "ip6", "dns"]);
        let ip4 = top.get("ip4");
        let ip6 = top.get("ip6");
        if ip4.is_none() && ip6.is_none() {
            problems.add(format!("a {version} result needs ip4 or ip6"));
        }
        for (key, family) in [("ip4", Family::V4), ("ip6", Family::V6)] {
            if let Some(ip) = top.get(key) {
                problems.legacy_ip(key, ip, family);
            }
        }
    } else {
        problems.known_keys(
            "result",
            top,
            &["cniVersion", "interfaces", "ips", "routes", "dns"],
        );
        let interfaces = problems.list(top, "interfaces", |p, path, item| {
            p.interface(path, item, layout)
        });
        problems.list(top, "ips", |p, path, item| {
            p.ip_config(path, item, layout, interfaces)
        });
        problems.list(top, "routes", |p, path, item| p.route(path, item, layout));
    }
    if let Some(dns) = top.get("dns") {
        problems.dns(dns);
    }
    problems.0
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    V4,
    V6,
}

impl Family {
    fn of(ip: IpAddr) -> Family {
        if ip.is_ipv4() { Family::V4 } else { Family::V6 }
    }

    fn label(self) -> &'static str {
        match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        }
    }
}

#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    fn add(&mut self, problem: String) {
        self.0.push(problem);
    }

    fn object<'v>(&mut self, path: &str, value: &'v Value) -> Option<&'v Map<String, Value>> {
        let object = value.as_object();
        if object.is_none() {
            self.add(format!("{path} must be a JSON object, found {value}"));
        }
        object
    }

    fn known_keys(&mut self, path: &str, object: &Map<String, Value>, known: &[&str]) {
        for key in object.keys().filter(|k| !known.contains(&k.as_str())) {
            self.add(format!("{path}.{key} is not part of this version's layout"));
        }
    }

    /// Checks each item of the optional array `object[key]`; returns its length.
    fn list(
        &mut self,
        object: &Map<String, Value>,
        key: &str,
        mut check: impl FnMut(&mut Problems, &str, &Value),
    ) -> usize {
        match object.get(key) {
            None => 0,
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    check(self, &format!("{key}[{i}]"), item);
                }
                items.len()
            }
            Some(other) => {
                self.add(format!("{key} must be an array, found {other}"));
                0
            }
        }
    }

    fn required<'v>(
        &mut self,
        path: &str,
        object: &'v Map<String, Value>,
        key: &str,
    ) -> Option<&'v Value> {
        let value = object.get(key);
        if value.is_none() {
            self.add(format!("{path}.{key} is required"));
        }
        value
    }

    fn string(&mut self, path: &str, value: &Value) {
        if !value.is_string() {
            self.add(format!("{path} must be a string, found {value}"));
        }
    }

    fn string_list(&mut self, path: &str, value: &Value) {
        match value.as_array() {
            Some(items) if items.iter().all(Value::is_string) => {}
            _ => self.add(format!("{path} must be an array of strings, found {value}")),
        }
    }

    fn unsigned(&mut self, path: &str, value: &Value) -> Option<u64> {
        let n = value.as_u64();
        if n.is_none() {
            self.add(format!(
                "{path} must be a non-negative integer, found {value}"
            ));
        }
        n
    }

    /// An address in CIDR notation (`10.1.2.3/24`); returns its family.
    fn cidr(&mut self, path: &str, value: &Value) -> Option<Family> {
        let parsed = value.as_str().and_then(|text| {
            let (addr, prefix) = text.split_once('/')?;
            let addr: IpAddr = addr.parse().ok()?;
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let digits = !prefix.is_empty() && prefix.bytes().all(|b| b.is_ascii_digit());
            (digits && prefix.parse::<u8>().is_ok_and(|p| p <= max)).then_some(Family::of(addr))
        });
        if parsed.is_none() {
            self.add(format!(
                "{path} must be an address in CIDR notation, found {value}"
            ));
        }
        parsed
    }

    fn address(&mut self, path: &str, value: &Value) -> Option<Family> {
        let parsed = value
            .as_str()
            .and_then(|s| s.parse::<IpAddr>().ok())
            .map(Family::of);
        if parsed.is_none() {
            self.add(format!("{path} must be an IP address, found {value}"));
        }
        parsed
    }

    fn same_family(&mut self, path: &str, found: Option<Family>, expected: Option<Family>) {
        if let (Some(found), Some(expected)) = (found, expected)
            && found != expected
        {
            self.add(format!(
                "{path} is {} but belongs with {}",
                found.label(),
                expected.label()
            ));
        }
    }

    fn legacy_ip(&mut self, path: &str, value: &Value, family: Family) {
        let Some(ip) = self.object(path, value) else {
            return;
        };
        self.known_keys(path, ip, &["ip", "gateway", "routes"]);
        if let Some(addr) = self.required(path, ip, "ip") {
            let found = self.cidr(&format!("{path}.ip"), addr);
            self.same_family(&format!("{path}.ip"), found, Some(family));
        }
        if let Some(gateway) = ip.get("gateway") {
            let found = self.address(&format!("{path}.gateway"), gateway);
            self.same_family(&format!("{path}.gateway"), found, Some(family));
        }
        self.list(ip, "routes", |p, route_path, route| {
            let route_path = format!("{path}.{route_path}");
            let Some(route) = p.object(&route_path, route) else {
                return;
            };
            p.known_keys(&route_path, route, &["dst", "gw"]);
            p.route_ends(&route_path, route, Some(family));
        });
    }

    /// A route's `dst` (required) and `gw`, of one family (and of `family` when given).
    fn route_ends(&mut self, path: &str, route: &Map<String, Value>, family: Option<Family>) {
        let dst = self
            .required(path, route, "dst")
            .and_then(|dst| self.cidr(&format!("{path}.dst"), dst));
        self.same_family(&format!("{path}.dst"), dst, family);
        if let Some(gw) = route.get("gw") {
            let found = self.address(&format!("{path}.gw"), gw);
            self.same_family(&format!("{path}.gw"), found, dst.or(family));
        }
    }

    fn interface(&mut self, path: &str, value: &Value, layout: Layout) {
        let Some(interface) = self.object(path, value) else {
            return;
        };
        let mut known = vec!["name", "mac", "sandbox"];
        // libcni's types100 serve 1.0.0 and 1.1.0 alike, so a 1.0.0 result may carry them.
        if matches!(layout, Layout::V1_0 | Layout::V1_1) {
            known.extend(["mtu", "socketPath", "pciID"]);
        }
        self.known_keys(path, interface, &known);
        if let Some(name) = self.required(path, interface, "name") {
            match name.as_str() {
                Some(n) if !n.is_empty() => {}
                _ => self.add(format!(
                    "{path}.name must be a non-empty string, found {name}"
                )),
            }
        }
        for key in ["mac", "sandbox", "socketPath", "pciID"] {
            if let Some(v) = interface.get(key) {
                self.string(&format!("{path}.{key}"), v);
            }
        }
        if let Some(mtu) = interface.get("mtu") {
            self.unsigned(&format!("{path}.mtu"), mtu);
        }
    }

    fn ip_config(&mut self, path: &str, value: &Value, layout: Layout, interfaces: usize) {
        let Some(ip) = self.object(path, value) else {
            return;
        };
        let mut known = vec!["address", "gateway", "interface"];
        if layout == Layout::Versioned {
            known.push("version");
        }
        self.known_keys(path, ip, &known);
        let family = self
            .required(path, ip, "address")
            .and_then(|a| self.cidr(&format!("{path}.address"), a));
        if layout == Layout::Versioned
            && let Some(version) = self.required(path, ip, "version")
        {
            let stated = match version.as_str() {
                Some("4") => Some(Family::V4),
                Some("6") => Some(Family::V6),
                _ => {
                    self.add(format!(
                        "{path}.version must be \"4\" or \"6\", found {version}"
                    ));
                    None
                }
            };
            self.same_family(&format!("{path}.address"), family, stated);
        }
        if let Some(gateway) = ip.get("gateway") {
            let found = self.address(&format!("{path}.gateway"), gateway);
            self.same_family(&format!("{path}.gateway"), found, family);
        }
        if let Some(index) = ip.get("interface")
            && let Some(n) = self.unsigned(&format!("{path}.interface"), index)
            && n >= interfaces as u64
        {
            self.add(format!(
                "{path}.interface is {n} but the result lists {interfaces} interface(s)"
            ));
        }
    }

    fn route(&mut self, path: &str, value: &Value, layout: Layout) {
        let Some(route) = self.object(path, value) else {
            return;
        };
        const V1_1_FIELDS: [&str; 5] = ["mtu", "advmss", "priority", "table", "scope"];
        let mut known = vec!["dst", "gw"];
        // libcni has one Route type for 0.3.0 onwards, so its conversions keep these fields
        // in every layout with a `routes` list.
        if layout != Layout::Legacy {
            known.extend(V1_1_FIELDS);
        }
        self.known_keys(path, route, &known);
        self.route_ends(path, route, None);
        for key in V1_1_FIELDS {
            if let Some(v) = route.get(key) {
                self.unsigned(&format!("{path}.{key}"), v);
            }
        }
    }

    fn dns(&mut self, value: &Value) {
        let Some(dns) = self.object("dns", value) else {
            return;
        };
        self.known_keys("dns", dns, &["nameservers", "domain", "search", "options"]);
        for key in ["nameservers", "search", "options"] {
            if let Some(v) = dns.get(key) {
                self.string_list(&format!("dns.{key}"), v);
            }
        }
        if let Some(domain) = dns.get("domain") {
            self.string("dns.domain", domain);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assert_clean(result: Value, version: &str) {
        let problems = result_violations(&result, version);
        assert!(problems.is_empty(), "{version}: {problems:?}");
    }

    fn assert_flags(result: Value, version: &str, needle: &str) {
        let problems = result_violations(&result, version);
        assert!(
            problems.iter().any(|p| p.contains(needle)),
            "{version}: expected a problem mentioning {needle:?}, got {problems:?}"
        );
    }

    #[test]
    fn versions_order_by_release() {
        assert!(is_at_least("0.4.0", "0.4.0"));
        assert!(is_at_least("1.1.0", "0.4.0"));
        assert!(!is_at_least("0.3.1", "0.4.0"));
        assert!(!is_at_least("9.9.9", "0.1.0"));
    }

    #[test]
    fn accepts_well_formed_results_of_each_layout() {
        let legacy = json!({"cniVersion": "0.2.0",
            "ip4": {"ip": "10.1.0.5/16", "gateway": "10.1.0.1",
                    "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.0.1"}]},
            "ip6": {"ip": "fd00::5/64"},
            "dns": {"nameservers": ["10.96.0.10"], "domain": "cluster.local"}});
        assert_clean(legacy, "0.2.0");
        let versioned = json!({"cniVersion": "0.3.1",
            "interfaces": [{"name": "eth0", "mac": "00:15:5d:01:02:03", "sandbox": "ns"}],
            "ips": [{"version": "4", "address": "10.1.0.5/16", "gateway": "10.1.0.1", "interface": 0},
                    {"version": "6", "address": "fd00::5/64"}],
            "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.0.1"}, {"dst": "::/0"}],
            "dns": {}});
        assert_clean(versioned, "0.3.1");
        let v1_1 = json!({"cniVersion": "1.1.0",
            "interfaces": [{"name": "eth0", "mtu": 1450, "socketPath": "/s", "pciID": "0000:00:01.0"}],
            "ips": [{"address": "10.1.0.5/16", "interface": 0}],
            "routes": [{"dst": "10.0.0.0/8", "gw": "10.1.0.1", "mtu": 1400, "scope": 253, "table": 100}]});
        assert_clean(v1_1, "1.1.0");
        assert_clean(json!({"cniVersion": "1.0.0"}), "1.0.0");
    }

    #[test]
    fn accepts_what_libcni_conversions_keep_below_1_1_0() {
        // One Route type from 0.3.0 on, and the same types for 1.0.0 and 1.1.0: the cni crate's
        // golden 0.4.0 and 1.0.0 results carry these fields, as libcni's would.
        assert_clean(
            json!({"routes": [{"dst": "::/0", "mtu": 1400, "table": 100, "scope": 0}]}),
            "0.4.0",
        );
        assert_clean(
            json!({"interfaces": [{"name": "eth0", "mtu": 1450}],
                   "routes": [{"dst": "0.0.0.0/0", "table": 5}]}),
            "1.0.0",
        );
    }

    #[test]
    fn flags_fields_of_the_wrong_layout() {
        assert_flags(
            json!({"ips": [{"version": "4", "address": "10.0.0.2/24"}]}),
            "0.2.0",
            "result.ips",
        );
        assert_flags(json!({"ip4": {"ip": "10.0.0.2/24"}}), "0.4.0", "result.ip4");
        assert_flags(
            json!({"ips": [{"address": "10.0.0.2/24"}]}),
            "0.4.0",
            "ips[0].version is required",
        );
        assert_flags(
            json!({"ips": [{"version": "4", "address": "10.0.0.2/24"}]}),
            "1.0.0",
            "ips[0].version",
        );
        // An interface's 1.1.0 fields have no place in 0.3.x/0.4.0 (libcni's types040
        // interface has only name, mac and sandbox) ...
        assert_flags(
            json!({"interfaces": [{"name": "eth0", "mtu": 1500}]}),
            "0.4.0",
            "interfaces[0].mtu",
        );
        assert_flags(json!({"dns": {}}), "0.1.0", "needs ip4 or ip6");
    }

    #[test]
    fn flags_malformed_values() {
        let cases = [
            (json!({"ips": [{"address": "10.0.0.2"}]}), "CIDR"),
            (json!({"ips": [{"address": "10.0.0.2/33"}]}), "CIDR"),
            (
                json!({"ips": [{"address": "10.0.0.2/24", "gateway": "fd00::1"}]}),
                "ips[0].gateway is IPv6",
            ),
            (
                json!({"ips": [{"address": "10.0.0.2/24", "interface": 1}]}),
                "lists 0 interface",
            ),
            (
                json!({"ips": [{"address": "10.0.0.2/24", "interface": -1}]}),
                "non-negative",
            ),
            (
                json!({"interfaces": [{"mac": "x"}]}),
                "interfaces[0].name is required",
            ),
            (
                json!({"routes": [{"gw": "10.0.0.1"}]}),
                "routes[0].dst is required",
            ),
            (json!({"routes": {}}), "routes must be an array"),
            (
                json!({"dns": {"nameservers": "10.0.0.10"}}),
                "dns.nameservers",
            ),
            (json!([1]), "must be a JSON object"),
        ];
        for (result, needle) in cases {
            assert_flags(result, "1.1.0", needle);
        }
        assert_flags(
            json!({"ips": [{"version": "6", "address": "10.0.0.2/24"}]}),
            "0.4.0",
            "is IPv4 but belongs with IPv6",
        );
        assert_flags(
            json!({"ip6": {"ip": "10.0.0.2/24"}}),
            "0.2.0",
            "ip6.ip is IPv4",
        );
        assert_flags(
            json!({"ip4": {"ip": "10.0.0.2/24", "routes": [{"dst": "::/0"}]}}),
            "0.2.0",
            "ip4.routes[0].dst is IPv6",
        );
    }
}
