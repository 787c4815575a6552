//! `win-overlay`: the VXLAN overlay CNI plugin (see the `cni_win_overlay` library).
#![forbid(unsafe_code)]

use std::process::ExitCode;

use cni_win_overlay::Overlay;

fn main() -> ExitCode {
    cni_win_core::run::<Overlay>(cni::build!())
}
