//! GUIDs as HCN uses them: object identities passed by pointer to the API and
//! written as strings inside JSON documents.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A Windows GUID.
///
/// Stored as the 128-bit value of its canonical string form, so that two GUIDs
/// compare equal whatever case or braces they were written with ("Upper and
/// lowercase are both valid for Windows GUIDs"). The all-zero GUID is special
/// in HCN: passed to a create call it asks HNS to choose the ID, and in JSON an
/// empty string or a missing field means the same thing.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Guid(u128);

/// Why a string is not a GUID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid GUID {input:?}: expected xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (hex digits, optional braces)"
)]
pub struct GuidParseError {
    input: String,
}

impl Guid {
    /// The all-zero GUID (`00000000-0000-0000-0000-000000000000`).
    pub const ZERO: Guid = Guid(0);

    /// Builds a GUID from its 128-bit value (the hex digits of the canonical form, in order).
    pub const fn from_u128(value: u128) -> Guid {
        Guid(value)
    }

    /// The 128-bit value (the hex digits of the canonical form, in order).
    pub const fn as_u128(self) -> u128 {
        self.0
    }

    /// True for the all-zero GUID.
    pub const fn is_zero(&self) -> bool {
        self.0 == 0
    }

    /// The Windows `GUID` struct fields: `Data1`, `Data2`, `Data3`, `Data4`.
    pub fn to_fields(self) -> (u32, u16, u16, [u8; 8]) {
        let bytes = self.0.to_be_bytes();
        let data1 = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
        let data2 = u16::from_be_bytes([bytes[4], bytes[5]]);
        let data3 = u16::from_be_bytes([bytes[6], bytes[7]]);
        let mut data4 = [0u8; 8];
        data4.copy_from_slice(&bytes[8..]);
        (data1, data2, data3, data4)
    }

    /// Inverse of [`Guid::to_fields`].
    pub fn from_fields(data1: u32, data2: u16, data3: u16, data4: [u8; 8]) -> Guid {
        let mut bytes = [0u8; 16];
        bytes[..4].copy_from_slice(&data1.to_be_bytes());
        bytes[4..6].copy_from_slice(&data2.to_be_bytes());
        bytes[6..8].copy_from_slice(&data3.to_be_bytes());
        bytes[8..].copy_from_slice(&data4);
        Guid(u128::from_be_bytes(bytes))
    }

    /// Upper-case canonical form, the way HNS writes IDs in its replies.
    pub fn to_upper_string(self) -> String {
        self.to_string().to_ascii_uppercase()
    }

    /// Turns 16 random bytes into a version-4 (random) GUID.
    pub fn from_random_bytes(bytes: [u8; 16]) -> Guid {
        let mut value = u128::from_be_bytes(bytes);
        value &= !(0xF << 76); // version nibble
        value |= 0x4 << 76;
        value &= !(0x3 << 62); // variant bits
        value |= 0x2 << 62;
        Guid(value)
    }
}

impl fmt::Display for Guid {
    /// Lower-case canonical form `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = format!("{:032x}", self.0);
        write!(
            f,
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        )
    }
}

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Guid({self})")
    }
}

impl FromStr for Guid {
    type Err = GuidParseError;

    fn from_str(input: &str) -> Result<Guid, GuidParseError> {
        let error = || GuidParseError {
            input: input.to_owned(),
        };
        let trimmed = input.trim();
        let inner = match trimmed.strip_prefix('{') {
            Some(rest) => rest.strip_suffix('}').ok_or_else(error)?,
            None => trimmed,
        };
        let groups: Vec<&str> = inner.split('-').collect();
        let lengths = [8, 4, 4, 4, 12];
        if groups.len() != lengths.len()
            || groups
                .iter()
                .zip(lengths)
                .any(|(group, len)| group.len() != len)
        {
            return Err(error());
        }
        let digits: String = groups.concat();
        if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(error());
        }
        u128::from_str_radix(&digits, 16)
            .map(Guid)
            .map_err(|_| error())
    }
}

impl Serialize for Guid {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Guid {
    /// Accepts any case, optional braces, and the empty string (= [`Guid::ZERO`]).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Guid, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        if text.is_empty() {
            return Ok(Guid::ZERO);
        }
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_any_case_and_braces() {
        let lower: Guid = "9a8f2b1c-0d3e-4f50-8a6b-7c8d9e0f1a2b".parse().unwrap();
        let upper: Guid = "{9A8F2B1C-0D3E-4F50-8A6B-7C8D9E0F1A2B}".parse().unwrap();
        assert_eq!(lower, upper);
        assert_eq!(lower.to_string(), "9a8f2b1c-0d3e-4f50-8a6b-7c8d9e0f1a2b");
        assert_eq!(
            lower.to_upper_string(),
            "9A8F2B1C-0D3E-4F50-8A6B-7C8D9E0F1A2B"
        );
    }

    #[test]
    fn rejects_malformed() {
        for bad in [
            "",
            "9a8f2b1c",
            "9a8f2b1c-0d3e-4f50-8a6b-7c8d9e0f1a2",
            "{9a8f2b1c-0d3e-4f50-8a6b-7c8d9e0f1a2b",
            "g a8f2b1c-0d3e-4f50-8a6b-7c8d9e0f1a2b",
            "9a8f2b1c0d3e-4f50-8a6b-7c8d-9e0f1a2b",
        ] {
            assert!(bad.parse::<Guid>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn fields_round_trip() {
        let guid: Guid = "01234567-89ab-cdef-0123-456789abcdef".parse().unwrap();
        let (d1, d2, d3, d4) = guid.to_fields();
        assert_eq!((d1, d2, d3), (0x01234567, 0x89ab, 0xcdef));
        assert_eq!(d4, [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]);
        assert_eq!(Guid::from_fields(d1, d2, d3, d4), guid);
    }

    #[test]
    fn random_bytes_give_version_4() {
        let guid = Guid::from_random_bytes([0xFF; 16]);
        assert_eq!(&guid.to_string()[14..15], "4");
        assert_eq!(&guid.to_string()[19..20], "b");
    }

    #[test]
    fn json_empty_string_is_zero() {
        let guid: Guid = serde_json::from_str("\"\"").unwrap();
        assert!(guid.is_zero());
    }
}
