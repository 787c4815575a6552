//! Protocols and ports as NetworkPolicy names them and HNS matches them.

use std::fmt;

use crate::invalid::Invalid;

/// A protocol HNS ACLs can match with ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// TCP, the API's default.
    Tcp,
    /// UDP.
    Udp,
}

/// What a policy's or a container's `protocol` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ApiProtocol {
    /// One HNS matches.
    Matched(Protocol),
    /// SCTP: valid in the API, but Windows has no SCTP (upstream's e2e suite skips SCTP on
    /// Windows for that reason) and HNS ACLs match ports of TCP and UDP only, so nothing
    /// SCTP can reach or leave a Windows pod, and nothing can be programmed for it.
    Sctp,
}

impl Protocol {
    /// The IANA number HNS takes in an ACL's `Protocols`.
    pub fn number(self) -> u8 {
        match self {
            Protocol::Tcp => 6,
            Protocol::Udp => 17,
        }
    }

    /// Reads an API `protocol` (absent is TCP); `field` names it for the message.
    pub(crate) fn from_api(value: Option<&str>, field: &str) -> Result<ApiProtocol, Invalid> {
        match value {
            None | Some("TCP") => Ok(ApiProtocol::Matched(Protocol::Tcp)),
            Some("UDP") => Ok(ApiProtocol::Matched(Protocol::Udp)),
            Some("SCTP") => Ok(ApiProtocol::Sctp),
            Some(other) => Err(Invalid::new(
                field,
                format!("{other:?} is not a protocol (TCP, UDP or SCTP)"),
            )),
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
        })
    }
}

/// An inclusive range of ports; one port is a range of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortRange {
    /// The first port.
    pub first: u16,
    /// The last port, not below `first`.
    pub last: u16,
}

impl PortRange {
    /// The range of the one port `port`.
    pub fn single(port: u16) -> PortRange {
        PortRange {
            first: port,
            last: port,
        }
    }

    /// Whether `port` is in the range.
    pub fn contains(self, port: u16) -> bool {
        (self.first..=self.last).contains(&port)
    }
}

/// HNS's spelling: `80` or `8000-8080`.
impl fmt::Display for PortRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.first == self.last {
            write!(f, "{}", self.first)
        } else {
            write!(f, "{}-{}", self.first, self.last)
        }
    }
}

/// Sorts `ranges` and merges those that overlap or touch, so one set of ports has one spelling.
pub(crate) fn merge(mut ranges: Vec<PortRange>) -> Vec<PortRange> {
    ranges.sort();
    let mut merged: Vec<PortRange> = Vec::with_capacity(ranges.len());
    for range in ranges {
        match merged.last_mut() {
            Some(last) if u32::from(range.first) <= u32::from(last.last) + 1 => {
                last.last = last.last.max(range.last);
            }
            _ => merged.push(range),
        }
    }
    merged
}

/// Reads a port number of the API (an `int32`), which must be 1-65535.
pub(crate) fn port_number(value: i32, field: &str) -> Result<u16, Invalid> {
    u16::try_from(value)
        .ok()
        .filter(|port| *port != 0)
        .ok_or_else(|| Invalid::new(field, format!("{value} is not a port (1-65535)")))
}

/// Checks a port name as the API server does (an IANA service name: 1-15 lower-case letters,
/// digits and inner single hyphens, at least one letter).
pub(crate) fn check_port_name(name: &str, field: &str) -> Result<(), Invalid> {
    let valid = (1..=15).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && name.bytes().any(|b| b.is_ascii_lowercase())
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if valid {
        Ok(())
    } else {
        Err(Invalid::new(
            field,
            format!(
                "{name:?} is not a port number or name (a name is 1-15 lower-case letters, digits and single inner hyphens, with a letter)"
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_defaults_to_tcp_and_refuses_unknown_names() {
        assert_eq!(
            Protocol::from_api(None, "p").unwrap(),
            ApiProtocol::Matched(Protocol::Tcp)
        );
        assert_eq!(
            Protocol::from_api(Some("UDP"), "p").unwrap(),
            ApiProtocol::Matched(Protocol::Udp)
        );
        assert_eq!(
            Protocol::from_api(Some("SCTP"), "p").unwrap(),
            ApiProtocol::Sctp
        );
        let lower = Protocol::from_api(Some("tcp"), "spec.ingress[0].ports[0].protocol");
        assert_eq!(
            lower.unwrap_err().field,
            "spec.ingress[0].ports[0].protocol",
            "the API's protocol names are upper case"
        );
        assert_eq!(Protocol::Tcp.number(), 6);
        assert_eq!(Protocol::Udp.number(), 17);
    }

    #[test]
    fn ranges_merge_into_one_spelling() {
        let merged = merge(vec![
            PortRange {
                first: 90,
                last: 95,
            },
            PortRange::single(81),
            PortRange::single(80),
            PortRange {
                first: 85,
                last: 91,
            },
            PortRange::single(80),
            PortRange::single(65535),
        ]);
        let spelt: Vec<String> = merged.iter().map(ToString::to_string).collect();
        assert_eq!(spelt, ["80-81", "85-95", "65535"]);
    }

    #[test]
    fn port_numbers_are_1_to_65535() {
        assert_eq!(port_number(80, "p").unwrap(), 80);
        assert_eq!(port_number(65535, "p").unwrap(), 65535);
        assert!(port_number(0, "p").is_err());
        assert!(port_number(65536, "p").is_err());
        assert!(port_number(-1, "p").is_err());
    }

    #[test]
    fn port_names_follow_the_api() {
        for good in ["serve-80-tcp", "http", "a1"] {
            assert!(check_port_name(good, "p").is_ok(), "{good}");
        }
        for bad in [
            "",
            "80",
            "Serve",
            "-http",
            "http-",
            "a--b",
            "sixteen-chars-xx",
        ] {
            assert!(check_port_name(bad, "p").is_err(), "{bad}");
        }
    }
}
