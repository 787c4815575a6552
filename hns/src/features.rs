//! HNS versions and the features they support (hcsshim's version ranges).
//!
//! Plugins gate optional behaviour on these, e.g. loopback DSR only where
//! [`Feature::Dsr`] is supported, instead of failing on older hosts.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The HNS version from `GET /globals/version`: `{"Major":13,"Minor":2}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HnsVersion {
    /// HNS major version; feature support is read from (major, minor) as hcsshim does.
    pub major: u32,
    /// HNS minor version; features arrived in minor releases within a major.
    pub minor: u32,
}

impl HnsVersion {
    /// Builds a version.
    pub const fn new(major: u32, minor: u32) -> HnsVersion {
        HnsVersion { major, minor }
    }

    /// What an emulated host reports unless told otherwise: a Windows Server 2022 host's
    /// ([`WindowsRelease::SERVER_2022`]).
    pub const fn default_emulated() -> HnsVersion {
        WindowsRelease::SERVER_2022.hns
    }
}

impl fmt::Display for HnsVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// Text that is not an HNS version (`MAJOR.MINOR`), e.g. from an operator's command line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid HNS version {0:?}: expected MAJOR.MINOR, e.g. 13.2")]
pub struct HnsVersionParseError(String);

impl std::str::FromStr for HnsVersion {
    type Err = HnsVersionParseError;

    /// Parses `MAJOR.MINOR`.
    fn from_str(text: &str) -> Result<HnsVersion, HnsVersionParseError> {
        let error = || HnsVersionParseError(text.to_owned());
        let (major, minor) = text.trim().split_once('.').ok_or_else(error)?;
        Ok(HnsVersion::new(
            major.parse().map_err(|_| error())?,
            minor.parse().map_err(|_| error())?,
        ))
    }
}

/// The Windows build of the host HNS runs on (`10.0.<build>`): some HNS behaviour changed
/// with a release and has no HNS version or feature flag to gate on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct WindowsBuild(pub u32);

impl WindowsBuild {
    /// Windows Server 2022 (10.0.20348), what an emulated host reports unless told otherwise
    /// (as its HNS version is a 2022 host's: [`WindowsRelease::SERVER_2022`]).
    pub const SERVER_2022: WindowsBuild = WindowsBuild(20348);

    /// Windows Server 2025 (10.0.26100, Microsoft's Windows Server release information; the
    /// 24H2 client shares the build and its HNS).
    pub const SERVER_2025: WindowsBuild = WindowsBuild(26100);
}

impl fmt::Display for WindowsBuild {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A Windows Server release as an emulated host runs it: its build and the HNS version it
/// reports, as far as public sources tell them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WindowsRelease {
    /// The Windows build (`10.0.<build>`).
    pub build: WindowsBuild,
    /// The HNS version `GET /globals/version` reports.
    pub hns: HnsVersion,
}

impl WindowsRelease {
    /// Windows Server 2022. No public source gives its HNS version; 15.0 is the lowest that
    /// fits what runs on it: Azure NPM supports Windows Server 2022 only (ACN PR #1805) and
    /// writes `NESTEDIPSET` sets there without a version check
    /// (azure-container-networking `npm/pkg/dataplane/ipsets/ipsetmanager_windows.go`), which
    /// hcsshim gates at 15.0 (`hcn/hcnglobals.go`, `NestedIpSetVersion`). Not 15.4: that is
    /// Windows Server 2025's, where `HcnModifyLoadBalancer` arrived (kubernetes#131466).
    pub const SERVER_2022: WindowsRelease = WindowsRelease {
        build: WindowsBuild::SERVER_2022,
        hns: HnsVersion::new(15, 0),
    };

    /// Windows Server 2025: build 26100 with HNS 15.4 (kubernetes#131466, Microsoft: "I'm
    /// using HNS version 15.4 … OS version Windows Server 2025").
    pub const SERVER_2025: WindowsRelease = WindowsRelease {
        build: WindowsBuild::SERVER_2025,
        hns: HnsVersion::new(15, 4),
    };
}

/// An HNS feature with a version threshold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Feature {
    /// ACL address lists, host rule priority, port ranges, rule IDs.
    Acl,
    /// The V2 (HCN) API, the only one cni-win's plugins use.
    ApiV2,
    /// `RemoteSubnetRoute` network policies (flannel vxlan needs it).
    RemoteSubnet,
    /// `HostRoute` network policy.
    HostRoute,
    /// Direct server return (loopback DSR).
    Dsr,
    /// /32 endpoint prefixes.
    Slash32EndpointPrefixes,
    /// `VxlanPort` network policy.
    VxlanPort,
    /// `L4Proxy` policy, used by kube-proxy's proxy rules; reported, not used by the plugins.
    L4Proxy,
    /// ACL protocol 252.
    AclSupportForProtocol252,
    /// IPv4/IPv6 dual stack.
    Ipv6DualStack,
    /// Load-balancer session affinity.
    SessionAffinity,
    /// `SetPolicy` (IP sets).
    SetPolicy,
    /// `L4WFPPROXY` policy.
    L4WfpProxy,
    /// Tiered ACLs.
    TierAcl,
    /// `NetworkACL` policy; reported for operators, not used by the plugins.
    NetworkAcl,
    /// Nested IP sets (`SetPolicy` of sets); reported for operators.
    NestedIpSet,
    /// `DisableHostPort` network flag.
    DisableHostPort,
    /// `HcnModifyLoadBalancer`.
    ModifyLoadBalancer,
    /// Accelerated networking.
    Accelnet,
}

/// Inclusive version interval; `max` of `None` means "and everything later".
#[derive(Debug, Clone, Copy)]
struct VersionRange {
    min: HnsVersion,
    max: Option<HnsVersion>,
}

const fn from(major: u32, minor: u32) -> VersionRange {
    VersionRange {
        min: HnsVersion::new(major, minor),
        max: None,
    }
}

/// `major.minor` up to the last `major.x`.
const fn within_major(major: u32, minor: u32) -> VersionRange {
    VersionRange {
        min: HnsVersion::new(major, minor),
        max: Some(HnsVersion::new(major, u32::MAX)),
    }
}

impl Feature {
    /// Every feature, in threshold order.
    pub const ALL: [Feature; 19] = [
        Feature::Acl,
        Feature::ApiV2,
        Feature::RemoteSubnet,
        Feature::HostRoute,
        Feature::Dsr,
        Feature::Slash32EndpointPrefixes,
        Feature::VxlanPort,
        Feature::L4Proxy,
        Feature::AclSupportForProtocol252,
        Feature::Ipv6DualStack,
        Feature::SessionAffinity,
        Feature::SetPolicy,
        Feature::L4WfpProxy,
        Feature::TierAcl,
        Feature::NetworkAcl,
        Feature::NestedIpSet,
        Feature::DisableHostPort,
        Feature::ModifyLoadBalancer,
        Feature::Accelnet,
    ];

    /// hcsshim's JSON key for the feature.
    pub fn name(self) -> &'static str {
        match self {
            Feature::Acl => "ACL",
            Feature::ApiV2 => "V2",
            Feature::RemoteSubnet => "RemoteSubnet",
            Feature::HostRoute => "HostRoute",
            Feature::Dsr => "DSR",
            Feature::Slash32EndpointPrefixes => "Slash32EndpointPrefixes",
            Feature::VxlanPort => "VxlanPort",
            Feature::L4Proxy => "L4Proxy",
            Feature::AclSupportForProtocol252 => "AclSupportForProtocol252",
            Feature::Ipv6DualStack => "IPv6DualStack",
            Feature::SessionAffinity => "SessionAffinity",
            Feature::SetPolicy => "SetPolicy",
            Feature::L4WfpProxy => "L4WfpProxy",
            Feature::TierAcl => "TierAcl",
            Feature::NetworkAcl => "NetworkACL",
            Feature::NestedIpSet => "NestedIpSet",
            Feature::DisableHostPort => "DisableHostPort",
            Feature::ModifyLoadBalancer => "ModifyLoadbalancer",
            Feature::Accelnet => "Accelnet",
        }
    }

    fn ranges(self) -> &'static [VersionRange] {
        match self {
            Feature::Acl => const { &[from(7, 2)] },
            Feature::ApiV2 | Feature::RemoteSubnet | Feature::HostRoute => const { &[from(9, 2)] },
            Feature::Dsr => const { &[within_major(9, 3), from(10, 2)] },
            Feature::Slash32EndpointPrefixes => const { &[within_major(9, 3), from(10, 4)] },
            Feature::VxlanPort => const { &[from(10, 3)] },
            Feature::L4Proxy => {
                const {
                    &[
                        within_major(9, 5),
                        within_major(10, 5),
                        within_major(11, 11),
                        within_major(12, 1),
                        from(13, 1),
                    ]
                }
            }
            Feature::AclSupportForProtocol252 => const { &[from(11, 0)] },
            Feature::Ipv6DualStack => const { &[from(11, 10)] },
            Feature::SessionAffinity => const { &[from(12, 0)] },
            Feature::SetPolicy => const { &[from(13, 0)] },
            Feature::L4WfpProxy => const { &[from(13, 2)] },
            Feature::TierAcl => const { &[from(14, 0)] },
            Feature::NetworkAcl | Feature::NestedIpSet => const { &[from(15, 0)] },
            Feature::DisableHostPort => const { &[from(15, 1)] },
            Feature::ModifyLoadBalancer | Feature::Accelnet => const { &[from(15, 4)] },
        }
    }

    /// Whether HNS `version` supports the feature.
    pub fn supported_by(self, version: HnsVersion) -> bool {
        self.ranges()
            .iter()
            .any(|range| version >= range.min && range.max.is_none_or(|max| version <= max))
    }
}

/// The features of one HNS version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SupportedFeatures {
    version: HnsVersion,
}

impl SupportedFeatures {
    /// The feature set of `version`.
    pub fn of(version: HnsVersion) -> SupportedFeatures {
        SupportedFeatures { version }
    }

    /// The version the table was derived from.
    pub fn version(&self) -> HnsVersion {
        self.version
    }

    /// Whether `feature` is supported.
    pub fn supports(&self, feature: Feature) -> bool {
        feature.supported_by(self.version)
    }

    /// Every feature with its support flag.
    pub fn table(&self) -> Vec<(Feature, bool)> {
        Feature::ALL
            .into_iter()
            .map(|feature| (feature, self.supports(feature)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_follow_hcsshim_ranges() {
        let v = HnsVersion::new;
        assert!(!Feature::ApiV2.supported_by(v(9, 1)));
        assert!(Feature::ApiV2.supported_by(v(9, 2)));
        assert!(Feature::Dsr.supported_by(v(9, 3)));
        assert!(Feature::Dsr.supported_by(v(9, 99)));
        assert!(!Feature::Dsr.supported_by(v(10, 1)));
        assert!(Feature::Dsr.supported_by(v(10, 2)));
        assert!(!Feature::L4Proxy.supported_by(v(11, 10)));
        assert!(Feature::L4Proxy.supported_by(v(11, 11)));
        assert!(!Feature::L4Proxy.supported_by(v(13, 0)));
        assert!(Feature::Ipv6DualStack.supported_by(v(11, 10)));
        assert!(!Feature::VxlanPort.supported_by(v(10, 2)));
        assert!(Feature::ModifyLoadBalancer.supported_by(v(15, 4)));
    }

    #[test]
    fn default_host_is_ws2022_like() {
        let features = SupportedFeatures::of(HnsVersion::default_emulated());
        for feature in [
            Feature::ApiV2,
            Feature::Dsr,
            Feature::Ipv6DualStack,
            Feature::VxlanPort,
            Feature::L4WfpProxy,
            Feature::SetPolicy,
            // Azure NPM writes nested sets on Windows Server 2022 without a version check.
            Feature::NestedIpSet,
        ] {
            assert!(features.supports(feature), "{feature:?}");
        }
        assert!(!features.supports(Feature::ModifyLoadBalancer));
    }

    #[test]
    fn windows_server_2025_is_build_26100_with_hns_15_4() {
        let release = WindowsRelease::SERVER_2025;
        assert_eq!(
            (release.build, release.hns),
            (WindowsBuild(26100), HnsVersion::new(15, 4))
        );
        assert!(SupportedFeatures::of(release.hns).supports(Feature::ModifyLoadBalancer));
    }

    #[test]
    fn parses_versions() {
        assert_eq!("9.2".parse::<HnsVersion>().unwrap(), HnsVersion::new(9, 2));
        assert!("9".parse::<HnsVersion>().is_err());
    }
}
