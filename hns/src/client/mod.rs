//! The typed HCN client: composes raw calls into the operations plugins and
//! operators need, with the fewest round trips.
//!
//! Generic over [`RawHcn`], so exactly this code runs against the emulator in
//! tests and against computenetwork.dll on Windows. Each operation documents
//! its raw-call count; handles stay open in [`Open`] objects so a caller can
//! chain calls (find network → create endpoint) without re-opening.

mod open;

use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;

pub use open::{
    CreateEndpointError, EndpointKind, LoadBalancerKind, NamespaceKind, NetworkKind, ObjectKind,
    Open, OpenEndpoint, OpenLoadBalancer, OpenNamespace, OpenNetwork,
};

use crate::deadline::Deadlined;
use crate::error::{ErrorKind, HnsError, RawError};
use crate::features::{HnsVersion, SupportedFeatures, WindowsBuild};
use crate::guid::Guid;
use crate::raw::RawHcn;
use crate::schema::{
    EndpointPolicy, HostComputeEndpoint, HostComputeLoadBalancer, HostComputeNamespace,
    HostComputeNetwork, HostComputeQuery, ModifyRequest, NetworkPolicy, PolicyList, RequestType,
};

/// The typed client over a raw backend.
#[derive(Debug)]
pub struct Client<R: RawHcn + ?Sized = dyn RawHcn> {
    raw: Box<R>,
}

#[cfg(windows)]
impl Client<dyn RawHcn> {
    /// The host's HNS through computenetwork.dll, the only backend a Windows
    /// build has (the emulator is a separate crate no shipped binary links).
    pub fn native() -> Client {
        Client::from_box(Box::new(crate::native::ComputeNetwork::new()))
    }
}

impl Client<dyn RawHcn> {
    /// This client with every raw call waiting at most `deadline` for HNS
    /// (see [`crate::deadline`]): what a command uses so that a hung HNS
    /// fails it in time to roll back and report.
    pub fn with_deadline(self, deadline: Duration) -> Client {
        Client::from_box(Box::new(Deadlined::new(Arc::from(self.raw), deadline)))
    }
}

impl<R: RawHcn> Client<R> {
    /// Wraps a backend.
    pub fn new(raw: R) -> Client<R> {
        Client { raw: Box::new(raw) }
    }
}

impl<R: RawHcn + ?Sized> Client<R> {
    /// Wraps a boxed (possibly `dyn`) backend.
    pub fn from_box(raw: Box<R>) -> Client<R> {
        Client { raw }
    }

    /// The raw backend, for callers that need a call the client does not compose.
    pub fn raw(&self) -> &R {
        &self.raw
    }

    // ---- networks ----

    /// Finds a network by name and keeps it open.
    ///
    /// Raw calls: `HcnEnumerateNetworks` (filter `Name`) + `HcnOpenNetwork` +
    /// `HcnQueryNetworkProperties` = 3 (+1 `HcnCloseNetwork` on drop).
    /// No match is a [`ErrorKind::NotFound`] error.
    pub fn find_network_by_name(&self, name: &str) -> Result<OpenNetwork<'_, R>, HnsError> {
        let json = self
            .raw
            .enumerate_networks(&HostComputeQuery::by_name(name).to_json())
            .map_err(|e| HnsError::from_raw(e, format!("find network {name:?}")))?;
        let id = parse_ids(&json)?.into_iter().next().ok_or_else(|| {
            HnsError::new(
                ErrorKind::NotFound,
                format!("no HNS network is named {name:?}"),
            )
        })?;
        self.open_network(id)
    }

    /// Opens a network by ID.
    ///
    /// Raw calls: `HcnOpenNetwork` + `HcnQueryNetworkProperties` = 2 (+1 close on drop).
    pub fn open_network(&self, id: Guid) -> Result<OpenNetwork<'_, R>, HnsError> {
        let context = format!("open network {id}");
        let handle = self
            .raw
            .open_network(&id)
            .map_err(|e| HnsError::from_raw(e, context.clone()))?;
        Open::query_new(self, handle, &context)
    }

    /// Opens a network by ID without reading its properties again: `known` is what the caller
    /// read under this ID before, and travels with the handle as its properties. Only for
    /// callers that know the properties they use cannot change while the ID stays (HCN has no
    /// modify request for a network's name, type or subnets; its policies do change).
    ///
    /// Raw calls: `HcnOpenNetwork` = 1 (+1 close on drop). `known` without an ID is an
    /// [`ErrorKind::InvalidInput`] error, before any call.
    pub fn open_network_known(
        &self,
        known: HostComputeNetwork,
    ) -> Result<OpenNetwork<'_, R>, HnsError> {
        if known.id.is_zero() {
            return Err(HnsError::new(
                ErrorKind::InvalidInput,
                "known network properties carry no ID",
            ));
        }
        let handle = self
            .raw
            .open_network(&known.id)
            .map_err(|e| HnsError::from_raw(e, format!("open network {}", known.id)))?;
        Ok(Open::with_properties(self, handle, known))
    }

    /// Every network's properties.
    ///
    /// Raw calls: 1 `HcnEnumerateNetworks` + 3 per network (open, query, close).
    pub fn list_networks(&self) -> Result<Vec<HostComputeNetwork>, HnsError> {
        let json = self
            .raw
            .enumerate_networks(&HostComputeQuery::all().to_json())
            .map_err(|e| HnsError::from_raw(e, "list networks"))?;
        self.read_all(parse_ids(&json)?, |id| self.open_network(id))
    }

    /// Creates a network (zero `id` = HNS chooses) and keeps it open.
    ///
    /// Checks first, as hcsshim does, that every subnet has a default route with
    /// a next hop. Raw calls: `HcnCreateNetwork` + `HcnQueryNetworkProperties` =
    /// 2 (+1 close on drop).
    pub fn create_network(
        &self,
        id: Guid,
        settings: &HostComputeNetwork,
    ) -> Result<OpenNetwork<'_, R>, HnsError> {
        if let Some(subnet) = settings.subnets().find(|subnet| subnet.gateway().is_none()) {
            return Err(HnsError::new(
                ErrorKind::InvalidInput,
                format!(
                    "network {:?}: subnet {} has no default gateway: add a route to 0.0.0.0/0 (or ::/0) with a NextHop",
                    settings.name, subnet.ip_address_prefix
                ),
            ));
        }
        let json = encode(settings, "network settings")?;
        let context = format!("create network {:?}", settings.name);
        let handle = self
            .raw
            .create_network(&id, &json)
            .map_err(|e| HnsError::from_raw(e, context.clone()))?;
        Open::query_new(self, handle, &context)
    }

    /// Adds, updates or removes network-level policies (IP sets, routes) without reading the
    /// network, as Azure NPM changes its `SetPolicy` IP sets: `Update` replaces the listed
    /// policies by their `Id`.
    ///
    /// Raw calls: `HcnOpenNetwork` + `HcnModifyNetwork` = 2 (+1 `HcnCloseNetwork`).
    pub fn modify_network_policies(
        &self,
        network: Guid,
        request: &ModifyRequest<PolicyList<NetworkPolicy>>,
    ) -> Result<(), HnsError> {
        self.modify_unread::<NetworkKind>(
            policy_context(request, &format!("network {network}")),
            |raw| raw.open_network(&network),
            |raw, handle| raw.modify_network(handle, &request.to_json()),
        )
    }

    /// Deletes a network (HNS removes its endpoints too). Raw calls: `HcnDeleteNetwork` = 1.
    pub fn delete_network(&self, id: Guid) -> Result<(), HnsError> {
        self.raw
            .delete_network(&id)
            .map_err(|e| HnsError::from_raw(e, format!("delete network {id}")))
    }

    // ---- endpoints ----

    /// Opens an endpoint by ID (e.g. to learn its namespace or MAC).
    ///
    /// Raw calls: `HcnOpenEndpoint` + `HcnQueryEndpointProperties` = 2 (+1 close on drop).
    pub fn open_endpoint(&self, id: Guid) -> Result<OpenEndpoint<'_, R>, HnsError> {
        let context = format!("open endpoint {id}");
        let handle = self
            .raw
            .open_endpoint(&id)
            .map_err(|e| HnsError::from_raw(e, context.clone()))?;
        Open::query_new(self, handle, &context)
    }

    /// Finds an endpoint by name: the fallback for endpoints created by the
    /// reference plugins, whose IDs we do not know.
    ///
    /// Raw calls: `HcnEnumerateEndpoints` (filter `Name`) = 1 when absent; + open
    /// + query = 3 when found (+1 close on drop).
    pub fn find_endpoint_by_name(
        &self,
        name: &str,
    ) -> Result<Option<OpenEndpoint<'_, R>>, HnsError> {
        let json = self
            .raw
            .enumerate_endpoints(&HostComputeQuery::by_name(name).to_json())
            .map_err(|e| HnsError::from_raw(e, format!("find endpoint {name:?}")))?;
        match parse_ids(&json)?.into_iter().next() {
            None => Ok(None),
            Some(id) => self.open_endpoint(id).map(Some),
        }
    }

    /// IDs of the endpoints of one network (or all endpoints), for garbage collection.
    ///
    /// Raw calls: `HcnEnumerateEndpoints` (filter `VirtualNetwork`) = 1.
    pub fn list_endpoint_ids(&self, network: Option<Guid>) -> Result<Vec<Guid>, HnsError> {
        let query = network.map_or_else(HostComputeQuery::all, HostComputeQuery::by_network);
        let json = self
            .raw
            .enumerate_endpoints(&query.to_json())
            .map_err(|e| HnsError::from_raw(e, "list endpoints"))?;
        parse_ids(&json)
    }

    /// Properties of the endpoints of one network (or all endpoints).
    ///
    /// Raw calls: 1 `HcnEnumerateEndpoints` + 3 per endpoint (open, query, close).
    /// Endpoints deleted between the enumeration and the open are skipped.
    pub fn list_endpoints(
        &self,
        network: Option<Guid>,
    ) -> Result<Vec<HostComputeEndpoint>, HnsError> {
        let ids = self.list_endpoint_ids(network)?;
        self.read_all(ids, |id| self.open_endpoint(id))
    }

    /// Deletes an endpoint. Raw calls: `HcnDeleteEndpoint` = 1.
    pub fn delete_endpoint(&self, id: Guid) -> Result<(), HnsError> {
        self.raw
            .delete_endpoint(&id)
            .map_err(|e| HnsError::from_raw(e, format!("delete endpoint {id}")))
    }

    /// Adds, removes or replaces policies of an endpoint, such as ACLs, without reading the
    /// endpoint: a policy agent knows what it holds from its own read. Which policies an
    /// `Update` replaces is not documented (likely those of the types the request carries,
    /// as the emulator models it; docs/real-host-checks.md has the check), so a caller that
    /// means to change some rules sends `Add` and `Remove`.
    ///
    /// Raw calls: `HcnOpenEndpoint` + `HcnModifyEndpoint` = 2 (+1 `HcnCloseEndpoint`).
    pub fn modify_endpoint_policies(
        &self,
        endpoint: Guid,
        request: &ModifyRequest<PolicyList<EndpointPolicy>>,
    ) -> Result<(), HnsError> {
        self.modify_unread::<EndpointKind>(
            policy_context(request, &format!("endpoint {endpoint}")),
            |raw| raw.open_endpoint(&endpoint),
            |raw, handle| raw.modify_endpoint(handle, &request.to_json()),
        )
    }

    // ---- namespaces ----

    /// Creates a namespace (zero `id` = HNS chooses) and returns its properties.
    ///
    /// Raw calls: `HcnCreateNamespace` + `HcnQueryNamespaceProperties` +
    /// `HcnCloseNamespace` = 3 (2 without the close).
    pub fn create_namespace(
        &self,
        id: Guid,
        settings: &HostComputeNamespace,
    ) -> Result<HostComputeNamespace, HnsError> {
        let json = encode(settings, "namespace settings")?;
        let context = "create namespace";
        let handle = self
            .raw
            .create_namespace(&id, &json)
            .map_err(|e| HnsError::from_raw(e, context))?;
        Ok(OpenNamespace::query_new(self, handle, context)?.into_properties())
    }

    /// Opens a namespace by ID.
    ///
    /// Raw calls: `HcnOpenNamespace` + `HcnQueryNamespaceProperties` = 2 (+1 close on drop).
    pub fn open_namespace(&self, id: Guid) -> Result<OpenNamespace<'_, R>, HnsError> {
        let context = format!("open namespace {id}");
        let handle = self
            .raw
            .open_namespace(&id)
            .map_err(|e| HnsError::from_raw(e, context.clone()))?;
        Open::query_new(self, handle, &context)
    }

    /// Every namespace's properties. Raw calls: 1 `HcnEnumerateNamespaces` + 3 per namespace.
    pub fn list_namespaces(&self) -> Result<Vec<HostComputeNamespace>, HnsError> {
        let json = self
            .raw
            .enumerate_namespaces(&HostComputeQuery::all().to_json())
            .map_err(|e| HnsError::from_raw(e, "list namespaces"))?;
        self.read_all(parse_ids(&json)?, |id| self.open_namespace(id))
    }

    /// The IDs of every namespace, for callers that only ask whether one exists. Raw calls:
    /// `HcnEnumerateNamespaces` = 1.
    pub fn list_namespace_ids(&self) -> Result<Vec<Guid>, HnsError> {
        let json = self
            .raw
            .enumerate_namespaces(&HostComputeQuery::all().to_json())
            .map_err(|e| HnsError::from_raw(e, "list namespaces"))?;
        parse_ids(&json)
    }

    /// Deletes a namespace. Raw calls: `HcnDeleteNamespace` = 1.
    pub fn delete_namespace(&self, id: Guid) -> Result<(), HnsError> {
        self.raw
            .delete_namespace(&id)
            .map_err(|e| HnsError::from_raw(e, format!("delete namespace {id}")))
    }

    /// Attaches an endpoint to a namespace. A second attach fails with
    /// [`ErrorKind::AlreadyAttached`].
    ///
    /// Raw calls: `HcnOpenNamespace` + `HcnModifyNamespace` = 2 (+1 `HcnCloseNamespace`); no query.
    pub fn attach_endpoint(&self, namespace: Guid, endpoint: Guid) -> Result<(), HnsError> {
        self.modify_namespace_endpoint(namespace, endpoint, RequestType::Add)
    }

    /// Detaches an endpoint from a namespace.
    ///
    /// Raw calls: `HcnOpenNamespace` + `HcnModifyNamespace` (`Remove`) = 2 (+1 close).
    pub fn detach_endpoint(&self, namespace: Guid, endpoint: Guid) -> Result<(), HnsError> {
        self.modify_namespace_endpoint(namespace, endpoint, RequestType::Remove)
    }

    fn modify_namespace_endpoint(
        &self,
        namespace: Guid,
        endpoint: Guid,
        request_type: RequestType,
    ) -> Result<(), HnsError> {
        let verb = if request_type == RequestType::Add {
            "attach"
        } else {
            "detach"
        };
        let context = format!(
            "{verb} endpoint {endpoint} {} namespace {namespace}",
            if verb == "attach" { "to" } else { "from" }
        );
        let handle = self
            .raw
            .open_namespace(&namespace)
            .map_err(|e| HnsError::from_raw(e, context.clone()))?;
        let request = ModifyRequest::namespace_endpoint(request_type, endpoint);
        let result = self
            .raw
            .modify_namespace(&handle, &request.to_json())
            .map_err(|e| HnsError::from_raw(e, context));
        drop(open::Guard::<R, NamespaceKind> {
            client: self,
            handle: Some(handle),
        });
        result
    }

    // ---- load balancers ----

    /// Creates a load balancer (zero `id` = HNS chooses) and returns its properties as HNS
    /// stored them, as kube-proxy's winkernel proxier does for every Service port.
    ///
    /// Raw calls: `HcnCreateLoadBalancer` + `HcnQueryLoadBalancerProperties` +
    /// `HcnCloseLoadBalancer` = 3 (2 without the close).
    pub fn create_load_balancer(
        &self,
        id: Guid,
        settings: &HostComputeLoadBalancer,
    ) -> Result<HostComputeLoadBalancer, HnsError> {
        let json = encode(settings, "load balancer settings")?;
        let context = "create load balancer";
        let handle = self
            .raw
            .create_load_balancer(&id, &json)
            .map_err(|e| HnsError::from_raw(e, context))?;
        Ok(OpenLoadBalancer::query_new(self, handle, context)?.into_properties())
    }

    /// Opens a load balancer by ID.
    ///
    /// Raw calls: `HcnOpenLoadBalancer` + `HcnQueryLoadBalancerProperties` = 2 (+1 close on
    /// drop).
    pub fn open_load_balancer(&self, id: Guid) -> Result<OpenLoadBalancer<'_, R>, HnsError> {
        let context = format!("open load balancer {id}");
        let handle = self
            .raw
            .open_load_balancer(&id)
            .map_err(|e| HnsError::from_raw(e, context.clone()))?;
        Open::query_new(self, handle, &context)
    }

    /// Replaces a load balancer's settings in place (its backends, typically), as hcsshim's
    /// `HostComputeLoadBalancer.Update` does. HNS supports it from 15.4 (feature
    /// `ModifyLoadbalancer`); an older HNS refuses with `E_NOTIMPL`
    /// ([`ErrorKind::Unsupported`]), and a caller deletes and creates instead.
    ///
    /// Raw calls: `HcnOpenLoadBalancer` + `HcnModifyLoadBalancer` +
    /// `HcnQueryLoadBalancerProperties` + `HcnCloseLoadBalancer` = 4 (3 without the close).
    pub fn modify_load_balancer(
        &self,
        id: Guid,
        settings: &HostComputeLoadBalancer,
    ) -> Result<HostComputeLoadBalancer, HnsError> {
        let json = encode(settings, "load balancer settings")?;
        let context = format!("modify load balancer {id}");
        let handle = self
            .raw
            .open_load_balancer(&id)
            .map_err(|e| HnsError::from_raw(e, context.clone()))?;
        match self.raw.modify_load_balancer(&handle, &json) {
            Ok(()) => Ok(OpenLoadBalancer::query_new(self, handle, &context)?.into_properties()),
            Err(error) => {
                drop(open::Guard::<R, LoadBalancerKind> {
                    client: self,
                    handle: Some(handle),
                });
                Err(HnsError::from_raw(error, context))
            }
        }
    }

    /// Deletes a load balancer. Raw calls: `HcnDeleteLoadBalancer` = 1.
    pub fn delete_load_balancer(&self, id: Guid) -> Result<(), HnsError> {
        self.raw
            .delete_load_balancer(&id)
            .map_err(|e| HnsError::from_raw(e, format!("delete load balancer {id}")))
    }

    /// Every load balancer's properties. Raw calls: 1 `HcnEnumerateLoadBalancers` + 3 per load balancer.
    pub fn list_load_balancers(&self) -> Result<Vec<HostComputeLoadBalancer>, HnsError> {
        let json = self
            .raw
            .enumerate_load_balancers(&HostComputeQuery::all().to_json())
            .map_err(|e| HnsError::from_raw(e, "list load balancers"))?;
        self.read_all(parse_ids(&json)?, |id| self.open_load_balancer(id))
    }

    // ---- host ----

    /// The HNS version. Raw calls: `HNSCall GET /globals/version` = 1.
    pub fn version(&self) -> Result<HnsVersion, HnsError> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "PascalCase")]
        struct Envelope {
            success: bool,
            #[serde(default)]
            error: String,
            output: Option<HnsVersion>,
        }
        let json = self
            .raw
            .hns_call("GET", "/globals/version", "")
            .map_err(|e| HnsError::from_raw(e, "read HNS version"))?;
        let envelope: Envelope = decode(&json, "HNS version reply")?;
        match envelope.output {
            Some(version) if envelope.success => Ok(version),
            _ => Err(HnsError::new(
                ErrorKind::Unsupported,
                format!("HNS did not report its version: {}", envelope.error),
            )),
        }
    }

    /// The features of this host's HNS. Raw calls: 1 (see [`Client::version`]).
    pub fn supported_features(&self) -> Result<SupportedFeatures, HnsError> {
        self.version().map(SupportedFeatures::of)
    }

    /// The Windows build of the host HNS runs on, for behaviour no HNS version gates (Windows
    /// Server 2025 made an endpoint with ACLs default-deny, microsoft/Windows-Containers#616).
    /// Raw calls: `RtlGetVersion` = 1.
    pub fn windows_build(&self) -> Result<WindowsBuild, HnsError> {
        self.raw
            .windows_build()
            .map(WindowsBuild)
            .map_err(|e| HnsError::from_raw(e, "read the Windows build"))
    }

    /// Opens an object, sends it one modify request and closes it, reading nothing: 2 raw
    /// calls (+1 close, on every path).
    fn modify_unread<K: ObjectKind>(
        &self,
        context: String,
        open: impl FnOnce(&R) -> Result<K::Handle, RawError>,
        modify: impl FnOnce(&R, &K::Handle) -> Result<(), RawError>,
    ) -> Result<(), HnsError> {
        let handle = open(&self.raw).map_err(|e| HnsError::from_raw(e, context.clone()))?;
        let guard = open::Guard::<R, K> {
            client: self,
            handle: Some(handle),
        };
        let handle = guard.handle.as_ref().expect("the guard holds the handle");
        modify(&self.raw, handle).map_err(|e| HnsError::from_raw(e, context))
    }

    /// Opens each ID and collects its properties, skipping objects that vanished meanwhile.
    fn read_all<'a, K: ObjectKind>(
        &'a self,
        ids: Vec<Guid>,
        open: impl Fn(Guid) -> Result<Open<'a, R, K>, HnsError>,
    ) -> Result<Vec<K::Properties>, HnsError>
    where
        K::Properties: Default,
    {
        let mut all = Vec::with_capacity(ids.len());
        for id in ids {
            match open(id) {
                Ok(object) => all.push(object.into_properties()),
                Err(error) if error.is_not_found() => continue,
                Err(error) => return Err(error),
            }
        }
        Ok(all)
    }
}

/// A policy request as an error names it: `Add of 2 policies on endpoint …`.
fn policy_context<P>(request: &ModifyRequest<PolicyList<P>>, object: &str) -> String {
    let count = request.settings.policies.len();
    let noun = if count == 1 { "policy" } else { "policies" };
    format!("{:?} of {count} {noun} on {object}", request.request_type)
}

/// Decodes an HNS reply, with an error naming what was being decoded and the field that did
/// not fit (e.g. `IpConfigurations[0].IpAddress`), so a surprising reply can be reported.
pub(crate) fn decode<T: DeserializeOwned>(json: &str, what: &str) -> Result<T, HnsError> {
    crate::schema::decode(json).map_err(|e| {
        HnsError::new(
            ErrorKind::Other,
            format!("cannot decode {what} returned by HNS: {e}: {json}"),
        )
    })
}

/// Encodes a document a create or modify call sends; a document that does not encode is
/// refused before any call.
fn encode<T: serde::Serialize>(settings: &T, what: &str) -> Result<String, HnsError> {
    serde_json::to_string(settings).map_err(|e| {
        HnsError::new(
            ErrorKind::InvalidInput,
            format!("{what} do not serialise: {e}"),
        )
    })
}

/// Decodes an enumeration result: a JSON array of GUID strings (`null` = none).
fn parse_ids(json: &str) -> Result<Vec<Guid>, HnsError> {
    let ids: Option<Vec<Guid>> = decode(json, "enumeration result")?;
    Ok(ids.unwrap_or_default())
}
