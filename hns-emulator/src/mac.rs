//! MAC addresses as HNS writes them (`00-15-5D-52-C0-00`) and pool arithmetic.

use crate::guid::Guid;
use crate::schema::{MacPool, MacRange};

/// A 48-bit MAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mac(u64);

impl Mac {
    /// Parses `aa-bb-cc-dd-ee-ff` or `aa:bb:cc:dd:ee:ff`, any case.
    pub fn parse(text: &str) -> Option<Mac> {
        let parts: Vec<&str> = text.split(['-', ':']).collect();
        if parts.len() != 6 || parts.iter().any(|part| part.len() != 2) {
            return None;
        }
        parts
            .iter()
            .try_fold(0u64, |acc, part| {
                u8::from_str_radix(part, 16)
                    .ok()
                    .map(|byte| acc << 8 | u64::from(byte))
            })
            .map(Mac)
    }

    /// Upper-case, dash-separated.
    pub fn to_hns_string(self) -> String {
        let bytes = self.0.to_be_bytes();
        bytes[2..]
            .iter()
            .map(|byte| format!("{byte:02X}"))
            .collect::<Vec<_>>()
            .join("-")
    }

    fn offset(self, by: u64) -> Mac {
        Mac(self.0 + by)
    }
}

/// The pool HNS-like default: `00-15-5D-XX-00-00` to `00-15-5D-XX-FF-FF`, with
/// `XX` taken from the network GUID so networks get distinct ranges.
pub fn default_pool(network: Guid) -> MacPool {
    let selector = (network.as_u128() & 0xFF) as u8;
    let start = Mac(0x0015_5D00_0000 | u64::from(selector) << 16);
    MacPool {
        ranges: vec![MacRange {
            start_mac_address: start.to_hns_string(),
            end_mac_address: start.offset(0xFFFF).to_hns_string(),
        }],
    }
}

/// The distributed-router MAC given to an overlay network that has none:
/// locally administered (`02-...`), so it never collides with pool addresses.
pub fn default_dr_mac(network: Guid) -> String {
    Mac(0x0215_5D00_0000 | (network.as_u128() & 0xFF_FFFF) as u64).to_hns_string()
}

/// Validated pool: inclusive ranges.
#[derive(Debug, Clone)]
pub struct Pool {
    ranges: Vec<(Mac, Mac)>,
}

impl Pool {
    /// Checks every range parses and is ordered; the error names the bad value.
    pub fn new(pool: &MacPool) -> Result<Pool, String> {
        let ranges = pool
            .ranges
            .iter()
            .map(|range| {
                let start = Mac::parse(&range.start_mac_address).ok_or_else(|| {
                    format!(
                        "MacPool StartMacAddress {:?} is not a MAC",
                        range.start_mac_address
                    )
                })?;
                let end = Mac::parse(&range.end_mac_address).ok_or_else(|| {
                    format!(
                        "MacPool EndMacAddress {:?} is not a MAC",
                        range.end_mac_address
                    )
                })?;
                if start > end {
                    return Err(format!(
                        "MacPool range {} > {}",
                        range.start_mac_address, range.end_mac_address
                    ));
                }
                Ok((start, end))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Pool { ranges })
    }

    /// Number of addresses.
    pub fn len(&self) -> u64 {
        self.ranges
            .iter()
            .map(|(start, end)| end.0 - start.0 + 1)
            .sum()
    }

    /// The `index`-th address (wrapping).
    pub fn nth(&self, index: u64) -> Option<Mac> {
        let total = self.len();
        if total == 0 {
            return None;
        }
        let mut index = index % total;
        for (start, end) in &self.ranges {
            let size = end.0 - start.0 + 1;
            if index < size {
                return Some(start.offset(index));
            }
            index -= size;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_separators() {
        assert_eq!(
            Mac::parse("0e-2a-0a-f4-01-05"),
            Mac::parse("0E:2A:0A:F4:01:05")
        );
        assert_eq!(
            Mac::parse("0e-2a-0a-f4-01-05")
                .map(Mac::to_hns_string)
                .as_deref(),
            Some("0E-2A-0A-F4-01-05")
        );
        assert!(Mac::parse("0e-2a-0a-f4-01").is_none());
        assert!(Mac::parse("0e-2a-0a-f4-01-zz").is_none());
    }

    #[test]
    fn pool_walks_ranges_in_order() {
        let pool = Pool::new(&MacPool {
            ranges: vec![
                MacRange {
                    start_mac_address: "00-15-5D-00-00-FE".into(),
                    end_mac_address: "00-15-5D-00-00-FF".into(),
                },
                MacRange {
                    start_mac_address: "00-15-5D-00-10-00".into(),
                    end_mac_address: "00-15-5D-00-10-00".into(),
                },
            ],
        })
        .unwrap();
        assert_eq!(pool.len(), 3);
        let macs: Vec<String> = (0..4)
            .map(|i| pool.nth(i).unwrap().to_hns_string())
            .collect();
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
    fn default_pool_is_in_hyper_v_range() {
        let pool = default_pool(Guid::from_u128(0xAB));
        assert_eq!(pool.ranges[0].start_mac_address, "00-15-5D-AB-00-00");
        assert_eq!(pool.ranges[0].end_mac_address, "00-15-5D-AB-FF-FF");
    }
}
