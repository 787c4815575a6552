//! The C-ABI plumbing shared by the HCN emulator DLLs that the Wine lane loads
//! in place of Windows' `computenetwork.dll` and `vmcompute.dll`.
//!
//! The DLLs are thin: every export decodes its arguments with this crate, calls
//! the same in-process `hns_emulator::Emulator` the Linux tests use (state root from
//! `HCN_EMULATOR_STATE`, a Windows path under Wine), and encodes the outcome
//! with one of the `call_*` runners. What callers of the real DLLs rely on is kept:
//!
//! - strings in are NUL-terminated UTF-16; every string out (result or error
//!   record) is allocated with `CoTaskMemAlloc` for the caller to free with
//!   `CoTaskMemFree`, and an out pointer stays null unless the call produced a string;
//! - handles are opaque pointers (the emulator's handle numbers, never null);
//! - a failure is an HRESULT plus the emulator's JSON error record, unchanged
//!   (a record whose `ErrorCode` is a success comes with `S_OK`, see `returned_code`);
//! - no panic crosses the boundary: it becomes `E_FAIL` with a record naming it.
//!
//! Windows only; on other targets the crate is empty.
#![cfg(windows)]
#![warn(missing_docs)]

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::OnceLock;

use hns::raw::Handle;
use hns::{ErrorRecord, Function, Guid, HResult, HnsError, RawError};
use hns_emulator::{Emulator, HcnFailure};
use windows::Win32::System::Com::CoTaskMemAlloc;
use windows::core::{GUID, HRESULT, PCWSTR, PWSTR};

/// `E_POINTER`: a required out pointer is null.
const E_POINTER: HResult = HResult(0x8000_4003);
/// `E_OUTOFMEMORY`: `CoTaskMemAlloc` could not allocate an out string.
const E_OUTOFMEMORY: HResult = HResult(0x8007_000E);

/// The emulator behind every export of this process, opened on first use.
///
/// A failure to open it (variable unset, directory unusable) is kept and
/// reported by every call, as an unreachable service would be.
pub fn emulator(function: Function) -> Result<&'static Emulator, RawError> {
    static EMULATOR: OnceLock<Result<Emulator, HnsError>> = OnceLock::new();
    EMULATOR
        .get_or_init(Emulator::from_env)
        .as_ref()
        .map_err(|error| fail(function, HResult::E_FAIL, &error.to_string()))
}

/// Runs an export that returns a string in `out` (`Enumerate*`, `Query*Properties`).
///
/// # Safety
/// `out` and `error_record` are null or valid for one `PWSTR` write.
pub unsafe fn call_returning_string(
    function: Function,
    out: *mut PWSTR,
    error_record: *mut PWSTR,
    body: impl FnOnce() -> Result<String, RawError>,
) -> HRESULT {
    // SAFETY: the caller's contract.
    unsafe {
        clear(out);
        run(function, error_record, || {
            let text = required(function, out).and_then(|_| body())?;
            write_string(out, &text).map_err(|failure| failure.into_raw(function))
        })
    }
}

/// Runs an export that returns a handle in `out` (`Create*`, `Open*`).
///
/// # Safety
/// `out` is null or valid for one pointer write; `error_record` as for [`call`].
pub unsafe fn call_returning_handle(
    function: Function,
    out: *mut *mut c_void,
    error_record: *mut PWSTR,
    body: impl FnOnce() -> Result<usize, RawError>,
) -> HRESULT {
    // SAFETY: the caller's contract.
    unsafe {
        if !out.is_null() {
            out.write(std::ptr::null_mut());
        }
        run(function, error_record, || {
            let handle = required(function, out).and_then(|_| body())?;
            out.write(handle as *mut c_void);
            Ok(())
        })
    }
}

/// Runs an export that returns nothing but its HRESULT and error record (`Modify*`, `Delete*`).
///
/// # Safety
/// `error_record` is null or valid for one `PWSTR` write.
pub unsafe fn call(
    function: Function,
    error_record: *mut PWSTR,
    body: impl FnOnce() -> Result<(), RawError>,
) -> HRESULT {
    // SAFETY: the caller's contract.
    unsafe { run(function, error_record, body) }
}

/// Runs an `HcnClose*` export, which has no error record.
pub fn call_without_record(
    function: Function,
    body: impl FnOnce() -> Result<(), RawError>,
) -> HRESULT {
    // SAFETY: a null error record is never written.
    unsafe { run(function, std::ptr::null_mut(), body) }
}

/// Runs `HNSCall`, whose one out string carries the V1 envelope on success and
/// the error record on failure.
///
/// # Safety
/// `response` is null or valid for one `PWSTR` write.
pub unsafe fn call_with_response(
    function: Function,
    response: *mut PWSTR,
    body: impl FnOnce() -> Result<String, RawError>,
) -> HRESULT {
    // SAFETY: the caller's contract.
    unsafe {
        run(function, response, || {
            let text = required(function, response).and_then(|_| body())?;
            write_string(response, &text).map_err(|failure| failure.into_raw(function))
        })
    }
}

/// The handle a C caller passed back, as the emulator's handle type.
///
/// # Safety
/// HCN's contract for the caller: `handle` is a value this DLL issued and has not closed
/// (the emulator's handle table answers `E_HANDLE` for any other value, so a broken promise
/// is an error, never undefined behaviour), and the caller closes it at most once.
pub unsafe fn caller_handle<H: Handle>(handle: *const c_void) -> H {
    // SAFETY: the caller's contract above, which is this function's.
    unsafe { H::from_raw(handle as usize) }
}

/// Reads an input string; null reads as empty (an empty query is the default query).
///
/// # Safety
/// `text` is null or a NUL-terminated UTF-16 string.
pub unsafe fn read_string(
    function: Function,
    parameter: &str,
    text: PCWSTR,
) -> Result<String, RawError> {
    if text.is_null() {
        return Ok(String::new());
    }
    // SAFETY: non-null and NUL-terminated by the caller's contract.
    let units = unsafe { text.as_wide() };
    String::from_utf16(units).map_err(|error| {
        fail(
            function,
            HResult::E_INVALIDARG,
            &format!("{parameter} is not valid UTF-16: {error}"),
        )
    })
}

/// Reads a `REFGUID` argument.
///
/// # Safety
/// `id` is null or points to a `GUID`.
pub unsafe fn read_guid(function: Function, id: *const GUID) -> Result<Guid, RawError> {
    // SAFETY: null or a valid GUID by the caller's contract.
    let id = unsafe { id.as_ref() }
        .ok_or_else(|| fail(function, HResult::E_INVALIDARG, "Id is a null pointer"))?;
    Ok(Guid::from_fields(id.data1, id.data2, id.data3, id.data4))
}

/// Clears the record, runs `body` (a panic fails the call), and on failure
/// stores the error record and returns its HRESULT.
///
/// # Safety
/// `error_record` is null or valid for one `PWSTR` write.
unsafe fn run(
    function: Function,
    error_record: *mut PWSTR,
    body: impl FnOnce() -> Result<(), RawError>,
) -> HRESULT {
    // SAFETY: the caller's contract.
    unsafe { clear(error_record) };
    let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|text| (*text).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        Err(fail(
            function,
            HResult::E_FAIL,
            &format!("panicked: {message}"),
        ))
    });
    match outcome {
        Ok(()) => HRESULT(0),
        Err(error) => {
            if !error_record.is_null() && !error.record.is_empty() {
                // SAFETY: non-null and writable by the caller's contract. If the record
                // cannot be allocated, the HRESULT still reports the failure.
                let _ = unsafe { write_string(error_record, &error.record) };
            }
            HRESULT(returned_code(&error).0 as i32)
        }
    }
}

/// The HRESULT a failed call returns. A record whose `ErrorCode` is a success
/// (a fault injected with `S_OK`) is returned with `S_OK`: HNS can report a
/// failure in the error record alone, which is why callers must treat a
/// non-empty record as failure whatever the HRESULT.
fn returned_code(error: &RawError) -> HResult {
    let record: Option<ErrorRecord> = serde_json::from_str(&error.record).ok();
    match record {
        Some(record) if !HResult(record.error_code).is_failure() => HResult::S_OK,
        _ => error.hresult,
    }
}

/// A failure detected by the DLL itself, recorded as the emulator records its own.
fn fail(function: Function, code: HResult, detail: &str) -> RawError {
    HcnFailure::new(code, format!("(HCN emulator DLL: {detail})")).into_raw(function)
}

/// `E_POINTER` when a required out pointer is null, checked before HCN does anything.
fn required<T>(function: Function, out: *mut T) -> Result<(), RawError> {
    if out.is_null() {
        return Err(fail(
            function,
            E_POINTER,
            "an out parameter is a null pointer",
        ));
    }
    Ok(())
}

/// Sets an out string pointer to null so a caller never frees garbage.
///
/// # Safety
/// `out` is null or valid for one `PWSTR` write.
unsafe fn clear(out: *mut PWSTR) {
    if !out.is_null() {
        // SAFETY: the caller's contract.
        unsafe { out.write(PWSTR::null()) };
    }
}

/// Copies `text` into a NUL-terminated UTF-16 buffer from `CoTaskMemAlloc`.
///
/// # Safety
/// `out` is valid for one `PWSTR` write.
unsafe fn write_string(out: *mut PWSTR, text: &str) -> Result<(), HcnFailure> {
    let units: Vec<u16> = text.encode_utf16().chain([0]).collect();
    let bytes = std::mem::size_of_val(units.as_slice());
    // SAFETY: allocating has no preconditions; a null result is handled below.
    let buffer = unsafe { CoTaskMemAlloc(bytes) }.cast::<u16>();
    if buffer.is_null() {
        return Err(HcnFailure::new(
            E_OUTOFMEMORY,
            format!("(HCN emulator DLL: CoTaskMemAlloc of {bytes} bytes failed)"),
        ));
    }
    // SAFETY: `buffer` holds `units.len()` u16s and does not overlap `units`;
    // `out` is writable by the caller's contract.
    unsafe {
        std::ptr::copy_nonoverlapping(units.as_ptr(), buffer, units.len());
        out.write(PWSTR(buffer));
    }
    Ok(())
}
