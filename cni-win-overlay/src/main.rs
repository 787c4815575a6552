//! `win-overlay`: the VXLAN overlay CNI plugin (see the `cni_win_overlay` library).

use std::process::ExitCode;

use cni_win_core::HnsPlugin;
use cni_win_overlay::Overlay;

fn main() -> ExitCode {
    HnsPlugin::new(Overlay).run(cni::build!())
}
