//! `cni-win-conformance`: `cni-conformance` plus `--hnsctl`/`--hns-network`, which run the
//! protocol and HNS catalogues against a cni-win plugin on a fresh HCN emulator host per case.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use cni_win_conformance::suite::HnsSuite;

fn main() -> ExitCode {
    conformance::cli::main("cni-win-conformance", HnsSuite::default())
}
