//! CNI spec versions and what each one allows.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

use crate::error::{Error, ErrorCode};

/// A released CNI spec version. Every one of them is supported: Flannel on Windows still sends
/// 0.2.0 by default, and kubelet/containerd send 0.3.x to 1.1.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    /// The first spec; results in the legacy `ip4`/`ip6` layout.
    V0_1_0,
    /// Adds the `dns` result key; Flannel on Windows still sends it by default.
    V0_2_0,
    /// Introduces `interfaces` and `ips` in results.
    V0_3_0,
    /// 0.3.0 with clarifications; the same result layout.
    V0_3_1,
    /// Adds CHECK and `prevResult` for DEL and CHECK.
    V0_4_0,
    /// Drops `ips[].version`; otherwise 0.4.0's layout.
    V1_0_0,
    /// Adds GC and STATUS and optional interface/route fields.
    V1_1_0,
}

/// How a result is laid out on the wire; several versions share a layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultLayout {
    /// 0.1.0 and 0.2.0: `ip4`/`ip6` objects, one address per family.
    Legacy,
    /// 0.3.0 to 0.4.0: `interfaces`, `ips` with a required `version`, `routes`.
    V04,
    /// 1.0.0 and 1.1.0: as V04 without `ips[].version`, plus the 1.1.0 optional fields.
    V1,
}

impl Version {
    /// Every supported version, oldest first (the order VERSION prints them in).
    pub const ALL: [Version; 7] = [
        Version::V0_1_0,
        Version::V0_2_0,
        Version::V0_3_0,
        Version::V0_3_1,
        Version::V0_4_0,
        Version::V1_0_0,
        Version::V1_1_0,
    ];

    /// The newest version, used where no config says otherwise.
    pub const LATEST: Version = Version::V1_1_0;

    /// The version a config without `cniVersion` is read as (libcni decodes it as 0.1.0).
    pub const UNSPECIFIED: Version = Version::V0_1_0;

    /// The spelling configs and results use.
    pub fn as_str(self) -> &'static str {
        match self {
            Version::V0_1_0 => "0.1.0",
            Version::V0_2_0 => "0.2.0",
            Version::V0_3_0 => "0.3.0",
            Version::V0_3_1 => "0.3.1",
            Version::V0_4_0 => "0.4.0",
            Version::V1_0_0 => "1.0.0",
            Version::V1_1_0 => "1.1.0",
        }
    }

    /// Which wire layout a result in this version takes (several versions share one).
    pub fn result_layout(self) -> ResultLayout {
        match self {
            Version::V0_1_0 | Version::V0_2_0 => ResultLayout::Legacy,
            Version::V0_3_0 | Version::V0_3_1 | Version::V0_4_0 => ResultLayout::V04,
            Version::V1_0_0 | Version::V1_1_0 => ResultLayout::V1,
        }
    }

    /// CHECK was added in 0.4.0.
    pub fn allows_check(self) -> bool {
        self >= Version::V0_4_0
    }

    /// GC and STATUS were added in 1.1.0.
    pub fn allows_gc_and_status(self) -> bool {
        self >= Version::V1_1_0
    }

    /// The supported versions as the comma-separated list error messages show.
    pub fn supported_list() -> String {
        Version::ALL.map(Version::as_str).join(", ")
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Version {
    type Err = Error;

    /// An unknown version is code 1 with the supported list, as the spec asks.
    fn from_str(s: &str) -> Result<Version, Error> {
        Version::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::IncompatibleVersion,
                    format!(
                        "cniVersion {} is not supported; this plugin supports {}",
                        crate::quote::quoted(s),
                        Version::supported_list()
                    ),
                )
            })
    }
}

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Version, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse()
            .map_err(|e: Error| serde::de::Error::custom(e.msg()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_released_version_and_nothing_else() {
        for v in Version::ALL {
            assert_eq!(v.as_str().parse::<Version>().unwrap(), v);
        }
        for bad in ["", "1.2.0", "0.5.0", "1.0", "v1.0.0", " 1.0.0"] {
            let err = bad.parse::<Version>().unwrap_err();
            assert_eq!(err.code(), ErrorCode::IncompatibleVersion);
            assert!(
                err.msg()
                    .contains("0.1.0, 0.2.0, 0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0")
            );
        }
    }

    #[test]
    fn command_gates_follow_the_spec() {
        assert!(!Version::V0_3_1.allows_check());
        assert!(Version::V0_4_0.allows_check());
        assert!(!Version::V1_0_0.allows_gc_and_status());
        assert!(Version::V1_1_0.allows_gc_and_status());
    }
}
