//! RAII wrappers around open HCN handles.
//!
//! An open object keeps its handle so follow-up calls (create an endpoint on
//! an open network, modify an endpoint) need no re-open, and closes it when
//! dropped, on every path. The properties read when it was opened travel with it.

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Client, decode};
use crate::error::{ErrorKind, HnsError, RawError};
use crate::guid::Guid;
use crate::raw::{
    EndpointHandle, Handle, LoadBalancerHandle, NamespaceHandle, NetworkHandle, RawHcn,
};
use crate::schema::{
    HostComputeEndpoint, HostComputeLoadBalancer, HostComputeNamespace, HostComputeNetwork,
    HostComputeQuery, ModifyRequest,
};

/// Why [`OpenNetwork::create_endpoint`] failed, and so whether the endpoint exists.
#[derive(Debug, thiserror::Error)]
pub enum CreateEndpointError {
    /// HNS made no endpoint (`HcnCreateEndpoint` failed, or the request never left).
    #[error(transparent)]
    NotCreated(HnsError),
    /// `HcnCreateEndpoint` succeeded and reading the endpoint back failed: it exists, and it
    /// is the caller's to remove.
    #[error(transparent)]
    Unread(HnsError),
}

impl CreateEndpointError {
    /// Whether HNS made the endpoint.
    pub fn created(&self) -> bool {
        matches!(self, CreateEndpointError::Unread(_))
    }

    /// What failed.
    pub fn error(&self) -> &HnsError {
        match self {
            CreateEndpointError::NotCreated(error) | CreateEndpointError::Unread(error) => error,
        }
    }
}

impl From<CreateEndpointError> for HnsError {
    fn from(error: CreateEndpointError) -> HnsError {
        match error {
            CreateEndpointError::NotCreated(error) | CreateEndpointError::Unread(error) => error,
        }
    }
}

/// The per-object-type calls an [`Open`] object needs.
pub trait ObjectKind {
    /// The raw handle type.
    type Handle: Handle;
    /// The properties document.
    type Properties: DeserializeOwned + fmt::Debug;
    /// Name used in error messages.
    const NAME: &'static str;
    /// `HcnQuery*Properties`.
    fn query<R: RawHcn + ?Sized>(
        raw: &R,
        handle: &Self::Handle,
        query: &str,
    ) -> Result<String, RawError>;
    /// `HcnClose*`.
    fn close<R: RawHcn + ?Sized>(raw: &R, handle: Self::Handle) -> Result<(), RawError>;
    /// The object's ID from its properties.
    fn id(properties: &Self::Properties) -> Guid;
}

macro_rules! object_kind {
    ($(#[$doc:meta])* $kind:ident, $handle:ty, $properties:ty, $name:literal, $query:ident, $close:ident) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub enum $kind {}

        impl ObjectKind for $kind {
            type Handle = $handle;
            type Properties = $properties;
            const NAME: &'static str = $name;
            fn query<R: RawHcn + ?Sized>(raw: &R, handle: &$handle, query: &str) -> Result<String, RawError> {
                raw.$query(handle, query)
            }
            fn close<R: RawHcn + ?Sized>(raw: &R, handle: $handle) -> Result<(), RawError> {
                raw.$close(handle)
            }
            fn id(properties: &$properties) -> Guid {
                properties.id
            }
        }
    };
}

object_kind!(
    /// Networks: what plugins find by name and create endpoints on.
    NetworkKind, NetworkHandle, HostComputeNetwork, "network", query_network_properties, close_network
);
object_kind!(
    /// Endpoints: the pod's attachment to a network.
    EndpointKind, EndpointHandle, HostComputeEndpoint, "endpoint", query_endpoint_properties, close_endpoint
);
object_kind!(
    /// Namespaces: the pod's network compartment, attached to by ID.
    NamespaceKind, NamespaceHandle, HostComputeNamespace, "namespace", query_namespace_properties, close_namespace
);
object_kind!(
    /// Load balancers: kube-proxy's Service rules, which operators list and tests create.
    LoadBalancerKind, LoadBalancerHandle, HostComputeLoadBalancer, "load balancer", query_load_balancer_properties, close_load_balancer
);

/// An open HCN object: handle plus the properties last queried.
pub struct Open<'c, R: RawHcn + ?Sized, K: ObjectKind> {
    client: &'c Client<R>,
    handle: Option<K::Handle>,
    properties: K::Properties,
}

/// An open network: create endpoints on it without opening it again.
pub type OpenNetwork<'c, R> = Open<'c, R, NetworkKind>;
/// An open endpoint: its properties, read once when it was opened.
pub type OpenEndpoint<'c, R> = Open<'c, R, EndpointKind>;
/// An open namespace: its properties, read once when it was opened.
pub type OpenNamespace<'c, R> = Open<'c, R, NamespaceKind>;
/// An open load balancer: its properties, read once when it was opened.
pub type OpenLoadBalancer<'c, R> = Open<'c, R, LoadBalancerKind>;

impl<'c, R: RawHcn + ?Sized, K: ObjectKind> Open<'c, R, K> {
    /// Takes ownership of a fresh handle and queries its properties (1 call; the
    /// handle is closed if the query fails).
    pub(super) fn query_new(
        client: &'c Client<R>,
        handle: K::Handle,
        context: &str,
    ) -> Result<Self, HnsError> {
        let json = K::query(client.raw(), &handle, &HostComputeQuery::all().to_json());
        let guard = Guard::<R, K> {
            client,
            handle: Some(handle),
        };
        let json = json.map_err(|e| {
            HnsError::from_raw(e, format!("{context}: query {} properties", K::NAME))
        })?;
        let properties = decode(&json, K::NAME)?;
        Ok(Open {
            client,
            handle: guard.disarm(),
            properties,
        })
    }

    /// Takes ownership of a fresh handle whose properties the caller already has (no call).
    pub(super) fn with_properties(
        client: &'c Client<R>,
        handle: K::Handle,
        properties: K::Properties,
    ) -> Self {
        Open {
            client,
            handle: Some(handle),
            properties,
        }
    }

    /// The object's ID, from the properties read when it was opened.
    pub fn id(&self) -> Guid {
        K::id(&self.properties)
    }

    /// The properties read when the object was opened (or last refreshed).
    pub fn properties(&self) -> &K::Properties {
        &self.properties
    }

    /// Closes the handle and keeps the properties.
    pub fn into_properties(mut self) -> K::Properties
    where
        K::Properties: Default,
    {
        std::mem::take(&mut self.properties)
    }

    /// Re-reads the properties (1 call: `HcnQuery*Properties`), optionally detailed.
    pub fn refresh(&mut self, query: &HostComputeQuery) -> Result<&K::Properties, HnsError> {
        let json = K::query(self.client.raw(), self.raw_handle()?, &query.to_json())
            .map_err(|e| HnsError::from_raw(e, format!("query {} {}", K::NAME, self.id())))?;
        self.properties = decode(&json, K::NAME)?;
        Ok(&self.properties)
    }

    /// The open handle, lent for one call; the `Open` keeps it and closes it.
    fn raw_handle(&self) -> Result<&K::Handle, HnsError> {
        self.handle.as_ref().ok_or_else(|| {
            HnsError::new(
                ErrorKind::Other,
                format!("{} handle already closed", K::NAME),
            )
        })
    }
}

impl<R: RawHcn + ?Sized> OpenNetwork<'_, R> {
    /// Creates an endpoint on this network with a caller-chosen ID (zero = let HNS
    /// choose) and reads back what HNS filled in (MAC, prefix length).
    ///
    /// Raw calls: `HcnCreateEndpoint` + `HcnQueryEndpointProperties` = 2
    /// (+1 `HcnCloseEndpoint` when the returned object drops). A failure says
    /// whether the endpoint was made, so a caller rolls back only what exists.
    pub fn create_endpoint(
        &self,
        id: Guid,
        settings: &HostComputeEndpoint,
    ) -> Result<OpenEndpoint<'_, R>, CreateEndpointError> {
        if !settings.host_compute_namespace.is_zero() {
            return Err(CreateEndpointError::NotCreated(HnsError::new(
                ErrorKind::InvalidInput,
                "endpoint HostComputeNamespace is read-only: create the endpoint without it, then attach it to the namespace",
            )));
        }
        let mut settings = settings.clone();
        settings.host_compute_network = self.id();
        let json = serde_json::to_string(&settings).map_err(|e| {
            CreateEndpointError::NotCreated(HnsError::new(
                ErrorKind::InvalidInput,
                format!("endpoint settings do not serialise: {e}"),
            ))
        })?;
        let context = format!(
            "create endpoint {:?} on network {}",
            settings.name, self.properties.name
        );
        let network = self.raw_handle().map_err(CreateEndpointError::NotCreated)?;
        let handle = self
            .client
            .raw()
            .create_endpoint(network, &id, &json)
            .map_err(|e| CreateEndpointError::NotCreated(HnsError::from_raw(e, context.clone())))?;
        Open::query_new(self.client, handle, &context).map_err(CreateEndpointError::Unread)
    }

    /// Sends a modify request (1 call: `HcnModifyNetwork`), e.g. add a `RemoteSubnetRoute`.
    pub fn modify<S: Serialize>(&self, request: &ModifyRequest<S>) -> Result<(), HnsError> {
        self.client
            .raw()
            .modify_network(self.raw_handle()?, &request.to_json())
            .map_err(|e| HnsError::from_raw(e, format!("modify network {}", self.properties.name)))
    }
}

impl<R: RawHcn + ?Sized> OpenEndpoint<'_, R> {
    /// Sends a modify request (1 call: `HcnModifyEndpoint`), e.g. add policies.
    pub fn modify<S: Serialize>(&self, request: &ModifyRequest<S>) -> Result<(), HnsError> {
        self.client
            .raw()
            .modify_endpoint(self.raw_handle()?, &request.to_json())
            .map_err(|e| HnsError::from_raw(e, format!("modify endpoint {}", self.id())))
    }
}

impl<R: RawHcn + ?Sized> OpenNamespace<'_, R> {
    /// Sends a modify request (1 call: `HcnModifyNamespace`).
    pub fn modify<S: Serialize>(&self, request: &ModifyRequest<S>) -> Result<(), HnsError> {
        self.client
            .raw()
            .modify_namespace(self.raw_handle()?, &request.to_json())
            .map_err(|e| HnsError::from_raw(e, format!("modify namespace {}", self.id())))
    }
}

impl<R: RawHcn + ?Sized, K: ObjectKind> Drop for Open<'_, R, K> {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            close_logged::<R, K>(self.client, handle);
        }
    }
}

impl<R: RawHcn + ?Sized, K: ObjectKind> fmt::Debug for Open<'_, R, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Open")
            .field("handle", &self.handle)
            .field("properties", &self.properties)
            .finish()
    }
}

/// Closes a handle unless disarmed (used while an [`Open`] is being built, and
/// for handles that are only needed for one call).
pub(super) struct Guard<'c, R: RawHcn + ?Sized, K: ObjectKind> {
    pub(super) client: &'c Client<R>,
    pub(super) handle: Option<K::Handle>,
}

impl<R: RawHcn + ?Sized, K: ObjectKind> Guard<'_, R, K> {
    /// Hands the handle on to its next owner instead of closing it.
    pub(super) fn disarm(mut self) -> Option<K::Handle> {
        self.handle.take()
    }
}

impl<R: RawHcn + ?Sized, K: ObjectKind> Drop for Guard<'_, R, K> {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            close_logged::<R, K>(self.client, handle);
        }
    }
}

fn close_logged<R: RawHcn + ?Sized, K: ObjectKind>(client: &Client<R>, handle: K::Handle) {
    let raw = handle.as_raw();
    if let Err(error) = K::close(client.raw(), handle) {
        log::warn!("closing {} handle {raw:#x}: {error}", K::NAME);
    }
}
