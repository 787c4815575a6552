//! Choosing a raw backend at run time.

use crate::emulator::Emulator;
use crate::error::HnsError;
use crate::raw::RawHcn;

/// Environment variable that selects the emulator on Windows builds (`HNS_BACKEND=emulator`).
pub const BACKEND_ENV: &str = "HNS_BACKEND";

/// The default backend for this platform.
///
/// Windows: computenetwork.dll, unless `HNS_BACKEND=emulator` (then the emulator
/// named by `HCN_EMULATOR_STATE`). `HCN_EMULATOR_STATE` alone does not switch
/// backends there, because under Wine it is read by the emulated DLL itself.
/// Elsewhere: the emulator named by `HCN_EMULATOR_STATE`, or a
/// [`crate::ErrorKind::Backend`] error saying how to set it.
pub fn from_env() -> Result<Box<dyn RawHcn>, HnsError> {
    #[cfg(windows)]
    {
        let wants_emulator =
            std::env::var(BACKEND_ENV).is_ok_and(|value| value.eq_ignore_ascii_case("emulator"));
        if !wants_emulator {
            return Ok(Box::new(crate::native::ComputeNetwork::new()));
        }
    }
    Ok(Box::new(Emulator::from_env()?))
}
