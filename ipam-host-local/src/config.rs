//! The `ipam` section (plus requested addresses) read, defaulted and validated as the reference
//! host-local does, with every refusal a code 7 that names the field at fault.

use cni::path::{DefaultedPathKey, RootedPath};
use cni::seconds::Seconds;
use cni::{CniArgs, Error, ErrorCode, NetConf, Route, Version, case_insensitive};
use ipnetwork::IpNetwork;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::range::{Range, RangeSet, from_number, to_number};

/// Where reservations live when the config has no `dataDir`: the reference's literal default on
/// every OS (on Windows it resolves against the current drive, e.g. `C:\var\lib\cni\networks`).
pub const DEFAULT_DATA_DIR: &str = "/var/lib/cni/networks";

/// `ipam.dataDir`: a rooted path ([`cni::path`]), absent, null or empty being the
/// reference's default. A relative one would put the store, the only directory host-local
/// writes, wherever the plugin happens to run; it is refused (code 7 naming the key), by ADD
/// and by DEL alike: it cannot locate reservations either.
pub const DATA_DIR: DefaultedPathKey = DefaultedPathKey {
    name: "ipam.dataDir",
    default: DEFAULT_DATA_DIR,
};

/// A validated host-local configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpamConfig {
    /// One address is allocated from each set; dual-stack is two sets.
    pub range_sets: Vec<RangeSet>,
    /// Copied verbatim into every result.
    pub routes: Vec<Route>,
    /// `dataDir`: the only directory the plugin writes, with one subdirectory per network.
    pub data_dir: RootedPath,
    /// `resolvConf`: read at ADD time and returned as the result's `dns`.
    pub resolv_conf: Option<PathBuf>,
    /// Addresses the runtime asked for, each already matched to its range set, or why they
    /// cannot be honoured. Only ADD refuses on the error: DEL, CHECK, GC and STATUS work by
    /// attachment, so a request ADD refused never blocks the runtime's teardown. (The error is
    /// boxed to keep the config, which the plugins hold by value, small.)
    pub requested: Result<Vec<RequestedIp>, Box<Error>>,
    /// How long to wait for the store's lock before giving up with "try again later".
    pub lock_timeout: Duration,
    /// `notReadyWhenFull`: whether STATUS fails (code 50) when a range set has no free
    /// address. Off by default: containerd 2.x polls STATUS every few seconds and a failure
    /// takes the node NotReady, which evicts every pod on it, so a full range (a leak, or a
    /// small pod CIDR) would turn into an outage. A node operator who wants the scheduler
    /// kept off a full node opts in.
    pub not_ready_when_full: bool,
}

impl IpamConfig {
    /// A store that only gives addresses back (GC): no ranges, nothing requested. What a
    /// caller has when the ranges live elsewhere and are gone (Flannel's subnet.env at node
    /// teardown); releasing by attachment needs neither.
    pub fn release_only(location: StoreLocation) -> IpamConfig {
        IpamConfig {
            range_sets: Vec::new(),
            routes: Vec::new(),
            data_dir: location.data_dir,
            resolv_conf: None,
            requested: Ok(Vec::new()),
            lock_timeout: location.lock_timeout,
            not_ready_when_full: false,
        }
    }
}

/// Where a network's reservations are and how long to wait for their lock: all a command that
/// only gives addresses back needs of `ipam`, read so that nothing else in the section can
/// stop it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreLocation {
    /// `dataDir` (the reference's default when absent, null or empty).
    pub data_dir: RootedPath,
    /// `lockTimeoutSeconds`, then the environment, then the default.
    pub lock_timeout: Duration,
}

impl StoreLocation {
    /// From an `ipam` section, or none (a config whose IPAM is derived, as in Flannel-native
    /// mode). `dataDir` locates the reservations: one that is not a rooted path is code 7
    /// naming it. The lock deadline only bounds a wait: one that is not valid (in the config or
    /// the environment) is replaced by the default, with a warning.
    pub fn from_ipam(ipam: Option<&Map<String, Value>>) -> Result<StoreLocation, Error> {
        let data_dir = data_dir(ipam).map_err(|refused| {
            refused.with_details(
                "the reservation store cannot be found without it: set it to the directory \
                 the attachment's address was reserved in",
            )
        })?;
        let configured = ipam
            .and_then(|ipam| case_insensitive::get(ipam, "lockTimeoutSeconds"))
            .filter(|value| !value.is_null());
        let (setting, env) = lock_setting_from(env_var);
        let lock_timeout = setting.from_leniently(configured, env.as_deref());
        Ok(StoreLocation {
            data_dir,
            lock_timeout,
        })
    }
}

/// `dataDir` of an `ipam` section (or of none), by [`DATA_DIR`]'s rule: what every command
/// reads it with.
fn data_dir(ipam: Option<&Map<String, Value>>) -> Result<RootedPath, Error> {
    DATA_DIR.decode(ipam.and_then(|ipam| case_insensitive::get(ipam, "dataDir")))
}

/// The default lock deadline. kubelet gives a sandbox's whole network setup its CRI
/// `runtimeRequestTimeout` (2 minutes by default) and calls ADD again after a failure, so an
/// ADD that waits longer than half of it risks being abandoned by its caller while it still
/// holds a place in the queue; an operation under the lock takes milliseconds (a rebuild of
/// 5,000 reservations well under a second), so 60 s only expires when the holder is stuck.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// The environment variable that sets the lock deadline for every network on a node without
/// `ipam.lockTimeoutSeconds`, in seconds like cni-win's other deadlines
/// (`CNI_WIN_HNS_TIMEOUT_SECONDS`, `CNI_WIN_ATTACHMENT_LOCK_TIMEOUT_SECONDS`).
pub const LOCK_TIMEOUT_ENV: &str = "CNI_WIN_HOST_LOCAL_LOCK_TIMEOUT_SECONDS";

/// [`LOCK_TIMEOUT_ENV`] without its unit: still read when [`LOCK_TIMEOUT_ENV`] is not set, so
/// a node that sets this name keeps its deadline, with a warning naming the variable to set.
pub const LOCK_TIMEOUT_ENV_WITHOUT_UNIT: &str = "CNI_WIN_HOST_LOCAL_LOCK_TIMEOUT";

/// The lock deadline's setting. The longest accepted is an hour: anything longer is a wait
/// without end.
const LOCK_SETTING: Seconds = Seconds {
    config_key: "ipam.lockTimeoutSeconds",
    env_var: LOCK_TIMEOUT_ENV,
    default: DEFAULT_LOCK_TIMEOUT,
    max: 3600.0,
    what: "the store lock's deadline",
};

/// An address the runtime requested (`runtimeConfig.ips`, `args.cni.ips` or `CNI_ARGS` `IP`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestedIp {
    /// Index of the range set holding the address.
    pub set: usize,
    /// The address itself, already checked to lie in that set.
    pub ip: IpAddr,
}

#[derive(Deserialize, Default)]
struct RawRange {
    subnet: Option<String>,
    #[serde(rename = "rangeStart")]
    range_start: Option<String>,
    #[serde(rename = "rangeEnd")]
    range_end: Option<String>,
    gateway: Option<String>,
}

#[derive(Deserialize)]
struct RawIpam {
    #[serde(default)]
    ranges: Vec<Vec<RawRange>>,
    subnet: Option<String>,
    #[serde(rename = "rangeStart")]
    range_start: Option<String>,
    #[serde(rename = "rangeEnd")]
    range_end: Option<String>,
    gateway: Option<String>,
    #[serde(default)]
    routes: Vec<Route>,
    #[serde(rename = "resolvConf")]
    resolv_conf: Option<PathBuf>,
    #[serde(rename = "lockTimeoutSeconds")]
    lock_timeout_seconds: Option<f64>,
    #[serde(rename = "notReadyWhenFull", default)]
    not_ready_when_full: bool,
}

#[derive(Deserialize, Default)]
struct RawArgs {
    #[serde(default)]
    cni: RawCniArgs,
}

#[derive(Deserialize, Default)]
struct RawCniArgs {
    ips: Option<Vec<String>>,
}

impl IpamConfig {
    /// Never hands out `addresses` (each in the range set holding it), like the gateways; see
    /// [`RangeSet::exclude`].
    pub fn exclude(&mut self, addresses: &[IpAddr]) {
        for set in &mut self.range_sets {
            for &ip in addresses {
                set.exclude(ip);
            }
        }
    }

    /// Reads the config's `ipam` section, `runtimeConfig.ipRanges` and `runtimeConfig.ips`,
    /// `args.cni.ips`, and `CNI_ARGS` `IP=` (ignored when `args.cni.ips` is present). Other
    /// `CNI_ARGS` keys are refused unless `IgnoreUnknown` is set, as the reference does
    /// (runtimes always set it).
    pub fn from_conf(conf: &NetConf, args: &CniArgs) -> Result<IpamConfig, Error> {
        args.ensure_known(&["IP"])?;
        let raw_ipam = case_insensitive::get(conf.raw(), "ipam").ok_or_else(|| {
            Error::invalid_config(
                "ipam is missing; host-local needs an \"ipam\" section with \"ranges\" or \"subnet\"",
            )
        })?;
        let ipam: RawIpam = decode(raw_ipam, "ipam")?;
        let data_dir = data_dir(raw_ipam.as_object())?;
        let raw_args: RawArgs = match case_insensitive::get(conf.raw(), "args") {
            Some(value) if !value.is_null() => decode(value, "args")?,
            _ => RawArgs::default(),
        };

        let mut sets: Vec<(String, Vec<RawRange>)> = Vec::new();
        if let Some(runtime) = conf.runtime_config::<Vec<Vec<RawRange>>>("ipRanges")? {
            for (i, set) in runtime.into_iter().enumerate() {
                sets.push((format!("runtimeConfig.ipRanges[{i}]"), set));
            }
        }
        let legacy = RawRange {
            subnet: ipam.subnet,
            range_start: ipam.range_start,
            range_end: ipam.range_end,
            gateway: ipam.gateway,
        };
        if legacy.subnet.is_some() {
            sets.push(("ipam".to_owned(), vec![legacy]));
        } else if legacy.range_start.is_some() || legacy.range_end.is_some() {
            return Err(Error::invalid_config(
                "ipam.rangeStart/rangeEnd are set but ipam.subnet is missing; add ipam.subnet \
                 (or use ipam.ranges)",
            ));
        }
        for (i, set) in ipam.ranges.into_iter().enumerate() {
            sets.push((format!("ipam.ranges[{i}]"), set));
        }
        let range_sets = validate_sets(&sets, conf.cni_version)?;

        let requested = requested_ips(conf, args, raw_args.cni.ips, &range_sets).map_err(Box::new);
        let lock_timeout = lock_timeout(ipam.lock_timeout_seconds, env_var)?;
        Ok(IpamConfig {
            range_sets,
            routes: ipam.routes,
            data_dir,
            resolv_conf: ipam.resolv_conf,
            requested,
            lock_timeout,
            not_ready_when_full: ipam.not_ready_when_full,
        })
    }
}

/// The lock deadline, by cni-win's one precedence rule ([`Seconds`]): `ipam.lockTimeoutSeconds`,
/// else [`LOCK_TIMEOUT_ENV`] (or [`LOCK_TIMEOUT_ENV_WITHOUT_UNIT`]), else
/// [`DEFAULT_LOCK_TIMEOUT`]. `env` reads a variable of the process environment.
fn lock_timeout(
    config: Option<f64>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Duration, Error> {
    let (setting, value) = lock_setting_from(env);
    setting.from(config.map(Value::from).as_ref(), value.as_deref())
}

/// The lock deadline's setting and the variable's value, from [`LOCK_TIMEOUT_ENV`], else from
/// [`LOCK_TIMEOUT_ENV_WITHOUT_UNIT`] with a warning; the setting names the variable the value
/// came from, so a message about a bad value names the one the node sets.
fn lock_setting_from(env: impl Fn(&str) -> Option<String>) -> (Seconds, Option<String>) {
    if let Some(value) = env(LOCK_TIMEOUT_ENV) {
        return (LOCK_SETTING, Some(value));
    }
    match env(LOCK_TIMEOUT_ENV_WITHOUT_UNIT) {
        Some(value) => {
            log::warn!(
                "{LOCK_TIMEOUT_ENV_WITHOUT_UNIT} is read as {LOCK_TIMEOUT_ENV}, the name that \
                 says its unit: set {LOCK_TIMEOUT_ENV} instead"
            );
            let setting = Seconds {
                env_var: LOCK_TIMEOUT_ENV_WITHOUT_UNIT,
                ..LOCK_SETTING
            };
            (setting, Some(value))
        }
        None => (LOCK_SETTING, None),
    }
}

/// A variable of the process environment; one that is unset or not Unicode is `None`.
fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Deserialises `value`, naming the failing key's full path (`ipam.ranges[0][1].subnet`).
/// Decodes as Go's host-local does: keys match regardless of case (`Subnet`, `RangeStart`).
fn decode<T: DeserializeOwned>(value: &Value, prefix: &str) -> Result<T, Error> {
    case_insensitive::decode(value, prefix, ErrorCode::InvalidConfig)
}

/// The field name of a range's key: `ipam.ranges[0][1].subnet`, or `ipam.subnet` for the legacy
/// single range.
fn field(range_path: &str, key: &str) -> String {
    format!("{range_path}.{key}")
}

fn validate_sets(
    sets: &[(String, Vec<RawRange>)],
    version: Version,
) -> Result<Vec<RangeSet>, Error> {
    if sets.is_empty() {
        return Err(Error::invalid_config(
            "ipam: no IP ranges specified; set ipam.ranges (or the legacy ipam.subnet)",
        ));
    }
    // Every accepted range with its path, to report overlaps by name.
    let mut seen: Vec<(String, Range)> = Vec::new();
    let mut range_sets = Vec::new();
    for (set_path, raw_ranges) in sets {
        if raw_ranges.is_empty() {
            return Err(Error::invalid_config(format!(
                "{set_path} is empty; a range set needs at least one range"
            )));
        }
        let mut ranges: Vec<Range> = Vec::new();
        for (i, raw) in raw_ranges.iter().enumerate() {
            let path = if set_path == "ipam" {
                set_path.clone()
            } else {
                format!("{set_path}[{i}]")
            };
            let range = validate_range(raw, &path)?;
            if let Some(first) = ranges.first()
                && first.start.is_ipv4() != range.start.is_ipv4()
            {
                return Err(Error::invalid_config(format!(
                    "{}: {} is not the same address family as {set_path}[0] ({}); a range set \
                     holds one family (use a second range set for dual-stack)",
                    field(&path, "subnet"),
                    range.subnet,
                    first.subnet
                )));
            }
            if let Some((other_path, other)) = seen.iter().find(|(_, r)| r.overlaps(&range)) {
                return Err(Error::invalid_config(format!(
                    "{path}: range {}-{} overlaps {other_path} ({}-{}); ranges must not share \
                     addresses",
                    range.start, range.end, other.start, other.end
                )));
            }
            seen.push((path, range.clone()));
            ranges.push(range);
        }
        range_sets.push(RangeSet::new(ranges));
    }
    if version < Version::V0_3_0 {
        for family_v4 in [true, false] {
            if range_sets
                .iter()
                .filter(|s| s.is_ipv4() == family_v4)
                .count()
                > 1
            {
                return Err(Error::invalid_config(format!(
                    "ipam: cniVersion {version} results hold one address per family, but the \
                     config has several {} range sets; use cniVersion 0.3.0 or later",
                    if family_v4 { "IPv4" } else { "IPv6" }
                )));
            }
        }
    }
    Ok(range_sets)
}

fn validate_range(raw: &RawRange, path: &str) -> Result<Range, Error> {
    let subnet_field = field(path, "subnet");
    let Some(text) = raw.subnet.as_deref() else {
        return Err(Error::invalid_config(format!(
            "{subnet_field} is missing; every range needs a subnet in CIDR form (e.g. 10.244.1.0/24)"
        )));
    };
    let subnet = parse_subnet(text, &subnet_field)?;
    let network = subnet.network();
    let first = from_number(to_number(network) + 1, network);
    let last_address = to_number(network) | host_mask(max_prefix(network), subnet.prefix());
    // IPv4 keeps the broadcast address out; IPv6 has none (as the reference).
    let last = from_number(last_address - u128::from(network.is_ipv4()), network);
    let usable = |ip: IpAddr| {
        ip.is_ipv4() == network.is_ipv4()
            && (to_number(first)..=to_number(last)).contains(&to_number(ip))
    };

    let bound = |key: &str, value: &Option<String>, default: IpAddr| -> Result<IpAddr, Error> {
        let name = field(path, key);
        let Some(text) = value.as_deref() else {
            return Ok(default);
        };
        let ip = parse_ip(text, &name)?;
        if !usable(ip) {
            return Err(Error::invalid_config(format!(
                "{name}: {ip} is outside subnet {subnet} (usable addresses {first}-{last})"
            )));
        }
        Ok(ip)
    };
    let start = bound("rangeStart", &raw.range_start, first)?;
    let end = bound("rangeEnd", &raw.range_end, last)?;
    if to_number(start) > to_number(end) {
        return Err(Error::invalid_config(format!(
            "{}: {end} comes before rangeStart {start}",
            field(path, "rangeEnd")
        )));
    }
    let gateway = match raw.gateway.as_deref() {
        None => first,
        Some(text) => {
            let name = field(path, "gateway");
            let ip = parse_ip(text, &name)?;
            if ip.is_ipv4() != network.is_ipv4() || !subnet.contains(ip) {
                return Err(Error::invalid_config(format!(
                    "{name}: {ip} is outside subnet {subnet}"
                )));
            }
            ip
        }
    };
    Ok(Range {
        subnet,
        start,
        end,
        gateway,
        gateway_configured: raw.gateway.is_some(),
    })
}

/// The host bits of a `/prefix` in an address `width` bits wide, for every prefix 0..=width
/// (a shift by the full width would overflow).
fn host_mask(width: u8, prefix: u8) -> u128 {
    let host_bits = u32::from(width.saturating_sub(prefix));
    u128::MAX
        .checked_shr(128 - host_bits)
        .filter(|_| host_bits > 0)
        .unwrap_or(0)
}

fn max_prefix(ip: IpAddr) -> u8 {
    if ip.is_ipv4() { 32 } else { 128 }
}

/// A subnet in canonical CIDR form, large enough to allocate from.
fn parse_subnet(text: &str, name: &str) -> Result<IpNetwork, Error> {
    let parsed: IpNetwork = if text.contains('/') {
        text.parse().ok()
    } else {
        None
    }
    .ok_or_else(|| {
        Error::invalid_config(format!(
            "{name}: {} is not a CIDR (expected e.g. 10.244.1.0/24 or fd00::/64)",
            cni::quoted(text)
        ))
    })?;
    let network = parsed.network();
    if network != parsed.ip() {
        return Err(Error::invalid_config(format!(
            "{name}: {text} has host bits set; use {network}/{}",
            parsed.prefix()
        )));
    }
    let smallest = max_prefix(network) - 2;
    if parsed.prefix() > smallest {
        return Err(Error::invalid_config(format!(
            "{name}: network {text} is too small to allocate from (use /{smallest} or larger)"
        )));
    }
    IpNetwork::new(network, parsed.prefix())
        .map_err(|e| Error::invalid_config(format!("{name}: {text} is not a valid network: {e}")))
}

fn parse_ip(text: &str, name: &str) -> Result<IpAddr, Error> {
    text.parse().map_err(|_| {
        Error::invalid_config(format!(
            "{name}: {} is not an IP address",
            cni::quoted(text)
        ))
    })
}

/// A requested address: `10.0.0.5` or `10.0.0.5/24` (the prefix is ignored, as the reference).
fn parse_requested(text: &str, name: &str) -> Result<IpAddr, Error> {
    let address = text.split_once('/').map_or(text, |(ip, _)| ip);
    address.trim().parse().map_err(|_| {
        Error::invalid_config(format!(
            "{name}: {} is not an IP address (expected e.g. 10.244.1.5)",
            cni::quoted(text)
        ))
    })
}

/// Requested addresses from every source, each matched to its range set.
fn requested_ips(
    conf: &NetConf,
    args: &CniArgs,
    args_ips: Option<Vec<String>>,
    sets: &[RangeSet],
) -> Result<Vec<RequestedIp>, Error> {
    let mut sources: Vec<(String, String)> = Vec::new();
    if let Some(ips) = conf.runtime_config::<Vec<String>>("ips")? {
        sources.extend(
            ips.into_iter()
                .enumerate()
                .map(|(i, ip)| (format!("runtimeConfig.ips[{i}]"), ip)),
        );
    }
    match args_ips {
        Some(ips) => sources.extend(
            ips.into_iter()
                .enumerate()
                .map(|(i, ip)| (format!("args.cni.ips[{i}]"), ip)),
        ),
        None => {
            if let Some(value) = args.get("IP") {
                sources.extend(
                    value
                        .split(',')
                        .filter(|s| !s.is_empty())
                        .map(|ip| ("CNI_ARGS IP".to_owned(), ip.to_owned())),
                );
            }
        }
    }

    let mut requested: Vec<(String, RequestedIp)> = Vec::new();
    for (name, text) in sources {
        let ip = parse_requested(&text, &name)?;
        let Some(set) = sets.iter().position(|s| s.contains(ip)) else {
            let all: Vec<String> = sets.iter().map(RangeSet::to_string).collect();
            return Err(Error::invalid_config(format!(
                "{name}: requested address {ip} is in no configured range ({})",
                all.join("; ")
            )));
        };
        if sets[set].is_gateway(ip) {
            return Err(Error::invalid_config(format!(
                "{name}: requested address {ip} is the gateway of its range"
            )));
        }
        match requested.iter().find(|(_, r)| r.set == set) {
            Some((_, existing)) if existing.ip == ip => {}
            Some((other, existing)) => {
                return Err(Error::invalid_config(format!(
                    "{name}: requested address {ip} and {other} ({}) are both in range set \
                     {set}; one address is allocated per range set",
                    existing.ip
                )));
            }
            None => requested.push((name, RequestedIp { set, ip })),
        }
    }
    Ok(requested.into_iter().map(|(_, r)| r).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni::ErrorCode;
    use serde_json::json;
    use std::path::Path;

    fn parse_with(mut ipam: Value, extra: Value, cni_args: &str) -> Result<IpamConfig, Error> {
        ipam["type"] = json!("host-local");
        let mut conf = json!({"cniVersion": "1.0.0", "name": "net", "type": "host-local",
            "ipam": ipam});
        if let (Some(map), Value::Object(extra)) = (conf.as_object_mut(), extra) {
            map.extend(extra);
        }
        let conf = NetConf::parse(conf.to_string().as_bytes()).unwrap();
        IpamConfig::from_conf(&conf, &CniArgs::parse(cni_args).unwrap())
    }

    fn parse(ipam: Value) -> Result<IpamConfig, Error> {
        parse_with(ipam, json!({}), "")
    }

    fn refused(ipam: Value, needle: &str) {
        let err = parse(ipam).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidConfig, "{}", err.msg());
        assert!(
            err.msg().contains(needle),
            "{:?} lacks {needle:?}",
            err.msg()
        );
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn defaults_follow_the_reference() {
        let config = parse(json!({"type": "host-local", "subnet": "10.244.1.0/24"})).unwrap();
        let range = &config.range_sets[0].ranges()[0];
        assert_eq!(
            (range.start, range.end, range.gateway),
            (ip("10.244.1.1"), ip("10.244.1.254"), ip("10.244.1.1"))
        );
        assert_eq!(config.data_dir.as_path(), Path::new(DEFAULT_DATA_DIR));

        let v6 =
            parse(json!({"type": "host-local", "ranges": [[{"subnet": "fd00::/120"}]]})).unwrap();
        let range = &v6.range_sets[0].ranges()[0];
        assert_eq!((range.start, range.end), (ip("fd00::1"), ip("fd00::ff")));
    }

    #[test]
    fn reads_keys_in_any_case_as_the_go_plugin_does() {
        let config = parse(json!({"Type": "host-local", "Subnet": "10.244.1.0/24",
            "RangeStart": "10.244.1.10", "DataDir": "/run/ipam"}))
        .unwrap();
        assert_eq!(config.range_sets[0].ranges()[0].start, ip("10.244.1.10"));
        assert_eq!(config.data_dir.as_path(), Path::new("/run/ipam"));
    }

    #[test]
    fn reads_the_ipam_and_args_sections_in_any_case() {
        let conf = NetConf::parse(
            json!({"cniVersion": "1.0.0", "name": "net", "type": "win-bridge",
                "IPAM": {"type": "host-local", "subnet": "10.244.1.0/24"},
                "Args": {"cni": {"ips": ["10.244.1.9"]}}})
            .to_string()
            .as_bytes(),
        )
        .unwrap();
        let config = IpamConfig::from_conf(&conf, &CniArgs::default()).unwrap();
        assert_eq!(
            config.range_sets[0].ranges()[0].subnet.to_string(),
            "10.244.1.0/24"
        );
        assert_eq!(config.requested.unwrap()[0].ip, ip("10.244.1.9"));
    }

    #[test]
    fn unknown_cni_args_need_ignore_unknown() {
        let subnet = json!({"type": "host-local", "subnet": "10.0.0.0/24"});
        let err = parse_with(subnet.clone(), json!({}), "K8S_POD_NAME=web").unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidEnvironment);
        assert!(err.msg().contains("K8S_POD_NAME"), "{}", err.msg());
        assert!(parse_with(subnet, json!({}), "IgnoreUnknown=1;K8S_POD_NAME=web").is_ok());
    }

    #[test]
    fn reads_ranges_routes_and_data_dir() {
        let config = parse(json!({"type": "host-local",
            "ranges": [
                [{"subnet": "10.0.0.0/24", "rangeStart": "10.0.0.10", "rangeEnd": "10.0.0.20",
                  "gateway": "10.0.0.254"},
                 {"subnet": "10.0.1.0/24"}],
                [{"subnet": "fd00::/64"}]],
            "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0", "gw": "fd00::1"}],
            "dataDir": "/run/ipam"}))
        .unwrap();
        assert_eq!(config.range_sets.len(), 2);
        assert_eq!(config.range_sets[0].ranges().len(), 2);
        assert_eq!(config.range_sets[0].ranges()[0].gateway, ip("10.0.0.254"));
        assert_eq!(
            config.range_sets[0].ranges()[0].configured_gateway(),
            Some(ip("10.0.0.254"))
        );
        assert_eq!(config.range_sets[0].ranges()[1].gateway, ip("10.0.1.1"));
        assert_eq!(config.range_sets[0].ranges()[1].configured_gateway(), None);
        assert_eq!(config.routes.len(), 2);
        assert_eq!(config.data_dir.as_path(), Path::new("/run/ipam"));
    }

    #[test]
    fn legacy_subnet_comes_before_ranges() {
        let config = parse(json!({"type": "host-local", "subnet": "10.0.0.0/24",
            "ranges": [[{"subnet": "fd00::/64"}]]}))
        .unwrap();
        assert!(config.range_sets[0].is_ipv4());
        assert!(!config.range_sets[1].is_ipv4());
    }

    #[test]
    fn refusals_name_the_field() {
        let cases = [
            (
                json!({"ranges": [[{"subnet": "10.0.0.0/33"}]]}),
                "ipam.ranges[0][0].subnet",
            ),
            (
                json!({"ranges": [[{"subnet": "10.0.0.0"}]]}),
                "is not a CIDR",
            ),
            (
                json!({"ranges": [[{"subnet": "10.0.0.5/24"}]]}),
                "host bits set; use 10.0.0.0/24",
            ),
            (
                json!({"ranges": [[{"subnet": "10.0.0.0/31"}]]}),
                "too small",
            ),
            (
                json!({"ranges": [[{"subnet": "10.0.0.0/32"}]]}),
                "too small",
            ),
            (json!({"ranges": [[{"subnet": "fd00::/127"}]]}), "too small"),
            (json!({"ranges": [[{"subnet": "fd00::/128"}]]}), "too small"),
            (
                json!({"ranges": [[{"subnet": "10.0.0.0/24"},
                    {"subnet": "10.0.1.0/24", "rangeStart": "10.0.2.1"}]]}),
                "ipam.ranges[0][1].rangeStart: 10.0.2.1 is outside subnet 10.0.1.0/24",
            ),
            (
                json!({"ranges": [[{"subnet": "10.0.0.0/24", "rangeEnd": "10.0.0.255"}]]}),
                "ipam.ranges[0][0].rangeEnd",
            ),
            (
                json!({"ranges": [[{"subnet": "10.0.0.0/24", "rangeStart": "10.0.0.9",
                    "rangeEnd": "10.0.0.8"}]]}),
                "comes before rangeStart",
            ),
            (
                json!({"subnet": "10.0.0.0/24", "gateway": "10.0.1.1"}),
                "ipam.gateway: 10.0.1.1 is outside subnet",
            ),
            (
                json!({"ranges": [[{"subnet": "10.0.0.0/24"}, {"subnet": "10.0.0.0/25"}]]}),
                "ipam.ranges[0][1]: range 10.0.0.1-10.0.0.126 overlaps ipam.ranges[0][0]",
            ),
            (
                json!({"ranges": [[{"subnet": "10.0.0.0/24"}], [{"subnet": "10.0.0.128/25"}]]}),
                "ipam.ranges[1][0]: range",
            ),
            (
                json!({"ranges": [[{"subnet": "10.0.0.0/24"}, {"subnet": "fd00::/64"}]]}),
                "ipam.ranges[0][1].subnet: fd00::/64 is not the same address family",
            ),
            (json!({"ranges": []}), "no IP ranges specified"),
            (json!({"ranges": [[]]}), "ipam.ranges[0] is empty"),
            (
                json!({"ranges": [[{"rangeStart": "10.0.0.1"}]]}),
                "ipam.ranges[0][0].subnet is missing",
            ),
            (json!({"rangeStart": "10.0.0.1"}), "ipam.subnet is missing"),
            (
                json!({"ranges": [[{"subnet": 5}]]}),
                "ipam.ranges[0][0].subnet",
            ),
            (
                json!({"ranges": [[{"subnet": "10.0.0.0/24", "gateway": "x"}]]}),
                "ipam.ranges[0][0].gateway",
            ),
        ];
        for (ipam, needle) in cases {
            refused(ipam, needle);
        }
    }

    #[test]
    fn old_versions_allow_one_set_per_family() {
        let conf = NetConf::parse(
            json!({"cniVersion": "0.2.0", "name": "n", "type": "host-local", "ipam": {
                "type": "host-local", "ranges": [[{"subnet": "10.0.0.0/24"}], [{"subnet": "10.0.1.0/24"}]]}})
            .to_string()
            .as_bytes(),
        )
        .unwrap();
        let err = IpamConfig::from_conf(&conf, &CniArgs::default()).unwrap_err();
        assert!(
            err.msg().contains("several IPv4 range sets"),
            "{}",
            err.msg()
        );
    }

    #[test]
    fn requested_addresses_come_from_every_source() {
        let ipam = json!({"ranges": [[{"subnet": "10.0.0.0/24"}], [{"subnet": "fd00::/64"}]]});
        let config = parse_with(
            ipam.clone(),
            json!({"runtimeConfig": {"ips": ["10.0.0.7/24"]}, "args": {"cni": {"ips": ["fd00::9"]}}}),
            "IP=10.0.0.8",
        )
        .unwrap();
        assert_eq!(
            config.requested.unwrap(),
            [
                RequestedIp {
                    set: 0,
                    ip: ip("10.0.0.7")
                },
                RequestedIp {
                    set: 1,
                    ip: ip("fd00::9")
                }
            ]
        );
        let from_env = parse_with(ipam.clone(), json!({}), "IgnoreUnknown=1;IP=10.0.0.8").unwrap();
        assert_eq!(
            from_env.requested.unwrap(),
            [RequestedIp {
                set: 0,
                ip: ip("10.0.0.8")
            }]
        );

        let cases = [
            (
                json!({"runtimeConfig": {"ips": ["10.9.0.1"]}}),
                "",
                "runtimeConfig.ips[0]: requested address 10.9.0.1 is in no configured range",
            ),
            (
                json!({"runtimeConfig": {"ips": ["10.0.0.1"]}}),
                "",
                "is the gateway",
            ),
            (
                json!({"runtimeConfig": {"ips": ["bogus"]}}),
                "",
                "runtimeConfig.ips[0]: \"bogus\" is not an IP",
            ),
            (
                json!({"args": {"cni": {"ips": ["10.0.0.5", "10.0.0.6"]}}}),
                "",
                "both in range set 0",
            ),
            (json!({}), "IP=10.0.0.300", "CNI_ARGS IP"),
        ];
        for (extra, env, needle) in cases {
            // The config itself is valid (DEL works); only an ADD would refuse the request.
            let err = parse_with(ipam.clone(), extra, env)
                .unwrap()
                .requested
                .unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidConfig);
            assert!(
                err.msg().contains(needle),
                "{:?} lacks {needle:?}",
                err.msg()
            );
        }
    }

    #[test]
    fn runtime_ip_ranges_come_first() {
        let config = parse_with(
            json!({"subnet": "10.0.0.0/24"}),
            json!({"runtimeConfig": {"ipRanges": [[{"subnet": "10.1.0.0/24"}]]}}),
            "",
        )
        .unwrap();
        assert_eq!(
            config.range_sets[0].ranges()[0].subnet.to_string(),
            "10.1.0.0/24"
        );
        assert_eq!(config.range_sets.len(), 2);
    }

    /// An environment holding only `vars`.
    fn environment(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect();
        move |name| {
            vars.iter()
                .find(|(set, _)| set == name)
                .map(|(_, value)| value.clone())
        }
    }

    #[test]
    fn lock_deadline_comes_from_the_config_then_the_environment() {
        let seconds = |value| environment(&[(LOCK_TIMEOUT_ENV, value)]);
        assert_eq!(
            lock_timeout(None, environment(&[])).unwrap(),
            DEFAULT_LOCK_TIMEOUT
        );
        assert_eq!(
            lock_timeout(None, seconds("1")).unwrap(),
            Duration::from_secs(1)
        );
        assert_eq!(
            lock_timeout(Some(2.5), seconds("1")).unwrap(),
            Duration::from_millis(2500)
        );
        for bad in ["0", "-1", "x", "NaN", "inf", "3601"] {
            let err = lock_timeout(None, seconds(bad)).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidEnvironment, "{bad}");
            assert!(err.msg().contains(LOCK_TIMEOUT_ENV), "{}", err.msg());
        }
        for bad in [0.0, -3.0, f64::NAN, 1e9] {
            let err = lock_timeout(Some(bad), environment(&[])).unwrap_err();
            assert!(
                err.msg().contains("ipam.lockTimeoutSeconds"),
                "{}",
                err.msg()
            );
        }
    }

    /// The variable without its unit is read when the one with it is not set, and a bad value
    /// there is named by the name the node sets.
    #[test]
    fn lock_deadline_reads_the_variable_without_its_unit_when_the_other_is_unset() {
        let unitless = |value| environment(&[(LOCK_TIMEOUT_ENV_WITHOUT_UNIT, value)]);
        assert_eq!(
            lock_timeout(None, unitless("2")).unwrap(),
            Duration::from_secs(2)
        );
        let both = environment(&[
            (LOCK_TIMEOUT_ENV, "3"),
            (LOCK_TIMEOUT_ENV_WITHOUT_UNIT, "2"),
        ]);
        assert_eq!(lock_timeout(None, both).unwrap(), Duration::from_secs(3));
        assert_eq!(
            lock_timeout(Some(4.0), unitless("2")).unwrap(),
            Duration::from_secs(4)
        );
        let err = lock_timeout(None, unitless("soon")).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidEnvironment);
        assert!(
            err.msg()
                .starts_with(&format!("{LOCK_TIMEOUT_ENV_WITHOUT_UNIT}:")),
            "{}",
            err.msg()
        );
    }

    fn check_prefix(network: IpAddr, prefix: u8) {
        let width = max_prefix(network);
        let raw = RawRange {
            subnet: Some(format!("{network}/{prefix}")),
            ..RawRange::default()
        };
        match validate_range(&raw, "ipam.ranges[0][0]") {
            Ok(range) => {
                assert!(prefix + 2 <= width, "{network}/{prefix} accepted");
                let host = host_mask(width, prefix);
                let last = to_number(network) | host;
                assert_eq!(to_number(range.start), to_number(network) + 1);
                assert_eq!(
                    to_number(range.end),
                    last - u128::from(network.is_ipv4()),
                    "{network}/{prefix}"
                );
                assert_eq!(range.gateway, range.start);
            }
            Err(e) => {
                assert!(prefix + 2 > width, "{network}/{prefix}: {}", e.msg());
                assert!(
                    e.msg().starts_with("ipam.ranges[0][0].subnet: "),
                    "{}",
                    e.msg()
                );
            }
        }
    }

    proptest::proptest! {
        /// Every prefix length of both families, at any network address: no overflow (this
        /// runs in debug, where one panics), the right bounds, refusals naming the subnet key.
        #[test]
        fn every_prefix_length_is_handled(bits: u128, v4_prefix in 0u8..=32, v6_prefix in 0u8..=128) {
            let v4 = u128::from(bits as u32) & !host_mask(32, v4_prefix);
            check_prefix(from_number(v4, IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)), v4_prefix);
            let v6 = bits & !host_mask(128, v6_prefix);
            check_prefix(from_number(v6, IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)), v6_prefix);
        }
    }

    #[test]
    fn the_extreme_prefixes_are_exact() {
        for prefix in 0..=32 {
            check_prefix(ip("0.0.0.0"), prefix);
        }
        for prefix in 0..=128 {
            check_prefix(ip("::"), prefix);
        }
        let all = validate_range(
            &RawRange {
                subnet: Some("::/0".into()),
                ..RawRange::default()
            },
            "ipam",
        )
        .unwrap();
        assert_eq!(all.end, ip("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"));
    }

    /// As the reference's `disk.New`: an empty `dataDir` is the default one.
    #[test]
    fn an_empty_data_dir_is_the_default() {
        let config = parse(json!({"subnet": "10.0.0.0/24", "dataDir": ""})).unwrap();
        assert_eq!(config.data_dir.as_path(), Path::new(DEFAULT_DATA_DIR));
        let ipam = json!({"dataDir": ""});
        let location = StoreLocation::from_ipam(ipam.as_object()).unwrap();
        assert_eq!(location.data_dir.as_path(), Path::new(DEFAULT_DATA_DIR));
    }

    /// A command that only gives addresses back needs the store's directory and nothing else
    /// of `ipam`: only a `dataDir` that is not a path stops it; a lock deadline that is not
    /// one is the default.
    #[test]
    fn the_store_location_needs_only_a_data_dir() {
        let location = |ipam: Value| StoreLocation::from_ipam(ipam.as_object());
        assert_eq!(
            location(json!({"dataDir": "/run/ipam", "lockTimeoutSeconds": 2, "ranges": 7}))
                .unwrap(),
            StoreLocation {
                data_dir: DATA_DIR.decode(Some(&json!("/run/ipam"))).unwrap(),
                lock_timeout: Duration::from_secs(2)
            }
        );
        for lenient in [json!("2"), json!(-1), json!(1e9), json!([])] {
            let found =
                location(json!({"DataDir": "/run/ipam", "lockTimeoutSeconds": lenient})).unwrap();
            assert_eq!(found.lock_timeout, DEFAULT_LOCK_TIMEOUT, "{lenient}");
            assert_eq!(found.data_dir.as_path(), Path::new("/run/ipam"));
        }
        let derived = StoreLocation::from_ipam(None).unwrap();
        assert_eq!(derived.data_dir.as_path(), Path::new(DEFAULT_DATA_DIR));
        for wrong in [
            json!(7),
            json!(["/run/ipam"]),
            json!({}),
            json!(true),
            json!("ipam"),
        ] {
            let err = location(json!({"dataDir": wrong})).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidConfig, "{wrong}");
            assert!(err.msg().starts_with("ipam.dataDir"), "{}", err.msg());
            assert!(err.details().contains("cannot be found"), "{err:?}");
        }
    }

    /// A `dataDir` the plugin would take relative to its working directory (on Linux, a
    /// Windows path is one) would put the store wherever the plugin runs: refused, naming it.
    #[test]
    fn a_data_dir_that_is_not_rooted_is_refused_naming_it() {
        let mut relative = vec!["ipam", "./var/lib/cni"];
        if !cfg!(windows) {
            relative.push(r"Z:\work\wt-agent\target\node-lane\scratch\netpol\ipam");
        }
        for text in relative {
            refused(
                json!({"subnet": "10.0.0.0/24", "dataDir": text}),
                "ipam.dataDir: ",
            );
        }
        let absolute = parse(json!({"subnet": "10.0.0.0/24", "dataDir": "/run/ipam"})).unwrap();
        assert_eq!(absolute.data_dir.as_path(), Path::new("/run/ipam"));
    }

    #[test]
    fn a_missing_ipam_section_is_refused() {
        let conf =
            NetConf::parse(br#"{"cniVersion":"1.0.0","name":"n","type":"host-local"}"#).unwrap();
        let err = IpamConfig::from_conf(&conf, &CniArgs::default()).unwrap_err();
        assert!(err.msg().starts_with("ipam is missing"));
    }
}
