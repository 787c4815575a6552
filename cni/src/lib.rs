//! The CNI protocol, spec 1.1.0 and every version before it, for cni-win's Windows plugins.
//!
//! A plugin implements [`Plugin`] and calls [`run`]; this crate handles the rest of the
//! contract with the container runtime: the `CNI_*` environment ([`env`](mod@env)), the
//! network config on stdin ([`config`]), version negotiation ([`version`]), results in every
//! spec version ([`result`]), error codes ([`error`]), delegation to IPAM plugins
//! ([`delegate`]) and logging that never touches stdout ([`logging`]).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod case_insensitive;
pub mod config;
pub mod delegate;
pub mod env;
pub mod error;
pub mod logging;
pub mod path;
pub mod quote;
pub mod result;
pub mod seconds;
pub mod skel;
pub mod validate;
pub mod version;

pub use config::{GcAttachment, NetConf, ValidAttachments};
pub use env::{CniArgs, Command};
pub use error::{Error, ErrorCode};
pub use quote::quoted;
pub use result::{Dns, Interface, IpConfig, Route, Success};
pub use skel::{About, Build, DelRequest, NetworkRequest, Plugin, Request, execute, run};
pub use version::Version;
