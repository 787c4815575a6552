//! Windows container networking through the Host Networking Service (HNS/HCN).
//!
//! Two layers:
//! - [`RawHcn`]: computenetwork.dll function for function (JSON strings, opaque
//!   handles, GUIDs, errors with HRESULT and error record). Implemented on
//!   Windows by `native::ComputeNetwork`; the `hns-emulator` crate implements
//!   it too, as a file-backed HNS for Linux builds and tests. This crate holds
//!   no test double: it is what ships.
//! - [`Client`]: one typed client, generic over the raw layer, that composes
//!   calls with the fewest round trips and decodes the [`schema`] documents.
//!
//! - [`deadline`]: a layer over any backend that bounds every call's wait,
//!   because HNS hangs and its calls cannot be cancelled.
//!
//! The typed layer is shared, so what the tests prove on the emulator is the
//! code that runs on Windows.

// `unsafe` is denied but where it is the point, each allowed where it stands: the FFI to
// computenetwork.dll and vmcompute.dll ([`native`]), minting a handle ([`raw::Handle`]), and
// the deadline layer lending a call's thread a copy of one ([`deadline`]).
#![deny(unsafe_code)]
// Every public item says why it is there: this crate is the HCN boundary, read by whoever
// checks what a plugin sends to HNS.
#![warn(missing_docs)]

pub mod client;
pub mod deadline;
pub mod error;
pub mod features;
pub mod guid;
pub mod hresult;
#[cfg(windows)]
#[allow(unsafe_code)] // the FFI to computenetwork.dll, vmcompute.dll and ntdll
pub mod native;
pub mod raw;
pub mod schema;

pub use client::{Client, CreateEndpointError, OpenEndpoint, OpenNamespace, OpenNetwork};
pub use deadline::Deadlined;
pub use error::{ErrorKind, ErrorRecord, HnsError, Holder, RawError};
pub use features::{
    Feature, HnsVersion, HnsVersionParseError, SupportedFeatures, WindowsBuild, WindowsRelease,
};
pub use guid::{Guid, GuidParseError};
pub use hresult::{HResult, HResultParseError};
pub use raw::{Function, RawHcn};
