//! The platform's HNS, reached the one way the plugins and the node tools both use:
//! computenetwork.dll on Windows, the emulator named by `HCN_EMULATOR_STATE` elsewhere (a
//! Windows build contains no emulator: the backend is chosen at build time), every raw call
//! bounded by a deadline.

use std::time::Duration;

use hns::{Client, HnsError};

/// The platform's HNS for the node tools (`cni-win sweep`, `doctor`, `support-bundle`), each
/// raw call waiting at most the node tools' deadline ([`crate::hns_deadline::node_deadline`]);
/// the error says why HNS cannot be reached, or why the deadline setting is unusable.
pub fn node_client() -> Result<Client, String> {
    let deadline = crate::hns_deadline::node_deadline().map_err(|e| e.msg().to_owned())?;
    client(deadline).map_err(|e| e.to_string())
}

/// The platform's HNS, each raw call waiting at most `deadline`.
pub fn client(deadline: Duration) -> Result<Client, HnsError> {
    #[cfg(windows)]
    let client = Ok(Client::native());
    #[cfg(not(windows))]
    let client = hns_emulator::Emulator::client_from_env();
    client.map(|client| client.with_deadline(deadline))
}
