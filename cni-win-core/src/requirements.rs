//! The host features an ADD needs, and the message when HNS lacks one.

use cni::Error;
use hns::{Client, Feature, HnsVersion};
use ipnetwork::IpNetwork;

use crate::codes::HNS_FEATURE_MISSING;
use crate::hns_error::to_cni;

/// A feature of the host's HNS that an ADD needs, and which config key (or input) asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Requirement {
    pub feature: Feature,
    /// What needs it, for the error message: `"loopbackDSR"`, `"the IPv6 address ..."`.
    pub needed_for: String,
}

/// What an attachment needs from HNS: DSR for `loopbackDSR`, dual-stack for an IPv6 address
/// (whatever the kind; `ipv6_caveat` is what else the kind's network needs for it).
pub(crate) fn requirements(
    loopback_dsr: bool,
    ips: &[IpNetwork],
    ipv6_caveat: Option<&str>,
) -> Vec<Requirement> {
    let dsr = loopback_dsr.then(|| Requirement {
        feature: Feature::Dsr,
        needed_for: "loopbackDSR".to_owned(),
    });
    let ipv6 = ips.iter().find(|ip| ip.is_ipv6()).map(|ip| Requirement {
        feature: Feature::Ipv6DualStack,
        needed_for: match ipv6_caveat {
            Some(caveat) => format!("the IPv6 address {ip} from ipam ({caveat})"),
            None => format!("the IPv6 address {ip} from ipam"),
        },
    });
    dsr.into_iter().chain(ipv6).collect()
}

/// Fails with code 112 unless the host's HNS has every required feature (1 raw call, made only
/// when something is required).
pub(crate) fn require_features(client: &Client, requirements: &[Requirement]) -> Result<(), Error> {
    if requirements.is_empty() {
        return Ok(());
    }
    let features = client
        .supported_features()
        .map_err(|e| to_cni(&e, "read the HNS version"))?;
    match requirements.iter().find(|r| !features.supports(r.feature)) {
        None => Ok(()),
        Some(missing) => Err(Error::new(
            HNS_FEATURE_MISSING,
            format!(
                "{} needs HNS {} support, which this host's HNS {} lacks (supported by HNS {}); \
                 remove it from the config or update Windows",
                missing.needed_for,
                missing.feature.name(),
                features.version(),
                supported_versions(missing.feature)
            ),
        )),
    }
}

/// The HNS versions supporting `feature`, as text (`9.3-9.x, 10.2 and later`), derived from the
/// `hns` crate's table so the message never disagrees with the check.
fn supported_versions(feature: Feature) -> String {
    const MAX_MAJOR: u32 = 40;
    const MAX_MINOR: u32 = 99;
    let mut ranges: Vec<(HnsVersion, HnsVersion)> = Vec::new();
    let mut open: Option<(HnsVersion, HnsVersion)> = None;
    for major in 0..=MAX_MAJOR {
        for minor in 0..=MAX_MINOR {
            let version = HnsVersion::new(major, minor);
            match (feature.supported_by(version), open.as_mut()) {
                (true, Some((_, end))) => *end = version,
                (true, None) => open = Some((version, version)),
                (false, Some(_)) => ranges.extend(open.take()),
                (false, None) => {}
            }
        }
    }
    let unbounded = open.take();
    let mut parts: Vec<String> = ranges
        .iter()
        .map(|(start, end)| {
            if end.minor == MAX_MINOR {
                format!("{start}-{}.x", end.major)
            } else {
                format!("{start}-{end}")
            }
        })
        .collect();
    if let Some((start, _)) = unbounded {
        parts.push(format!("{start} and later"));
    }
    if parts.is_empty() {
        return "no known version".to_owned();
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_text_follows_the_feature_table() {
        assert_eq!(supported_versions(Feature::Dsr), "9.3-9.x, 10.2 and later");
        assert_eq!(
            supported_versions(Feature::Ipv6DualStack),
            "11.10 and later"
        );
    }
}
