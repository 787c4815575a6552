//! `vmcompute.dll` for Wine: the V1 HNS entry point `HNSCall` over the HCN emulator.
//!
//! HCN clients still call it for the HNS version (`GET /globals/version`), V1
//! readers list networks with it (`GET /networks/`: win-overlay takes
//! `Subnets[0]` and `ManagementIP` from there), and the reference plugins'
//! default path creates, lists, attaches and deletes endpoints with it
//! (`/endpoints/...`). The emulator answers from the same state as
//! `computenetwork.dll` (`HCN_EMULATOR_STATE`); requests it does not model get
//! the V1 failure envelope.
//!
//! Test-only, never shipped. Windows only; on other targets the crate is empty.
#![cfg(windows)]
#![warn(missing_docs)]

use hcn_emulator_ffi::{call_with_response, emulator, read_string};
use hns::{Function, RawHcn};
use windows::core::{HRESULT, PCWSTR, PWSTR};

/// `HNSCall(Method, Path, Request, *Response)`: the V1 envelope
/// `{"Success":..,"Error":..,"Output":..}` in `response`, or on failure the
/// error record there and the HRESULT returned.
///
/// # Safety
/// `method`, `path` and `request` are null or NUL-terminated UTF-16 strings;
/// `response` is null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "system" fn HNSCall(
    method: PCWSTR,
    path: PCWSTR,
    request: PCWSTR,
    response: *mut PWSTR,
) -> HRESULT {
    let function = Function::HnsCall;
    // SAFETY: the pointers as documented above.
    unsafe {
        call_with_response(function, response, || {
            let method = read_string(function, "Method", method)?;
            let path = read_string(function, "Path", path)?;
            let request = read_string(function, "Request", request)?;
            emulator(function)?.hns_call(&method, &path, &request)
        })
    }
}
