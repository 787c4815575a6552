//! A conformance harness for CNI plugins: it runs any plugin binary exactly as a container
//! runtime does and checks every reply against the CNI spec.
//!
//! A [`Harness`] runs the cases of a [`Catalogue`] against one plugin and returns a [`Report`].
//! Each [`Case`] drives the plugin through a [`Context`] (environment, config on stdin, a
//! deadline) and judges the replies with the [`protocol`] rules, which the harness implements
//! on its own ([`schema`]) rather than with the `cni` crate it tests.
//!
//! Two seams keep later lanes additions rather than rewrites: a [`Launcher`] decides how the
//! plugin is started and how host paths are spelled to it (native today; `wine64 plugin.exe`
//! with `Z:\` paths later), and a [`Fixture`] sets up what a case needs around the plugin
//! (nothing, or an HCN emulator host made with `hnsctl`: [`hns::HnsFixture`]).
//!
//! Two catalogues: [`cases::protocol`] for any plugin, [`cases::hns`] for cni-win's HNS plugins
//! on an emulated host. [`node`] is those plugins' test support (panics on failure, as tests do).
#![forbid(unsafe_code)]

pub mod case;
pub mod cases;
pub mod catalogue;
pub mod exec;
pub mod fixture;
pub mod harness;
pub mod hns;
pub mod launcher;
pub mod node;
pub mod protocol;
pub mod report;
pub mod schema;
pub mod scratch;

pub use case::{Case, Context, Failure, Outcome};
pub use catalogue::Catalogue;
pub use exec::{Exec, Exit, Invocation};
pub use fixture::{Fixture, Plain, Scope, Setting};
pub use harness::Harness;
pub use launcher::{Launcher, Native, Wine};
pub use report::{CaseReport, Report, Verdict};
pub use scratch::ScratchDir;
