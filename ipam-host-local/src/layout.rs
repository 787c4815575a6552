//! The reference host-local's on-disk format: file names and reservation contents.
//!
//! Everything here must stay byte-compatible with containernetworking/plugins' `disk` store so
//! the reference binary and ours can share a data directory during a rolling upgrade.

use std::net::IpAddr;

/// The file locked (flock / LockFileEx) while a process works on the network directory.
pub const LOCK_FILE: &str = "lock";

/// `last_reserved_ip.<range set index>` holds the last address reserved from that set.
pub const LAST_RESERVED_PREFIX: &str = "last_reserved_ip.";

/// Whether this platform writes IPv6 reservation names with `_` for `:` (Windows forbids `:`).
pub const ESCAPES_COLONS: bool = cfg!(windows);

/// The reservation file name of `ip`: its canonical text, with `:` written as `_` when
/// `escape_colons` (the reference's `GetEscapedPath` on Windows).
pub fn ip_file_name(ip: IpAddr, escape_colons: bool) -> String {
    let text = ip.to_string();
    if escape_colons {
        text.replace(':', "_")
    } else {
        text
    }
}

/// The address a reservation file name stands for; `None` for any other file (including names
/// that parse but are not the canonical form, which neither implementation writes).
pub fn parse_ip_file_name(name: &str, escape_colons: bool) -> Option<IpAddr> {
    let text = if escape_colons {
        name.replace('_', ":")
    } else {
        name.to_owned()
    };
    let ip: IpAddr = text.parse().ok()?;
    (ip_file_name(ip, escape_colons) == name).then_some(ip)
}

/// Who holds a reservation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Owner {
    /// `containerID\r\nifname`, written since 2018.
    Attachment {
        container_id: String,
        ifname: String,
    },
    /// A bare container ID, written by host-local before 2018 (commit 1e8f9525).
    Legacy { container_id: String },
}

impl Owner {
    pub fn attachment(container_id: &str, ifname: &str) -> Owner {
        Owner::Attachment {
            container_id: container_id.to_owned(),
            ifname: ifname.to_owned(),
        }
    }

    pub fn container_id(&self) -> &str {
        match self {
            Owner::Attachment { container_id, .. } | Owner::Legacy { container_id } => container_id,
        }
    }

    /// The file content: `containerID\r\nifname` with no trailing newline, as the reference.
    pub fn content(&self) -> String {
        match self {
            Owner::Attachment {
                container_id,
                ifname,
            } => format!("{container_id}\r\n{ifname}"),
            Owner::Legacy { container_id } => container_id.clone(),
        }
    }

    /// The index key: both parts escaped to `[a-z0-9_.-]` plus `%XX`, joined by `@`. Upper case
    /// is escaped too, so IDs differing only in case stay apart on case-insensitive NTFS.
    pub fn key(&self) -> String {
        let ifname = match self {
            Owner::Attachment { ifname, .. } => ifname.as_str(),
            Owner::Legacy { .. } => "",
        };
        format!(
            "{}@{}",
            escape_key_part(self.container_id()),
            escape_key_part(ifname)
        )
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Owner::Attachment {
                container_id,
                ifname,
            } => write!(f, "container {container_id} interface {ifname}"),
            Owner::Legacy { container_id } => {
                write!(f, "container {container_id} (legacy ID-only reservation)")
            }
        }
    }
}

fn escape_key_part(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for byte in part.bytes() {
        if byte.is_ascii_lowercase() || byte.is_ascii_digit() || matches!(byte, b'_' | b'-' | b'.')
        {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// What a reservation file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    Owned(Owner),
    /// Zero bytes (or only whitespace): a writer crashed between create and write.
    Empty,
    /// Anything else, with the reason.
    Corrupt(String),
}

/// Parses a reservation file as the reference reads it: whitespace-trimmed, `\r\n` between the
/// container ID and the interface name.
pub fn parse_content(bytes: &[u8]) -> Content {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Content::Corrupt("not UTF-8 text".to_owned());
    };
    let text = text.trim();
    if text.is_empty() {
        return Content::Empty;
    }
    let plausible =
        |s: &str| !s.is_empty() && !s.chars().any(|c| c.is_whitespace() || c.is_control());
    match text.split_once("\r\n") {
        None if plausible(text) => Content::Owned(Owner::Legacy {
            container_id: text.to_owned(),
        }),
        Some((id, ifname)) if plausible(id) && plausible(ifname) => {
            Content::Owned(Owner::attachment(id, ifname))
        }
        _ => Content::Corrupt(format!(
            "{} is neither \"containerID\\r\\nifname\" nor a container ID",
            cni::quoted(&text.chars().take(80).collect::<String>())
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_escapes_ipv6_colons_and_reads_them_back() {
        let v6: IpAddr = "fd00::5".parse().unwrap();
        assert_eq!(ip_file_name(v6, true), "fd00__5");
        assert_eq!(ip_file_name(v6, false), "fd00::5");
        assert_eq!(parse_ip_file_name("fd00__5", true), Some(v6));
        assert_eq!(parse_ip_file_name("fd00::5", false), Some(v6));
        assert_eq!(parse_ip_file_name("fd00__5", false), None);
        let v4: IpAddr = "10.0.0.5".parse().unwrap();
        assert_eq!(ip_file_name(v4, true), "10.0.0.5");
        for other in [
            "lock",
            "last_reserved_ip.0",
            ".cni-win",
            "fd00:0::5",
            "010.0.0.5",
        ] {
            assert_eq!(parse_ip_file_name(other, false), None, "{other}");
        }
    }

    #[test]
    fn content_round_trips_in_the_reference_format() {
        let owner = Owner::attachment("abc123", "eth0");
        assert_eq!(owner.content(), "abc123\r\neth0");
        assert_eq!(parse_content(b"abc123\r\neth0"), Content::Owned(owner));
        assert_eq!(
            parse_content(b"  abc123 \n"),
            Content::Owned(Owner::Legacy {
                container_id: "abc123".into()
            })
        );
        assert_eq!(parse_content(b""), Content::Empty);
        assert_eq!(parse_content(b" \r\n"), Content::Empty);
        assert!(matches!(parse_content(b"a b\r\neth0"), Content::Corrupt(_)));
        assert!(matches!(parse_content(b"a\r\nb\r\nc"), Content::Corrupt(_)));
        assert!(matches!(parse_content(&[0xff, 0xfe]), Content::Corrupt(_)));
    }

    #[test]
    fn keys_are_safe_file_names_and_tell_case_apart() {
        assert_eq!(Owner::attachment("abc", "eth0").key(), "abc@eth0");
        assert_eq!(Owner::attachment("ABC", "eth0").key(), "%41%42%43@eth0");
        assert_eq!(Owner::attachment("a", "e@\\*").key(), "a@e%40%5C%2A");
        assert_eq!(
            Owner::Legacy {
                container_id: "abc".into()
            }
            .key(),
            "abc@"
        );
    }
}
