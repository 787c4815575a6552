//! The raw API: computenetwork.dll function for function.
//!
//! JSON strings in, JSON strings out, opaque handles, GUIDs. Nothing here
//! interprets a document; that is the typed [`crate::Client`]'s job, which is
//! generic over this trait so the same composition code runs against the
//! emulator and against Windows.

use crate::error::RawError;
use crate::guid::Guid;

/// An open HCN object's handle, owned: the one value that may close it.
///
/// Handles are neither `Clone` nor `Copy`, the `close_*` calls take them by
/// value, and only [`Handle::from_raw`] (unsafe) makes one, so safe code can
/// neither forge a handle nor close one twice. Dropping a handle without
/// closing it leaks the HCN object's handle (the typed client's `Open` objects
/// close theirs on drop); it never closes anything.
///
/// Safe code cannot copy a handle to close it twice:
/// ```compile_fail
/// use hns::RawHcn;
/// use hns::raw::NetworkHandle;
/// fn close_twice(raw: &dyn RawHcn, network: NetworkHandle) {
///     let _ = raw.close_network(network);
///     let _ = raw.close_network(network);
/// }
/// ```
/// nor forge one:
/// ```compile_fail
/// let forged = hns::raw::NetworkHandle(0x1234);
/// ```
#[allow(unsafe_code)] // minting a handle is unsafe: see `from_raw`
pub trait Handle: std::fmt::Debug + Sized {
    /// Wraps a handle value a backend issued.
    ///
    /// # Safety
    /// `raw` must have been issued by the backend this handle will be passed
    /// to, must still be open, and no other handle value may own it: the value
    /// returned is the only one through which it is used and closed (a layer
    /// between the owner and the backend may lend a copy for one call it makes
    /// on the owner's behalf, as [`crate::deadline`] does).
    unsafe fn from_raw(raw: usize) -> Self;

    /// The value the backend issued, for calls into it and for logs.
    fn as_raw(&self) -> usize;
}

macro_rules! handle_types {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// Opaque: only the backend that issued it knows what the value means.
        #[derive(Debug, PartialEq, Eq, Hash)]
        pub struct $name(usize);

        #[allow(unsafe_code)] // the handle types' one constructor
        impl Handle for $name {
            unsafe fn from_raw(raw: usize) -> Self {
                $name(raw)
            }

            fn as_raw(&self) -> usize {
                self.0
            }
        }
    )*};
}

handle_types! {
    /// An open network (`HCN_NETWORK`).
    NetworkHandle;
    /// An open endpoint (`HCN_ENDPOINT`).
    EndpointHandle;
    /// An open namespace (`HCN_NAMESPACE`).
    NamespaceHandle;
    /// An open load balancer (`HCN_LOADBALANCER`).
    LoadBalancerHandle;
}

/// The computenetwork.dll functions this crate uses, plus vmcompute.dll's
/// `HNSCall` (the V1 API, still the only way to read the HNS version) and
/// ntdll's `RtlGetVersion` (the host's Windows build, which some HNS behaviour
/// follows).
///
/// Every method is one call into HNS. Failures carry the HRESULT and the
/// error record; out strings are owned `String`s (backends free the native
/// buffers). Enumerations return a JSON array of GUID strings; property
/// queries return the object's JSON.
///
/// Backends are `Send + Sync` so that a call can run on a thread of its own
/// (see [`crate::deadline`]).
pub trait RawHcn: std::fmt::Debug + Send + Sync {
    /// `HcnEnumerateNetworks(Query, *Networks, *ErrorRecord)`.
    fn enumerate_networks(&self, query: &str) -> Result<String, RawError>;
    /// `HcnCreateNetwork(Id, Settings, *Network, *ErrorRecord)`; the zero GUID lets HNS choose.
    fn create_network(&self, id: &Guid, settings: &str) -> Result<NetworkHandle, RawError>;
    /// `HcnOpenNetwork(Id, *Network, *ErrorRecord)`.
    fn open_network(&self, id: &Guid) -> Result<NetworkHandle, RawError>;
    /// `HcnModifyNetwork(Network, Settings, *ErrorRecord)`.
    fn modify_network(&self, network: &NetworkHandle, settings: &str) -> Result<(), RawError>;
    /// `HcnQueryNetworkProperties(Network, Query, *Properties, *ErrorRecord)`.
    fn query_network_properties(
        &self,
        network: &NetworkHandle,
        query: &str,
    ) -> Result<String, RawError>;
    /// `HcnDeleteNetwork(Id, *ErrorRecord)`.
    fn delete_network(&self, id: &Guid) -> Result<(), RawError>;
    /// `HcnCloseNetwork(Network)`.
    fn close_network(&self, network: NetworkHandle) -> Result<(), RawError>;

    /// `HcnEnumerateEndpoints(Query, *Endpoints, *ErrorRecord)`.
    fn enumerate_endpoints(&self, query: &str) -> Result<String, RawError>;
    /// `HcnCreateEndpoint(Network, Id, Settings, *Endpoint, *ErrorRecord)`.
    fn create_endpoint(
        &self,
        network: &NetworkHandle,
        id: &Guid,
        settings: &str,
    ) -> Result<EndpointHandle, RawError>;
    /// `HcnOpenEndpoint(Id, *Endpoint, *ErrorRecord)`.
    fn open_endpoint(&self, id: &Guid) -> Result<EndpointHandle, RawError>;
    /// `HcnModifyEndpoint(Endpoint, Settings, *ErrorRecord)`.
    fn modify_endpoint(&self, endpoint: &EndpointHandle, settings: &str) -> Result<(), RawError>;
    /// `HcnQueryEndpointProperties(Endpoint, Query, *Properties, *ErrorRecord)`.
    fn query_endpoint_properties(
        &self,
        endpoint: &EndpointHandle,
        query: &str,
    ) -> Result<String, RawError>;
    /// `HcnDeleteEndpoint(Id, *ErrorRecord)`.
    fn delete_endpoint(&self, id: &Guid) -> Result<(), RawError>;
    /// `HcnCloseEndpoint(Endpoint)`.
    fn close_endpoint(&self, endpoint: EndpointHandle) -> Result<(), RawError>;

    /// `HcnEnumerateNamespaces(Query, *Namespaces, *ErrorRecord)`.
    fn enumerate_namespaces(&self, query: &str) -> Result<String, RawError>;
    /// `HcnCreateNamespace(Id, Settings, *Namespace, *ErrorRecord)`.
    fn create_namespace(&self, id: &Guid, settings: &str) -> Result<NamespaceHandle, RawError>;
    /// `HcnOpenNamespace(Id, *Namespace, *ErrorRecord)`.
    fn open_namespace(&self, id: &Guid) -> Result<NamespaceHandle, RawError>;
    /// `HcnModifyNamespace(Namespace, Settings, *ErrorRecord)`.
    fn modify_namespace(&self, namespace: &NamespaceHandle, settings: &str)
    -> Result<(), RawError>;
    /// `HcnQueryNamespaceProperties(Namespace, Query, *Properties, *ErrorRecord)`.
    fn query_namespace_properties(
        &self,
        namespace: &NamespaceHandle,
        query: &str,
    ) -> Result<String, RawError>;
    /// `HcnDeleteNamespace(Id, *ErrorRecord)`.
    fn delete_namespace(&self, id: &Guid) -> Result<(), RawError>;
    /// `HcnCloseNamespace(Namespace)`.
    fn close_namespace(&self, namespace: NamespaceHandle) -> Result<(), RawError>;

    /// `HcnEnumerateLoadBalancers(Query, *LoadBalancers, *ErrorRecord)`.
    fn enumerate_load_balancers(&self, query: &str) -> Result<String, RawError>;
    /// `HcnCreateLoadBalancer(Id, Settings, *LoadBalancer, *ErrorRecord)`; the zero GUID lets
    /// HNS choose.
    fn create_load_balancer(
        &self,
        id: &Guid,
        settings: &str,
    ) -> Result<LoadBalancerHandle, RawError>;
    /// `HcnOpenLoadBalancer(Id, *LoadBalancer, *ErrorRecord)`.
    fn open_load_balancer(&self, id: &Guid) -> Result<LoadBalancerHandle, RawError>;
    /// `HcnModifyLoadBalancer(LoadBalancer, Settings, *ErrorRecord)`.
    fn modify_load_balancer(
        &self,
        load_balancer: &LoadBalancerHandle,
        settings: &str,
    ) -> Result<(), RawError>;
    /// `HcnQueryLoadBalancerProperties(LoadBalancer, Query, *Properties, *ErrorRecord)`.
    fn query_load_balancer_properties(
        &self,
        load_balancer: &LoadBalancerHandle,
        query: &str,
    ) -> Result<String, RawError>;
    /// `HcnDeleteLoadBalancer(Id, *ErrorRecord)`.
    fn delete_load_balancer(&self, id: &Guid) -> Result<(), RawError>;
    /// `HcnCloseLoadBalancer(LoadBalancer)`.
    fn close_load_balancer(&self, load_balancer: LoadBalancerHandle) -> Result<(), RawError>;

    /// vmcompute.dll `HNSCall(Method, Path, Request, *Response)`: returns the V1
    /// envelope `{"Success":..,"Error":..,"Output":..}`. Used for `GET /globals/version`.
    fn hns_call(&self, method: &str, path: &str, request: &str) -> Result<String, RawError>;

    /// ntdll.dll `RtlGetVersion(*VersionInformation)`: the build number of the host's
    /// Windows (not subject to the manifest-dependent answers of `GetVersionEx`).
    fn windows_build(&self) -> Result<u32, RawError>;
}

/// The raw functions by name, as counted by the emulator and shown by `hnsctl stats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Function {
    /// `HcnEnumerateNetworks`
    EnumerateNetworks,
    /// `HcnCreateNetwork`
    CreateNetwork,
    /// `HcnOpenNetwork`
    OpenNetwork,
    /// `HcnModifyNetwork`
    ModifyNetwork,
    /// `HcnQueryNetworkProperties`
    QueryNetworkProperties,
    /// `HcnDeleteNetwork`
    DeleteNetwork,
    /// `HcnCloseNetwork`
    CloseNetwork,
    /// `HcnEnumerateEndpoints`
    EnumerateEndpoints,
    /// `HcnCreateEndpoint`
    CreateEndpoint,
    /// `HcnOpenEndpoint`
    OpenEndpoint,
    /// `HcnModifyEndpoint`
    ModifyEndpoint,
    /// `HcnQueryEndpointProperties`
    QueryEndpointProperties,
    /// `HcnDeleteEndpoint`
    DeleteEndpoint,
    /// `HcnCloseEndpoint`
    CloseEndpoint,
    /// `HcnEnumerateNamespaces`
    EnumerateNamespaces,
    /// `HcnCreateNamespace`
    CreateNamespace,
    /// `HcnOpenNamespace`
    OpenNamespace,
    /// `HcnModifyNamespace`
    ModifyNamespace,
    /// `HcnQueryNamespaceProperties`
    QueryNamespaceProperties,
    /// `HcnDeleteNamespace`
    DeleteNamespace,
    /// `HcnCloseNamespace`
    CloseNamespace,
    /// `HcnEnumerateLoadBalancers`
    EnumerateLoadBalancers,
    /// `HcnCreateLoadBalancer`
    CreateLoadBalancer,
    /// `HcnOpenLoadBalancer`
    OpenLoadBalancer,
    /// `HcnModifyLoadBalancer`
    ModifyLoadBalancer,
    /// `HcnQueryLoadBalancerProperties`
    QueryLoadBalancerProperties,
    /// `HcnDeleteLoadBalancer`
    DeleteLoadBalancer,
    /// `HcnCloseLoadBalancer`
    CloseLoadBalancer,
    /// `HNSCall`
    HnsCall,
    /// `RtlGetVersion`
    RtlGetVersion,
}

impl Function {
    /// Every function, in declaration order.
    pub const ALL: [Function; 30] = [
        Function::EnumerateNetworks,
        Function::CreateNetwork,
        Function::OpenNetwork,
        Function::ModifyNetwork,
        Function::QueryNetworkProperties,
        Function::DeleteNetwork,
        Function::CloseNetwork,
        Function::EnumerateEndpoints,
        Function::CreateEndpoint,
        Function::OpenEndpoint,
        Function::ModifyEndpoint,
        Function::QueryEndpointProperties,
        Function::DeleteEndpoint,
        Function::CloseEndpoint,
        Function::EnumerateNamespaces,
        Function::CreateNamespace,
        Function::OpenNamespace,
        Function::ModifyNamespace,
        Function::QueryNamespaceProperties,
        Function::DeleteNamespace,
        Function::CloseNamespace,
        Function::EnumerateLoadBalancers,
        Function::CreateLoadBalancer,
        Function::OpenLoadBalancer,
        Function::ModifyLoadBalancer,
        Function::QueryLoadBalancerProperties,
        Function::DeleteLoadBalancer,
        Function::CloseLoadBalancer,
        Function::HnsCall,
        Function::RtlGetVersion,
    ];

    /// The exported name, e.g. `HcnOpenNetwork`.
    pub fn name(self) -> &'static str {
        match self {
            Function::EnumerateNetworks => "HcnEnumerateNetworks",
            Function::CreateNetwork => "HcnCreateNetwork",
            Function::OpenNetwork => "HcnOpenNetwork",
            Function::ModifyNetwork => "HcnModifyNetwork",
            Function::QueryNetworkProperties => "HcnQueryNetworkProperties",
            Function::DeleteNetwork => "HcnDeleteNetwork",
            Function::CloseNetwork => "HcnCloseNetwork",
            Function::EnumerateEndpoints => "HcnEnumerateEndpoints",
            Function::CreateEndpoint => "HcnCreateEndpoint",
            Function::OpenEndpoint => "HcnOpenEndpoint",
            Function::ModifyEndpoint => "HcnModifyEndpoint",
            Function::QueryEndpointProperties => "HcnQueryEndpointProperties",
            Function::DeleteEndpoint => "HcnDeleteEndpoint",
            Function::CloseEndpoint => "HcnCloseEndpoint",
            Function::EnumerateNamespaces => "HcnEnumerateNamespaces",
            Function::CreateNamespace => "HcnCreateNamespace",
            Function::OpenNamespace => "HcnOpenNamespace",
            Function::ModifyNamespace => "HcnModifyNamespace",
            Function::QueryNamespaceProperties => "HcnQueryNamespaceProperties",
            Function::DeleteNamespace => "HcnDeleteNamespace",
            Function::CloseNamespace => "HcnCloseNamespace",
            Function::EnumerateLoadBalancers => "HcnEnumerateLoadBalancers",
            Function::CreateLoadBalancer => "HcnCreateLoadBalancer",
            Function::OpenLoadBalancer => "HcnOpenLoadBalancer",
            Function::ModifyLoadBalancer => "HcnModifyLoadBalancer",
            Function::QueryLoadBalancerProperties => "HcnQueryLoadBalancerProperties",
            Function::DeleteLoadBalancer => "HcnDeleteLoadBalancer",
            Function::CloseLoadBalancer => "HcnCloseLoadBalancer",
            Function::HnsCall => "HNSCall",
            Function::RtlGetVersion => "RtlGetVersion",
        }
    }

    /// Looks a function up by its exported name (case-insensitive; the `Hcn` prefix may be omitted).
    pub fn from_name(name: &str) -> Option<Function> {
        Function::ALL.into_iter().find(|function| {
            let full = function.name();
            full.eq_ignore_ascii_case(name)
                || full
                    .strip_prefix("Hcn")
                    .is_some_and(|short| short.eq_ignore_ascii_case(name))
        })
    }

    /// True for the `HcnClose*` functions (which the plugins' call budgets count separately).
    pub fn is_close(self) -> bool {
        matches!(
            self,
            Function::CloseNetwork
                | Function::CloseEndpoint
                | Function::CloseNamespace
                | Function::CloseLoadBalancer
        )
    }
}

impl std::fmt::Display for Function {
    /// The DLL's name for the function, e.g. `HcnCreateEndpoint`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
