//! `cni-conformance`: runs the protocol catalogue against a CNI plugin binary and prints a
//! table (see [`conformance::cli`]).
#![forbid(unsafe_code)]

use std::process::ExitCode;

fn main() -> ExitCode {
    conformance::cli::main("cni-conformance", conformance::cli::ProtocolOnly)
}
