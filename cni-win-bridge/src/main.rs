//! `win-bridge`: the l2bridge CNI plugin (see the `cni_win_bridge` library).

use std::process::ExitCode;

use cni_win_bridge::Bridge;
use cni_win_core::HnsPlugin;

fn main() -> ExitCode {
    HnsPlugin::new(Bridge).run(cni::build!())
}
