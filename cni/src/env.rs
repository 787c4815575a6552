//! The `CNI_*` environment: which command runs, on which attachment, with which arguments.
//!
//! Reading goes through a lookup function rather than `std::env` directly so the whole protocol can
//! be exercised in-process by tests and benchmarks.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

use crate::error::Error;
use crate::quote::quoted;
use crate::validate;

/// A CNI command from `CNI_COMMAND`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Command {
    /// Create the attachment, or return the existing one's result.
    Add,
    /// Remove the attachment; must succeed when it is already gone.
    Del,
    /// Verify the attachment still matches `prevResult` (0.4.0 and later).
    Check,
    /// Remove what belongs to attachments no longer valid (1.1.0).
    Gc,
    /// Report whether an ADD could succeed now (1.1.0).
    Status,
    /// Report the supported spec versions; needs no config.
    Version,
}

impl Command {
    /// The spelling `CNI_COMMAND` uses, for messages and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Command::Add => "ADD",
            Command::Del => "DEL",
            Command::Check => "CHECK",
            Command::Gc => "GC",
            Command::Status => "STATUS",
            Command::Version => "VERSION",
        }
    }

    /// Reads `CNI_COMMAND`; code 4 for anything the spec does not define.
    pub fn parse(value: &str) -> Result<Command, Error> {
        match value {
            "ADD" => Ok(Command::Add),
            "DEL" => Ok(Command::Del),
            "CHECK" => Ok(Command::Check),
            "GC" => Ok(Command::Gc),
            "STATUS" => Ok(Command::Status),
            "VERSION" => Ok(Command::Version),
            other => Err(Error::invalid_env(
                "CNI_COMMAND",
                format!(
                    "unknown command {}; expected ADD, DEL, CHECK, GC, STATUS or VERSION",
                    quoted(other)
                ),
            )),
        }
    }

    /// Whether the command acts on one attachment (container + interface).
    pub fn has_attachment(self) -> bool {
        matches!(self, Command::Add | Command::Del | Command::Check)
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `CNI_ARGS`: `K=V;K=V` pairs, in the order given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CniArgs {
    pairs: Vec<(String, String)>,
}

impl CniArgs {
    /// Parses `CNI_ARGS` as libcni does: each `;`-separated pair must be exactly `KEY=VALUE`.
    pub fn parse(raw: &str) -> Result<CniArgs, Error> {
        let mut pairs = Vec::new();
        for pair in raw.split(';').filter(|p| !p.is_empty()) {
            let mut parts = pair.split('=');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(key), Some(value), None) if !key.is_empty() => {
                    pairs.push((key.to_owned(), value.to_owned()));
                }
                _ => {
                    return Err(Error::invalid_env(
                        "CNI_ARGS",
                        format!(
                            "invalid pair {}; expected KEY=VALUE pairs separated by ';'",
                            quoted(pair)
                        ),
                    ));
                }
            }
        }
        Ok(CniArgs { pairs })
    }

    /// The value of `key` (keys are case-sensitive, as in libcni).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// `IgnoreUnknown=1` or `true`: unknown keys are not an error.
    pub fn ignore_unknown(&self) -> bool {
        matches!(
            self.get("IgnoreUnknown"),
            Some("1" | "true" | "True" | "TRUE")
        )
    }

    /// Refuses keys outside `known` unless `IgnoreUnknown` is set, as libcni's `LoadArgs` does.
    pub fn ensure_known(&self, known: &[&str]) -> Result<(), Error> {
        if self.ignore_unknown() {
            return Ok(());
        }
        match self
            .pairs
            .iter()
            .find(|(k, _)| k != "IgnoreUnknown" && !known.contains(&k.as_str()))
        {
            Some((key, _)) => Err(Error::invalid_env(
                "CNI_ARGS",
                format!(
                    "unknown key {}; this plugin understands {} (add IgnoreUnknown=1 to allow others)",
                    quoted(key),
                    known.join(", ")
                ),
            )),
            None => Ok(()),
        }
    }

    /// Every `KEY=VALUE` pair in order, for plugins that pass them on.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// The attachment ADD, DEL and CHECK act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachmentEnv {
    /// `CNI_CONTAINERID`, validated: it names files and endpoints.
    pub container_id: String,
    /// `CNI_IFNAME`, validated: one container may have several attachments.
    pub ifname: String,
    /// `CNI_NETNS`; on Windows with containerd an HCN namespace GUID. `None` only for DEL, which
    /// the spec lets run without one.
    pub netns: Option<String>,
}

/// The last component of a `CNI_NETNS` path, with `/` and `\` both separators on every
/// platform; the whole value when it has neither. libcni's cnitool passes the namespace through
/// `filepath.Abs`, so the HCN namespace GUID containerd would pass arrives as
/// `C:\some\dir\<GUID>` (or `/some/dir/<GUID>` on Linux).
pub fn netns_last_component(netns: &str) -> &str {
    netns.rsplit(['/', '\\']).next().unwrap_or(netns)
}

/// Everything the environment says about one invocation, validated for its command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    /// What the runtime asks for; decides which variables are required.
    pub command: Command,
    /// Present for ADD, DEL and CHECK.
    pub attachment: Option<AttachmentEnv>,
    /// `CNI_ARGS`, parsed, for the plugin and its IPAM to read their keys from.
    pub args: CniArgs,
    /// `CNI_PATH` split with the platform's separator (`;` on Windows, `:` elsewhere), empty
    /// entries dropped.
    pub cni_path: Vec<PathBuf>,
}

impl Environment {
    /// Reads and validates the variables the spec requires for the command, naming every missing
    /// one at once (code 4) so a runtime bug is fixed in one round.
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<OsString>) -> Result<Environment, Error> {
        let get = |name: &str| -> Result<Option<String>, Error> {
            match lookup(name) {
                None => Ok(None),
                Some(value) => value
                    .into_string()
                    .map(Some)
                    .map_err(|_| Error::invalid_env(name, "is not valid Unicode")),
            }
        };
        let non_empty = |name: &str| -> Result<Option<String>, Error> {
            Ok(get(name)?.filter(|v| !v.is_empty()))
        };

        let command = match non_empty("CNI_COMMAND")? {
            Some(value) => Command::parse(&value)?,
            None => return Err(Error::invalid_env("CNI_COMMAND", "is not set")),
        };

        let (container_id, ifname, netns, cni_path) = (
            non_empty("CNI_CONTAINERID")?,
            non_empty("CNI_IFNAME")?,
            non_empty("CNI_NETNS")?,
            non_empty("CNI_PATH")?,
        );
        let mut missing = Vec::new();
        if command.has_attachment() {
            if container_id.is_none() {
                missing.push("CNI_CONTAINERID");
            }
            if ifname.is_none() {
                missing.push("CNI_IFNAME");
            }
            if netns.is_none() && command != Command::Del {
                missing.push("CNI_NETNS");
            }
        }
        if command == Command::Gc && cni_path.is_none() {
            missing.push("CNI_PATH");
        }
        if !missing.is_empty() {
            return Err(Error::invalid_env(
                &missing.join(", "),
                format!("required for {command} but not set"),
            ));
        }

        let attachment = match (command.has_attachment(), container_id, ifname) {
            (true, Some(container_id), Some(ifname)) => {
                validate::container_id(&container_id)?;
                validate::ifname(&ifname)?;
                Some(AttachmentEnv {
                    container_id,
                    ifname,
                    netns,
                })
            }
            _ => None,
        };

        Ok(Environment {
            command,
            attachment,
            args: CniArgs::parse(&get("CNI_ARGS")?.unwrap_or_default())?,
            // An empty entry (`a::b`, a trailing separator) would join plugin names onto the
            // working directory, a lookup outside every plugin directory; it names none, so it
            // is dropped.
            cni_path: cni_path
                .map(|p| {
                    std::env::split_paths(&p)
                        .filter(|dir| !dir.as_os_str().is_empty())
                        .collect()
                })
                .unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;
    use std::collections::HashMap;

    fn env(vars: &[(&str, &str)]) -> Result<Environment, Error> {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        Environment::from_lookup(&|name| map.get(name).cloned())
    }

    const ADD: &[(&str, &str)] = &[
        ("CNI_COMMAND", "ADD"),
        ("CNI_CONTAINERID", "abc123"),
        ("CNI_IFNAME", "eth0"),
        ("CNI_NETNS", "5f3f8c1e-0b49-4b36-9a0e-6f1c2b3d4e5f"),
        ("CNI_PATH", "/opt/cni/bin"),
        ("CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAME=web-0"),
    ];

    #[test]
    fn reads_a_complete_add() {
        let e = env(ADD).unwrap();
        assert_eq!(e.command, Command::Add);
        let a = e.attachment.unwrap();
        assert_eq!(
            (a.container_id.as_str(), a.ifname.as_str()),
            ("abc123", "eth0")
        );
        assert_eq!(e.args.get("K8S_POD_NAME"), Some("web-0"));
        assert!(e.args.ignore_unknown());
        assert_eq!(e.cni_path, vec![PathBuf::from("/opt/cni/bin")]);
    }

    #[test]
    fn empty_cni_path_entries_are_dropped_not_read_as_the_working_directory() {
        let separator = if cfg!(windows) { ";" } else { ":" };
        let path = ["", "/opt/cni/bin", "", "/usr/lib/cni", ""].join(separator);
        let mut vars = ADD.to_vec();
        vars[4] = ("CNI_PATH", &path);
        assert_eq!(
            env(&vars).unwrap().cni_path,
            [PathBuf::from("/opt/cni/bin"), PathBuf::from("/usr/lib/cni")]
        );
    }

    #[test]
    fn names_every_missing_variable() {
        let err = env(&[("CNI_COMMAND", "ADD"), ("CNI_IFNAME", "eth0")]).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidEnvironment);
        assert!(
            err.msg().contains("CNI_CONTAINERID, CNI_NETNS"),
            "{}",
            err.msg()
        );
    }

    #[test]
    fn del_tolerates_a_missing_netns_but_check_does_not() {
        let without_netns: Vec<_> = ADD
            .iter()
            .filter(|(k, _)| *k != "CNI_NETNS")
            .copied()
            .collect();
        let mut del = without_netns.clone();
        del[0] = ("CNI_COMMAND", "DEL");
        assert_eq!(env(&del).unwrap().attachment.unwrap().netns, None);
        let mut check = without_netns;
        check[0] = ("CNI_COMMAND", "CHECK");
        assert!(env(&check).unwrap_err().msg().contains("CNI_NETNS"));
    }

    #[test]
    fn gc_and_status_take_no_attachment() {
        let gc = env(&[("CNI_COMMAND", "GC"), ("CNI_PATH", "/opt/cni/bin")]).unwrap();
        assert_eq!(gc.attachment, None);
        assert!(
            env(&[("CNI_COMMAND", "GC")])
                .unwrap_err()
                .msg()
                .contains("CNI_PATH")
        );
        assert!(
            env(&[("CNI_COMMAND", "STATUS")])
                .unwrap()
                .attachment
                .is_none()
        );
        assert!(env(&[("CNI_COMMAND", "VERSION")]).is_ok());
    }

    #[test]
    fn rejects_unknown_or_missing_commands() {
        assert!(
            env(&[("CNI_COMMAND", "add")])
                .unwrap_err()
                .msg()
                .contains("unknown command")
        );
        assert_eq!(env(&[]).unwrap_err().code(), ErrorCode::InvalidEnvironment);
    }

    #[test]
    fn validates_attachment_identifiers() {
        let mut bad_id = ADD.to_vec();
        bad_id[1] = ("CNI_CONTAINERID", "../etc");
        assert!(
            env(&bad_id)
                .unwrap_err()
                .msg()
                .starts_with("CNI_CONTAINERID")
        );
        let mut bad_if = ADD.to_vec();
        bad_if[2] = ("CNI_IFNAME", "eth0/../x");
        assert!(env(&bad_if).unwrap_err().msg().starts_with("CNI_IFNAME"));
    }

    #[test]
    fn the_netns_component_is_split_on_either_separator() {
        let guid = "5f3f8c1e-0b49-4b36-9a0e-6f1c2b3d4e5f";
        for (netns, last) in [
            (guid.to_owned(), guid),
            (format!("/some/dir/{guid}"), guid),
            (
                format!(r"C:\some\dir\{{{guid}}}"),
                &format!("{{{guid}}}")[..],
            ),
            (format!(r"C:\mixed/dir\{guid}"), guid),
            (format!("/some/dir/{guid}/"), ""),
            ("none".to_owned(), "none"),
        ] {
            assert_eq!(netns_last_component(&netns), last, "{netns}");
        }
    }

    #[test]
    fn cni_args_follow_libcni() {
        let args = CniArgs::parse("IP=10.0.0.5;K8S_POD_NAMESPACE=default;").unwrap();
        assert_eq!(args.get("IP"), Some("10.0.0.5"));
        assert_eq!(args.get("ip"), None);
        assert!(args.ensure_known(&["IP", "K8S_POD_NAMESPACE"]).is_ok());
        assert!(
            args.ensure_known(&["IP"])
                .unwrap_err()
                .msg()
                .contains("K8S_POD_NAMESPACE")
        );
        for bad in ["IP", "IP=a=b", "=x"] {
            assert_eq!(
                CniArgs::parse(bad).unwrap_err().code(),
                ErrorCode::InvalidEnvironment,
                "{bad}"
            );
        }
        assert_eq!(CniArgs::parse("").unwrap(), CniArgs::default());
    }
}
