//! `win-bridge`: the l2bridge CNI plugin (see the `cni_win_bridge` library).
#![forbid(unsafe_code)]

use std::process::ExitCode;

use cni_win_bridge::Bridge;
use cni_win_core::HnsPlugin;

fn main() -> ExitCode {
    HnsPlugin::new(Bridge).run(env!("CARGO_PKG_VERSION"))
}
