//! A duration the operator sets in seconds: every deadline of cni-win (the HNS call deadline,
//! the attachment lock's, host-local's store lock) is read by this code, with one precedence
//! rule: **the config key, else the environment variable, else the default**. The config names
//! one network and the variable every network on the node, so the more specific setting wins;
//! the node tools, which serve every network at once, read the variable alone
//! ([`Seconds::from_env`]).

use std::time::Duration;

use serde_json::Value;

use crate::case_insensitive;
use crate::config::NetConf;
use crate::error::{Error, ErrorCode};

/// Where a duration comes from and what it may be.
#[derive(Debug, Clone, Copy)]
pub struct Seconds {
    /// The config key (matched in any case at the top level of the config; a key inside a
    /// section is named with its path, e.g. `ipam.lockTimeoutSeconds`); wins over the variable.
    pub config_key: &'static str,
    /// The environment variable.
    pub env_var: &'static str,
    /// The value when neither is set.
    pub default: Duration,
    /// The largest value accepted, in seconds.
    pub max: f64,
    /// What the duration is, for messages ("the HNS call deadline").
    pub what: &'static str,
}

impl Seconds {
    /// The duration for this command: the top-level config key, else the variable, else the
    /// default.
    pub fn read(&self, conf: &NetConf) -> Result<Duration, Error> {
        let env = std::env::var(self.env_var).ok();
        self.from(
            case_insensitive::get(conf.raw(), self.config_key),
            env.as_deref(),
        )
    }

    /// The duration for a tool that serves every network: the variable, else the default.
    pub fn from_env(&self) -> Result<Duration, Error> {
        self.from(None, std::env::var(self.env_var).ok().as_deref())
    }

    /// As [`Seconds::read`], for a command that must not fail on a wait's bound (DEL): a
    /// config value that is not valid gives way to the variable, one of those to the default,
    /// each with a warning naming it.
    pub fn read_leniently(&self, conf: &NetConf) -> Duration {
        let env = std::env::var(self.env_var).ok();
        self.from_leniently(
            case_insensitive::get(conf.raw(), self.config_key),
            env.as_deref(),
        )
    }

    /// As [`Seconds::read_leniently`], from the values themselves.
    pub fn from_leniently(&self, config: Option<&Value>, env: Option<&str>) -> Duration {
        self.from(config, env)
            .or_else(|refused| {
                log::warn!("{}; ignored", refused.msg());
                self.from(None, env)
            })
            .unwrap_or_else(|refused| {
                log::warn!(
                    "{}; using the default, {} s",
                    refused.msg(),
                    self.default.as_secs_f64()
                );
                self.default
            })
    }

    /// As [`Seconds::read`], from the values themselves.
    pub fn from(&self, config: Option<&Value>, env: Option<&str>) -> Result<Duration, Error> {
        let example = self.default.as_secs();
        let seconds = match (config, env) {
            (Some(value), _) => value.as_f64().ok_or_else(|| {
                Error::invalid_config(format!(
                    "{}: {value} is not a number: give {} in seconds, e.g. {example}",
                    self.config_key, self.what
                ))
            })?,
            (None, Some(text)) => text.trim().parse::<f64>().map_err(|_| {
                Error::new(
                    ErrorCode::InvalidEnvironment,
                    format!(
                        "{}: {text:?} is not a number: give {} in seconds, e.g. {example}",
                        self.env_var, self.what
                    ),
                )
            })?,
            (None, None) => return Ok(self.default),
        };
        if !(seconds > 0.0 && seconds <= self.max) {
            let (source, code) = if config.is_some() {
                (self.config_key, ErrorCode::InvalidConfig)
            } else {
                (self.env_var, ErrorCode::InvalidEnvironment)
            };
            return Err(Error::new(
                code,
                format!(
                    "{source}: {seconds} is out of range: {} must be more than 0 and at most {} seconds",
                    self.what, self.max
                ),
            ));
        }
        Ok(Duration::from_secs_f64(seconds))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SETTING: Seconds = Seconds {
        config_key: "someTimeoutSeconds",
        env_var: "CNI_WIN_SOME_TIMEOUT",
        default: Duration::from_secs(30),
        max: 100.0,
        what: "some deadline",
    };

    #[test]
    fn the_config_key_wins_over_the_variable_which_wins_over_the_default() {
        assert_eq!(SETTING.from(None, None), Ok(Duration::from_secs(30)));
        assert_eq!(SETTING.from(None, Some("2")), Ok(Duration::from_secs(2)));
        assert_eq!(
            SETTING.from(Some(&json!(5)), Some("2")),
            Ok(Duration::from_secs(5))
        );
        let conf = NetConf::parse(
            br#"{"cniVersion":"1.1.0","name":"n","type":"t","SomeTimeoutSeconds":7}"#,
        )
        .unwrap();
        assert_eq!(SETTING.read(&conf), Ok(Duration::from_secs(7)));
    }

    /// DEL must not fail on a deadline: each value that is not one gives way to the next
    /// source, and the default ends the line.
    #[test]
    fn leniently_a_bad_value_gives_way_to_the_next_source() {
        let secs = Duration::from_secs;
        assert_eq!(SETTING.from_leniently(Some(&json!(5)), Some("7")), secs(5));
        assert_eq!(
            SETTING.from_leniently(Some(&json!("5")), Some("7")),
            secs(7)
        );
        assert_eq!(SETTING.from_leniently(Some(&json!(-1)), None), secs(30));
        assert_eq!(
            SETTING.from_leniently(Some(&json!(1e9)), Some("soon")),
            secs(30)
        );
        assert_eq!(SETTING.from_leniently(None, Some("0")), secs(30));
        assert_eq!(SETTING.from_leniently(None, None), secs(30));
    }

    #[test]
    fn a_bad_value_is_refused_naming_where_it_came_from() {
        let config = SETTING.from(Some(&json!(101)), Some("2")).unwrap_err();
        assert_eq!(config.code(), ErrorCode::InvalidConfig);
        assert!(
            config.msg().starts_with("someTimeoutSeconds"),
            "{}",
            config.msg()
        );
        let env = SETTING.from(None, Some("soon")).unwrap_err();
        assert_eq!(env.code(), ErrorCode::InvalidEnvironment);
        assert!(
            env.msg().starts_with("CNI_WIN_SOME_TIMEOUT"),
            "{}",
            env.msg()
        );
    }
}
