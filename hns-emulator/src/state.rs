//! Object and index I/O shared by the operations, all under the call's lock.

use std::net::IpAddr;
use std::path::PathBuf;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::engine::State;
use super::failure::HcnFailure;
use super::random::new_guid;
use super::store::{self, ObjectDir};
use hns::guid::Guid;
use hns::hresult::HResult;
use hns::schema::{HostComputeEndpoint, HostComputeNamespace, HostComputeNetwork};

/// Index directories.
pub(super) const NETWORK_ENDPOINTS: &str = "network-endpoints";
pub(super) const NAMESPACE_ENDPOINTS: &str = "namespace-endpoints";
pub(super) const IPS: &str = "ips";
pub(super) const MACS: &str = "macs";
pub(super) const MAC_CURSOR: &str = "mac-cursor";
pub(super) const ENDPOINT_NAMES: &str = "endpoint-names";

impl State<'_> {
    pub(super) fn read_object<T: DeserializeOwned>(
        &self,
        dir: ObjectDir,
        id: Guid,
    ) -> Result<Option<T>, HcnFailure> {
        store::read_json(&self.locked.object_path(dir, &id.to_upper_string()))
    }

    pub(super) fn write_object<T: Serialize>(
        &self,
        dir: ObjectDir,
        id: Guid,
        object: &T,
    ) -> Result<(), HcnFailure> {
        store::write_json(&self.locked.object_path(dir, &id.to_upper_string()), object)
    }

    pub(super) fn remove_object(&self, dir: ObjectDir, id: Guid) -> Result<(), HcnFailure> {
        store::remove_file(&self.locked.object_path(dir, &id.to_upper_string()))
    }

    pub(super) fn object_exists(&self, dir: ObjectDir, id: Guid) -> bool {
        self.locked
            .exists(&self.locked.object_path(dir, &id.to_upper_string()))
    }

    /// IDs of every object in `dir` (files whose names are not GUIDs are ignored).
    pub(super) fn all_ids(&self, dir: ObjectDir) -> Result<Vec<Guid>, HcnFailure> {
        Ok(self
            .locked
            .list_objects(dir)?
            .iter()
            .filter_map(|stem| stem.parse().ok())
            .collect())
    }

    /// A network as HNS reports it (with what HNS fills in after creation, see
    /// [`State::filled_in`]).
    pub(super) fn load_network(&self, id: Guid) -> Result<Option<HostComputeNetwork>, HcnFailure> {
        self.read_object(ObjectDir::Networks, id)?
            .map(|network| self.filled_in(network))
            .transpose()
    }

    /// An endpoint, unless its network is gone (left over from an interrupted network delete).
    pub(super) fn load_endpoint(
        &self,
        id: Guid,
    ) -> Result<Option<HostComputeEndpoint>, HcnFailure> {
        let endpoint: Option<HostComputeEndpoint> = self.read_object(ObjectDir::Endpoints, id)?;
        Ok(endpoint.filter(|endpoint| {
            self.object_exists(ObjectDir::Networks, endpoint.host_compute_network)
        }))
    }

    pub(super) fn load_namespace(
        &self,
        id: Guid,
    ) -> Result<Option<HostComputeNamespace>, HcnFailure> {
        self.read_object(ObjectDir::Namespaces, id)
    }

    /// The ID a create call uses: the caller's, else the document's, else a fresh one.
    pub(super) fn choose_id(requested: Guid, in_document: Guid) -> Result<Guid, HcnFailure> {
        match (requested.is_zero(), in_document.is_zero()) {
            (false, false) if requested != in_document => Err(HcnFailure::new(
                HResult::E_INVALIDARG,
                format!(
                    "(ID {in_document} in the settings differs from the ID argument {requested})"
                ),
            )),
            (false, _) => Ok(requested),
            (true, false) => Ok(in_document),
            (true, true) => Ok(new_guid()),
        }
    }

    pub(super) fn index_path(&self, parts: &[&str]) -> PathBuf {
        self.locked.index_path(parts)
    }

    /// Marker `index/<kind>/<owner>/<member>`.
    pub(super) fn add_marker(
        &self,
        kind: &str,
        owner: Guid,
        member: Guid,
    ) -> Result<(), HcnFailure> {
        store::write_atomic(
            &self.index_path(&[kind, &owner.to_upper_string(), &member.to_upper_string()]),
            b"",
        )
    }

    pub(super) fn remove_marker(
        &self,
        kind: &str,
        owner: Guid,
        member: Guid,
    ) -> Result<(), HcnFailure> {
        store::remove_file(&self.index_path(&[
            kind,
            &owner.to_upper_string(),
            &member.to_upper_string(),
        ]))
    }

    pub(super) fn markers(&self, kind: &str, owner: Guid) -> Result<Vec<Guid>, HcnFailure> {
        Ok(
            store::list_dir(&self.index_path(&[kind, &owner.to_upper_string()]))?
                .iter()
                .filter_map(|name| name.parse().ok())
                .collect(),
        )
    }

    /// Entry `index/<kind>/<network>/<key>` naming the endpoint that holds `key`.
    pub(super) fn holder(
        &self,
        kind: &str,
        network: Guid,
        key: &str,
    ) -> Result<Option<Guid>, HcnFailure> {
        let text = store::read_text(&self.holder_path(kind, network, key))?;
        Ok(text.and_then(|text| text.trim().parse().ok()))
    }

    /// The index entry naming the endpoint that holds `key` (an IP, a MAC) on `network`.
    fn holder_path(&self, kind: &str, network: Guid, key: &str) -> PathBuf {
        self.index_path(&[kind, &network.to_upper_string(), key])
    }

    pub(super) fn set_holder(
        &self,
        kind: &str,
        network: Guid,
        key: &str,
        endpoint: Guid,
    ) -> Result<(), HcnFailure> {
        store::write_atomic(
            &self.holder_path(kind, network, key),
            endpoint.to_upper_string().as_bytes(),
        )
    }

    /// Removes the entry only if it still names `endpoint`.
    pub(super) fn release_holder(
        &self,
        kind: &str,
        network: Guid,
        key: &str,
        endpoint: Guid,
    ) -> Result<(), HcnFailure> {
        if self.holder(kind, network, key)? == Some(endpoint) {
            store::remove_file(&self.holder_path(kind, network, key))?;
        }
        Ok(())
    }
}

/// File-name form of an IP (`:` is not allowed in Windows file names).
pub(super) fn ip_key(ip: IpAddr) -> String {
    ip.to_string().replace(':', "_")
}
