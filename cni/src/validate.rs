//! The spec's rules for identifiers that end up in file names, HNS object names and exec paths.
//!
//! These strings reach the filesystem (IPAM stores, logs) and HNS, so anything outside the rules is
//! refused before it is used: no path traversal, no shell or JSON metacharacters.

use crate::error::{Error, ErrorCode};
use crate::quote::quoted;

/// Network names and container IDs: `^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$` (libcni `pkg/utils`).
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) if first.is_ascii_alphanumeric() => {
            chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        }
        _ => false,
    }
}

/// Validates the config's `name`: code 7 when it breaks the spec's rule.
pub fn network_name(name: &str) -> Result<(), Error> {
    if name.is_empty() {
        return Err(Error::invalid_config(
            "network config is missing \"name\"; set it to the HNS network's name (e.g. \"cbr0\")",
        ));
    }
    if !is_identifier(name) {
        return Err(Error::invalid_config(format!(
            "network name {} is invalid: it must start with a letter or digit and contain only \
             letters, digits, '_', '.' and '-'",
            quoted(name)
        )));
    }
    Ok(())
}

/// Validates `CNI_CONTAINERID`: code 3 when empty (libcni's `ErrUnknownContainer`), 4 when malformed.
pub fn container_id(id: &str) -> Result<(), Error> {
    if id.is_empty() {
        return Err(Error::new(
            ErrorCode::UnknownContainer,
            "CNI_CONTAINERID is empty",
        ));
    }
    if !is_identifier(id) {
        return Err(Error::invalid_env(
            "CNI_CONTAINERID",
            format!(
                "{} is invalid: it must start with a letter or digit and contain only letters, \
                 digits, '_', '.' and '-'",
                quoted(id)
            ),
        ));
    }
    Ok(())
}

/// Validates `CNI_IFNAME` by libcni's rules: 1-15 bytes (IFNAMSIZ - 1), not `.`/`..`, no `/`,
/// `:` or whitespace. Code 4 on failure.
pub fn ifname(name: &str) -> Result<(), Error> {
    let problem = if name.is_empty() {
        Some("is empty")
    } else if name.len() > 15 {
        Some("is longer than 15 bytes")
    } else if name == "." || name == ".." {
        Some("must not be '.' or '..'")
    } else if name
        .chars()
        .any(|c| c == '/' || c == ':' || c.is_whitespace())
    {
        Some("must not contain '/', ':' or whitespace")
    } else {
        None
    };
    match problem {
        Some(problem) => Err(Error::invalid_env(
            "CNI_IFNAME",
            format!("{} {problem}", quoted(name)),
        )),
        None => Ok(()),
    }
}

/// Validates a plugin `type` that will be looked up in `CNI_PATH`: an identifier, so it can
/// never name a binary outside the plugin directories. Code 7 naming the config field.
pub fn plugin_type(field: &str, name: &str) -> Result<(), Error> {
    if is_identifier(name) && !name.contains("..") {
        Ok(())
    } else {
        Err(Error::invalid_config(format!(
            "{field} {} is not a plugin name: it must be a bare binary name found in CNI_PATH \
             (letters, digits, '_', '.', '-'; no path separators or '..')",
            quoted(name)
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_follow_the_libcni_pattern() {
        for good in ["cbr0", "flannel.4096", "vxlan0", "a", "9-x_y.z", "Abc123"] {
            assert!(network_name(good).is_ok(), "{good}");
            assert!(container_id(good).is_ok(), "{good}");
        }
        for bad in [
            "-x", ".x", "_x", "a/b", "a\\b", "a b", "a:b", "é", "a\n", "a;b",
        ] {
            assert_eq!(
                network_name(bad).unwrap_err().code(),
                ErrorCode::InvalidConfig,
                "{bad}"
            );
            assert_eq!(
                container_id(bad).unwrap_err().code(),
                ErrorCode::InvalidEnvironment,
                "{bad}"
            );
        }
    }

    #[test]
    fn empty_values_get_their_own_codes() {
        assert_eq!(
            network_name("").unwrap_err().code(),
            ErrorCode::InvalidConfig
        );
        assert_eq!(
            container_id("").unwrap_err().code(),
            ErrorCode::UnknownContainer
        );
    }

    #[test]
    fn ifnames_follow_libcni_rules() {
        for good in [
            "eth0",
            "Ethernet 0".trim_end_matches(" 0"),
            "a",
            "123456789012345",
        ] {
            assert!(ifname(good).is_ok(), "{good}");
        }
        // The limit is 15 bytes, as libcni's `len` (IFNAMSIZ - 1): 8 characters, 16 bytes.
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "a:b",
            "a b",
            "\t",
            "1234567890123456",
            "éééééééé",
        ] {
            let err = ifname(bad).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidEnvironment, "{bad}");
            assert!(err.msg().starts_with("CNI_IFNAME"), "{}", err.msg());
        }
    }

    #[test]
    fn messages_show_values_as_written() {
        let msg = plugin_type("ipam.type", r"C:\cni\bin\host-local.exe")
            .unwrap_err()
            .msg()
            .to_owned();
        assert!(
            msg.contains(r#"ipam.type "C:\cni\bin\host-local.exe" is"#),
            "{msg}"
        );
        let msg = container_id("a\nb").unwrap_err().msg().to_owned();
        assert!(msg.contains(r#""a\nb" is invalid"#), "{msg}");
    }

    #[test]
    fn plugin_types_cannot_escape_cni_path() {
        assert!(plugin_type("ipam.type", "host-local").is_ok());
        for bad in [
            "../bin/sh",
            "/bin/sh",
            "a/b",
            "a\\b",
            "..",
            "a..b",
            "C:evil",
            "",
        ] {
            assert_eq!(
                plugin_type("ipam.type", bad).unwrap_err().code(),
                ErrorCode::InvalidConfig,
                "{bad}"
            );
        }
    }
}
