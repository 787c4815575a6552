//! The paths a config names (`ipam.dataDir`, Flannel's `subnetFile` and `dataDir`,
//! `networkPolicySnapshot`, `logFile`), decoded by one rule: a path from a root of the
//! platform the plugin runs on, never one relative to its working directory.
//!
//! A plugin's working directory is whatever its runtime's is, and a node tool's is wherever
//! an operator ran it, so a relative path names a different place for each of them: a store
//! there is not the one the pods' addresses are in, a record there not the one DEL looks for.
//! The path a config is written with is also one platform's: `C:\var\lib\cni\networks` on a
//! Linux machine (a tool, a test, CI) is a relative file name, and a store made there was once
//! committed to this repository as a directory named `Z:\work\...\ipam`. So such a path is
//! refused with code 7 naming the key, the value and what this platform expects.
//!
//! What counts as rooted is the platform's own answer ([`Path::has_root`]): on Unix an
//! absolute path; on Windows one from a drive's root (`C:\var\lib`), a share's
//! (`\\server\share\x`) or the current drive's (`\var\lib`, `/var/lib`). The last is
//! accepted because the reference plugins' defaults are written that way
//! (`/var/lib/cni/networks`, `/run/flannel/subnet.env`) and so are the field's configs
//! (kube-proxy's source-VIP scripts give host-local `"dataDir": "/var/lib/cni/networks"`):
//! Windows resolves them on the drive the runtime runs from, whatever its directory. A
//! drive-relative path (`C:var`) and a relative one are refused.

use std::ops::Deref;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::Error;
use crate::quote::quoted;

/// A path from a root of this platform (see the module docs); made only by decoding a key
/// ([`PathKey`], [`DefaultedPathKey`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RootedPath(PathBuf);

impl RootedPath {
    /// The path.
    pub fn as_path(&self) -> &Path {
        &self.0
    }
}

impl Deref for RootedPath {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl From<RootedPath> for PathBuf {
    fn from(path: RootedPath) -> PathBuf {
        path.0
    }
}

/// A config key (or environment variable) that holds a path, and whose absence means none
/// (the feature it names is off, e.g. logging to stderr only). An empty value is refused like
/// any other that is not rooted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathKey {
    /// The key as messages name it: `networkPolicySnapshot`, `CNI_WIN_LOG_FILE`.
    pub name: &'static str,
    /// A good value, Unix-style (`/var/lib/cni/networks`): messages show it as this platform
    /// writes paths (`C:\var\lib\cni\networks` on Windows).
    pub example: &'static str,
}

impl PathKey {
    /// The key's JSON value: absent or null is none; text must be a rooted path; anything
    /// else is code 7 naming the key.
    pub fn decode(&self, value: Option<&Value>) -> Result<Option<RootedPath>, Error> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(value) => self.decode_given(value).map(Some),
        }
    }

    /// A value given as text (a config key already read as text, an environment variable):
    /// a rooted path, or code 7 naming the key, the value and what is expected.
    pub fn parse(&self, text: &str) -> Result<RootedPath, Error> {
        let path = Path::new(text);
        if path.has_root() {
            return Ok(RootedPath(path.to_owned()));
        }
        Err(Error::invalid_config(format!(
            "{}: {} is not an absolute path on this node ({ROOTS}): the plugin would take it \
             relative to whatever directory it is run from; write one such as {}",
            self.name,
            quoted(text),
            self.shown_example()
        )))
    }

    /// A value that is there (not null).
    fn decode_given(&self, value: &Value) -> Result<RootedPath, Error> {
        match value {
            Value::String(text) => self.parse(text),
            other => Err(Error::invalid_config(format!(
                "{}: {other} is not a path; write one such as {}",
                self.name,
                self.shown_example()
            ))),
        }
    }

    /// [`PathKey::example`] as this platform writes paths.
    fn shown_example(&self) -> String {
        if cfg!(windows) {
            format!("C:{}", self.example.replace('/', "\\"))
        } else {
            self.example.to_owned()
        }
    }
}

/// A config key that holds a path and, absent, null or empty, stands for a default, as the
/// reference reads `ipam.dataDir`, Flannel's `subnetFile` and `dataDir`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultedPathKey {
    /// The key as messages name it: `ipam.dataDir`.
    pub name: &'static str,
    /// The default, written as the reference writes it (`/var/lib/cni/networks`: rooted on
    /// every platform, on Windows on the current drive); messages show it as the example.
    pub default: &'static str,
}

impl DefaultedPathKey {
    /// The key's JSON value: absent, null or empty is the default; text must be a rooted
    /// path; anything else is code 7 naming the key.
    pub fn decode(&self, value: Option<&Value>) -> Result<RootedPath, Error> {
        match value {
            None | Some(Value::Null) => Ok(self.default()),
            Some(Value::String(text)) if text.is_empty() => Ok(self.default()),
            Some(value) => self.key().decode_given(value),
        }
    }

    fn default(&self) -> RootedPath {
        RootedPath(PathBuf::from(self.default))
    }

    fn key(&self) -> PathKey {
        PathKey {
            name: self.name,
            example: self.default,
        }
    }
}

/// Where paths start on this platform, for messages.
const ROOTS: &str = if cfg!(windows) {
    r"a path starts at a drive, C:\, or a share, \\server\share\"
} else {
    "a path starts at /"
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;
    use serde_json::json;

    const DATA_DIR: DefaultedPathKey = DefaultedPathKey {
        name: "ipam.dataDir",
        default: "/var/lib/cni/networks",
    };

    const SNAPSHOT: PathKey = PathKey {
        name: "networkPolicySnapshot",
        example: "/var/lib/cni-win/network-policy.json",
    };

    /// The message of a refusal, checked to be code 7 naming `key`.
    fn refused<T: std::fmt::Debug>(key: &str, decoded: Result<T, Error>) -> String {
        let err = decoded.unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidConfig);
        assert!(err.msg().starts_with(&format!("{key}: ")), "{}", err.msg());
        err.msg().to_owned()
    }

    #[test]
    fn a_rooted_path_is_taken_as_written() {
        let path = DATA_DIR.decode(Some(&json!("/run/ipam"))).unwrap();
        assert_eq!(path.as_path(), Path::new("/run/ipam"));
        let path = SNAPSHOT.decode(Some(&json!("/run/p.json"))).unwrap();
        assert_eq!(path.as_deref(), Some(Path::new("/run/p.json")));
        #[cfg(windows)]
        for rooted in [
            r"C:\var\lib",
            "C:/var/lib",
            r"\\server\share\x",
            r"\var\lib",
            "/var/lib",
        ] {
            assert!(SNAPSHOT.parse(rooted).is_ok(), "{rooted}");
        }
    }

    #[test]
    fn absent_null_and_empty_are_the_default_where_there_is_one() {
        let default = RootedPath(PathBuf::from("/var/lib/cni/networks"));
        for value in [None, Some(json!(null)), Some(json!(""))] {
            assert_eq!(DATA_DIR.decode(value.as_ref()).unwrap(), default);
        }
        assert_eq!(SNAPSHOT.decode(None).unwrap(), None);
        assert_eq!(SNAPSHOT.decode(Some(&json!(null))).unwrap(), None);
        refused(SNAPSHOT.name, SNAPSHOT.decode(Some(&json!(""))));
    }

    /// The bug this rule closes: a Windows path on Linux, and any relative path anywhere.
    #[test]
    fn a_path_relative_to_the_working_directory_is_refused_naming_key_value_and_fix() {
        let mut relative = vec!["ipam", "./ipam", "../ipam"];
        if cfg!(windows) {
            relative.push("C:ipam");
        } else {
            relative.extend([r"C:\var\lib\cni", r"Z:\work\ipam", "C:/var/lib/cni"]);
        }
        let example = if cfg!(windows) {
            r"C:\var\lib\cni\networks"
        } else {
            "/var/lib/cni/networks"
        };
        for text in relative {
            let msg = refused(DATA_DIR.name, DATA_DIR.decode(Some(&json!(text))));
            assert!(msg.contains(&quoted(text).to_string()), "{msg}");
            assert!(msg.contains("not an absolute path"), "{msg}");
            assert!(msg.ends_with(&format!("such as {example}")), "{msg}");
            refused(SNAPSHOT.name, SNAPSHOT.parse(text));
        }
    }

    #[test]
    fn what_is_not_text_is_not_a_path() {
        for value in [json!(7), json!(["/x"]), json!({"path": "/x"}), json!(true)] {
            let msg = refused(DATA_DIR.name, DATA_DIR.decode(Some(&value)));
            assert!(msg.contains("is not a path"), "{msg}");
            refused(SNAPSHOT.name, SNAPSHOT.decode(Some(&value)));
        }
    }
}
