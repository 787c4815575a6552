//! How long one HCN call may take before the command gives up on HNS.
//!
//! HNS hangs (endpoint delete, namespace modify under load), and a plugin that
//! waited on a hung call would hang until the runtime killed it, learning
//! nothing and rolling nothing back. So every call waits at most this
//! deadline, after which the command rolls back and fails with code 110
//! naming the function, the time waited and "HNS did not answer".
//!
//! | source | form |
//! | --- | --- |
//! | config key `hnsTimeoutSeconds` (any case) | a number of seconds, `0 < n <= 600`; wins over the variable |
//! | environment variable `CNI_WIN_HNS_TIMEOUT_SECONDS` | the same, for every network on the node (set it where the runtime runs) |
//! | default | [`DEFAULT`], 30 s |
//!
//! Why 30 s: a healthy HCN call answers in milliseconds (a whole pod's
//! network setup takes about 1.5 s), so 30 s leaves a loaded HNS room for
//! slow answers and is only reached by one that hangs. The runtime's limits are what the
//! command must fit in: kubelet gives StopPodSandbox (DEL) its
//! `--runtime-request-timeout`, 2 min by default, and RunPodSandbox (ADD)
//! twice that; dockershim's ADD-for-status waited just under 240 s; Calico
//! waits 90 s for its network mutex. With 30 s for the call that hangs and a
//! quarter of that (7.5 s) for each later call while it stays abandoned, a
//! DEL or an ADD's rollback of up to ten further calls ends within
//! 30 + 75 s, inside DEL's 120 s, so the runtime gets our answer instead of
//! killing us.

use std::time::Duration;

use cni::seconds::Seconds;
use cni::{Error, NetConf};

/// The config key.
pub const CONFIG_KEY: &str = "hnsTimeoutSeconds";
/// The environment variable.
pub const ENV_VAR: &str = "CNI_WIN_HNS_TIMEOUT_SECONDS";
/// The deadline when neither is set.
pub const DEFAULT: Duration = Duration::from_secs(30);

/// The setting. The longest deadline accepted, 600 s: beyond the runtime's own limits it
/// only means the runtime kills the plugin first.
pub(crate) const SETTING: Seconds = Seconds {
    config_key: CONFIG_KEY,
    env_var: ENV_VAR,
    default: DEFAULT,
    max: 600.0,
    what: "the HNS call deadline",
};

/// The deadline for this command's HCN calls: the config key, else the
/// environment variable, else [`DEFAULT`].
pub fn hns_deadline(conf: &NetConf) -> Result<Duration, Error> {
    SETTING.read(conf)
}

/// The deadline of the node tools (`cni-win sweep`, `doctor`), which serve every network at
/// once: the environment variable, else [`DEFAULT`] (a per-network key cannot apply).
pub fn node_deadline() -> Result<Duration, Error> {
    SETTING.from_env()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cni::ErrorCode;
    use serde_json::json;

    #[test]
    fn default_then_variable_then_key() {
        assert_eq!(SETTING.from(None, None).unwrap(), DEFAULT);
        assert_eq!(
            SETTING.from(None, Some(" 12.5 ")).unwrap(),
            Duration::from_millis(12_500)
        );
        assert_eq!(
            SETTING.from(Some(&json!(5)), Some("12")).unwrap(),
            Duration::from_secs(5)
        );
    }

    #[test]
    fn bad_values_name_their_source_and_the_fix() {
        for (config, env, code, source) in [
            (
                Some(json!("30")),
                None,
                ErrorCode::InvalidConfig,
                CONFIG_KEY,
            ),
            (Some(json!(0)), None, ErrorCode::InvalidConfig, CONFIG_KEY),
            (
                Some(json!(1e300)),
                None,
                ErrorCode::InvalidConfig,
                CONFIG_KEY,
            ),
            (None, Some("soon"), ErrorCode::InvalidEnvironment, ENV_VAR),
            (None, Some("-1"), ErrorCode::InvalidEnvironment, ENV_VAR),
            (None, Some("NaN"), ErrorCode::InvalidEnvironment, ENV_VAR),
            (None, Some("inf"), ErrorCode::InvalidEnvironment, ENV_VAR),
        ] {
            let error = SETTING.from(config.as_ref(), env).unwrap_err();
            assert_eq!(error.code(), code, "{config:?} {env:?}");
            assert!(error.msg().starts_with(source), "{}", error.msg());
            assert!(error.msg().contains("seconds"), "{}", error.msg());
        }
    }
}
