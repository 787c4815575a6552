//! A conformance harness for CNI plugins: it runs any plugin binary exactly as a container
//! runtime does and checks every reply against the CNI spec.
//!
//! A [`Harness`] runs the cases of a [`Catalogue`] against one plugin and returns a [`Report`].
//! Each [`Case`] drives the plugin through a [`Context`] (environment, config on stdin, a
//! deadline) and judges the replies with the [`protocol`] rules, which the harness implements
//! on its own ([`schema`]) rather than with the `cni` crate it tests.
//!
//! Three seams let a plugin's project add what its plugins need without forking the harness: a
//! [`Launcher`] decides how the plugin is started and how host paths are spelled to it (natively,
//! or `wine64 plugin.exe` with `Z:\` paths), a [`Fixture`] sets up what a case needs around the
//! plugin, and a [`cli::Suite`] adds options, cases and a fixture to the command line.
//!
//! This crate knows nothing of any network back end: [`cases::protocol`] holds for every plugin.
//! cni-win's HCN emulator host and HNS cases live in the `cni-win-conformance` crate.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod case;
pub mod cases;
pub mod catalogue;
pub mod cli;
pub mod exec;
pub mod fixture;
pub mod harness;
pub mod hostile;
pub mod launcher;
pub mod protocol;
pub mod report;
pub mod schema;

pub use case::{Case, Context, Failure, Outcome};
pub use catalogue::Catalogue;
pub use exec::{Exec, Exit, Invocation};
pub use fixture::{Fixture, FixtureError, Plain, Scope, Setting};
pub use harness::{Harness, TemplateNotAnObject};
pub use launcher::{Launcher, Native, Wine};
pub use report::{CaseReport, Report, Verdict};
