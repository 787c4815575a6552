//! The platform's HNS, reached the one way the plugins and the node tools all use
//! ([`connect`]): computenetwork.dll on Windows, the emulator named by `HCN_EMULATOR_STATE`
//! elsewhere (a Windows build contains no emulator: the backend is chosen at build time),
//! every raw call bounded by a deadline.

use std::fmt;
use std::time::Duration;

use cni::{ErrorCode, NetConf};
use hns::{Client, HnsError};

use crate::hns_deadline;
use crate::hns_error::to_cni;

/// How long each raw call of a connection may take.
#[derive(Debug, Clone, Copy)]
pub enum Deadline<'c> {
    /// The node tools' (`cni-win sweep`, `doctor`, ...), which serve every network at once:
    /// `CNI_WIN_HNS_TIMEOUT_SECONDS`, else the default ([`hns_deadline::node_deadline`]).
    Node,
    /// A plugin command's: its config's `hnsTimeoutSeconds`, else the variable, else the
    /// default ([`hns_deadline::hns_deadline`]).
    Config(&'c NetConf),
    /// One the caller read already (DEL reads the setting leniently).
    Exactly(Duration),
}

/// Why HNS could not be reached: a typed error that keeps its cause and says which CNI code
/// a plugin answers it with.
#[derive(Debug, Clone)]
pub enum ConnectError {
    /// The deadline setting is unusable (code 4 for the variable, 7 for the config key).
    Deadline(cni::Error),
    /// The backend cannot be opened (code 11: HNS may be restarting).
    Unreachable(HnsError),
}

impl ConnectError {
    /// The CNI code a plugin answers with.
    pub fn code(&self) -> ErrorCode {
        match self {
            ConnectError::Deadline(setting) => setting.code(),
            ConnectError::Unreachable(_) => ErrorCode::TryAgainLater,
        }
    }
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::Deadline(_) => f.write_str("cannot connect to HNS: its call deadline"),
            ConnectError::Unreachable(_) => f.write_str("cannot connect to HNS"),
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConnectError::Deadline(setting) => Some(setting),
            ConnectError::Unreachable(error) => Some(error),
        }
    }
}

impl From<ConnectError> for cni::Error {
    /// The error a plugin prints: the setting's own, or code 11 with the HRESULT in `details`.
    fn from(error: ConnectError) -> cni::Error {
        match error {
            ConnectError::Deadline(setting) => setting,
            ConnectError::Unreachable(error) => to_cni(&error, "connect to HNS"),
        }
    }
}

/// The platform's HNS, each raw call waiting at most `deadline`.
pub fn connect(deadline: Deadline<'_>) -> Result<Client, ConnectError> {
    let deadline = match deadline {
        Deadline::Node => hns_deadline::node_deadline().map_err(ConnectError::Deadline)?,
        Deadline::Config(conf) => {
            hns_deadline::hns_deadline(conf).map_err(ConnectError::Deadline)?
        }
        Deadline::Exactly(deadline) => deadline,
    };
    #[cfg(windows)]
    let client = Ok(Client::native());
    #[cfg(not(windows))]
    let client = hns_emulator::Emulator::client_from_env();
    client
        .map(|client| client.with_deadline(deadline))
        .map_err(ConnectError::Unreachable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hns::ErrorKind;

    #[test]
    fn each_cause_keeps_its_code_and_chain() {
        let setting = cni::Error::invalid_env(hns_deadline::ENV_VAR, "\"soon\" is not a number");
        let error = ConnectError::Deadline(setting.clone());
        assert_eq!(error.code(), ErrorCode::InvalidEnvironment);
        let source = std::error::Error::source(&error).unwrap().to_string();
        assert!(source.contains(hns_deadline::ENV_VAR) && source.ends_with("(CNI error 4)"));
        assert_eq!(cni::Error::from(error), setting);

        let error = ConnectError::Unreachable(HnsError::new(ErrorKind::Backend, "no emulator"));
        assert_eq!(error.code(), ErrorCode::TryAgainLater);
        assert!(
            std::error::Error::source(&error)
                .unwrap()
                .to_string()
                .contains("no emulator")
        );
        let cni = cni::Error::from(error);
        assert_eq!(cni.code(), ErrorCode::TryAgainLater);
        assert!(cni.msg().starts_with("connect to HNS: "), "{}", cni.msg());
    }
}
