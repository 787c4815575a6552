//! Who an endpoint belongs to: its deterministic GUID and its name.
//!
//! The GUID is derived from (network name, container ID, ifname), so every command for one
//! attachment finds its endpoint with one call by ID, whatever else is on the node: ADD
//! creates it under that ID (HCN accepts a caller-chosen ID), a repeated ADD gets
//! `AlreadyExists`, DEL deletes it by ID, CHECK opens it by ID. No enumeration, no lookup by
//! name, no state file.
//!
//! The hash must never change, or endpoints made by one release would be orphaned by the next:
//! `std::hash::DefaultHasher` is explicitly unstable across releases, so this is FNV-1a 128
//! (a published, fixed algorithm of a few lines) formatted as an RFC 9562 version-8 UUID
//! (custom layout: the version and variant bits are set, the other 122 bits are the hash).

use hns::Guid;

/// Who an attachment's endpoint is: its deterministic ID and its name. Public because it is
/// the contract between releases and tools: an operator's tooling (and the node tools' tests)
/// find an attachment's endpoint by it, as every plugin command does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The endpoint's GUID ([`endpoint_guid`]).
    pub guid: Guid,
    /// The endpoint's name ([`endpoint_name`]).
    pub name: String,
}

impl Identity {
    /// Derived from the names alone, so every command, DEL included, finds what ADD made.
    pub fn of(network: &str, container_id: &str, ifname: &str) -> Identity {
        Identity {
            guid: endpoint_guid(network, container_id, ifname),
            name: endpoint_name(network, container_id, ifname),
        }
    }
}

/// FNV-1a 128-bit offset basis and prime (IETF draft-eastlake-fnv).
const FNV128_OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
const FNV128_PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;

/// Domain separator: a GUID of ours can never equal a hash of the same text made for another purpose.
const DOMAIN: &[u8] = b"cni-win endpoint v1";

fn fnv1a_128(parts: &[&[u8]]) -> u128 {
    let mut hash = FNV128_OFFSET;
    for part in parts {
        // Length-prefix each part so ("ab", "c") and ("a", "bc") differ.
        let length = (part.len() as u64).to_le_bytes();
        for byte in length.iter().chain(part.iter()) {
            hash ^= u128::from(*byte);
            hash = hash.wrapping_mul(FNV128_PRIME);
        }
    }
    hash
}

/// The endpoint GUID of one attachment: FNV-1a 128 of the three names as an RFC 9562 UUIDv8.
pub fn endpoint_guid(network: &str, container_id: &str, ifname: &str) -> Guid {
    let hash = fnv1a_128(&[
        DOMAIN,
        network.as_bytes(),
        container_id.as_bytes(),
        ifname.as_bytes(),
    ]);
    // Version 8 in bits 76..80 (the 13th hex digit), variant 0b10 in bits 62..64.
    let versioned = (hash & !(0xF << 76)) | (0x8 << 76);
    Guid::from_u128((versioned & !(0x3 << 62)) | (0x2 << 62))
}

/// The interface name the reference plugins implicitly use, which keeps their endpoint name.
const DEFAULT_IFNAME: &str = "eth0";

/// The endpoint name of one attachment.
///
/// For `eth0` it is the reference's `<containerID>_<network>`, so endpoints stay recognisable to
/// operators and to tooling written for the reference plugin, and the reference's endpoints
/// are found by DEL's by-name fallback. Another interface gets `<containerID>_<network>@<ifname>`:
/// `@` cannot occur in a container ID or network name, so two attachments never share a name
/// and [`parse_endpoint_name`] can always split it again.
pub fn endpoint_name(network: &str, container_id: &str, ifname: &str) -> String {
    if ifname == DEFAULT_IFNAME {
        format!("{container_id}_{network}")
    } else {
        format!("{container_id}_{network}@{ifname}")
    }
}

/// The (container ID, ifname) an endpoint name made by [`endpoint_name`] for `network` stands
/// for; `None` for names this rule did not make (Flannel's `cbr0_ep`, kube-proxy's endpoints).
pub fn parse_endpoint_name<'a>(network: &str, name: &'a str) -> Option<(&'a str, &'a str)> {
    let (base, ifname) = match name.split_once('@') {
        Some((base, ifname)) if !ifname.is_empty() => (base, ifname),
        Some(_) => return None,
        None => (name, DEFAULT_IFNAME),
    };
    let container_id = base.strip_suffix(network)?.strip_suffix('_')?;
    let valid =
        cni::validate::container_id(container_id).is_ok() && cni::validate::ifname(ifname).is_ok();
    valid.then_some((container_id, ifname))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guid_is_a_stable_uuidv8() {
        let guid = endpoint_guid("cbr0", "abc123", "eth0");
        // Pinned: a changed hash would orphan every endpoint created by an earlier release.
        assert_eq!(guid.to_string(), "28d52024-2888-84e1-aec2-a83715ae2213");
        let text = guid.to_string();
        assert_eq!(&text[14..15], "8", "version nibble");
        assert!("89ab".contains(&text[19..20]), "variant bits");
    }

    #[test]
    fn every_part_changes_the_guid() {
        let base = endpoint_guid("cbr0", "abc", "eth0");
        assert_ne!(base, endpoint_guid("cbr1", "abc", "eth0"));
        assert_ne!(base, endpoint_guid("cbr0", "abd", "eth0"));
        assert_ne!(base, endpoint_guid("cbr0", "abc", "eth1"));
        // Boundaries between parts matter.
        assert_ne!(
            endpoint_guid("cbr0a", "bc", "eth0"),
            endpoint_guid("cbr0", "abc", "eth0")
        );
    }

    #[test]
    fn names_follow_the_reference_for_eth0_and_stay_unique_otherwise() {
        assert_eq!(endpoint_name("cbr0", "abc", "eth0"), "abc_cbr0");
        assert_eq!(endpoint_name("cbr0", "abc", "eth1"), "abc_cbr0@eth1");
        assert_eq!(
            parse_endpoint_name("cbr0", "abc_cbr0"),
            Some(("abc", "eth0"))
        );
        assert_eq!(
            parse_endpoint_name("cbr0", "abc_cbr0@eth1"),
            Some(("abc", "eth1"))
        );
        for foreign in [
            "cbr0_ep",
            "cbr0",
            "_cbr0",
            "abc_cbr1",
            "abc_cbr0@",
            "x_vxlan0",
        ] {
            assert_eq!(parse_endpoint_name("cbr0", foreign), None, "{foreign}");
        }
        // Container IDs may contain the network name and underscores.
        assert_eq!(
            parse_endpoint_name("cbr0", "a_cbr0_b_cbr0"),
            Some(("a_cbr0_b", "eth0"))
        );
    }
}
