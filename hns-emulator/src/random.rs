//! Fresh GUIDs for objects created with the zero GUID.
//!
//! `RandomState` is seeded from the operating system's random source on every
//! platform std supports, so hashing a per-process counter with it gives
//! unpredictable, collision-free IDs without a random-number crate.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use hns::guid::Guid;

/// A new random (version 4) GUID.
pub fn new_guid() -> Guid {
    static SEEDS: OnceLock<(RandomState, RandomState)> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let (first, second) = SEEDS.get_or_init(|| (RandomState::new(), RandomState::new()));
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let half = |seed: &RandomState| {
        let mut hasher = seed.build_hasher();
        hasher.write_u64(count);
        hasher.write_u128(nanos);
        hasher.write_u32(std::process::id());
        hasher.finish()
    };
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&half(first).to_be_bytes());
    bytes[8..].copy_from_slice(&half(second).to_be_bytes());
    Guid::from_random_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guids_are_distinct_and_non_zero() {
        let ids: std::collections::HashSet<Guid> = (0..1000).map(|_| new_guid()).collect();
        assert_eq!(ids.len(), 1000);
        assert!(!ids.contains(&Guid::ZERO));
    }
}
