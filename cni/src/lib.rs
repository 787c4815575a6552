//! The CNI protocol, spec 1.1.0 and every version before it, for cni-win's Windows plugins.
//!
//! A plugin implements [`Plugin`] and calls [`run`]; this crate handles the rest of the
//! contract with the container runtime: the `CNI_*` environment ([`env`]), the network config on
//! stdin ([`config`]), version negotiation ([`version`]), results in every spec version
//! ([`result`]), error codes ([`error`]), delegation to IPAM plugins ([`delegate`]) and logging
//! that never touches stdout ([`logging`]).

pub mod case_insensitive;
pub mod config;
pub mod delegate;
pub mod env;
pub mod error;
pub mod logging;
pub mod result;
pub mod skel;
pub mod validate;
pub mod version;

pub use config::{GcAttachment, NetConf};
pub use env::{CniArgs, Command};
pub use error::{Error, ErrorCode};
pub use result::{Dns, Interface, IpConfig, Route, Success};
pub use skel::{About, Build, NetworkRequest, Plugin, Request, execute, run};
pub use version::Version;
