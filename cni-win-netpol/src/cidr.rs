//! `ipBlock`: a CIDR with exceptions, turned into the prefixes HNS can list.
//!
//! HNS ACLs have no negative match, and a Block rule for an exception would also block an
//! address another peer allows (upstream's "IP overlapping both IPBlock.CIDR and
//! IPBlock.Except is allowed" case), so `cidr` minus `except` is written out as the
//! prefixes that cover exactly what remains.

use std::net::IpAddr;

use ipnetwork::IpNetwork;

use crate::invalid::Invalid;

/// Reads an API CIDR (`10.0.0.0/8`, `fd00::/64`); host bits are cleared as the API server's
/// Go parser clears them.
pub(crate) fn parse(text: &str, field: &str) -> Result<IpNetwork, Invalid> {
    let parsed = text
        .contains('/')
        .then(|| text.parse::<IpNetwork>().ok())
        .flatten()
        .ok_or_else(|| Invalid::new(field, format!("{text:?} is not a CIDR (e.g. 10.0.0.0/16)")))?;
    Ok(IpNetwork::new(parsed.network(), parsed.prefix()).unwrap_or(parsed))
}

/// Whether `outer` holds all of `inner`.
pub(crate) fn covers(outer: IpNetwork, inner: IpNetwork) -> bool {
    outer.prefix() <= inner.prefix() && outer.contains(inner.network())
}

/// The host prefix of one address (`/32`, `/128`).
pub(crate) fn host(ip: IpAddr) -> IpNetwork {
    IpNetwork::from(ip)
}

/// `block` minus every prefix of `excepts`, as the fewest aligned prefixes, in address order.
pub(crate) fn subtract(block: IpNetwork, excepts: &[IpNetwork]) -> Vec<IpNetwork> {
    if excepts.iter().any(|except| covers(*except, block)) {
        return Vec::new();
    }
    if !excepts.iter().any(|except| covers(block, *except)) {
        return vec![block];
    }
    halves(block)
        .into_iter()
        .flat_map(|half| subtract(half, excepts))
        .collect()
}

/// The two prefixes one bit longer that make up `block` (which is not a host prefix, since
/// an exception strictly inside it exists).
fn halves(block: IpNetwork) -> [IpNetwork; 2] {
    let prefix = block.prefix() + 1;
    match block.network() {
        IpAddr::V4(base) => {
            let low = u32::from(base);
            let high = low | (1u32 << (32 - u32::from(prefix)));
            [low, high].map(|bits| {
                IpNetwork::new(IpAddr::from(bits.to_be_bytes()), prefix).unwrap_or(block)
            })
        }
        IpAddr::V6(base) => {
            let low = u128::from(base);
            let high = low | (1u128 << (128 - u32::from(prefix)));
            [low, high].map(|bits| {
                IpNetwork::new(IpAddr::from(bits.to_be_bytes()), prefix).unwrap_or(block)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(text: &str) -> IpNetwork {
        text.parse().unwrap()
    }

    fn spelt(nets: &[IpNetwork]) -> Vec<String> {
        nets.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn parses_cidrs_and_clears_host_bits() {
        assert_eq!(parse("10.1.2.3/8", "f").unwrap(), net("10.0.0.0/8"));
        assert_eq!(parse("fd00::1/64", "f").unwrap(), net("fd00::/64"));
        let bare = parse("10.0.0.1", "spec.egress[0].to[0].ipBlock.cidr").unwrap_err();
        assert_eq!(bare.field, "spec.egress[0].to[0].ipBlock.cidr");
        assert!(parse("10.0.0.0/33", "f").is_err());
        assert!(parse("ten/8", "f").is_err());
    }

    #[test]
    fn subtracting_nothing_keeps_the_block() {
        assert_eq!(subtract(net("10.0.0.0/8"), &[]), [net("10.0.0.0/8")]);
        assert_eq!(
            subtract(net("10.0.0.0/8"), &[net("192.168.0.0/16")]),
            [net("10.0.0.0/8")]
        );
    }

    #[test]
    fn subtracting_a_host_leaves_the_rest_exactly() {
        let rest = subtract(net("10.0.0.0/29"), &[net("10.0.0.5/32")]);
        assert_eq!(spelt(&rest), ["10.0.0.0/30", "10.0.0.4/32", "10.0.0.6/31"]);
        let covered: Vec<bool> = (0..8)
            .map(|last| {
                let ip: IpAddr = format!("10.0.0.{last}").parse().unwrap();
                rest.iter().any(|n| n.contains(ip))
            })
            .collect();
        assert_eq!(covered, [true, true, true, true, true, false, true, true]);
    }

    #[test]
    fn subtracting_several_and_nested_exceptions() {
        let rest = subtract(
            net("10.0.0.0/24"),
            &[
                net("10.0.0.0/25"),
                net("10.0.0.64/26"),
                net("10.0.0.200/32"),
            ],
        );
        assert_eq!(
            spelt(&rest),
            [
                "10.0.0.128/26",
                "10.0.0.192/29",
                "10.0.0.201/32",
                "10.0.0.202/31",
                "10.0.0.204/30",
                "10.0.0.208/28",
                "10.0.0.224/27"
            ]
        );
    }

    #[test]
    fn subtracting_in_ipv6() {
        let rest = subtract(net("fd00::/126"), &[net("fd00::2/128")]);
        assert_eq!(spelt(&rest), ["fd00::/127", "fd00::3/128"]);
    }

    #[test]
    fn an_exception_covering_the_block_leaves_nothing() {
        assert!(subtract(net("10.0.0.0/24"), &[net("10.0.0.0/16")]).is_empty());
    }
}
