//! Values and paths in messages, in the form an operator reads and types.
//!
//! Rust's debug form doubles every backslash, so a Windows path reads `"C:\\dir\\file"`; a
//! message shows `"C:\dir\file"` instead. Control characters are still escaped, so that a
//! value from the environment or a config can never break a message or log line in two.

use std::fmt;

/// `value` in double quotes, as written, with control characters escaped.
pub fn quoted(value: &str) -> Quoted<'_> {
    Quoted(value)
}

/// See [`quoted`].
#[derive(Debug, Clone, Copy)]
pub struct Quoted<'a>(&'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        for c in self.0.chars() {
            if c.is_control() {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        f.write_str("\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_keep_single_backslashes_and_control_characters_stay_escaped() {
        assert_eq!(
            quoted(r"C:\realclients\ns\5f3f").to_string(),
            r#""C:\realclients\ns\5f3f""#
        );
        assert_eq!(
            quoted("/var/run/netns/x").to_string(),
            "\"/var/run/netns/x\""
        );
        assert_eq!(quoted("a\nb\t\u{1b}c").to_string(), r#""a\nb\t\u{1b}c""#);
        assert_eq!(quoted("é").to_string(), "\"é\"");
    }
}
