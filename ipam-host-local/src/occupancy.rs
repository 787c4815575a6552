//! The occupancy map: one bit per position of a range set, set when the position is believed
//! reserved, so allocation finds a free address without trying addresses one by one.
//!
//! The map is a *hint*. The reservation files decide: a bit wrongly clear costs one failed link
//! (and the bit is then set); a bit wrongly set hides a free address until the next rebuild,
//! which runs before any "pool exhausted" answer. So the map is updated in place, without
//! fsync, and any damage to it is harmless.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use cni::Error;

use crate::fsutil::{Access, OpenErrorExt, io_error, open_regular, read_capped};

/// First bytes of a map file. The space in it guarantees the reference's release-by-content
/// scan (which walks subdirectories too) can never mistake the file for a reservation.
const HEADER: &[u8] = b"cni-win occupancy v1\n";

/// Sets larger than this (a /12 of IPv4, a /108 of IPv6) get no map: in pools that large the
/// address after the last reserved one is free in all but pathological cases.
pub const MAX_MAPPED_POSITIONS: u128 = 1 << 20;

/// How many reserved addresses in a row an unmapped set tries before giving up.
pub const UNMAPPED_PROBE_LIMIT: u128 = 1 << 16;

#[derive(Debug)]
pub enum Occupancy {
    Mapped {
        file: File,
        bits: Vec<u8>,
        size: usize,
    },
    /// No map: every position is a candidate, and only the link decides.
    Unmapped { size: u128 },
}

impl Occupancy {
    /// Opens (or creates) the map for a set of `size` positions, and says whether it holds a
    /// map at all: a new, empty, short or garbage file reads as all-free and `false`, which
    /// makes the caller rebuild (an all-free map of a busy set would cost a failed link per
    /// taken address). A link or special file in its place is an error (the caller replaces
    /// the index).
    pub fn open(path: &Path, size: u128) -> Result<(Occupancy, bool), Error> {
        if size > MAX_MAPPED_POSITIONS {
            return Ok((Occupancy::Unmapped { size }, true));
        }
        let size = size as usize;
        let mut file = open_regular(path, Access::ReadWriteCreate)
            .map_err(|e| e.into_error("open occupancy map", path))?;
        let expected = HEADER.len() + size.div_ceil(8);
        let mut content =
            read_capped(&mut file, expected as u64, path, "occupancy map").unwrap_or_default();
        let valid = content.len() == expected && content.starts_with(HEADER);
        let bits = if valid {
            content.split_off(HEADER.len())
        } else {
            vec![0; size.div_ceil(8)]
        };
        Ok((Occupancy::Mapped { file, bits, size }, valid))
    }

    /// The first position from `from` on (wrapping) believed free.
    pub fn next_free(&self, from: u128) -> Option<u128> {
        match self {
            Occupancy::Unmapped { size } => Some(from % size),
            Occupancy::Mapped { bits, size, .. } => {
                let from = (from % *size as u128) as usize;
                scan(bits, from, *size)
                    .or_else(|| scan(bits, 0, from))
                    .map(|p| p as u128)
            }
        }
    }

    /// How many candidates a full search may try before the set counts as exhausted.
    pub fn search_limit(&self) -> u128 {
        match self {
            Occupancy::Unmapped { size } => (*size).min(UNMAPPED_PROBE_LIMIT),
            Occupancy::Mapped { size, .. } => *size as u128,
        }
    }

    /// Records `position` as reserved or free, on disk at once.
    pub fn mark(&mut self, position: u128, reserved: bool, path: &Path) -> Result<(), Error> {
        let Occupancy::Mapped { file, bits, size } = self else {
            return Ok(());
        };
        let position = position as usize;
        if position >= *size {
            return Ok(());
        }
        let (index, mask) = (position / 8, 1u8 << (position % 8));
        let before = bits[index];
        if reserved {
            bits[index] |= mask;
        } else {
            bits[index] &= !mask;
        }
        if bits[index] == before {
            return Ok(());
        }
        file.seek(SeekFrom::Start((HEADER.len() + index) as u64))
            .and_then(|_| file.write_all(&bits[index..=index]))
            .map_err(|e| io_error("update", path, &e))
    }

    /// Marks `position` reserved in memory only (a rebuild saves the whole map at the end).
    pub fn note_reserved(&mut self, position: u128) {
        if let Occupancy::Mapped { bits, size, .. } = self
            && position < *size as u128
        {
            bits[position as usize / 8] |= 1 << (position % 8);
        }
    }

    /// Clears the whole map (before a rebuild marks what the reservation files say).
    pub fn clear(&mut self) {
        if let Occupancy::Mapped { bits, .. } = self {
            bits.fill(0);
        }
    }

    /// Writes the whole map (after a rebuild).
    pub fn save(&mut self, path: &Path) -> Result<(), Error> {
        let Occupancy::Mapped { file, bits, .. } = self else {
            return Ok(());
        };
        let mut content = HEADER.to_vec();
        content.extend_from_slice(bits);
        file.set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(&content))
            .map_err(|e| io_error("write", path, &e))
    }
}

/// The first clear bit in `lo..hi`, skipping full bytes at a time.
fn scan(bits: &[u8], lo: usize, hi: usize) -> Option<usize> {
    let mut position = lo;
    while position < hi {
        let byte = bits[position / 8];
        if position.is_multiple_of(8) && byte == 0xff {
            position += 8;
            continue;
        }
        if byte & (1 << (position % 8)) == 0 {
            return Some(position);
        }
        position += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_wraps_and_skips_full_bytes() {
        let mut bits = vec![0xff; 4];
        bits[1] = 0b1110_1111;
        assert_eq!(scan(&bits, 0, 32), Some(12));
        assert_eq!(scan(&bits, 13, 32), None);
        assert_eq!(scan(&bits, 0, 12), None);
    }
}
