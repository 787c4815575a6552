//! Address values as HNS writes them: IP prefixes (`10.244.1.0/24`) and MAC
//! addresses (`00-15-5D-52-C0-00`).
//!
//! IPs themselves are [`std::net::IpAddr`], whose serde form is already the
//! string HNS expects. These two types exist because HNS's spelling is
//! narrower than what general-purpose parsers accept: a prefix always carries
//! `/<length>` (no bare address, no netmask), and a MAC is six hex pairs that
//! HNS writes upper-case and dash-separated. Parsing once at the edge means
//! code past it never re-validates a string, and a document that decodes is
//! one HNS would accept.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use ipnetwork::IpNetwork;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A value in an HCN document that does not have HNS's spelling.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressParseError {
    /// Not `<IP>/<length>` with a length the address family allows.
    #[error("{0:?} is not a CIDR prefix (expected e.g. 10.244.1.0/24 or fd00::/64)")]
    Prefix(String),
    /// Neither an IP address nor `<IP>/<length>`.
    #[error("{0:?} is neither an IP address nor a CIDR prefix (expected e.g. 10.96.0.0/12)")]
    AddressOrPrefix(String),
    /// Not six hex pairs separated by `-` or `:`.
    #[error("{0:?} is not a MAC address (expected e.g. 00-15-5D-52-C0-00)")]
    Mac(String),
}

/// An IP prefix: an address and a prefix length, kept exactly as written
/// (host bits included), so a subnet read from HNS is written back unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpPrefix(IpNetwork);

impl IpPrefix {
    /// `ip/length`; `None` when the length is too long for the address family.
    pub fn new(ip: IpAddr, length: u8) -> Option<IpPrefix> {
        IpNetwork::new(ip, length).ok().map(IpPrefix)
    }

    /// The address as written (for a subnet, usually the network address).
    pub fn ip(&self) -> IpAddr {
        self.0.ip()
    }

    /// The prefix length.
    pub fn length(&self) -> u8 {
        self.0.prefix()
    }

    /// The prefix as an [`IpNetwork`], for containment and arithmetic.
    pub fn network(&self) -> IpNetwork {
        self.0
    }

    /// Whether this is a default route's destination (`0.0.0.0/0` or `::/0`).
    pub fn is_default_route(&self) -> bool {
        self.length() == 0 && self.ip().is_unspecified()
    }

    /// The default route's destination for `ip`'s family.
    pub fn default_route_for(ip: IpAddr) -> IpPrefix {
        let any = match ip {
            IpAddr::V4(_) => IpAddr::from([0u8; 4]),
            IpAddr::V6(_) => IpAddr::from([0u16; 8]),
        };
        IpPrefix(IpNetwork::new(any, 0).expect("a zero length fits every family"))
    }
}

impl From<IpNetwork> for IpPrefix {
    fn from(network: IpNetwork) -> IpPrefix {
        IpPrefix(network)
    }
}

impl From<IpPrefix> for IpNetwork {
    fn from(prefix: IpPrefix) -> IpNetwork {
        prefix.0
    }
}

impl FromStr for IpPrefix {
    type Err = AddressParseError;

    fn from_str(text: &str) -> Result<IpPrefix, AddressParseError> {
        let invalid = || AddressParseError::Prefix(text.to_owned());
        let (ip, length) = text.split_once('/').ok_or_else(invalid)?;
        if length.is_empty() || !length.bytes().all(|b| b.is_ascii_digit()) || length.len() > 3 {
            return Err(invalid());
        }
        let ip: IpAddr = ip.parse().map_err(|_| invalid())?;
        let length: u8 = length.parse().map_err(|_| invalid())?;
        IpPrefix::new(ip, length).ok_or_else(invalid)
    }
}

impl fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&format!("{}/{}", self.ip(), self.length()))
    }
}

/// An entry of a list HNS reads as hosts or prefixes (`OutBoundNAT` `Exceptions`): `10.0.0.5`
/// or `10.0.0.0/8`, kept in the form it was written, since HNS takes either.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AddressOrPrefix {
    /// A single host, written without a length.
    Address(IpAddr),
    /// A prefix, written with its length.
    Prefix(IpPrefix),
}

impl AddressOrPrefix {
    /// The addresses it covers (a host is its /32 or /128).
    pub fn network(&self) -> IpNetwork {
        match self {
            AddressOrPrefix::Address(ip) => IpNetwork::from(*ip),
            AddressOrPrefix::Prefix(prefix) => prefix.network(),
        }
    }
}

impl From<IpPrefix> for AddressOrPrefix {
    fn from(prefix: IpPrefix) -> AddressOrPrefix {
        AddressOrPrefix::Prefix(prefix)
    }
}

impl FromStr for AddressOrPrefix {
    type Err = AddressParseError;

    fn from_str(text: &str) -> Result<AddressOrPrefix, AddressParseError> {
        let invalid = || AddressParseError::AddressOrPrefix(text.to_owned());
        if text.contains('/') {
            text.parse()
                .map(AddressOrPrefix::Prefix)
                .map_err(|_| invalid())
        } else {
            text.parse()
                .map(AddressOrPrefix::Address)
                .map_err(|_| invalid())
        }
    }
}

impl fmt::Display for AddressOrPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AddressOrPrefix::Address(ip) => fmt::Display::fmt(ip, f),
            AddressOrPrefix::Prefix(prefix) => fmt::Display::fmt(prefix, f),
        }
    }
}

/// A 48-bit MAC address. Parses either separator in any case; prints the
/// way HNS writes it (`00-15-5D-52-C0-00`), which is also what HNS compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MacAddress([u8; 6]);

impl MacAddress {
    /// The address with these six bytes.
    pub const fn new(bytes: [u8; 6]) -> MacAddress {
        MacAddress(bytes)
    }

    /// The six bytes, most significant first.
    pub fn bytes(&self) -> [u8; 6] {
        self.0
    }

    /// The address as a number, for pool arithmetic.
    pub fn to_u64(self) -> u64 {
        let mut wide = [0u8; 8];
        wide[2..].copy_from_slice(&self.0);
        u64::from_be_bytes(wide)
    }

    /// The address whose number is the low 48 bits of `value`.
    pub fn from_u64(value: u64) -> MacAddress {
        let wide = value.to_be_bytes();
        let mut bytes = [0u8; 6];
        bytes.copy_from_slice(&wide[2..]);
        MacAddress(bytes)
    }
}

impl FromStr for MacAddress {
    type Err = AddressParseError;

    fn from_str(text: &str) -> Result<MacAddress, AddressParseError> {
        let invalid = || AddressParseError::Mac(text.to_owned());
        let mut bytes = [0u8; 6];
        let mut parts = text.split(['-', ':']);
        for byte in &mut bytes {
            let part = parts.next().ok_or_else(invalid)?;
            if part.len() != 2 || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(invalid());
            }
            *byte = u8::from_str_radix(part, 16).map_err(|_| invalid())?;
        }
        match parts.next() {
            None => Ok(MacAddress(bytes)),
            Some(_) => Err(invalid()),
        }
    }
}

impl fmt::Display for MacAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        f.pad(&format!("{a:02X}-{b:02X}-{c:02X}-{d:02X}-{e:02X}-{g:02X}"))
    }
}

/// Serialises a value through its `Display` and decodes it through `FromStr`,
/// so the JSON form is exactly the text form above.
macro_rules! serde_as_text {
    ($($type:ty),*) => {$(
        impl Serialize for $type {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<$type, D::Error> {
                let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    )*};
}

serde_as_text!(IpPrefix, AddressOrPrefix, MacAddress);

/// Serde helpers for optional values that some HCN clients write as `""`
/// rather than leaving out (hcsshim omits them; a client without
/// `omitempty` sends the empty string). `""` reads as absent; absent is
/// never written.
pub(crate) mod empty_as_none {
    use std::fmt::Display;
    use std::str::FromStr;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S, T>(value: &Option<T>, serializer: S) -> Result<S::Ok, S::Error>
    where
        S: Serializer,
        T: Display,
    {
        match value {
            Some(value) => serializer.collect_str(value),
            None => serializer.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: FromStr<Err: Display>,
    {
        let text = Option::<std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        match text.as_deref() {
            None | Some("") => Ok(None),
            Some(text) => text.parse().map(Some).map_err(serde::de::Error::custom),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_need_a_length_and_round_trip_as_written() {
        for text in [
            "10.244.1.0/24",
            "10.244.1.5/24",
            "0.0.0.0/0",
            "fd00::/64",
            "::/0",
        ] {
            let prefix: IpPrefix = text.parse().unwrap();
            assert_eq!(prefix.to_string(), text);
            assert_eq!(
                serde_json::to_string(&prefix).unwrap(),
                format!("\"{text}\"")
            );
        }
        for bad in [
            "10.244.1.0",
            "10.244.1.0/",
            "10.244.1.0/33",
            "10.244.1.0/255.255.255.0",
            "10.244.1.0/+8",
            "fd00::/129",
            "bogus/8",
            "",
        ] {
            assert_eq!(
                bad.parse::<IpPrefix>(),
                Err(AddressParseError::Prefix(bad.to_owned())),
                "{bad}"
            );
        }
        assert!(serde_json::from_str::<IpPrefix>("\"10.0.0.0\"").is_err());
    }

    #[test]
    fn exceptions_keep_the_form_they_were_written_in() {
        let host: AddressOrPrefix = "10.0.0.5".parse().unwrap();
        let prefix: AddressOrPrefix = "10.0.0.0/8".parse().unwrap();
        assert_eq!(
            (host.to_string(), prefix.to_string()),
            ("10.0.0.5".into(), "10.0.0.0/8".into())
        );
        assert_eq!(host.network(), "10.0.0.5/32".parse::<IpNetwork>().unwrap());
        assert_eq!(prefix.network(), "10.0.0.0/8".parse::<IpNetwork>().unwrap());
        for bad in ["10.0.0", "10.0.0.0/33", "x", ""] {
            assert_eq!(
                bad.parse::<AddressOrPrefix>(),
                Err(AddressParseError::AddressOrPrefix(bad.to_owned()))
            );
        }
    }

    #[test]
    fn default_routes_are_recognised_per_family() {
        let v4 = IpPrefix::default_route_for("10.0.0.1".parse().unwrap());
        let v6 = IpPrefix::default_route_for("fd00::1".parse().unwrap());
        assert_eq!(
            (v4.to_string(), v6.to_string()),
            ("0.0.0.0/0".into(), "::/0".into())
        );
        assert!(v4.is_default_route() && v6.is_default_route());
        assert!(!"10.0.0.0/0".parse::<IpPrefix>().unwrap().is_default_route());
        assert!(!"0.0.0.0/8".parse::<IpPrefix>().unwrap().is_default_route());
    }

    #[test]
    fn macs_parse_either_separator_and_print_as_hns_does() {
        let mac: MacAddress = "0e-2a-0a-f4-01-05".parse().unwrap();
        assert_eq!(mac, "0E:2A:0A:F4:01:05".parse().unwrap());
        assert_eq!(mac.to_string(), "0E-2A-0A-F4-01-05");
        assert_eq!(
            serde_json::to_string(&mac).unwrap(),
            "\"0E-2A-0A-F4-01-05\""
        );
        assert_eq!(MacAddress::from_u64(mac.to_u64()), mac);
        assert_eq!(mac.to_u64(), 0x0E2A_0AF4_0105);
        for bad in [
            "0e-2a-0a-f4-01",
            "0e-2a-0a-f4-01-05-06",
            "0e-2a-0a-f4-01-zz",
            "0e2a0af40105",
            "+e-2a-0a-f4-01-05",
            "",
        ] {
            assert_eq!(
                bad.parse::<MacAddress>(),
                Err(AddressParseError::Mac(bad.to_owned())),
                "{bad}"
            );
        }
    }

    #[test]
    fn empty_strings_read_as_absent() {
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct Hop {
            #[serde(
                default,
                with = "empty_as_none",
                skip_serializing_if = "Option::is_none"
            )]
            hop: Option<IpAddr>,
        }
        let read = |json: &str| serde_json::from_str::<Hop>(json);
        assert_eq!(read(r#"{"hop":""}"#).unwrap(), Hop { hop: None });
        assert_eq!(read(r#"{}"#).unwrap(), Hop { hop: None });
        assert_eq!(read(r#"{"hop":null}"#).unwrap(), Hop { hop: None });
        assert_eq!(
            read(r#"{"hop":"10.0.0.1"}"#).unwrap().hop,
            Some("10.0.0.1".parse().unwrap())
        );
        assert!(read(r#"{"hop":"10.0.0"}"#).is_err());
        assert_eq!(serde_json::to_string(&Hop { hop: None }).unwrap(), "{}");
    }
}
