//! `hns-probe abi` (Windows only): calls `computenetwork.dll` directly with the arguments
//! `hns::native` never passes (null pointers, a foreign handle, broken UTF-16) and reports
//! each call's HRESULT, error record and result as the C caller sees them.

use std::ffi::c_void;

use serde_json::{Value, json};
use windows::Win32::System::Com::CoTaskMemFree;
use windows::Win32::System::HostComputeNetwork as hcn;
use windows::core::{GUID, PCWSTR, PWSTR};

/// A callee-allocated out string, read and freed with `CoTaskMemFree` as callers must.
struct Out(PWSTR);

impl Out {
    fn new() -> Out {
        Out(PWSTR::null())
    }

    fn ptr(&mut self) -> *mut PWSTR {
        &mut self.0
    }

    /// The text, or JSON null when the callee left the pointer null.
    fn take(mut self) -> Value {
        if self.0.is_null() {
            return Value::Null;
        }
        // SAFETY: a NUL-terminated string from the callee's CoTaskMemAlloc, freed once below.
        let text = unsafe { self.0.to_string() }.unwrap_or_else(|e| format!("<bad UTF-16: {e}>"));
        // SAFETY: as above; the pointer is nulled so drop does not free it again.
        unsafe { CoTaskMemFree(Some(self.0.0 as *const c_void)) };
        self.0 = PWSTR::null();
        Value::String(text)
    }
}

impl Drop for Out {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the callee allocated it with CoTaskMemAlloc; freed once.
            unsafe { CoTaskMemFree(Some(self.0.0 as *const c_void)) };
        }
    }
}

fn observed(result: windows::core::Result<()>, record: Out, output: Value) -> Value {
    json!({
        "hresult": result.err().map_or(0, |error| error.code().0 as u32),
        "record": record.take(),
        "output": output,
    })
}

/// Every edge call, by name.
pub fn probe() -> Value {
    let mut calls = serde_json::Map::new();

    let (mut result, mut record) = (Out::new(), Out::new());
    // SAFETY: valid out pointers; a null query is allowed.
    let status =
        unsafe { hcn::HcnEnumerateNetworks(PCWSTR::null(), result.ptr(), Some(record.ptr())) };
    calls.insert(
        "enumerate-null-query".into(),
        observed(status, record, result.take()),
    );

    let query: Vec<u16> = "{}".encode_utf16().chain([0]).collect();
    let mut record = Out::new();
    // SAFETY: a valid query and record pointer; the null result pointer is the point.
    let status = unsafe {
        hcn::HcnEnumerateNetworks(
            PCWSTR(query.as_ptr()),
            std::ptr::null_mut(),
            Some(record.ptr()),
        )
    };
    calls.insert(
        "enumerate-null-result".into(),
        observed(status, record, Value::Null),
    );

    let lone_surrogate = [0xD800_u16, 0];
    let (mut handle, mut record) = (std::ptr::null_mut::<c_void>(), Out::new());
    // SAFETY: valid pointers; the settings are NUL-terminated but not valid UTF-16.
    let status = unsafe {
        hcn::HcnCreateNetwork(
            &GUID::zeroed(),
            PCWSTR(lone_surrogate.as_ptr()),
            &mut handle,
            Some(record.ptr()),
        )
    };
    calls.insert(
        "create-invalid-utf16".into(),
        observed(status, record, json!(handle as usize)),
    );

    let (mut handle, mut record) = (std::ptr::null_mut::<c_void>(), Out::new());
    // SAFETY: valid out pointers; the null ID is the point.
    let status = unsafe { hcn::HcnOpenNetwork(std::ptr::null(), &mut handle, Some(record.ptr())) };
    calls.insert(
        "open-null-id".into(),
        observed(status, record, json!(handle as usize)),
    );

    // SAFETY: the DLL must reject a handle it never issued without touching it.
    let status = unsafe { hcn::HcnCloseNetwork(0xDEAD as *const c_void) };
    calls.insert(
        "close-foreign-handle".into(),
        observed(status, Out::new(), Value::Null),
    );

    Value::Object(calls)
}
