//! One module per subcommand: its clap arguments, the settings it hands the library, and what
//! it prints. The work is the `cni_win` library's.

pub mod doctor;
pub mod install;
pub mod source_vip;
pub mod support_bundle;
pub mod sweep;
pub mod uninstall;
