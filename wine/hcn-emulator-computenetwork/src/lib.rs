//! `computenetwork.dll` for Wine: the HCN C API over the file-backed HCN emulator.
//!
//! Exports, with the documented signatures (`ComputeNetwork.h`), every
//! function `hns::native::ComputeNetwork` imports: Enumerate / Create / Open /
//! Modify / Query…Properties / Delete / Close for networks, endpoints,
//! namespaces and load balancers (what kube-proxy's winkernel proxier calls).
//! Each export is one call of the emulator (`hns_emulator`), which
//! holds all semantics; the state lives under `HCN_EMULATOR_STATE`, so
//! `hnsctl` on Linux sees what a Windows binary did under Wine. The C-ABI
//! conventions (UTF-16, CoTaskMem out strings, error records, no unwinding)
//! are `hcn_emulator_ffi`'s.
//!
//! Test-only, never shipped. Windows only; on other targets the crate is empty.
#![cfg(windows)]
#![warn(missing_docs)]

use std::ffi::c_void;

use hcn_emulator_ffi::{
    call, call_returning_handle, call_returning_string, call_without_record, caller_handle,
    emulator, read_guid, read_string,
};
use hns::raw::{EndpointHandle, Handle, LoadBalancerHandle, NamespaceHandle, NetworkHandle};
use hns::{Function, RawHcn};
use windows::core::{GUID, HRESULT, PCWSTR, PWSTR};

/// `HcnEnumerate*(Query, *Result, *ErrorRecord)`.
macro_rules! enumerate {
    ($export:ident = $function:ident, $method:ident) => {
        #[doc = concat!("`", stringify!($export), "(Query, *Result, *ErrorRecord)`.")]
        ///
        /// # Safety
        /// `query` is null or a NUL-terminated UTF-16 string; `result` and
        /// `error_record` are null or writable.
        #[unsafe(no_mangle)]
        pub unsafe extern "system" fn $export(
            query: PCWSTR,
            result: *mut PWSTR,
            error_record: *mut PWSTR,
        ) -> HRESULT {
            let function = Function::$function;
            // SAFETY: the pointers as documented above.
            unsafe {
                call_returning_string(function, result, error_record, || {
                    emulator(function)?.$method(&read_string(function, "Query", query)?)
                })
            }
        }
    };
}

/// `HcnOpen*(Id, *Handle, *ErrorRecord)`.
macro_rules! open {
    ($export:ident = $function:ident, $method:ident) => {
        #[doc = concat!("`", stringify!($export), "(Id, *Handle, *ErrorRecord)`.")]
        ///
        /// # Safety
        /// `id` is null or a GUID; `handle` and `error_record` are null or writable.
        #[unsafe(no_mangle)]
        pub unsafe extern "system" fn $export(
            id: *const GUID,
            handle: *mut *mut c_void,
            error_record: *mut PWSTR,
        ) -> HRESULT {
            let function = Function::$function;
            // SAFETY: the pointers as documented above.
            unsafe {
                call_returning_handle(function, handle, error_record, || {
                    Ok(emulator(function)?
                        .$method(&read_guid(function, id)?)?
                        .as_raw())
                })
            }
        }
    };
}

/// `HcnModify*(Handle, Settings, *ErrorRecord)`.
macro_rules! modify {
    ($export:ident = $function:ident, $method:ident, $handle:ident) => {
        #[doc = concat!("`", stringify!($export), "(Handle, Settings, *ErrorRecord)`.")]
        ///
        /// # Safety
        /// `handle` is an open handle this DLL issued (see [`caller_handle`]); `settings` is null
        /// or a NUL-terminated UTF-16 string; `error_record` is null or writable.
        #[unsafe(no_mangle)]
        pub unsafe extern "system" fn $export(
            handle: *const c_void,
            settings: PCWSTR,
            error_record: *mut PWSTR,
        ) -> HRESULT {
            let function = Function::$function;
            // SAFETY: the pointers as documented above.
            unsafe {
                call(function, error_record, || {
                    emulator(function)?.$method(
                        &caller_handle::<$handle>(handle),
                        &read_string(function, "Settings", settings)?,
                    )
                })
            }
        }
    };
}

/// `HcnQuery*Properties(Handle, Query, *Properties, *ErrorRecord)`.
macro_rules! query {
    ($export:ident = $function:ident, $method:ident, $handle:ident) => {
        #[doc = concat!("`", stringify!($export), "(Handle, Query, *Properties, *ErrorRecord)`.")]
        ///
        /// # Safety
        /// `handle` is an open handle this DLL issued (see [`caller_handle`]); `query` is null or
        /// a NUL-terminated UTF-16 string; `properties` and `error_record` are null or writable.
        #[unsafe(no_mangle)]
        pub unsafe extern "system" fn $export(
            handle: *const c_void,
            query: PCWSTR,
            properties: *mut PWSTR,
            error_record: *mut PWSTR,
        ) -> HRESULT {
            let function = Function::$function;
            // SAFETY: the pointers as documented above.
            unsafe {
                call_returning_string(function, properties, error_record, || {
                    emulator(function)?.$method(
                        &caller_handle::<$handle>(handle),
                        &read_string(function, "Query", query)?,
                    )
                })
            }
        }
    };
}

/// `HcnDelete*(Id, *ErrorRecord)`.
macro_rules! delete {
    ($export:ident = $function:ident, $method:ident) => {
        #[doc = concat!("`", stringify!($export), "(Id, *ErrorRecord)`.")]
        ///
        /// # Safety
        /// `id` is null or a GUID; `error_record` is null or writable.
        #[unsafe(no_mangle)]
        pub unsafe extern "system" fn $export(
            id: *const GUID,
            error_record: *mut PWSTR,
        ) -> HRESULT {
            let function = Function::$function;
            // SAFETY: the pointers as documented above.
            unsafe {
                call(function, error_record, || {
                    emulator(function)?.$method(&read_guid(function, id)?)
                })
            }
        }
    };
}

/// `HcnClose*(Handle)`.
macro_rules! close {
    ($export:ident = $function:ident, $method:ident, $handle:ident) => {
        #[doc = concat!("`", stringify!($export), "(Handle)`.")]
        ///
        /// # Safety
        /// `handle` is a handle this DLL issued, closed at most once (see [`caller_handle`]).
        #[unsafe(no_mangle)]
        pub unsafe extern "system" fn $export(handle: *const c_void) -> HRESULT {
            let function = Function::$function;
            call_without_record(function, || {
                // SAFETY: the handle as documented above.
                let handle = unsafe { caller_handle::<$handle>(handle) };
                emulator(function)?.$method(handle)
            })
        }
    };
}

/// `HcnCreateNetwork` / `HcnCreateNamespace` / `HcnCreateLoadBalancer`:
/// `(Id, Settings, *Handle, *ErrorRecord)`.
macro_rules! create {
    ($export:ident = $function:ident, $method:ident) => {
        #[doc = concat!("`", stringify!($export), "(Id, Settings, *Handle, *ErrorRecord)`; the zero GUID lets HNS choose.")]
        ///
        /// # Safety
        /// `id` is null or a GUID; `settings` is null or a NUL-terminated UTF-16
        /// string; `handle` and `error_record` are null or writable.
        #[unsafe(no_mangle)]
        pub unsafe extern "system" fn $export(
            id: *const GUID,
            settings: PCWSTR,
            handle: *mut *mut c_void,
            error_record: *mut PWSTR,
        ) -> HRESULT {
            let function = Function::$function;
            // SAFETY: the pointers as documented above.
            unsafe {
                call_returning_handle(function, handle, error_record, || {
                    let id = read_guid(function, id)?;
                    let settings = read_string(function, "Settings", settings)?;
                    Ok(emulator(function)?.$method(&id, &settings)?.as_raw())
                })
            }
        }
    };
}

enumerate!(HcnEnumerateNetworks = EnumerateNetworks, enumerate_networks);
create!(HcnCreateNetwork = CreateNetwork, create_network);
open!(HcnOpenNetwork = OpenNetwork, open_network);
modify!(
    HcnModifyNetwork = ModifyNetwork,
    modify_network,
    NetworkHandle
);
query!(
    HcnQueryNetworkProperties = QueryNetworkProperties,
    query_network_properties,
    NetworkHandle
);
delete!(HcnDeleteNetwork = DeleteNetwork, delete_network);
close!(HcnCloseNetwork = CloseNetwork, close_network, NetworkHandle);

enumerate!(
    HcnEnumerateEndpoints = EnumerateEndpoints,
    enumerate_endpoints
);
open!(HcnOpenEndpoint = OpenEndpoint, open_endpoint);
modify!(
    HcnModifyEndpoint = ModifyEndpoint,
    modify_endpoint,
    EndpointHandle
);
query!(
    HcnQueryEndpointProperties = QueryEndpointProperties,
    query_endpoint_properties,
    EndpointHandle
);
delete!(HcnDeleteEndpoint = DeleteEndpoint, delete_endpoint);
close!(
    HcnCloseEndpoint = CloseEndpoint,
    close_endpoint,
    EndpointHandle
);

enumerate!(
    HcnEnumerateNamespaces = EnumerateNamespaces,
    enumerate_namespaces
);
create!(HcnCreateNamespace = CreateNamespace, create_namespace);
open!(HcnOpenNamespace = OpenNamespace, open_namespace);
modify!(
    HcnModifyNamespace = ModifyNamespace,
    modify_namespace,
    NamespaceHandle
);
query!(
    HcnQueryNamespaceProperties = QueryNamespaceProperties,
    query_namespace_properties,
    NamespaceHandle
);
delete!(HcnDeleteNamespace = DeleteNamespace, delete_namespace);
close!(
    HcnCloseNamespace = CloseNamespace,
    close_namespace,
    NamespaceHandle
);

enumerate!(
    HcnEnumerateLoadBalancers = EnumerateLoadBalancers,
    enumerate_load_balancers
);
create!(
    HcnCreateLoadBalancer = CreateLoadBalancer,
    create_load_balancer
);
open!(HcnOpenLoadBalancer = OpenLoadBalancer, open_load_balancer);
modify!(
    HcnModifyLoadBalancer = ModifyLoadBalancer,
    modify_load_balancer,
    LoadBalancerHandle
);
query!(
    HcnQueryLoadBalancerProperties = QueryLoadBalancerProperties,
    query_load_balancer_properties,
    LoadBalancerHandle
);
delete!(
    HcnDeleteLoadBalancer = DeleteLoadBalancer,
    delete_load_balancer
);
close!(
    HcnCloseLoadBalancer = CloseLoadBalancer,
    close_load_balancer,
    LoadBalancerHandle
);

/// `HcnCreateEndpoint(Network, Id, Settings, *Endpoint, *ErrorRecord)`.
///
/// # Safety
/// `network` is an open handle this DLL issued (see [`caller_handle`]); `id` is null or a
/// GUID; `settings` is null or a NUL-terminated UTF-16 string; `endpoint` and `error_record`
/// are null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "system" fn HcnCreateEndpoint(
    network: *const c_void,
    id: *const GUID,
    settings: PCWSTR,
    endpoint: *mut *mut c_void,
    error_record: *mut PWSTR,
) -> HRESULT {
    let function = Function::CreateEndpoint;
    // SAFETY: the pointers as documented above.
    unsafe {
        call_returning_handle(function, endpoint, error_record, || {
            let id = read_guid(function, id)?;
            let settings = read_string(function, "Settings", settings)?;
            let created = emulator(function)?.create_endpoint(
                &caller_handle::<NetworkHandle>(network),
                &id,
                &settings,
            )?;
            Ok(created.as_raw())
        })
    }
}
