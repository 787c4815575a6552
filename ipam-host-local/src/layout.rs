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

/// The (container ID, ifname) pairs under which node components reserve kube-proxy's source
/// VIP in the pods' store: `dummy`/`dummy` (sig-windows-tools' and microsoft/SDN's kube-proxy
/// start scripts, k3s) and `kube-proxy`/`source-vip` (RKE2).
pub const NODE_COMPONENTS: &[(&str, &str)] = &[("dummy", "dummy"), ("kube-proxy", "source-vip")];

/// Who holds a reservation.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Owner {
    /// `containerID\r\nifname`, written since 2018.
    Attachment {
        /// `CNI_CONTAINERID` of the attachment.
        container_id: String,
        /// `CNI_IFNAME`: one container may hold one address per interface.
        ifname: String,
    },
    /// A bare container ID, written by host-local before 2018 (commit 1e8f9525).
    Legacy {
        /// `CNI_CONTAINERID`: such a file cannot tell which interface it was for.
        container_id: String,
    },
}

impl Owner {
    /// The owner a new reservation is written with: always the two-line form.
    pub fn attachment(container_id: &str, ifname: &str) -> Owner {
        Owner::Attachment {
            container_id: container_id.to_owned(),
            ifname: ifname.to_owned(),
        }
    }

    /// Whether a node component, not a pod, holds the reservation: kube-proxy's source VIP on
    /// overlay networks, which its start script reserves by running host-local directly in
    /// the pods' store, as [`NODE_COMPONENTS`] lists (a pre-2018 host-local wrote such a
    /// reservation as the bare container ID `dummy`). No runtime lists these attachments, so
    /// no collector may release them.
    pub fn is_node_component(&self) -> bool {
        match self {
            Owner::Attachment {
                container_id,
                ifname,
            } => NODE_COMPONENTS.contains(&(container_id.as_str(), ifname.as_str())),
            Owner::Legacy { container_id } => container_id == "dummy",
        }
    }

    /// The container in both forms, so DEL and GC can match old files too.
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

    /// The index key: 32 hex digits of a 128-bit FNV-1a hash of the reservation content.
    ///
    /// A hash rather than an escaped copy of the names, so every attachment the `cni` crate
    /// accepts has a key: a container ID of any length (libcni sets none) and an ifname with
    /// control characters both make a short, case-insensitively unique file name on every
    /// filesystem. A collision costs nothing but a wasted read: every entry is verified against
    /// the reservation file it names before it is believed.
    pub fn key(&self) -> String {
        const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
        const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
        let hash = self
            .content()
            .bytes()
            .fold(OFFSET, |h, b| (h ^ u128::from(b)).wrapping_mul(PRIME));
        format!("{hash:032x}")
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

/// What a reservation file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Content {
    /// A reservation with its owner.
    Owned(Owner),
    /// Zero bytes (or only whitespace): a writer crashed between create and write.
    Empty,
    /// Anything else, with the reason.
    Corrupt(String),
}

/// Parses a reservation file as the reference reads it: whitespace-trimmed, `\r\n` between the
/// container ID and the interface name.
///
/// Everything `cni` validation accepts is read back as written: IDs and ifnames hold no
/// whitespace (libcni refuses it), but an ifname may hold any other character, control
/// characters included. A corrupt file's content is never quoted: the file may be foreign.
pub fn parse_content(bytes: &[u8]) -> Content {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Content::Corrupt(format!("{} bytes that are not UTF-8 text", bytes.len()));
    };
    let text = text.trim();
    if text.is_empty() {
        return Content::Empty;
    }
    let plausible = |s: &str| !s.is_empty() && !s.chars().any(char::is_whitespace);
    match text.split_once("\r\n") {
        None if plausible(text) => Content::Owned(Owner::Legacy {
            container_id: text.to_owned(),
        }),
        Some((id, ifname)) if plausible(id) && plausible(ifname) => {
            Content::Owned(Owner::attachment(id, ifname))
        }
        _ => Content::Corrupt(format!(
            "{} bytes that are neither \"containerID\\r\\nifname\" nor a container ID",
            bytes.len()
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
    fn control_characters_round_trip_and_corrupt_content_is_never_quoted() {
        for ifname in ["e\u{1}", "e\u{7f}", "e\u{1b}[31m", "e\u{81}"] {
            let owner = Owner::attachment("id", ifname);
            assert_eq!(
                parse_content(owner.content().as_bytes()),
                Content::Owned(owner)
            );
        }
        let Content::Corrupt(why) = parse_content(b"SECRET token\r\nx y") else {
            panic!("not corrupt");
        };
        assert!(!why.contains("SECRET"), "{why}");
    }

    #[test]
    fn keys_are_short_safe_file_names_and_tell_case_apart() {
        let long = Owner::attachment(&"A".repeat(5000), "e\u{1}");
        assert_eq!(long.key().len(), 32);
        assert!(
            long.key()
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_ne!(
            Owner::attachment("abc", "eth0").key(),
            Owner::attachment("ABC", "eth0").key()
        );
        assert_ne!(
            Owner::attachment("abc", "eth0").key(),
            Owner::Legacy {
                container_id: "abc".into()
            }
            .key()
        );
    }
}
