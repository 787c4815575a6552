//! The one error type of `cni-win`: a message that names the file or setting at fault and,
//! where there is one, the fix.

use std::fmt;
use std::io;
use std::path::Path;

#[derive(Debug)]
pub struct Error(String);

impl Error {
    pub fn new(message: impl Into<String>) -> Error {
        Error(message.into())
    }

    /// An I/O failure while doing `action` (e.g. "read") on `path`.
    pub fn io(action: &str, path: &Path, err: &io::Error) -> Error {
        Error(format!("cannot {action} {}: {err}", path.display()))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}
