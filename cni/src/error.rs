//! CNI errors: the spec's numbered codes and the JSON a plugin prints when a command fails.
//!
//! Runtimes act on the code (11 means "retry", 3 means "no need to clean up"), so every failure in
//! cni-win is one of these typed errors rather than a bare string; the message names the field or
//! variable at fault and, where there is one, the fix.

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::version::Version;

/// The error codes of CNI spec 1.1.0 §"Error" (0-99 are reserved for the spec, 100+ for plugins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// 1: the config's `cniVersion` is not one the plugin supports, or a command needs a newer one.
    IncompatibleVersion,
    /// 2: a field the plugin does not support; the message must name the key and value.
    UnsupportedField,
    /// 3: the container is unknown; the runtime need not clean up.
    UnknownContainer,
    /// 4: a required environment variable is missing or invalid; the message names it.
    InvalidEnvironment,
    /// 5: reading input or writing output failed.
    Io,
    /// 6: stdin (or a delegated plugin's reply) could not be decoded.
    Decode,
    /// 7: the network configuration is invalid.
    InvalidConfig,
    /// 11: a transient condition; the runtime should retry.
    TryAgainLater,
    /// 50: the plugin cannot service ADD right now.
    NotAvailable,
    /// 51: as 50, and existing containers may have limited connectivity.
    NotAvailableLimitedConnectivity,
    /// 999: an unexpected internal failure (libcni's `ErrInternal`), e.g. a caught panic.
    Internal,
    /// A plugin-specific code (100 and above), documented by the plugin that returns it.
    Plugin(u32),
}

impl ErrorCode {
    /// The number printed in the error JSON.
    pub fn number(self) -> u32 {
        match self {
            ErrorCode::IncompatibleVersion => 1,
            ErrorCode::UnsupportedField => 2,
            ErrorCode::UnknownContainer => 3,
            ErrorCode::InvalidEnvironment => 4,
            ErrorCode::Io => 5,
            ErrorCode::Decode => 6,
            ErrorCode::InvalidConfig => 7,
            ErrorCode::TryAgainLater => 11,
            ErrorCode::NotAvailable => 50,
            ErrorCode::NotAvailableLimitedConnectivity => 51,
            ErrorCode::Internal => 999,
            ErrorCode::Plugin(n) => n,
        }
    }

    /// The code for a number read from another plugin's error JSON. Unknown numbers are kept as
    /// [`ErrorCode::Plugin`] so a delegated plugin's code reaches the runtime unchanged.
    pub fn from_number(n: u32) -> ErrorCode {
        match n {
            1 => ErrorCode::IncompatibleVersion,
            2 => ErrorCode::UnsupportedField,
            3 => ErrorCode::UnknownContainer,
            4 => ErrorCode::InvalidEnvironment,
            5 => ErrorCode::Io,
            6 => ErrorCode::Decode,
            7 => ErrorCode::InvalidConfig,
            11 => ErrorCode::TryAgainLater,
            50 => ErrorCode::NotAvailable,
            51 => ErrorCode::NotAvailableLimitedConnectivity,
            999 => ErrorCode::Internal,
            other => ErrorCode::Plugin(other),
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

/// A CNI error: a code, a one-line message and optional details.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{msg} (CNI error {code})")]
pub struct Error {
    code: ErrorCode,
    msg: String,
    details: String,
}

/// The error JSON of the spec: `{"cniVersion","code","msg","details"}`.
#[derive(Debug, Serialize, Deserialize)]
struct ErrorJson {
    #[serde(
        rename = "cniVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    cni_version: Option<String>,
    code: u32,
    #[serde(default)]
    msg: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    details: String,
}

impl Error {
    /// An error with `code` and the one-line `msg` a runtime shows the operator.
    pub fn new(code: ErrorCode, msg: impl Into<String>) -> Error {
        Error {
            code,
            msg: msg.into(),
            details: String::new(),
        }
    }

    /// Adds the longer explanation printed in `details`.
    pub fn with_details(mut self, details: impl Into<String>) -> Error {
        self.details = details.into();
        self
    }

    /// Code 7, the common case for a config a plugin cannot use.
    pub fn invalid_config(msg: impl Into<String>) -> Error {
        Error::new(ErrorCode::InvalidConfig, msg)
    }

    /// Code 4 naming the offending variable.
    pub fn invalid_env(variable: &str, problem: impl fmt::Display) -> Error {
        Error::new(
            ErrorCode::InvalidEnvironment,
            format!("{variable}: {problem}"),
        )
    }

    /// Code 11: the runtime should retry (e.g. the HNS network is not created yet).
    pub fn try_again_later(msg: impl Into<String>) -> Error {
        Error::new(ErrorCode::TryAgainLater, msg)
    }

    /// Code 999 for failures that are neither the caller's input nor a documented condition.
    pub fn internal(msg: impl Into<String>) -> Error {
        Error::new(ErrorCode::Internal, msg)
    }

    /// What the runtime acts on (retry, give up), as the spec's table defines it.
    pub fn code(&self) -> ErrorCode {
        self.code
    }

    /// The one-line reason, naming the field or object at fault.
    pub fn msg(&self) -> &str {
        &self.msg
    }

    /// The longer explanation (HRESULTs, error records), empty when there is none.
    pub fn details(&self) -> &str {
        &self.details
    }

    /// Prefixes the message with context, keeping code and details (`"IPAM: " + msg`).
    pub fn context(mut self, context: impl fmt::Display) -> Error {
        self.msg = format!("{context}: {}", self.msg);
        self
    }

    /// The JSON printed on stdout for this error, in the given spec version.
    pub fn to_json(&self, version: Version) -> String {
        let json = ErrorJson {
            cni_version: Some(version.to_string()),
            code: self.code.number(),
            msg: self.msg.clone(),
            details: self.details.clone(),
        };
        serde_json::to_string(&json).unwrap_or_else(|_| {
            // Serialising three strings and a number cannot fail; keep a valid fallback anyway.
            format!(
                r#"{{"code":{},"msg":"unprintable error"}}"#,
                self.code.number()
            )
        })
    }

    /// Reads another plugin's error JSON; `None` when `bytes` is not one.
    pub fn from_json(bytes: &[u8]) -> Option<Error> {
        let json: ErrorJson = serde_json::from_slice(bytes).ok()?;
        Some(Error {
            code: ErrorCode::from_number(json.code),
            msg: json.msg,
            details: json.details,
        })
    }
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Error {
        Error::new(ErrorCode::Io, err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spec_code_round_trips_through_its_number() {
        for n in [1, 2, 3, 4, 5, 6, 7, 11, 50, 51, 999, 100, 4242] {
            assert_eq!(ErrorCode::from_number(n).number(), n);
        }
        assert_eq!(ErrorCode::from_number(100), ErrorCode::Plugin(100));
    }

    #[test]
    fn prints_the_spec_shape() {
        let err = Error::invalid_config("bad subnet").with_details("10.0.0.0/33 is not a CIDR");
        let json: serde_json::Value = serde_json::from_str(&err.to_json(Version::V1_1_0)).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"cniVersion": "1.1.0", "code": 7, "msg": "bad subnet",
                "details": "10.0.0.0/33 is not a CIDR"})
        );
    }

    #[test]
    fn omits_empty_details() {
        let json = Error::try_again_later("no network").to_json(Version::V0_4_0);
        assert_eq!(
            json,
            r#"{"cniVersion":"0.4.0","code":11,"msg":"no network"}"#
        );
    }

    #[test]
    fn reads_a_delegated_plugins_error() {
        let err = Error::from_json(br#"{"cniVersion":"1.0.0","code":110,"msg":"pool empty"}"#)
            .expect("error json");
        assert_eq!(err.code(), ErrorCode::Plugin(110));
        assert_eq!(err.msg(), "pool empty");
        assert!(Error::from_json(br#"{"cniVersion":"1.0.0","ips":[]}"#).is_none());
    }
}
