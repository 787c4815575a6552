//! The delegation-loop guard of the HNS plugins, the only cni-win plugins that run another
//! plugin (their IPAM, from `CNI_PATH`).
//!
//! Delegation must end. An `ipam.type` naming an HNS plugin (or the config's own `type`) would
//! make the plugin run itself as its IPAM, which delegates again, without end: such a type
//! never becomes a [`Delegate`], so no command can run it. A copy of a plugin under another
//! name escapes any list of names; for that, every delegation extends
//! [`cni::delegate::CHAIN_VAR`], and [`admit`] refuses to run a plugin nested deeper than
//! [`cni::delegate::MAX_DEPTH`] before it does anything (locks, HNS, files), so a loop ends
//! with that process.
//!
//! Both checks belong here rather than in the CNI skeleton: a plugin that delegates nothing
//! (`host-local`) cannot loop, and must accept every config its reference accepts, including
//! the kube-proxy source-VIP configs whose `ipam.type` names itself.

use cni::delegate::DelegationChain;
use cni::{Error, NetConf, quoted, validate};

/// The HNS plugins of cni-win: never an IPAM plugin, whatever a config says.
const HNS_PLUGINS: &[&str] = &["win-bridge", "win-overlay"];

/// Refuses (code 7) to run this process when it is nested deeper than the delegation bound
/// (code 4 when the chain variable is malformed). Every command of an HNS plugin calls it
/// first.
pub(crate) fn admit(config: &NetConf) -> Result<(), Error> {
    DelegationChain::from_lookup(&|name| std::env::var_os(name))?.admit(config)
}

/// An IPAM plugin an HNS plugin may execute: a bare binary name (so it resolves only inside
/// `CNI_PATH`) that does not lead back into an HNS plugin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Delegate(String);

impl Delegate {
    /// `ipam_type` as the delegate of `config`'s plugin. Code 7 naming `ipam.type` when it is
    /// not a bare name, or names an HNS plugin or the config's own `type`: the plugin would
    /// find itself (or the other HNS plugin) in `CNI_PATH` and run it as its IPAM. Names
    /// compare as Windows finds binaries: in any case, with or without `.exe` (and trailing
    /// dots, which Windows drops).
    pub fn new(ipam_type: &str, config: &NetConf) -> Result<Delegate, Error> {
        validate::plugin_type("ipam.type", ipam_type)?;
        let ipam = binary_name(ipam_type);
        let own = binary_name(&config.plugin_type);
        if ipam != own && !HNS_PLUGINS.contains(&ipam.as_str()) {
            return Ok(Delegate(ipam_type.to_owned()));
        }
        let what = if ipam == own {
            format!("this plugin's own type {}", quoted(&config.plugin_type))
        } else {
            format!("the cni-win HNS plugin {ipam}")
        };
        Err(Error::invalid_config(format!(
            "ipam.type {} names {what}: it would run itself as its IPAM plugin, and that one \
             its own, without end; set ipam.type to an IPAM plugin such as host-local",
            quoted(ipam_type)
        )))
    }

    /// The plugin's type, as `CNI_PATH` is searched for it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A plugin type as the file it names: lowercase, without a trailing `.exe` or dots.
fn binary_name(plugin_type: &str) -> String {
    let mut name = plugin_type.to_ascii_lowercase();
    loop {
        let trimmed = name.trim_end_matches('.');
        let trimmed = trimmed.strip_suffix(".exe").unwrap_or(trimmed);
        if trimmed.len() == name.len() {
            return name;
        }
        name = trimmed.to_owned();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni::ErrorCode;

    fn conf(plugin_type: &str) -> NetConf {
        NetConf::parse(
            serde_json::json!({"cniVersion": "1.1.0", "name": "cbr0", "type": plugin_type})
                .to_string()
                .as_bytes(),
        )
        .unwrap()
    }

    #[test]
    fn hns_plugins_and_the_own_type_are_refused_as_ipam_in_any_spelling() {
        for (own, ipam) in [
            ("win-bridge", "win-bridge"),
            ("win-bridge", "win-overlay"),
            ("win-overlay", "WIN-Bridge.EXE"),
            ("win-bridge", "win-bridge.exe."),
            ("sdnbridge", "SDNBridge"),
            ("sdnbridge.exe", "sdnbridge"),
        ] {
            let err = Delegate::new(ipam, &conf(own)).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidConfig, "{own} {ipam}");
            assert!(
                err.msg().contains(&format!("ipam.type \"{ipam}\"")),
                "{}",
                err.msg()
            );
        }
        for (own, ipam) in [
            ("win-bridge", "host-local"),
            ("win-bridge", "win-bridge-ipam"),
            ("win-overlay", "exe"),
        ] {
            assert_eq!(
                Delegate::new(ipam, &conf(own)).map(|d| d.as_str().to_owned()),
                Ok(ipam.to_owned()),
                "{own} {ipam}"
            );
        }
    }

    #[test]
    fn a_delegate_is_a_bare_name() {
        for bad in ["../ipam", "/bin/sh", "a b", ""] {
            let err = Delegate::new(bad, &conf("win-bridge")).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidConfig, "{bad}");
            assert!(err.msg().starts_with("ipam.type"), "{}", err.msg());
        }
    }
}
