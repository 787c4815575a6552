//! A file-backed emulation of the Host Networking Service.
//!
//! It behaves like HNS, not like a mock of our plugins: it honours
//! caller-chosen GUIDs, validates references, addresses and policies, returns
//! real HCN HRESULTs with HNS-shaped error records, and keeps its state in
//! files so that concurrent processes (and processes killed mid-call) see one
//! consistent host. See [`store`] for the layout and the crash rules. It
//! enforces endpoint ACLs as HNS does, so what a NetworkPolicy agent programs
//! is judged by the packets it lets through ([`acl`]).
//!
//! [`Engine`] is the service (no process-local state); [`Emulator`] adds a
//! handle table and implements [`RawHcn`] for in-process use.
//!
//! A crate of its own so that no shipped Windows binary can contain it: native
//! Linux builds (where there is no HNS), tests, the harness and the Wine lane's
//! emulated `computenetwork.dll` depend on it; the plugins' Windows builds do not.
#![deny(unsafe_code)]
// Every public item says why it is there: the emulator is the evidence the Windows code is
// right, so what it models and where it departs from HNS must be readable.
#![warn(missing_docs)]

pub mod acl;
mod adapter;
mod document;
mod endpoints;
mod engine;
mod failure;
mod handles;
mod host;
mod inject;
mod load_balancers;
mod mac;
mod namespaces;
mod networks;
mod outage;
mod policies;
mod ports;
mod query;
mod random;
mod state;
pub mod store;
mod v1;
mod v1_endpoints;
mod v1_networks;
mod v1_policy_lists;

use std::path::{Path, PathBuf};

pub use adapter::{HostAdapter, VirtualSwitch};
pub use engine::{Engine, State};
pub use failure::HcnFailure;
pub use handles::{HandleKind, Handles};
pub use host::{CrashPoint, Fault, HostState};
pub use inject::Injection;
pub use outage::{Dropped, Outage};

use hns::Client;
use hns::error::{ErrorKind, HnsError, RawError};
use hns::guid::Guid;
use hns::raw::{
    EndpointHandle, Function, Handle, LoadBalancerHandle, NamespaceHandle, NetworkHandle, RawHcn,
};

/// Environment variable naming the emulator's state root.
pub const STATE_ENV: &str = "HCN_EMULATOR_STATE";

/// The emulator as an in-process [`RawHcn`] backend.
#[derive(Debug)]
pub struct Emulator {
    engine: Engine,
    handles: Handles,
}

impl Emulator {
    /// Opens the emulated host whose state lives under `root` (created if missing).
    pub fn open(root: &Path) -> Result<Emulator, HnsError> {
        let engine = Engine::open(root).map_err(|failure| {
            HnsError::new(
                ErrorKind::Backend,
                format!(
                    "cannot open HCN emulator state at {}: {failure}",
                    root.display()
                ),
            )
        })?;
        Ok(Emulator {
            engine,
            handles: Handles::default(),
        })
    }

    /// Opens the state named by `HCN_EMULATOR_STATE`.
    pub fn from_env() -> Result<Emulator, HnsError> {
        Emulator::open(&state_root_from_env()?)
    }

    /// A typed client over the state named by `HCN_EMULATOR_STATE`: what a
    /// native Linux build uses where a Windows build has `Client::native`.
    pub fn client_from_env() -> Result<Client, HnsError> {
        Ok(Client::from_box(Box::new(Emulator::from_env()?)))
    }

    /// The engine, for test controls (counters, faults, latency, crash points, version).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Handles currently open in this process.
    pub fn open_handles(&self) -> usize {
        self.handles.open_count()
    }

    fn call<T>(
        &self,
        function: Function,
        operation: impl FnOnce(&mut State<'_>) -> Result<T, HcnFailure>,
    ) -> Result<T, RawError> {
        self.engine
            .call(function, operation)
            .map_err(|failure| failure.into_raw(function))
    }

    fn open_handle(
        &self,
        function: Function,
        kind: HandleKind,
        id: &Guid,
        exists: impl FnOnce(&State<'_>) -> Result<(), HcnFailure>,
    ) -> Result<usize, RawError> {
        self.call(function, |state| exists(state))?;
        Ok(self.handles.open(kind, *id))
    }

    fn close_handle(
        &self,
        function: Function,
        kind: HandleKind,
        handle: usize,
    ) -> Result<(), RawError> {
        self.call(function, |_| self.handles.close(kind, handle))
    }
}

/// Wraps a value the handle table just issued as the caller's handle.
// The one place this crate needs `unsafe`: minting a handle is how a backend gives one out.
#[allow(unsafe_code)]
fn issue<H: Handle>(raw: usize) -> H {
    // SAFETY: `Handles::open` issued `raw` from this emulator's table in the call that just
    // succeeded and never issues a value twice, so the handle made here is its only owner.
    unsafe { H::from_raw(raw) }
}

/// The state root from `HCN_EMULATOR_STATE`, or a `Backend` error saying how to set it.
pub fn state_root_from_env() -> Result<PathBuf, HnsError> {
    match std::env::var_os(STATE_ENV) {
        Some(root) if !root.is_empty() => Ok(PathBuf::from(root)),
        _ => Err(HnsError::new(
            ErrorKind::Backend,
            format!(
                "{STATE_ENV} is not set: set it to the directory holding the HCN emulator's state (it is created if missing)"
            ),
        )),
    }
}

impl RawHcn for Emulator {
    fn enumerate_networks(&self, query: &str) -> Result<String, RawError> {
        self.call(Function::EnumerateNetworks, |state| {
            state.enumerate_networks(query)
        })
    }

    fn create_network(&self, id: &Guid, settings: &str) -> Result<NetworkHandle, RawError> {
        let id = self.call(Function::CreateNetwork, |state| {
            state.create_network(*id, settings)
        })?;
        Ok(issue(self.handles.open(HandleKind::Network, id)))
    }

    fn open_network(&self, id: &Guid) -> Result<NetworkHandle, RawError> {
        self.open_handle(Function::OpenNetwork, HandleKind::Network, id, |state| {
            state.open_network(*id)
        })
        .map(issue)
    }

    fn modify_network(&self, network: &NetworkHandle, settings: &str) -> Result<(), RawError> {
        self.call(Function::ModifyNetwork, |state| {
            state.modify_network(
                self.handles
                    .resolve(HandleKind::Network, network.as_raw())?,
                settings,
            )
        })
    }

    fn query_network_properties(
        &self,
        network: &NetworkHandle,
        query: &str,
    ) -> Result<String, RawError> {
        self.call(Function::QueryNetworkProperties, |state| {
            state.query_network(
                self.handles
                    .resolve(HandleKind::Network, network.as_raw())?,
                query,
            )
        })
    }

    fn delete_network(&self, id: &Guid) -> Result<(), RawError> {
        self.call(Function::DeleteNetwork, |state| state.delete_network(*id))
    }

    fn close_network(&self, network: NetworkHandle) -> Result<(), RawError> {
        self.close_handle(
            Function::CloseNetwork,
            HandleKind::Network,
            network.as_raw(),
        )
    }

    fn enumerate_endpoints(&self, query: &str) -> Result<String, RawError> {
        self.call(Function::EnumerateEndpoints, |state| {
            state.enumerate_endpoints(query)
        })
    }

    fn create_endpoint(
        &self,
        network: &NetworkHandle,
        id: &Guid,
        settings: &str,
    ) -> Result<EndpointHandle, RawError> {
        let id = self.call(Function::CreateEndpoint, |state| {
            state.create_endpoint(
                self.handles
                    .resolve(HandleKind::Network, network.as_raw())?,
                *id,
                settings,
            )
        })?;
        Ok(issue(self.handles.open(HandleKind::Endpoint, id)))
    }

    fn open_endpoint(&self, id: &Guid) -> Result<EndpointHandle, RawError> {
        self.open_handle(Function::OpenEndpoint, HandleKind::Endpoint, id, |state| {
            state.open_endpoint(*id)
        })
        .map(issue)
    }

    fn modify_endpoint(&self, endpoint: &EndpointHandle, settings: &str) -> Result<(), RawError> {
        self.call(Function::ModifyEndpoint, |state| {
            state.modify_endpoint(
                self.handles
                    .resolve(HandleKind::Endpoint, endpoint.as_raw())?,
                settings,
            )
        })
    }

    fn query_endpoint_properties(
        &self,
        endpoint: &EndpointHandle,
        query: &str,
    ) -> Result<String, RawError> {
        self.call(Function::QueryEndpointProperties, |state| {
            state.query_endpoint(
                self.handles
                    .resolve(HandleKind::Endpoint, endpoint.as_raw())?,
                query,
            )
        })
    }

    fn delete_endpoint(&self, id: &Guid) -> Result<(), RawError> {
        self.call(Function::DeleteEndpoint, |state| state.delete_endpoint(*id))
    }

    fn close_endpoint(&self, endpoint: EndpointHandle) -> Result<(), RawError> {
        self.close_handle(
            Function::CloseEndpoint,
            HandleKind::Endpoint,
            endpoint.as_raw(),
        )
    }

    fn enumerate_namespaces(&self, query: &str) -> Result<String, RawError> {
        self.call(Function::EnumerateNamespaces, |state| {
            state.enumerate_namespaces(query)
        })
    }

    fn create_namespace(&self, id: &Guid, settings: &str) -> Result<NamespaceHandle, RawError> {
        let id = self.call(Function::CreateNamespace, |state| {
            state.create_namespace(*id, settings)
        })?;
        Ok(issue(self.handles.open(HandleKind::Namespace, id)))
    }

    fn open_namespace(&self, id: &Guid) -> Result<NamespaceHandle, RawError> {
        self.open_handle(
            Function::OpenNamespace,
            HandleKind::Namespace,
            id,
            |state| state.open_namespace(*id),
        )
        .map(issue)
    }

    fn modify_namespace(
        &self,
        namespace: &NamespaceHandle,
        settings: &str,
    ) -> Result<(), RawError> {
        self.call(Function::ModifyNamespace, |state| {
            state.modify_namespace(
                self.handles
                    .resolve(HandleKind::Namespace, namespace.as_raw())?,
                settings,
            )
        })
    }

    fn query_namespace_properties(
        &self,
        namespace: &NamespaceHandle,
        query: &str,
    ) -> Result<String, RawError> {
        self.call(Function::QueryNamespaceProperties, |state| {
            state.query_namespace(
                self.handles
                    .resolve(HandleKind::Namespace, namespace.as_raw())?,
                query,
            )
        })
    }

    fn delete_namespace(&self, id: &Guid) -> Result<(), RawError> {
        self.call(Function::DeleteNamespace, |state| {
            state.delete_namespace(*id)
        })
    }

    fn close_namespace(&self, namespace: NamespaceHandle) -> Result<(), RawError> {
        self.close_handle(
            Function::CloseNamespace,
            HandleKind::Namespace,
            namespace.as_raw(),
        )
    }

    fn enumerate_load_balancers(&self, query: &str) -> Result<String, RawError> {
        self.call(Function::EnumerateLoadBalancers, |state| {
            state.enumerate_load_balancers(query)
        })
    }

    fn create_load_balancer(
        &self,
        id: &Guid,
        settings: &str,
    ) -> Result<LoadBalancerHandle, RawError> {
        let id = self.call(Function::CreateLoadBalancer, |state| {
            state.create_load_balancer(*id, settings)
        })?;
        Ok(issue(self.handles.open(HandleKind::LoadBalancer, id)))
    }

    fn open_load_balancer(&self, id: &Guid) -> Result<LoadBalancerHandle, RawError> {
        self.open_handle(
            Function::OpenLoadBalancer,
            HandleKind::LoadBalancer,
            id,
            |state| state.open_load_balancer(*id),
        )
        .map(issue)
    }

    fn modify_load_balancer(
        &self,
        load_balancer: &LoadBalancerHandle,
        settings: &str,
    ) -> Result<(), RawError> {
        self.call(Function::ModifyLoadBalancer, |state| {
            state.modify_load_balancer(
                self.handles
                    .resolve(HandleKind::LoadBalancer, load_balancer.as_raw())?,
                settings,
            )
        })
    }

    fn query_load_balancer_properties(
        &self,
        load_balancer: &LoadBalancerHandle,
        query: &str,
    ) -> Result<String, RawError> {
        self.call(Function::QueryLoadBalancerProperties, |state| {
            state.query_load_balancer(
                self.handles
                    .resolve(HandleKind::LoadBalancer, load_balancer.as_raw())?,
                query,
            )
        })
    }

    fn delete_load_balancer(&self, id: &Guid) -> Result<(), RawError> {
        self.call(Function::DeleteLoadBalancer, |state| {
            state.delete_load_balancer(*id)
        })
    }

    fn close_load_balancer(&self, load_balancer: LoadBalancerHandle) -> Result<(), RawError> {
        self.close_handle(
            Function::CloseLoadBalancer,
            HandleKind::LoadBalancer,
            load_balancer.as_raw(),
        )
    }

    fn hns_call(&self, method: &str, path: &str, request: &str) -> Result<String, RawError> {
        self.call(Function::HnsCall, |state| {
            state.hns_call(method, path, request)
        })
    }

    fn windows_build(&self) -> Result<u32, RawError> {
        self.call(Function::RtlGetVersion, |state| {
            Ok(state.host.windows_build.0)
        })
    }
}
