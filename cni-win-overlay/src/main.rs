//! `win-overlay`: the VXLAN overlay CNI plugin (see the `cni_win_overlay` library).
#![forbid(unsafe_code)]

use std::process::ExitCode;

use cni_win_core::HnsPlugin;
use cni_win_overlay::Overlay;

fn main() -> ExitCode {
    HnsPlugin::new(Overlay).run(env!("CARGO_PKG_VERSION"))
}
