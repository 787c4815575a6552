//! `win-bridge`: the l2bridge CNI plugin (see the `cni_win_bridge` library).
#![forbid(unsafe_code)]

use std::process::ExitCode;

use cni_win_bridge::Bridge;

fn main() -> ExitCode {
    cni_win_core::run::<Bridge>(cni::build!())
}
