//! Validated address ranges and range sets, and the arithmetic that walks them.
//!
//! A range set's addresses are numbered by *position*: the ranges' `[start, end]` intervals laid
//! end to end, in config order. Round-robin allocation, the occupancy map and the "after the last
//! reserved address" rule all work on positions, so wrapping from one range to the next is
//! simply `position + 1 mod size`.

use ipnetwork::IpNetwork;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An address as a number, so ranges can be walked and measured for both families alike.
pub(crate) fn to_number(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// The address `n` in the family of `like`. `n` must fit the family (callers only produce numbers
/// between two addresses of that family).
pub(crate) fn from_number(n: u128, like: IpAddr) -> IpAddr {
    match like {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(n as u32)),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(n)),
    }
}

/// One validated range: addresses `start..=end` of `subnet`, handed out with `gateway`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    /// The subnet in canonical form (network address, no host bits).
    pub subnet: IpNetwork,
    /// The first address handed out (`rangeStart`, by default the subnet's first host).
    pub start: IpAddr,
    /// The last address handed out (`rangeEnd`, by default the last host before broadcast).
    pub end: IpAddr,
    /// Never handed out, even when it lies between `start` and `end`.
    pub gateway: IpAddr,
    /// Whether the config set `gateway`, rather than host-local defaulting it to the subnet's
    /// first address: a plugin with its own default gateway (win-bridge's x.2) yields only to
    /// one the operator chose.
    pub gateway_configured: bool,
}

impl Range {
    /// How many addresses `start..=end` spans (the gateway included).
    pub fn len(&self) -> u128 {
        to_number(self.end) - to_number(self.start) + 1
    }

    /// Ranges always hold at least one address; this exists for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Whether `ip` lies in `start..=end`.
    pub fn contains(&self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.start.is_ipv4()
            && (to_number(self.start)..=to_number(self.end)).contains(&to_number(ip))
    }

    /// Whether two ranges share an address.
    pub fn overlaps(&self, other: &Range) -> bool {
        self.start.is_ipv4() == other.start.is_ipv4()
            && to_number(self.start) <= to_number(other.end)
            && to_number(other.start) <= to_number(self.end)
    }

    /// The gateway the config set for this range, if it set one.
    pub fn configured_gateway(&self) -> Option<IpAddr> {
        self.gateway_configured.then_some(self.gateway)
    }

    /// How many addresses the range can hand out: its length minus the gateway if inside.
    pub fn usable(&self) -> u128 {
        self.len() - u128::from(self.contains(self.gateway))
    }
}

impl fmt::Display for Range {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}-{}, gateway {})",
            self.subnet, self.start, self.end, self.gateway
        )
    }
}

/// One range set: one address is allocated from each set per attachment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeSet {
    ranges: Vec<Range>,
    /// Addresses inside the ranges that are never handed out besides the gateways (see
    /// [`RangeSet::exclude`]).
    excluded: Vec<IpAddr>,
}

impl RangeSet {
    /// A set of validated, non-overlapping ranges of one family (see [`crate::config`]).
    pub(crate) fn new(ranges: Vec<Range>) -> RangeSet {
        RangeSet {
            ranges,
            excluded: Vec::new(),
        }
    }

    /// Never hands out `ip`, like a gateway. For addresses the caller knows are taken outside
    /// host-local: win-bridge routes pods through x.2 (Flannel's `cbr0_ep`) while host-local's
    /// default range starts at x.1 and skips only its own gateway. Addresses outside the set,
    /// gateways and repeats are ignored.
    pub fn exclude(&mut self, ip: IpAddr) {
        if self.contains(ip) && !self.is_gateway(ip) && !self.excluded.contains(&ip) {
            self.excluded.push(ip);
        }
    }

    /// Whether `ip` is never handed out: a range's gateway or an excluded address.
    pub fn is_reserved(&self, ip: IpAddr) -> bool {
        self.is_gateway(ip) || self.excluded.contains(&ip)
    }

    /// Every address of the set that is never handed out.
    pub fn reserved(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.ranges
            .iter()
            .map(|r| r.gateway)
            .chain(self.excluded.iter().copied())
    }

    /// The set's ranges in config order, the order allocation walks them.
    pub fn ranges(&self) -> &[Range] {
        &self.ranges
    }

    /// The number of positions (addresses in all ranges, gateways included).
    pub fn size(&self) -> u128 {
        self.ranges.iter().map(Range::len).sum()
    }

    /// How many addresses the set can hand out (gateways and excluded addresses left out).
    pub fn usable(&self) -> u128 {
        self.ranges.iter().map(Range::usable).sum::<u128>() - self.excluded.len() as u128
    }

    /// Whether the set is IPv4; a set never mixes families, the config parser refuses that.
    pub fn is_ipv4(&self) -> bool {
        self.ranges.first().is_some_and(|r| r.start.is_ipv4())
    }

    /// The range holding `ip`, if any.
    pub fn range_for(&self, ip: IpAddr) -> Option<&Range> {
        self.ranges.iter().find(|r| r.contains(ip))
    }

    /// Whether `ip` lies in one of the set's ranges, as a requested address must.
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.range_for(ip).is_some()
    }

    /// Whether `ip` is the gateway of the range holding it (never handed out).
    pub fn is_gateway(&self, ip: IpAddr) -> bool {
        self.range_for(ip).is_some_and(|r| r.gateway == ip)
    }

    /// `ip`'s position in the set, if it lies in one of the ranges.
    pub fn position_of(&self, ip: IpAddr) -> Option<u128> {
        let mut offset = 0;
        for range in &self.ranges {
            if range.contains(ip) {
                return Some(offset + to_number(ip) - to_number(range.start));
            }
            offset += range.len();
        }
        None
    }

    /// The address at `position` (taken modulo the set's size).
    pub fn address_at(&self, position: u128) -> IpAddr {
        let mut rest = position % self.size();
        for range in &self.ranges {
            if rest < range.len() {
                return from_number(to_number(range.start) + rest, range.start);
            }
            rest -= range.len();
        }
        // Unreachable: `rest` is below the sum of the lengths. Fall back to the first address.
        self.ranges[0].start
    }

    /// A stable description of the set's layout: an occupancy map built for one layout is
    /// meaningless for another, so a changed config forces a rebuild. Exclusions are left out:
    /// they are the caller's (win-bridge excludes its pod gateway at ADD only) and never reach
    /// the map, so every command and every caller sees the same store.
    pub fn fingerprint(&self) -> String {
        self.ranges
            .iter()
            .map(|r| format!("{}|{}|{}|{}", r.subnet, r.start, r.end, r.gateway))
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl fmt::Display for RangeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.ranges.iter().map(Range::to_string).collect();
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(subnet: &str, start: &str, end: &str, gateway: &str) -> Range {
        Range {
            subnet: subnet.parse().unwrap(),
            start: start.parse().unwrap(),
            end: end.parse().unwrap(),
            gateway: gateway.parse().unwrap(),
            gateway_configured: true,
        }
    }

    #[test]
    fn positions_run_across_ranges_in_order() {
        let set = RangeSet::new(vec![
            range("10.0.0.0/24", "10.0.0.250", "10.0.0.254", "10.0.0.1"),
            range("10.0.1.0/24", "10.0.1.1", "10.0.1.3", "10.0.1.1"),
        ]);
        assert_eq!(set.size(), 8);
        assert_eq!(set.usable(), 7);
        assert_eq!(set.position_of("10.0.0.250".parse().unwrap()), Some(0));
        assert_eq!(set.position_of("10.0.1.2".parse().unwrap()), Some(6));
        assert_eq!(set.position_of("10.0.0.1".parse().unwrap()), None);
        for position in 0..set.size() {
            assert_eq!(set.position_of(set.address_at(position)), Some(position));
        }
        assert_eq!(set.address_at(8), "10.0.0.250".parse::<IpAddr>().unwrap());
        assert!(set.is_gateway("10.0.1.1".parse().unwrap()));
    }

    #[test]
    fn excluded_addresses_count_as_reserved_but_leave_the_fingerprint() {
        let mut set = RangeSet::new(vec![range(
            "10.0.0.0/29",
            "10.0.0.1",
            "10.0.0.6",
            "10.0.0.1",
        )]);
        let before = set.fingerprint();
        for ip in ["10.0.0.2", "10.0.0.2", "10.0.0.1", "10.0.1.2"] {
            set.exclude(ip.parse().unwrap());
        }
        assert!(set.is_reserved("10.0.0.2".parse().unwrap()));
        assert!(set.is_reserved("10.0.0.1".parse().unwrap()));
        assert!(!set.is_reserved("10.0.0.3".parse().unwrap()));
        assert_eq!(set.usable(), 4);
        assert_eq!(set.fingerprint(), before);
    }

    #[test]
    fn ipv6_ranges_walk_the_whole_width() {
        let set = RangeSet::new(vec![range("fd00::/120", "fd00::1", "fd00::ff", "fd00::1")]);
        assert_eq!(set.size(), 255);
        assert_eq!(set.address_at(254), "fd00::ff".parse::<IpAddr>().unwrap());
        assert!(!set.is_ipv4());
    }

    #[test]
    fn overlap_needs_a_shared_address_of_the_same_family() {
        let a = range("10.0.0.0/24", "10.0.0.2", "10.0.0.100", "10.0.0.1");
        let b = range("10.0.0.0/24", "10.0.0.100", "10.0.0.200", "10.0.0.1");
        let c = range("10.0.0.0/24", "10.0.0.101", "10.0.0.200", "10.0.0.1");
        assert!(a.overlaps(&b) && b.overlaps(&a));
        assert!(!a.overlaps(&c));
        let v6 = range("::/112", "::2", "::100", "::1");
        assert!(!a.overlaps(&v6));
    }
}
