//! Finding the HNS network a config names, and the host features an ADD needs.

use cni::Error;
use hns::{Client, Feature, HnsVersion, OpenNetwork, RawHcn};

use crate::codes::HNS_FEATURE_MISSING;
use crate::hns_error::{details, to_cni};
use crate::kind::{NetworkKind, Requirement};

/// Opens the network named `name` (3 raw calls) and checks that this plugin can use it.
///
/// Missing: code 11, since the network is created by flanneld (or the node's setup) and may
/// simply not exist yet. Wrong type: code 7.
pub fn find<'c, K: NetworkKind>(
    kind: &K,
    config: &K::Config,
    client: &'c Client,
    name: &str,
) -> Result<OpenNetwork<'c, dyn RawHcn>, Error> {
    let network = client.find_network_by_name(name).map_err(|e| {
        if e.is_not_found() {
            Error::try_again_later(format!(
                "HNS network {name:?} does not exist (yet): it is created by flanneld or the node's \
                 network setup, which may not have run yet; the config's \"name\" must be the HNS network's name"
            ))
            .with_details(details(&e))
        } else {
            to_cni(&e, &format!("find HNS network {name:?}"))
        }
    })?;
    let network_type = &network.properties().network_type;
    if !kind.accepts(network_type) {
        return Err(Error::invalid_config(format!(
            "HNS network {name:?} is of type {network_type}, but {} needs {}",
            K::PLUGIN,
            kind.network_types().join(" or ")
        )));
    }
    kind.check_network(config, network.properties())?;
    Ok(network)
}

/// Fails with code 112 unless the host's HNS has every required feature (1 raw call, made only
/// when something is required).
pub fn require_features(client: &Client, requirements: &[Requirement]) -> Result<(), Error> {
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
pub fn supported_versions(feature: Feature) -> String {
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
