//! MAC pool arithmetic: HNS gives an endpoint created without a MAC the next free
//! address of its network's `MacPool`.

use hns::guid::Guid;
use hns::schema::{MacAddress, MacPool, MacRange};

fn offset(mac: MacAddress, by: u64) -> MacAddress {
    MacAddress::from_u64(mac.to_u64() + by)
}

/// The pool HNS-like default: `00-15-5D-XX-00-00` to `00-15-5D-XX-FF-FF`, with
/// `XX` taken from the network GUID so networks get distinct ranges.
pub fn default_pool(network: Guid) -> MacPool {
    let selector = (network.as_u128() & 0xFF) as u8;
    let start = MacAddress::new([0x00, 0x15, 0x5D, selector, 0x00, 0x00]);
    MacPool {
        ranges: vec![MacRange {
            start_mac_address: start,
            end_mac_address: offset(start, 0xFFFF),
        }],
    }
}

/// The distributed-router MAC given to an overlay network that has none:
/// locally administered (`02-...`), so it never collides with pool addresses.
pub fn default_dr_mac(network: Guid) -> MacAddress {
    MacAddress::from_u64(0x0215_5D00_0000 | (network.as_u128() & 0xFF_FFFF) as u64)
}

/// A `MacPool` range whose start lies after its end.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("MacPool range {} > {}", .0.start_mac_address, .0.end_mac_address)]
pub struct ReversedRange(MacRange);

/// Validated pool: inclusive, ordered ranges.
#[derive(Debug, Clone)]
pub struct Pool {
    ranges: Vec<(u64, u64)>,
}

impl Pool {
    /// Checks every range is ordered; the error names the bad range.
    pub fn new(pool: &MacPool) -> Result<Pool, ReversedRange> {
        let ranges = pool
            .ranges
            .iter()
            .map(|range| {
                let (start, end) = (
                    range.start_mac_address.to_u64(),
                    range.end_mac_address.to_u64(),
                );
                if start > end {
                    return Err(ReversedRange(*range));
                }
                Ok((start, end))
            })
            .collect::<Result<Vec<_>, ReversedRange>>()?;
        Ok(Pool { ranges })
    }

    /// Number of addresses.
    pub fn len(&self) -> u64 {
        self.ranges.iter().map(|(start, end)| end - start + 1).sum()
    }

    /// The `index`-th address (wrapping).
    pub fn nth(&self, index: u64) -> Option<MacAddress> {
        let total = self.len();
        if total == 0 {
            return None;
        }
        let mut index = index % total;
        for (start, end) in &self.ranges {
            let size = end - start + 1;
            if index < size {
                return Some(MacAddress::from_u64(start + index));
            }
            index -= size;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mac(text: &str) -> MacAddress {
        text.parse().unwrap()
    }

    #[test]
    fn pool_walks_ranges_in_order() {
        let pool = Pool::new(&MacPool {
            ranges: vec![
                MacRange {
                    start_mac_address: mac("00-15-5D-00-00-FE"),
                    end_mac_address: mac("00-15-5D-00-00-FF"),
                },
                MacRange {
                    start_mac_address: mac("00-15-5D-00-10-00"),
                    end_mac_address: mac("00-15-5D-00-10-00"),
                },
            ],
        })
        .unwrap();
        assert_eq!(pool.len(), 3);
        let macs: Vec<String> = (0..4).map(|i| pool.nth(i).unwrap().to_string()).collect();
        assert_eq!(
            macs,
            [
                "00-15-5D-00-00-FE",
                "00-15-5D-00-00-FF",
                "00-15-5D-00-10-00",
                "00-15-5D-00-00-FE"
            ]
        );
    }

    #[test]
    fn reversed_ranges_are_refused() {
        let reversed = MacRange {
            start_mac_address: mac("00-15-5D-00-00-FF"),
            end_mac_address: mac("00-15-5D-00-00-FE"),
        };
        let error = Pool::new(&MacPool {
            ranges: vec![reversed],
        })
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "MacPool range 00-15-5D-00-00-FF > 00-15-5D-00-00-FE"
        );
    }

    #[test]
    fn default_pool_is_in_hyper_v_range() {
        let pool = default_pool(Guid::from_u128(0xAB));
        assert_eq!(pool.ranges[0].start_mac_address, mac("00-15-5D-AB-00-00"));
        assert_eq!(pool.ranges[0].end_mac_address, mac("00-15-5D-AB-FF-FF"));
    }
}
