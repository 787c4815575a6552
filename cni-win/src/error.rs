//! The error type of the `cni-win` library: what went wrong, naming the file or setting at
//! fault and, where there is one, the fix, with the underlying cause kept as its source so the
//! command can print the whole chain.

use std::io;
use std::path::{Path, PathBuf};

/// Why a `cni-win` operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file operation on a path failed.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// What was being done ("read", "create", "remove the leftover").
        action: String,
        /// The path it was done to.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// HNS could not be reached (the deadline setting, the backend).
    #[error(transparent)]
    Connect(#[from] cni_win_core::platform::ConnectError),
    /// HNS could not be read.
    #[error("cannot {action}")]
    Hns {
        /// What was being asked of HNS.
        action: &'static str,
        /// What HNS (or its client) said.
        #[source]
        source: hns::HnsError,
    },
    /// The plugins' own code refused a network or failed on it: its message and CNI code, as
    /// the plugin would answer.
    #[error(transparent)]
    Plugin(#[from] cni::Error),
    /// The command refuses its input (a setting, a file's contents, a release that does not
    /// fit together): the message says what and how to fix it.
    #[error("{0}")]
    Refused(String),
    /// The command ran and what it found is a failure (an unhealthy node, stale objects it
    /// could not remove): the report it printed has the details.
    #[error("{0}")]
    Found(String),
}

impl Clone for Error {
    /// The same error; an I/O cause is kept as its kind and message, as [`Error::io`] keeps it.
    fn clone(&self) -> Error {
        match self {
            Error::Io {
                action,
                path,
                source,
            } => Error::io(action, path, source),
            Error::Connect(error) => Error::Connect(error.clone()),
            Error::Hns { action, source } => Error::Hns {
                action,
                source: source.clone(),
            },
            Error::Plugin(error) => Error::Plugin(error.clone()),
            Error::Refused(message) => Error::Refused(message.clone()),
            Error::Found(message) => Error::Found(message.clone()),
        }
    }
}

impl Error {
    /// Input refused, with the message an operator acts on.
    pub fn new(message: impl Into<String>) -> Error {
        Error::Refused(message.into())
    }

    /// An I/O failure while doing `action` (e.g. "read") on `path`. The cause is kept as
    /// its kind and message (`io::Error` cannot be cloned, and callers keep theirs).
    pub fn io(action: &str, path: &Path, source: &io::Error) -> Error {
        Error::Io {
            action: action.to_owned(),
            path: path.to_owned(),
            source: io::Error::new(source.kind(), source.to_string()),
        }
    }

    /// HNS failed while doing `action` (e.g. "reach HNS").
    pub fn hns(action: &'static str, source: hns::HnsError) -> Error {
        Error::Hns { action, source }
    }
}

/// The error and every cause under it, one line: `cannot read C:\x: Access is denied.`
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
