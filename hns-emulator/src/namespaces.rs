//! Namespace operations, including endpoint attach and detach.

use super::engine::State;
use super::failure::HcnFailure;
use super::query::{Query, id_list};
use super::state::NAMESPACE_ENDPOINTS;
use super::store::ObjectDir;
use hns::guid::Guid;
use hns::hresult::HResult;
use hns::schema::{
    HostComputeNamespace, ModifyRequest, NamespaceEndpointSettings, NamespaceResource, RequestType,
    ResourceType, SchemaVersion,
};

impl State<'_> {
    /// `HcnEnumerateNamespaces`.
    pub fn enumerate_namespaces(&self, query: &str) -> Result<String, HcnFailure> {
        let query = Query::parse(query)?;
        let candidates = match query.guid(&["ID"])? {
            Some(id) => vec![id],
            None => self.all_ids(ObjectDir::Namespaces)?,
        };
        let mut ids = Vec::new();
        for id in candidates {
            if let Some(namespace) = self.namespace_with_resources(id)? {
                let value =
                    serde_json::to_value(&namespace).map_err(|e| HcnFailure::io("namespace", e))?;
                if query.matches(&value, &[]) {
                    ids.push(id);
                }
            }
        }
        Ok(id_list(&ids))
    }

    /// `HcnCreateNamespace`. The settings may be empty; HNS assigns the compartment
    /// number. Endpoints are attached afterwards, so `Resources` must be empty.
    pub fn create_namespace(
        &mut self,
        requested: Guid,
        settings: &str,
    ) -> Result<Guid, HcnFailure> {
        let mut namespace: HostComputeNamespace = if settings.trim().is_empty() {
            HostComputeNamespace::default()
        } else {
            serde_json::from_str(settings)
                .map_err(|e| HcnFailure::invalid_json("namespace settings", e))?
        };
        if !namespace.resources.is_empty() {
            return Err(HcnFailure::new(
                HResult::E_INVALIDARG,
                "(Resources must be empty on create: attach endpoints with HcnModifyNamespace)",
            ));
        }
        let id = State::choose_id(requested, namespace.id)?;
        if self.object_exists(ObjectDir::Namespaces, id) {
            return Err(HcnFailure::new(
                HResult::ERROR_OBJECT_ALREADY_EXISTS,
                format!("(namespace {id})"),
            ));
        }
        namespace.id = id;
        namespace.namespace_id = self.host.next_namespace_id;
        namespace.schema_version = SchemaVersion::V2;
        self.host.next_namespace_id += 1;
        self.write_object(ObjectDir::Namespaces, id, &namespace)?;
        Ok(id)
    }

    /// `HcnOpenNamespace`: fails with `ERROR_NOT_FOUND` unless the namespace exists.
    pub fn open_namespace(&self, id: Guid) -> Result<(), HcnFailure> {
        self.require_namespace(id).map(drop)
    }

    /// `HcnQueryNamespaceProperties`: `Resources` lists the attached endpoints, IDs upper-cased as HNS does.
    pub fn query_namespace(&self, id: Guid, query: &str) -> Result<String, HcnFailure> {
        Query::parse(query)?;
        self.require_namespace(id)?;
        let namespace = self.namespace_with_resources(id)?;
        serde_json::to_string(&namespace).map_err(|e| HcnFailure::io("namespace", e))
    }

    /// `HcnModifyNamespace`: `Endpoint` `Add` attaches (an endpoint attached
    /// anywhere is `HCN_E_ENDPOINT_ALREADY_ATTACHED`), `Remove` detaches (an
    /// endpoint not in this namespace is `ERROR_NOT_FOUND`). Container resources
    /// are not modelled.
    pub fn modify_namespace(&self, id: Guid, settings: &str) -> Result<(), HcnFailure> {
        self.require_namespace(id)?;
        let request: ModifyRequest = serde_json::from_str(settings)
            .map_err(|e| HcnFailure::invalid_json("modify request", e))?;
        if request.resource_type != ResourceType::Endpoint {
            return Err(HcnFailure::new(
                HResult::HCN_E_REQUEST_UNSUPPORTED,
                format!(
                    "(namespace ResourceType {:?} is not modelled by the emulator)",
                    request.resource_type
                ),
            ));
        }
        let NamespaceEndpointSettings { endpoint_id } =
            serde_json::from_str(request.settings.get())
                .map_err(|e| HcnFailure::invalid_json("namespace endpoint Settings", e))?;
        let mut endpoint = self.require_endpoint(endpoint_id)?;
        let attached_to = Some(endpoint.host_compute_namespace).filter(|namespace| {
            !namespace.is_zero() && self.object_exists(ObjectDir::Namespaces, *namespace)
        });
        match request.request_type {
            RequestType::Add => {
                if let Some(current) = attached_to {
                    return Err(HcnFailure::new(
                        HResult::HCN_E_ENDPOINT_ALREADY_ATTACHED,
                        format!("(endpoint {endpoint_id} is attached to namespace {current})"),
                    ));
                }
                self.add_marker(NAMESPACE_ENDPOINTS, id, endpoint_id)?;
                endpoint.host_compute_namespace = id;
                self.write_object(ObjectDir::Endpoints, endpoint_id, &endpoint)
            }
            RequestType::Remove => {
                if attached_to != Some(id) {
                    return Err(HcnFailure::new(
                        HResult::ERROR_NOT_FOUND,
                        format!("(endpoint {endpoint_id} is not attached to namespace {id})"),
                    ));
                }
                endpoint.host_compute_namespace = Guid::ZERO;
                self.write_object(ObjectDir::Endpoints, endpoint_id, &endpoint)?;
                self.remove_marker(NAMESPACE_ENDPOINTS, id, endpoint_id)
            }
            other => Err(HcnFailure::new(
                HResult::HCN_E_REQUEST_UNSUPPORTED,
                format!("(namespace endpoint RequestType {other:?})"),
            )),
        }
    }

    /// `HcnDeleteNamespace`. Attached endpoints survive and become detached: the
    /// CRI may delete a pod's namespace before CNI DEL runs, and HNS allows it.
    pub fn delete_namespace(&self, id: Guid) -> Result<(), HcnFailure> {
        self.require_namespace(id)?;
        self.remove_object(ObjectDir::Namespaces, id)?;
        for endpoint_id in self.markers(NAMESPACE_ENDPOINTS, id)? {
            if let Some(mut endpoint) = self.load_endpoint(endpoint_id)?
                && endpoint.host_compute_namespace == id
            {
                endpoint.host_compute_namespace = Guid::ZERO;
                self.write_object(ObjectDir::Endpoints, endpoint_id, &endpoint)?;
            }
            self.remove_marker(NAMESPACE_ENDPOINTS, id, endpoint_id)?;
        }
        Ok(())
    }

    fn require_namespace(&self, id: Guid) -> Result<HostComputeNamespace, HcnFailure> {
        self.load_namespace(id)?
            .ok_or_else(|| HcnFailure::new(HResult::ERROR_NOT_FOUND, format!("(namespace {id})")))
    }

    /// The namespace with `Resources` built from the attach markers, keeping only
    /// endpoints that exist and name this namespace (markers may be stale after a crash).
    fn namespace_with_resources(
        &self,
        id: Guid,
    ) -> Result<Option<HostComputeNamespace>, HcnFailure> {
        let Some(mut namespace) = self.load_namespace(id)? else {
            return Ok(None);
        };
        for endpoint_id in self.markers(NAMESPACE_ENDPOINTS, id)? {
            if self
                .load_endpoint(endpoint_id)?
                .is_some_and(|endpoint| endpoint.host_compute_namespace == id)
            {
                namespace
                    .resources
                    .push(NamespaceResource::endpoint(endpoint_id));
            }
        }
        Ok(Some(namespace))
    }
}
