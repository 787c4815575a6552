//! The plugin skeleton: everything between a runtime's exec and a plugin's five operations.
//!
//! A plugin implements [`Plugin`]; [`run`] reads and validates the environment and stdin,
//! answers VERSION itself, refuses commands the config's `cniVersion` does not allow, sets up
//! logging, calls the plugin (turning a panic into an error rather than a silent abort), and
//! prints the result or the error JSON on stdout.

use std::ffi::OsString;
use std::fmt;
use std::io::{Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::config::NetConf;
use crate::env::{CniArgs, Command, Environment};
use crate::error::{Error, ErrorCode};
use crate::logging::{self, LogSettings, Rotation};
use crate::result::Success;
use crate::version::Version;

/// An ADD, DEL or CHECK request: one attachment of one container.
///
/// `Netns` is `String` for ADD and CHECK, where the spec requires `CNI_NETNS`, and
/// `Option<String>` for DEL ([`DelRequest`]), which runtimes send once the namespace is gone:
/// a plugin cannot forget the difference.
#[derive(Debug, Clone)]
pub struct Request<Netns = String> {
    /// `CNI_CONTAINERID`, validated: it names files and endpoints.
    pub container_id: String,
    /// `CNI_IFNAME`, validated: one container may have several attachments.
    pub ifname: String,
    /// `CNI_NETNS`: where the attachment lives (on Windows, an HCN namespace GUID).
    pub netns: Netns,
    /// `CNI_ARGS`, for the plugin and its IPAM to read their keys from.
    pub args: CniArgs,
    /// The network config, decoded once for every reader.
    pub config: NetConf,
    /// The config exactly as received, for delegating to IPAM plugins.
    pub stdin: Vec<u8>,
    /// `CNI_PATH`: the only directories a delegated plugin may be executed from.
    pub cni_path: Vec<PathBuf>,
}

/// A DEL request: `CNI_NETNS` may be absent, and DEL must still clean up.
pub type DelRequest = Request<Option<String>>;

/// A GC or STATUS request: the network as a whole, no attachment.
#[derive(Debug, Clone)]
pub struct NetworkRequest {
    /// The network config, decoded once for every reader.
    pub config: NetConf,
    /// The config exactly as received, for delegating to IPAM plugins.
    pub stdin: Vec<u8>,
    /// `CNI_PATH`: the only directories a delegated plugin may be executed from.
    pub cni_path: Vec<PathBuf>,
}

/// The five operations a plugin implements; VERSION is answered by the skeleton.
pub trait Plugin {
    /// Creates the attachment (or returns the existing one's result) and reports it.
    fn add(&self, request: &Request) -> Result<Success, Error>;
    /// Removes the attachment; must succeed when it is already gone.
    fn del(&self, request: &DelRequest) -> Result<(), Error>;
    /// Verifies the attachment still matches the config's `prevResult`.
    fn check(&self, request: &Request) -> Result<(), Error>;
    /// Removes what belongs to attachments not in `cni.dev/valid-attachments`.
    fn gc(&self, request: &NetworkRequest) -> Result<(), Error>;
    /// Reports whether the plugin could service an ADD now.
    fn status(&self, request: &NetworkRequest) -> Result<(), Error>;
}

/// What the plugin is, for the about line printed when it is run by hand.
#[derive(Debug, Clone, Copy)]
pub struct About {
    /// The plugin's type, as configs name it.
    pub name: &'static str,
    /// The plugin's release, so an operator can tell which build a node runs.
    pub version: &'static str,
    /// The commit the binary was built from, when its build recorded one (see [`build!`](crate::build!)).
    pub commit: Option<&'static str>,
}

impl About {
    /// The plugin's name with the version and commit [`build!`](crate::build!) recorded for the calling crate.
    pub fn new(name: &'static str, build: Build) -> About {
        About {
            name,
            version: build.version,
            commit: build.commit,
        }
    }
}

/// The about text, worded as the Go plugins word theirs:
/// `CNI win-bridge plugin 0.1.0 (commit 0123456789ab)` and the supported spec versions.
impl fmt::Display for About {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CNI {} plugin {} (commit {})\nCNI protocol versions supported: {}",
            self.name,
            self.version,
            self.commit.unwrap_or("unknown"),
            Version::supported_list()
        )
    }
}

/// A binary's version and commit, as [`build!`](crate::build!) reads them where it is expanded.
#[derive(Debug, Clone, Copy)]
pub struct Build {
    /// The package version (`CARGO_PKG_VERSION`).
    pub version: &'static str,
    /// The commit the binary was built from, when the build script could tell.
    pub commit: Option<&'static str>,
}

/// The calling crate's [`Build`]: its package version and the commit its build script
/// (`build/commit.rs`, shared by the shipped binaries) recorded in `CNI_WIN_COMMIT`.
#[macro_export]
macro_rules! build {
    () => {
        $crate::Build {
            version: env!("CARGO_PKG_VERSION"),
            commit: option_env!("CNI_WIN_COMMIT"),
        }
    };
}

/// Runs the plugin against the real process environment, stdin and stdout.
///
/// Run by hand with `--version` (and no `CNI_COMMAND`, which a runtime always sets), it prints
/// the about text on stdout and exits 0; the CNI `VERSION` command keeps its spec reply.
pub fn run<P: Plugin>(plugin: &P, about: About) -> ExitCode {
    if asks_for_version(std::env::var_os("CNI_COMMAND"), std::env::args_os().skip(1)) {
        println!("{about}");
        return ExitCode::SUCCESS;
    }
    let lookup = |name: &str| std::env::var_os(name);
    let code = execute(
        plugin,
        about,
        &lookup,
        &mut std::io::stdin().lock(),
        &mut std::io::stdout().lock(),
    );
    ExitCode::from(code)
}

/// Whether the process is an operator's version query rather than a runtime's call.
fn asks_for_version(command: Option<OsString>, mut args: impl Iterator<Item = OsString>) -> bool {
    command.is_none() && args.any(|arg| arg == "--version" || arg == "-v")
}

/// Runs one command with the given environment, stdin and stdout; returns the exit status (0 or
/// 1). This is [`run`] without the process, for in-process tests and benchmarks.
pub fn execute<P: Plugin>(
    plugin: &P,
    about: About,
    env: &dyn Fn(&str) -> Option<OsString>,
    stdin: &mut dyn Read,
    stdout: &mut dyn Write,
) -> u8 {
    let (outcome, version) = dispatch(plugin, about, env, stdin);
    let (text, status) = match outcome {
        Ok(None) => return 0,
        Ok(Some(text)) => (text, 0),
        Err(err) => {
            log::error!("{err}");
            if !err.details().is_empty() {
                log::error!("details: {}", err.details());
            }
            (err.to_json(version), 1)
        }
    };
    match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        Ok(()) => status,
        Err(_) => 1,
    }
}

/// Runs the command; returns what to print (if anything) and the version to print errors in.
fn dispatch<P: Plugin>(
    plugin: &P,
    about: About,
    env_lookup: &dyn Fn(&str) -> Option<OsString>,
    stdin: &mut dyn Read,
) -> (Result<Option<String>, Error>, Version) {
    init_logging(env_lookup, None);
    let env = match Environment::from_lookup(env_lookup) {
        Ok(env) => env,
        Err(err) => {
            if env_lookup("CNI_COMMAND").is_none() {
                eprintln!("{about}");
            }
            return (Err(err), Version::LATEST);
        }
    };
    if env.command == Command::Version {
        return (Ok(Some(version_reply(stdin))), Version::LATEST);
    }
    let raw = match NetConf::read(stdin) {
        Ok(bytes) => bytes,
        Err(err) => return (Err(err), Version::LATEST),
    };
    // An error about any other key is printed in the version the config asked for.
    let stated = NetConf::stated_version(&raw).unwrap_or(Version::LATEST);
    let config = match NetConf::parse(&raw) {
        Ok(config) => config,
        Err(err) => return (Err(err), stated),
    };
    let version = config.cni_version;
    init_logging(env_lookup, Some(&config));
    for ignored in config.ignored() {
        log::warn!("{ignored}");
    }

    let outcome = gate(env.command, version).and_then(|()| {
        catch_unwind(AssertUnwindSafe(|| call(plugin, env, config, raw))).unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            Err(Error::internal(format!("plugin panicked: {what}")))
        })
    });
    (outcome, version)
}

/// Refuses commands the config's version predates (code 1), as libcni's skel does.
fn gate(command: Command, version: Version) -> Result<(), Error> {
    let allowed = match command {
        Command::Check => version.allows_check(),
        Command::Gc | Command::Status => version.allows_gc_and_status(),
        _ => true,
    };
    if allowed {
        Ok(())
    } else {
        let needs = if command == Command::Check {
            "0.4.0"
        } else {
            "1.1.0"
        };
        Err(Error::new(
            ErrorCode::IncompatibleVersion,
            format!("{command} needs cniVersion {needs} or later; the config says {version}"),
        ))
    }
}

fn call<P: Plugin>(
    plugin: &P,
    env: Environment,
    config: NetConf,
    stdin: Vec<u8>,
) -> Result<Option<String>, Error> {
    let version = config.cni_version;
    let Environment {
        command,
        attachment,
        args,
        cni_path,
    } = env;
    if let Some(attachment) = attachment {
        let request = Request {
            container_id: attachment.container_id,
            ifname: attachment.ifname,
            netns: attachment.netns,
            args,
            config,
            stdin,
            cni_path,
        };
        if command == Command::Del {
            return plugin.del(&request).map(|()| None);
        }
        let request = request.with_netns()?;
        match command {
            Command::Add => plugin.add(&request)?.to_json(version).map(Some),
            _ => plugin.check(&request).map(|()| None),
        }
    } else {
        let request = NetworkRequest {
            config,
            stdin,
            cni_path,
        };
        match command {
            Command::Gc => plugin.gc(&request).map(|()| None),
            _ => plugin.status(&request).map(|()| None),
        }
    }
}

impl DelRequest {
    /// The ADD/CHECK form of the request. The environment already refuses ADD and CHECK
    /// without `CNI_NETNS` (naming every missing variable at once); this is the type's guard.
    fn with_netns(self) -> Result<Request, Error> {
        let Some(netns) = self.netns else {
            return Err(Error::invalid_env("CNI_NETNS", "is required but not set"));
        };
        Ok(Request {
            container_id: self.container_id,
            ifname: self.ifname,
            netns,
            args: self.args,
            config: self.config,
            stdin: self.stdin,
            cni_path: self.cni_path,
        })
    }
}

/// VERSION's reply: the caller's version echoed when it is one we know, and every supported one.
fn version_reply(stdin: &mut dyn Read) -> String {
    let mut input = Vec::new();
    let asked = stdin
        .take(crate::config::MAX_CONFIG_BYTES)
        .read_to_end(&mut input)
        .ok()
        .and_then(|_| serde_json::from_slice::<serde_json::Value>(&input).ok())
        .and_then(|v| v.get("cniVersion")?.as_str()?.parse::<Version>().ok())
        .unwrap_or(Version::LATEST);
    serde_json::json!({
        "cniVersion": asked,
        "supportedVersions": Version::ALL,
    })
    .to_string()
}

/// Sets up logging from the environment and, once it is read, the config. The tag is built from
/// the raw variables so that even a command refused for its environment is logged as what it was.
fn init_logging(lookup: &dyn Fn(&str) -> Option<OsString>, config: Option<&NetConf>) {
    let text = |name: &str| lookup(name).and_then(|v| v.into_string().ok());
    let (settings, notes) = LogSettings::resolve(
        &text,
        config.and_then(|c| c.log_level.as_deref()),
        config.and_then(|c| c.log_file.as_ref()),
        config.map_or(Some(Rotation::DEFAULT), |c| c.log_rotation),
    );
    let command = text("CNI_COMMAND").unwrap_or_else(|| "?".to_owned());
    let tag = match (text("CNI_CONTAINERID"), text("CNI_IFNAME")) {
        (Some(id), Some(ifname)) if command != "GC" && command != "STATUS" => {
            format!("{command} {id}/{ifname}:")
        }
        _ => format!("{command} {}:", config.map_or("?", |c| c.name.as_str())),
    };
    // The tag comes from variables not yet validated: a control character in them must not
    // be able to forge a log line.
    let tag = tag
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    logging::init(tag, &settings);
    for note in notes {
        log::warn!("{note}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> impl Iterator<Item = OsString> {
        list.iter()
            .map(OsString::from)
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn version_flag_is_a_query_only_without_cni_command() {
        assert!(asks_for_version(None, args(&["--version"])));
        assert!(asks_for_version(None, args(&["-v"])));
        assert!(!asks_for_version(None, args(&[])));
        assert!(!asks_for_version(Some("ADD".into()), args(&["--version"])));
    }

    #[test]
    fn about_names_plugin_version_commit_and_spec_versions() {
        let about = About {
            name: "win-bridge",
            version: "0.1.0",
            commit: Some("0123456789ab"),
        };
        let text = about.to_string();
        assert!(text.starts_with("CNI win-bridge plugin 0.1.0 (commit 0123456789ab)\n"));
        assert!(text.ends_with(&Version::supported_list()));
        let unknown = About {
            commit: None,
            ..about
        };
        assert!(unknown.to_string().contains("(commit unknown)"));
    }
}
