//! The real backend: computenetwork.dll (and vmcompute.dll's `HNSCall`) through
//! the `windows` crate. Windows only.
//!
//! Every out string — properties, enumeration results, error records — is
//! copied into a Rust `String` and freed with `CoTaskMemFree` by [`OutString`]'s
//! destructor, so no path (success, failure, panic) leaks one. A call has
//! failed if its HRESULT failed or its error record is non-empty (as hcsshim
//! checks). Handles are closed by the typed layer's RAII objects.

use std::ffi::c_void;

use windows::Win32::System::Com::CoTaskMemFree;
use windows::Win32::System::HostComputeNetwork as hcn;
use windows::core::{GUID, HRESULT, HSTRING, PCWSTR, PWSTR};

use crate::error::RawError;
use crate::guid::Guid;
use crate::hresult::HResult;
use crate::raw::{
    EndpointHandle, Function, Handle, LoadBalancerHandle, NamespaceHandle, NetworkHandle, RawHcn,
};

#[link(name = "vmcompute", kind = "raw-dylib")]
unsafe extern "system" {
    /// The V1 HNS entry point (`HNSCall(method, path, request, *response)`).
    fn HNSCall(method: PCWSTR, path: PCWSTR, request: PCWSTR, response: *mut PWSTR) -> HRESULT;
}

/// `OSVERSIONINFOW`, what `RtlGetVersion` fills in.
#[repr(C)]
struct OsVersionInfo {
    size: u32,
    major: u32,
    minor: u32,
    build: u32,
    platform_id: u32,
    service_pack: [u16; 128],
}

#[link(name = "ntdll", kind = "raw-dylib")]
unsafe extern "system" {
    /// The running Windows' version, whatever the executable's manifest says; returns an
    /// NTSTATUS.
    fn RtlGetVersion(information: *mut OsVersionInfo) -> i32;
}

/// computenetwork.dll as a [`RawHcn`] backend.
#[derive(Debug, Default)]
pub struct ComputeNetwork;

impl ComputeNetwork {
    /// The backend (the DLL is loaded by the loader on first use).
    pub fn new() -> ComputeNetwork {
        ComputeNetwork
    }
}

/// A callee-allocated UTF-16 string; freed with `CoTaskMemFree` on drop.
struct OutString(PWSTR);

impl OutString {
    fn new() -> OutString {
        OutString(PWSTR::null())
    }

    fn as_out(&mut self) -> *mut PWSTR {
        &mut self.0
    }

    fn text(&self) -> String {
        if self.0.is_null() {
            return String::new();
        }
        // SAFETY: HCN returns a NUL-terminated UTF-16 string it allocated; it stays
        // valid until we free it in `drop`.
        unsafe { self.0.to_string() }.unwrap_or_else(|e| format!("<undecodable UTF-16: {e}>"))
    }
}

impl Drop for OutString {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the buffer came from the callee's CoTaskMemAlloc and is freed once.
            unsafe { CoTaskMemFree(Some(self.0.0 as *const c_void)) };
        }
    }
}

fn to_guid(id: &Guid) -> GUID {
    let (data1, data2, data3, data4) = id.to_fields();
    GUID {
        data1,
        data2,
        data3,
        data4,
    }
}

/// Runs one call with an error-record out pointer and turns the outcome into a `Result`.
fn checked(
    function: Function,
    call: impl FnOnce(*mut PWSTR) -> windows::core::Result<()>,
) -> Result<(), RawError> {
    let mut record = OutString::new();
    let result = call(record.as_out());
    let record = record.text();
    match result {
        Err(error) => Err(RawError::new(
            function,
            HResult::from_i32(error.code().0),
            record,
        )),
        Ok(()) if !record.trim().is_empty() => Err(RawError::new(function, HResult::S_OK, record)),
        Ok(()) => Ok(()),
    }
}

/// Like [`checked`] for calls that also return a string.
fn checked_string(
    function: Function,
    call: impl FnOnce(*mut PWSTR, *mut PWSTR) -> windows::core::Result<()>,
) -> Result<String, RawError> {
    let mut output = OutString::new();
    checked(function, |record| call(output.as_out(), record))?;
    Ok(output.text())
}

/// Like [`checked`] for calls that return a handle.
fn checked_handle<H: Handle>(
    function: Function,
    call: impl FnOnce(*mut *mut c_void, *mut PWSTR) -> windows::core::Result<()>,
) -> Result<H, RawError> {
    let mut handle: *mut c_void = std::ptr::null_mut();
    checked(function, |record| call(&mut handle, record))?;
    // SAFETY: HCN issued this handle in the call that just succeeded and nothing else has
    // seen it: the value made here is its only owner.
    Ok(unsafe { H::from_raw(handle as usize) })
}

fn closed(function: Function, result: windows::core::Result<()>) -> Result<(), RawError> {
    result
        .map_err(|error| RawError::new(function, HResult::from_i32(error.code().0), String::new()))
}

fn handle_ptr(handle: &impl Handle) -> *const c_void {
    handle.as_raw() as *const c_void
}

impl RawHcn for ComputeNetwork {
    fn enumerate_networks(&self, query: &str) -> Result<String, RawError> {
        let query = HSTRING::from(query);
        checked_string(Function::EnumerateNetworks, |out, record| {
            // SAFETY: `query` is a live HSTRING; `out` and `record` point at live `OutString`s the call may write once.
            unsafe { hcn::HcnEnumerateNetworks(&query, out, Some(record)) }
        })
    }

    fn create_network(&self, id: &Guid, settings: &str) -> Result<NetworkHandle, RawError> {
        let (id, settings) = (to_guid(id), HSTRING::from(settings));
        checked_handle(Function::CreateNetwork, |handle, record| {
            // SAFETY: `id` and `settings` are live locals; `handle` and `record` point at live locals the call may write once.
            unsafe { hcn::HcnCreateNetwork(&id, &settings, handle, Some(record)) }
        })
    }

    fn open_network(&self, id: &Guid) -> Result<NetworkHandle, RawError> {
        let id = to_guid(id);
        checked_handle(Function::OpenNetwork, |handle, record| {
            // SAFETY: `id` is a live local; `handle` and `record` point at live locals the call may write once.
            unsafe { hcn::HcnOpenNetwork(&id, handle, Some(record)) }
        })
    }

    fn modify_network(&self, network: &NetworkHandle, settings: &str) -> Result<(), RawError> {
        let settings = HSTRING::from(settings);
        checked(Function::ModifyNetwork, |record| {
            // SAFETY: the handle is open (HCN issued it and only its owner, which lent it here, closes it); `settings` is a live HSTRING and `record` a live out pointer.
            unsafe { hcn::HcnModifyNetwork(handle_ptr(network), &settings, Some(record)) }
        })
    }

    fn query_network_properties(
        &self,
        network: &NetworkHandle,
        query: &str,
    ) -> Result<String, RawError> {
        let query = HSTRING::from(query);
        checked_string(Function::QueryNetworkProperties, |out, record| {
            // SAFETY: the handle is open (HCN issued it and only its owner, which lent it here, closes it); `query` is a live HSTRING; `out` and `record` point at live `OutString`s.
            unsafe {
                hcn::HcnQueryNetworkProperties(handle_ptr(network), &query, out, Some(record))
            }
        })
    }

    fn delete_network(&self, id: &Guid) -> Result<(), RawError> {
        let id = to_guid(id);
        checked(Function::DeleteNetwork, |record| {
            // SAFETY: `id` is a live local GUID and `record` a live out pointer.
            unsafe { hcn::HcnDeleteNetwork(&id, Some(record)) }
        })
    }

    fn close_network(&self, network: NetworkHandle) -> Result<(), RawError> {
        closed(
            Function::CloseNetwork,
            // SAFETY: the handle is open and owned by the value this call consumes, so HCN closes it exactly once.
            unsafe { hcn::HcnCloseNetwork(handle_ptr(&network)) },
        )
    }

    fn enumerate_endpoints(&self, query: &str) -> Result<String, RawError> {
        let query = HSTRING::from(query);
        checked_string(Function::EnumerateEndpoints, |out, record| {
            // SAFETY: `query` is a live HSTRING; `out` and `record` point at live `OutString`s the call may write once.
            unsafe { hcn::HcnEnumerateEndpoints(&query, out, Some(record)) }
        })
    }

    fn create_endpoint(
        &self,
        network: &NetworkHandle,
        id: &Guid,
        settings: &str,
    ) -> Result<EndpointHandle, RawError> {
        let (id, settings) = (to_guid(id), HSTRING::from(settings));
        checked_handle(Function::CreateEndpoint, |handle, record| {
            // SAFETY: `id` and `settings` are live locals; `network` is an open handle HCN issued, borrowed from its owner for this call; `handle` and `record` point at live locals the call may write once.
            unsafe {
                hcn::HcnCreateEndpoint(handle_ptr(network), &id, &settings, handle, Some(record))
            }
        })
    }

    fn open_endpoint(&self, id: &Guid) -> Result<EndpointHandle, RawError> {
        let id = to_guid(id);
        checked_handle(Function::OpenEndpoint, |handle, record| {
            // SAFETY: `id` is a live local; `handle` and `record` point at live locals the call may write once.
            unsafe { hcn::HcnOpenEndpoint(&id, handle, Some(record)) }
        })
    }

    fn modify_endpoint(&self, endpoint: &EndpointHandle, settings: &str) -> Result<(), RawError> {
        let settings = HSTRING::from(settings);
        checked(Function::ModifyEndpoint, |record| {
            // SAFETY: the handle is open (HCN issued it and only its owner, which lent it here, closes it); `settings` is a live HSTRING and `record` a live out pointer.
            unsafe { hcn::HcnModifyEndpoint(handle_ptr(endpoint), &settings, Some(record)) }
        })
    }

    fn query_endpoint_properties(
        &self,
        endpoint: &EndpointHandle,
        query: &str,
    ) -> Result<String, RawError> {
        let query = HSTRING::from(query);
        checked_string(Function::QueryEndpointProperties, |out, record| {
            // SAFETY: the handle is open (HCN issued it and only its owner, which lent it here, closes it); `query` is a live HSTRING; `out` and `record` point at live `OutString`s.
            unsafe {
                hcn::HcnQueryEndpointProperties(handle_ptr(endpoint), &query, out, Some(record))
            }
        })
    }

    fn delete_endpoint(&self, id: &Guid) -> Result<(), RawError> {
        let id = to_guid(id);
        checked(Function::DeleteEndpoint, |record| {
            // SAFETY: `id` is a live local GUID and `record` a live out pointer.
            unsafe { hcn::HcnDeleteEndpoint(&id, Some(record)) }
        })
    }

    fn close_endpoint(&self, endpoint: EndpointHandle) -> Result<(), RawError> {
        closed(
            Function::CloseEndpoint,
            // SAFETY: the handle is open and owned by the value this call consumes, so HCN closes it exactly once.
            unsafe { hcn::HcnCloseEndpoint(handle_ptr(&endpoint)) },
        )
    }

    fn enumerate_namespaces(&self, query: &str) -> Result<String, RawError> {
        let query = HSTRING::from(query);
        checked_string(Function::EnumerateNamespaces, |out, record| {
            // SAFETY: `query` is a live HSTRING; `out` and `record` point at live `OutString`s the call may write once.
            unsafe { hcn::HcnEnumerateNamespaces(&query, out, Some(record)) }
        })
    }

    fn create_namespace(&self, id: &Guid, settings: &str) -> Result<NamespaceHandle, RawError> {
        let (id, settings) = (to_guid(id), HSTRING::from(settings));
        checked_handle(Function::CreateNamespace, |handle, record| {
            // SAFETY: `id` and `settings` are live locals; `handle` and `record` point at live locals the call may write once.
            unsafe { hcn::HcnCreateNamespace(&id, &settings, handle, Some(record)) }
        })
    }

    fn open_namespace(&self, id: &Guid) -> Result<NamespaceHandle, RawError> {
        let id = to_guid(id);
        checked_handle(Function::OpenNamespace, |handle, record| {
            // SAFETY: `id` is a live local; `handle` and `record` point at live locals the call may write once.
            unsafe { hcn::HcnOpenNamespace(&id, handle, Some(record)) }
        })
    }

    fn modify_namespace(
        &self,
        namespace: &NamespaceHandle,
        settings: &str,
    ) -> Result<(), RawError> {
        let settings = HSTRING::from(settings);
        checked(Function::ModifyNamespace, |record| {
            // SAFETY: the handle is open (HCN issued it and only its owner, which lent it here, closes it); `settings` is a live HSTRING and `record` a live out pointer.
            unsafe { hcn::HcnModifyNamespace(handle_ptr(namespace), &settings, Some(record)) }
        })
    }

    fn query_namespace_properties(
        &self,
        namespace: &NamespaceHandle,
        query: &str,
    ) -> Result<String, RawError> {
        let query = HSTRING::from(query);
        checked_string(Function::QueryNamespaceProperties, |out, record| {
            // SAFETY: the handle is open (HCN issued it and only its owner, which lent it here, closes it); `query` is a live HSTRING; `out` and `record` point at live `OutString`s.
            unsafe {
                hcn::HcnQueryNamespaceProperties(handle_ptr(namespace), &query, out, Some(record))
            }
        })
    }

    fn delete_namespace(&self, id: &Guid) -> Result<(), RawError> {
        let id = to_guid(id);
        checked(Function::DeleteNamespace, |record| {
            // SAFETY: `id` is a live local GUID and `record` a live out pointer.
            unsafe { hcn::HcnDeleteNamespace(&id, Some(record)) }
        })
    }

    fn close_namespace(&self, namespace: NamespaceHandle) -> Result<(), RawError> {
        closed(
            Function::CloseNamespace,
            // SAFETY: the handle is open and owned by the value this call consumes, so HCN closes it exactly once.
            unsafe { hcn::HcnCloseNamespace(handle_ptr(&namespace)) },
        )
    }

    fn enumerate_load_balancers(&self, query: &str) -> Result<String, RawError> {
        let query = HSTRING::from(query);
        checked_string(Function::EnumerateLoadBalancers, |out, record| {
            // SAFETY: `query` is a live HSTRING; `out` and `record` point at live `OutString`s the call may write once.
            unsafe { hcn::HcnEnumerateLoadBalancers(&query, out, Some(record)) }
        })
    }

    fn create_load_balancer(
        &self,
        id: &Guid,
        settings: &str,
    ) -> Result<LoadBalancerHandle, RawError> {
        let (id, settings) = (to_guid(id), HSTRING::from(settings));
        checked_handle(Function::CreateLoadBalancer, |handle, record| {
            // SAFETY: `id` and `settings` are live locals; `handle` and `record` point at live locals the call may write once.
            unsafe { hcn::HcnCreateLoadBalancer(&id, &settings, handle, Some(record)) }
        })
    }

    fn open_load_balancer(&self, id: &Guid) -> Result<LoadBalancerHandle, RawError> {
        let id = to_guid(id);
        checked_handle(Function::OpenLoadBalancer, |handle, record| {
            // SAFETY: `id` is a live local; `handle` and `record` point at live locals the call may write once.
            unsafe { hcn::HcnOpenLoadBalancer(&id, handle, Some(record)) }
        })
    }

    fn modify_load_balancer(
        &self,
        load_balancer: &LoadBalancerHandle,
        settings: &str,
    ) -> Result<(), RawError> {
        let settings = HSTRING::from(settings);
        checked(Function::ModifyLoadBalancer, |record| {
            // SAFETY: the handle is open (HCN issued it and only its owner, which lent it here, closes it); `settings` is a live HSTRING and `record` a live out pointer.
            unsafe {
                hcn::HcnModifyLoadBalancer(handle_ptr(load_balancer), &settings, Some(record))
            }
        })
    }

    fn query_load_balancer_properties(
        &self,
        load_balancer: &LoadBalancerHandle,
        query: &str,
    ) -> Result<String, RawError> {
        let query = HSTRING::from(query);
        checked_string(Function::QueryLoadBalancerProperties, |out, record| {
            // SAFETY: the handle is open (HCN issued it and only its owner, which lent it here, closes it); `query` is a live HSTRING; `out` and `record` point at live `OutString`s.
            unsafe {
                hcn::HcnQueryLoadBalancerProperties(
                    handle_ptr(load_balancer),
                    &query,
                    out,
                    Some(record),
                )
            }
        })
    }

    fn delete_load_balancer(&self, id: &Guid) -> Result<(), RawError> {
        let id = to_guid(id);
        checked(Function::DeleteLoadBalancer, |record| {
            // SAFETY: `id` is a live local GUID and `record` a live out pointer.
            unsafe { hcn::HcnDeleteLoadBalancer(&id, Some(record)) }
        })
    }

    fn close_load_balancer(&self, load_balancer: LoadBalancerHandle) -> Result<(), RawError> {
        closed(
            Function::CloseLoadBalancer,
            // SAFETY: the handle is open and owned by the value this call consumes, so HCN closes it exactly once.
            unsafe { hcn::HcnCloseLoadBalancer(handle_ptr(&load_balancer)) },
        )
    }

    fn hns_call(&self, method: &str, path: &str, request: &str) -> Result<String, RawError> {
        let (method, path, request) = (
            HSTRING::from(method),
            HSTRING::from(path),
            HSTRING::from(request),
        );
        let mut response = OutString::new();
        // SAFETY: the three strings are live HSTRINGs, NUL-terminated, and `response`
        // points at a live `OutString` the call may write once.
        let code = unsafe {
            HNSCall(
                PCWSTR(method.as_ptr()),
                PCWSTR(path.as_ptr()),
                PCWSTR(request.as_ptr()),
                response.as_out(),
            )
        };
        let text = response.text();
        if code.is_err() {
            return Err(RawError::new(
                Function::HnsCall,
                HResult::from_i32(code.0),
                text,
            ));
        }
        Ok(text)
    }

    fn windows_build(&self) -> Result<u32, RawError> {
        let mut information = OsVersionInfo {
            size: std::mem::size_of::<OsVersionInfo>() as u32,
            major: 0,
            minor: 0,
            build: 0,
            platform_id: 0,
            service_pack: [0; 128],
        };
        // SAFETY: `information` is a live, writable OSVERSIONINFOW whose size field says so,
        // which is all RtlGetVersion reads before it writes the structure.
        let status = unsafe { RtlGetVersion(&mut information) };
        if status < 0 {
            // HRESULT_FROM_NT: the NTSTATUS with the facility bit set.
            let hresult = HResult::from_i32(status | 0x1000_0000);
            return Err(RawError::new(
                Function::RtlGetVersion,
                hresult,
                String::new(),
            ));
        }
        Ok(information.build)
    }
}
