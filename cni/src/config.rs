//! The network configuration a plugin reads from stdin.
//!
//! Only what the skeleton itself needs is typed here: `cniVersion` (which version to answer
//! in), `name` (validated as the spec asks: it names files and HNS objects) and the logging
//! keys; `type` is kept as text for messages. Every other key, the spec's well-known `ipMasq`,
//! `ipam` and `dns` included, belongs to the plugin that reads it: each decodes its own keys
//! from the same JSON ([`NetConf::plugin_config`], [`NetConf::dns`]) in the commands that use
//! them. So a key no command of a plugin needs never fails it (the reference host-local reads
//! neither `type` nor `dns`, and kube-proxy's source-VIP configs have no `type`), and unknown
//! keys are ignored rather than refused (the spec asks runtimes to pass them through, and
//! users' configs carry keys from other plugins).

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::io::Read;

use crate::case_insensitive;
use crate::error::{Error, ErrorCode};
use crate::logging::{self, Rotation};
use crate::path::RootedPath;
use crate::result::{Dns, Success};
use crate::validate;
use crate::version::Version;

/// Configs larger than this are refused: a real one is a few kilobytes, and stdin is read whole.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// A parsed network configuration: the keys every command needs, typed, plus the whole
/// document.
#[derive(Debug, Clone)]
pub struct NetConf {
    /// `cniVersion`; a config without one is read as 0.1.0, as libcni does.
    pub cni_version: Version,
    /// `name`: on Windows, the HNS network's name.
    pub name: String,
    /// `type`: what the config calls the plugin, empty when it does not say (host-local run
    /// by hand for kube-proxy's source VIP). Never used to find a binary: the runtime already
    /// found this one, and a plugin that delegates validates the type it runs
    /// ([`crate::delegate::find_in_path`]).
    pub plugin_type: String,
    /// `logFile`/`logLevel`: where this plugin writes its log (see [`crate::logging`]); `None`
    /// also when `logFile` is not a rooted path (see [`NetConf::ignored`]).
    pub log_file: Option<RootedPath>,
    /// Kept as text: [`crate::logging`] resolves it together with its environment override.
    pub log_level: Option<String>,
    /// `logFileMaxMiB`/`logFileKeep`: when the log file rotates and how many rotated files
    /// stay; `None` when `logFileMaxMiB` is 0 (never rotated, for a log shipper that rotates).
    pub log_rotation: Option<Rotation>,
    ignored: Vec<String>,
    raw: Map<String, Value>,
}

/// A still-valid attachment listed by GC.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
pub struct GcAttachment {
    /// The attachment's container, as the runtime named it in ADD.
    #[serde(rename = "containerID")]
    pub container_id: String,
    /// The attachment's interface: one container may have several attachments.
    pub ifname: String,
}

/// The keys no command can do without, as they appear on the wire.
#[derive(Deserialize)]
struct BaseKeys {
    #[serde(rename = "cniVersion")]
    cni_version: Option<String>,
    name: Option<String>,
}

/// `cniVersion` alone, as [`NetConf::stated_version`] reads it.
#[derive(Deserialize)]
struct VersionKey {
    #[serde(rename = "cniVersion")]
    cni_version: Option<String>,
}

/// The version a `cniVersion` value states: none (or empty) is 0.1.0, as libcni reads it; one
/// this crate does not speak is code 1.
fn version_of(cni_version: Option<&str>) -> Result<Version, Error> {
    match cni_version {
        None | Some("") => Ok(Version::UNSPECIFIED),
        Some(v) => v.parse(),
    }
}

impl NetConf {
    /// Reads a config's bytes from `input`, refusing more than [`MAX_CONFIG_BYTES`]; parse
    /// them with [`NetConf::parse`].
    pub fn read(input: &mut dyn Read) -> Result<Vec<u8>, Error> {
        read_capped(input)
    }

    /// The `cniVersion` config bytes state, read on its own: the version an error about the
    /// rest of the config is printed in, since a runtime reads a plugin's error in the
    /// version it asked for. `None` when the bytes are not a JSON object or the version is
    /// not one this crate speaks; a config without one states 0.1.0, as libcni reads it.
    pub fn stated_version(bytes: &[u8]) -> Option<Version> {
        let Ok(Value::Object(raw)) = serde_json::from_slice(bytes) else {
            return None;
        };
        let key: VersionKey =
            case_insensitive::decode(&Value::Object(raw), "", ErrorCode::InvalidConfig).ok()?;
        version_of(key.cni_version.as_deref()).ok()
    }

    /// Parses config bytes: code 6 when they are not a JSON object, 1 for an unsupported
    /// `cniVersion`, 7 when `cniVersion` or `name` is not text or the name is invalid. A
    /// `type`, `logFile` or `logLevel` that is not text, or a `logFile` that is not a rooted
    /// path ([`crate::path`]), is ignored (see [`NetConf::ignored`]): no command fails for
    /// its log.
    pub fn parse(bytes: &[u8]) -> Result<NetConf, Error> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| {
            Error::new(
                ErrorCode::Decode,
                format!("network config on stdin is not valid JSON: {e}"),
            )
        })?;
        let Value::Object(raw) = value else {
            return Err(Error::new(
                ErrorCode::Decode,
                "network config on stdin must be a JSON object",
            ));
        };
        let base: BaseKeys =
            case_insensitive::decode(&Value::Object(raw.clone()), "", ErrorCode::InvalidConfig)?;
        let cni_version = version_of(base.cni_version.as_deref())?;
        let name = base.name.unwrap_or_default();
        validate::network_name(&name)?;

        let mut ignored = Vec::new();
        let mut text = |key: &str, consequence: &str| match case_insensitive::get(&raw, key) {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(other) => {
                ignored.push(format!(
                    "{key}: {} is not text; {consequence}",
                    describe(other)
                ));
                None
            }
        };
        let plugin_type = text("type", "ignored").unwrap_or_default();
        let log_file = text("logFile", "logging to stderr only");
        let log_level = text("logLevel", "logging at the default level");
        let log_file = log_file.and_then(|text| match logging::FILE_KEY.parse(&text) {
            Ok(path) => Some(path),
            Err(refused) => {
                ignored.push(logging::stderr_only(&refused));
                None
            }
        });
        let log_rotation = log_rotation(&raw, &mut ignored);
        Ok(NetConf {
            cni_version,
            name,
            plugin_type,
            log_file,
            log_level,
            log_rotation,
            ignored,
            raw,
        })
    }

    /// What parsing ignored, one line each: a `type` or logging key that is not usable. None of
    /// them is worth failing a command for; the skeleton logs them once logging is set up.
    pub fn ignored(&self) -> &[String] {
        &self.ignored
    }

    /// `dns`: the DNS the plugin should give the container (the runtime's
    /// `runtimeConfig.dns` may override it), empty when the config has none. Code 7 naming
    /// the key at fault when it does not decode; only the plugins that use it read it.
    pub fn dns(&self) -> Result<Dns, Error> {
        match case_insensitive::get(&self.raw, "dns") {
            None | Some(Value::Null) => Ok(Dns::default()),
            Some(value) => case_insensitive::decode(value, "dns", ErrorCode::InvalidConfig),
        }
    }

    /// The whole config document, for plugins and delegation.
    pub fn raw(&self) -> &Map<String, Value> {
        &self.raw
    }

    /// Decodes the plugin's own view of the config (its specific keys); errors are code 7 and
    /// name the failing key's path.
    pub fn plugin_config<T: DeserializeOwned>(&self) -> Result<T, Error> {
        case_insensitive::decode(
            &Value::Object(self.raw.clone()),
            "",
            ErrorCode::InvalidConfig,
        )
    }

    /// `runtimeConfig.<key>` decoded as `T`, or `None` when absent.
    ///
    /// containerd on Windows sends capability args with capitalised keys (`PortMappings`,
    /// `HostPort`, `Servers`) where libcni sends camelCase ones; both the key and the fields
    /// inside are matched regardless of case, as the Go plugins do.
    pub fn runtime_config<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, Error> {
        let runtime = match case_insensitive::get(&self.raw, "runtimeConfig") {
            Some(Value::Object(runtime)) => runtime,
            _ => return Ok(None),
        };
        match case_insensitive::get(runtime, key) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => case_insensitive::decode(
                value,
                &format!("runtimeConfig.{key}"),
                ErrorCode::InvalidConfig,
            )
            .map(Some),
        }
    }

    /// The `prevResult`, parsed in the config's version when it does not state its own.
    pub fn prev_result(&self) -> Result<Option<Success>, Error> {
        match case_insensitive::get(&self.raw, "prevResult") {
            None | Some(Value::Null) => Ok(None),
            Some(value) => Success::from_value(value, self.cni_version)
                .map(Some)
                .map_err(|e| e.context("prevResult")),
        }
    }

    /// GC's still-valid attachments from `cni.dev/valid-attachments` (or the 1.1.0 tag's
    /// `cni.dev/attachments`). A key that is present but malformed is code 7; an absent key is
    /// [`ValidAttachments::Unlisted`], which GC reads as libcni means it.
    pub fn valid_attachments(&self) -> Result<ValidAttachments, Error> {
        let key = ["cni.dev/valid-attachments", "cni.dev/attachments"]
            .into_iter()
            .find(|k| self.raw.contains_key(*k));
        match key {
            None => Ok(ValidAttachments::Unlisted),
            Some(key) => case_insensitive::decode(&self.raw[key], key, ErrorCode::InvalidConfig)
                .map(ValidAttachments::Listed),
        }
    }
}

/// Which attachments GC keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValidAttachments {
    /// The runtime listed the attachments still in use (possibly none).
    Listed(Vec<GcAttachment>),
    /// The config has no list. libcni sends none once it has dropped every cached attachment
    /// (`cnitool gc`, and any runtime that passes no list), and the reference plugins read that
    /// as an empty list: no attachment is valid.
    Unlisted,
}

impl ValidAttachments {
    /// The attachments to keep: none when the runtime listed none.
    pub fn as_slice(&self) -> &[GcAttachment] {
        match self {
            ValidAttachments::Listed(attachments) => attachments,
            ValidAttachments::Unlisted => &[],
        }
    }

    /// Why GC removes what it removes, for its log.
    pub fn reason(&self) -> &'static str {
        match self {
            ValidAttachments::Listed(_) => "not in cni.dev/valid-attachments",
            ValidAttachments::Unlisted => {
                "the config has no cni.dev/valid-attachments, which libcni sends once it has \
                 dropped every cached attachment: none is valid"
            }
        }
    }
}

/// What kind of JSON value `value` is, for a message that must not quote a hostile config.
/// `logFileMaxMiB` (a number of MiB, fractions allowed, 0 for no rotation) and `logFileKeep`
/// (how many rotated files, 1 to [`logging::MAX_KEEP`]). One that is absent is its default; one
/// that is not usable too, with a note in `ignored` naming it: no command fails for its log.
fn log_rotation(raw: &Map<String, Value>, ignored: &mut Vec<String>) -> Option<Rotation> {
    let given = |name: &str| case_insensitive::get(raw, name).filter(|v| !v.is_null());
    let mut refuse = |name: &str, value: &Value, wanted: &str, default: &dyn std::fmt::Display| {
        let shown = match value {
            Value::Number(n) => n.to_string(),
            Value::String(text) => crate::quote::quoted(text).to_string(),
            other => describe(other).to_owned(),
        };
        ignored.push(format!(
            "{name}: {shown} is not {wanted}; using the default {default}"
        ));
    };
    let max_mib = match given("logFileMaxMiB") {
        None => logging::DEFAULT_MAX_MIB,
        Some(value) => match value
            .as_f64()
            .filter(|mib| (0.0..=logging::MAX_MIB).contains(mib))
        {
            Some(mib) => mib,
            None => {
                let wanted = format!("a size in MiB from 0 to {}", logging::MAX_MIB);
                refuse("logFileMaxMiB", value, &wanted, &logging::DEFAULT_MAX_MIB);
                logging::DEFAULT_MAX_MIB
            }
        },
    };
    let keep = match given("logFileKeep") {
        None => logging::DEFAULT_KEEP,
        Some(value) => match value
            .as_u64()
            .and_then(|keep| u32::try_from(keep).ok())
            .filter(|keep| (1..=logging::MAX_KEEP).contains(keep))
        {
            Some(keep) => keep,
            None => {
                let wanted = format!("a whole number of files from 1 to {}", logging::MAX_KEEP);
                refuse("logFileKeep", value, &wanted, &logging::DEFAULT_KEEP);
                logging::DEFAULT_KEEP
            }
        },
    };
    Rotation::of_mib(max_mib, keep)
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn read_capped(input: &mut dyn Read) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    input
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| {
            Error::new(
                ErrorCode::Io,
                format!("cannot read network config from stdin: {e}"),
            )
        })?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(Error::new(
            ErrorCode::Decode,
            format!("network config on stdin is larger than the {MAX_CONFIG_BYTES}-byte limit"),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<NetConf, Error> {
        NetConf::parse(value.to_string().as_bytes())
    }

    #[test]
    fn reads_the_base_keys() {
        let conf = parse(json!({
            "cniVersion": "0.3.1", "name": "cbr0", "type": "win-bridge", "ipMasq": true,
            "ipam": {"type": "host-local", "subnet": "10.244.1.0/24"},
            "dns": {"nameservers": ["10.96.0.10"], "search": ["svc.cluster.local"]},
            "logLevel": "info", "logFile": "/var/log/cni.log",
            "policies": [{"name": "EndpointPolicy", "value": {"Type": "OutBoundNAT"}}]
        }))
        .unwrap();
        assert_eq!(conf.cni_version, Version::V0_3_1);
        assert_eq!(
            (conf.name.as_str(), conf.plugin_type.as_str()),
            ("cbr0", "win-bridge")
        );
        assert_eq!(conf.log_level.as_deref(), Some("info"));
        assert_eq!(
            conf.log_file.as_deref(),
            Some(std::path::Path::new("/var/log/cni.log"))
        );
        assert_eq!(conf.dns().unwrap().nameservers, ["10.96.0.10"]);
        assert!(conf.raw().contains_key("policies"));
        assert!(conf.ignored().is_empty());
    }

    #[test]
    fn reads_keys_spelled_as_go_configs_spell_them() {
        // Flannel's rendered win-bridge delegate, as it reaches the plugin.
        let conf = parse(json!({
            "cniVersion": "0.2.0", "name": "cbr0", "type": "win-bridge",
            "ipMasq": true, "ipMasqNetwork": "10.244.0.0/16",
            "ipam": {"type": "host-local", "subnet": "10.244.1.0/24"},
            "dns": {"Nameservers": ["10.96.0.10"], "Search": ["svc.cluster.local"]},
            "RuntimeConfig": {"DNS": {"Servers": ["10.96.0.10"]}}
        }))
        .unwrap();
        let dns = conf.dns().unwrap();
        assert_eq!(dns.nameservers, ["10.96.0.10"]);
        assert_eq!(dns.search, ["svc.cluster.local"]);
        #[derive(Deserialize)]
        struct RuntimeDns {
            servers: Vec<String>,
        }
        let dns: RuntimeDns = conf.runtime_config("dns").unwrap().unwrap();
        assert_eq!(dns.servers, ["10.96.0.10"]);
    }

    /// kube-proxy's source VIP is reserved by running host-local by hand with configs that
    /// have no `type`; the reference host-local reads neither `type` nor `ipam.type` (nor
    /// `dns`, `ipMasq`): none of them is the skeleton's to refuse.
    #[test]
    fn keys_only_plugins_read_are_not_refused_here() {
        for conf in [
            json!({"cniVersion": "0.2.0", "name": "vxlan0",
                "ipam": {"type": "host-local", "subnet": "10.244.1.0/24"}}),
            json!({"cniVersion": "1.0.0", "name": "flannel.4096", "type": "",
                "ipam": {"subnet": "10.244.1.0/24"}}),
            json!({"name": "n", "type": "../x", "ipam": {"type": "../sh"}}),
            json!({"name": "n", "ipMasq": "yes", "dns": 5, "ipam": 7}),
        ] {
            let parsed = parse(conf.clone()).unwrap_or_else(|e| panic!("{conf}: {e}"));
            assert!(parsed.ignored().is_empty(), "{conf}");
        }
        assert_eq!(
            parse(json!({"name": "n"})).unwrap().plugin_type,
            "",
            "no type is an empty one"
        );
        // Only the plugins that use `dns` refuse it, naming the key.
        let err = parse(json!({"name": "n", "dns": {"nameservers": "10.0.0.1"}}))
            .unwrap()
            .dns()
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidConfig);
        assert!(err.msg().starts_with("dns.nameservers"), "{}", err.msg());
    }

    /// A `type` or logging key that is not text fails no command: it is ignored, and said so.
    #[test]
    fn base_keys_no_command_needs_are_ignored_when_wrong() {
        let conf =
            parse(json!({"name": "n", "type": 5, "logFile": ["x"], "LogLevel": {}})).unwrap();
        assert_eq!(conf.plugin_type, "");
        assert_eq!((&conf.log_file, &conf.log_level), (&None, &None));
        assert_eq!(
            conf.ignored(),
            [
                "type: a number is not text; ignored",
                "logFile: an array is not text; logging to stderr only",
                "logLevel: an object is not text; logging at the default level",
            ]
        );
    }

    /// A `logFile` the plugin would take relative to its working directory (on Linux, a
    /// Windows path is one) is not opened: a warning names the key, and logs go to stderr.
    #[test]
    fn a_log_file_that_is_not_rooted_is_ignored_naming_the_key() {
        let mut relative = vec!["cni.log", "logs/cni.log"];
        if !cfg!(windows) {
            relative.push(r"C:\k\cni.log");
        }
        for text in relative {
            let conf = parse(json!({"name": "n", "logFile": text})).unwrap();
            assert_eq!(conf.log_file, None, "{text}");
            let [warning] = conf.ignored() else {
                panic!("{:?}", conf.ignored());
            };
            assert!(warning.starts_with("logFile: "), "{warning}");
            assert!(warning.contains("not an absolute path"), "{warning}");
            assert!(warning.ends_with("; logging to stderr only"), "{warning}");
        }
    }

    #[test]
    fn log_rotation_keys_default_and_read_fractions_and_zero() {
        let rotation = |extra: Value| {
            let mut config = json!({"name": "n"});
            config
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            let conf = parse(config).unwrap();
            assert!(conf.ignored().is_empty(), "{:?}", conf.ignored());
            conf.log_rotation
        };
        assert_eq!(rotation(json!({})), Some(Rotation::DEFAULT));
        let small = rotation(json!({"logFileMaxMiB": 0.05, "LogFileKeep": 100})).unwrap();
        assert_eq!((small.max_bytes(), small.keep()), (52_429, 100));
        assert_eq!(rotation(json!({"logFileMaxMiB": 0})), None);
        assert_eq!(
            rotation(json!({"logFileMaxMiB": null})),
            Some(Rotation::DEFAULT)
        );
    }

    /// A rotation key that is not usable fails no command: its default is used, and said so.
    #[test]
    fn bad_log_rotation_keys_are_their_defaults_with_a_note() {
        for (max_mib, keep, notes) in [
            (
                json!(-1),
                json!(0),
                [
                    "logFileMaxMiB: -1 is not a size in MiB from 0 to 1048576; using the default 10",
                    "logFileKeep: 0 is not a whole number of files from 1 to 100; using the default 5",
                ],
            ),
            (
                json!("10MB"),
                json!(2.5),
                [
                    "logFileMaxMiB: \"10MB\" is not a size in MiB from 0 to 1048576; using the default 10",
                    "logFileKeep: 2.5 is not a whole number of files from 1 to 100; using the default 5",
                ],
            ),
            (
                json!(2e6),
                json!([5]),
                [
                    "logFileMaxMiB: 2000000.0 is not a size in MiB from 0 to 1048576; using the default 10",
                    "logFileKeep: an array is not a whole number of files from 1 to 100; using the default 5",
                ],
            ),
        ] {
            let conf =
                parse(json!({"name": "n", "logFileMaxMiB": max_mib, "logFileKeep": keep})).unwrap();
            assert_eq!(conf.log_rotation, Some(Rotation::DEFAULT));
            assert_eq!(conf.ignored(), notes);
        }
    }

    #[test]
    fn a_missing_version_reads_as_0_1_0() {
        let conf = parse(json!({"name": "n", "type": "t"})).unwrap();
        assert_eq!(conf.cni_version, Version::V0_1_0);
    }

    #[test]
    fn errors_carry_the_right_codes_and_name_the_key() {
        let cases = [
            (b"not json".to_vec(), ErrorCode::Decode, "not valid JSON"),
            (b"[1,2]".to_vec(), ErrorCode::Decode, "JSON object"),
            (
                json!({"cniVersion": "2.0.0", "name": "n", "type": "t"})
                    .to_string()
                    .into_bytes(),
                ErrorCode::IncompatibleVersion,
                "2.0.0",
            ),
            (
                json!({"cniVersion": "1.0.0", "type": "t"})
                    .to_string()
                    .into_bytes(),
                ErrorCode::InvalidConfig,
                "name",
            ),
            (
                json!({"cniVersion": "1.0.0", "name": "a/b", "type": "t"})
                    .to_string()
                    .into_bytes(),
                ErrorCode::InvalidConfig,
                "a/b",
            ),
            (
                json!({"cniVersion": "1.0.0", "name": 5})
                    .to_string()
                    .into_bytes(),
                ErrorCode::InvalidConfig,
                "name",
            ),
            (
                json!({"cniVersion": 1, "name": "n"})
                    .to_string()
                    .into_bytes(),
                ErrorCode::InvalidConfig,
                "cniVersion",
            ),
        ];
        for (bytes, code, needle) in cases {
            let err = NetConf::parse(&bytes).unwrap_err();
            assert_eq!(err.code(), code, "{}", err.msg());
            assert!(
                err.msg().contains(needle),
                "{:?} lacks {needle:?}",
                err.msg()
            );
        }
    }

    #[test]
    fn refuses_oversized_input() {
        let big = vec![b' '; MAX_CONFIG_BYTES as usize + 1];
        let err = NetConf::read(&mut big.as_slice()).unwrap_err();
        assert_eq!(err.code(), ErrorCode::Decode);
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct PortMapping {
        #[serde(rename = "hostPort")]
        host_port: u16,
        #[serde(rename = "containerPort")]
        container_port: u16,
        protocol: String,
    }

    #[test]
    fn runtime_config_accepts_both_key_spellings() {
        for conf in [
            json!({"name": "n", "type": "t", "runtimeConfig": {"portMappings": [
                {"hostPort": 8080, "containerPort": 80, "protocol": "tcp"}]}}),
            json!({"name": "n", "type": "t", "runtimeConfig": {"PortMappings": [
                {"HostPort": 8080, "ContainerPort": 80, "Protocol": "tcp"}]}}),
        ] {
            let mappings: Vec<PortMapping> = parse(conf)
                .unwrap()
                .runtime_config("portMappings")
                .unwrap()
                .unwrap();
            assert_eq!(
                mappings,
                [PortMapping {
                    host_port: 8080,
                    container_port: 80,
                    protocol: "tcp".into()
                }]
            );
        }
        let none = parse(json!({"name": "n", "type": "t"})).unwrap();
        assert_eq!(
            none.runtime_config::<Vec<PortMapping>>("portMappings")
                .unwrap(),
            None
        );
        let bad = parse(json!({"name": "n", "type": "t",
            "runtimeConfig": {"portMappings": [{"hostPort": "x"}]}}))
        .unwrap();
        let err = bad
            .runtime_config::<Vec<PortMapping>>("portMappings")
            .unwrap_err();
        assert!(
            err.msg().contains("runtimeConfig.portMappings"),
            "{}",
            err.msg()
        );
    }

    #[test]
    fn gc_attachments_accept_both_spec_keys() {
        for key in ["cni.dev/valid-attachments", "cni.dev/attachments"] {
            let conf = parse(json!({"cniVersion": "1.1.0", "name": "n", "type": "t",
                key: [{"containerID": "c1", "ifname": "eth0"}]}))
            .unwrap();
            assert_eq!(
                conf.valid_attachments().unwrap(),
                ValidAttachments::Listed(vec![GcAttachment {
                    container_id: "c1".into(),
                    ifname: "eth0".into()
                }])
            );
        }
        let empty =
            parse(json!({"name": "n", "type": "t", "cni.dev/valid-attachments": []})).unwrap();
        assert_eq!(
            empty.valid_attachments().unwrap(),
            ValidAttachments::Listed(vec![])
        );
        // As libcni means it (cnitool gc sends no list): nothing is valid.
        let absent = parse(json!({"name": "n", "type": "t"})).unwrap();
        let unlisted = absent.valid_attachments().unwrap();
        assert_eq!(unlisted, ValidAttachments::Unlisted);
        assert!(unlisted.as_slice().is_empty());
        // A list that is there but malformed is still refused.
        for bad in [json!("c1/eth0"), json!([{"containerID": 5}]), json!({})] {
            let conf =
                parse(json!({"name": "n", "type": "t", "cni.dev/valid-attachments": bad})).unwrap();
            assert_eq!(
                conf.valid_attachments().unwrap_err().code(),
                ErrorCode::InvalidConfig,
                "{bad}"
            );
        }
    }

    #[test]
    fn prev_result_takes_the_config_version() {
        let conf = parse(json!({"cniVersion": "0.2.0", "name": "n", "type": "t",
            "prevResult": {"ip4": {"ip": "10.0.0.5/24"}}}))
        .unwrap();
        let prev = conf.prev_result().unwrap().unwrap();
        assert_eq!(prev.ips[0].address.to_string(), "10.0.0.5/24");
    }
}
