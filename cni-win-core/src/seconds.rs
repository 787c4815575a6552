//! A duration the operator sets in seconds, from a config key or, for every network on the
//! node, an environment variable: the HNS call deadline and the attachment lock's deadline
//! follow the same rules, so they are read by the same code.

use std::time::Duration;

use cni::{Error, ErrorCode, NetConf, case_insensitive};
use serde_json::Value;

/// Where a duration comes from and what it may be.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seconds {
    /// The config key (matched in any case); wins over the variable.
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
    /// The duration for this command: the config key, else the variable, else the default.
    pub fn read(&self, conf: &NetConf) -> Result<Duration, Error> {
        let env = std::env::var(self.env_var).ok();
        self.from(
            case_insensitive::get(conf.raw(), self.config_key),
            env.as_deref(),
        )
    }

    /// As [`Seconds::read`], for a command that must not fail on a wait's bound (DEL): a
    /// config value that is not valid gives way to the variable, one of those to the default,
    /// each with a warning naming it.
    pub fn read_leniently(&self, conf: &NetConf) -> Duration {
        let env = std::env::var(self.env_var).ok();
        self.leniently(
            case_insensitive::get(conf.raw(), self.config_key),
            env.as_deref(),
        )
    }

    /// As [`Seconds::read_leniently`], from the values themselves.
    fn leniently(&self, config: Option<&Value>, env: Option<&str>) -> Duration {
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
        config_key: "waitSeconds",
        env_var: "WAIT_SECONDS",
        default: Duration::from_secs(60),
        max: 600.0,
        what: "the wait",
    };

    /// DEL must not fail on a deadline: each value that is not one gives way to the next
    /// source, and the default ends the line.
    #[test]
    fn leniently_a_bad_value_gives_way_to_the_next_source() {
        let secs = Duration::from_secs;
        assert_eq!(SETTING.leniently(Some(&json!(5)), Some("7")), secs(5));
        assert_eq!(SETTING.leniently(Some(&json!("5")), Some("7")), secs(7));
        assert_eq!(SETTING.leniently(Some(&json!(-1)), None), secs(60));
        assert_eq!(SETTING.leniently(Some(&json!(1e9)), Some("soon")), secs(60));
        assert_eq!(SETTING.leniently(None, Some("0")), secs(60));
        assert_eq!(SETTING.leniently(None, None), secs(60));
    }
}
