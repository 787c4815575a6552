//! Network operations.

use std::net::IpAddr;

use super::adapter::binds_adapter;
use super::document;
use super::engine::State;
use super::failure::HcnFailure;
use super::mac::{self, Pool};
use super::policies::{check_policies, read_policy_request};
use super::query::{Query, detailed_health, id_list};
use super::state::{IPS, MAC_CURSOR, MACS, NETWORK_ENDPOINTS};
use super::store::{self, ObjectDir};
use hns::guid::Guid;
use hns::hresult::HResult;
use hns::schema::policy::{DrMacAddressPolicy, ProviderAddressPolicy};
use hns::schema::{HostComputeNetwork, NetworkPolicy, NetworkType, SchemaVersion};

impl State<'_> {
    /// `HcnEnumerateNetworks`.
    pub fn enumerate_networks(&self, query: &str) -> Result<String, HcnFailure> {
        let query = Query::parse(query)?;
        let candidates = match query.guid(&["ID"])? {
            Some(id) => vec![id],
            None => self.all_ids(ObjectDir::Networks)?,
        };
        let mut ids = Vec::new();
        for id in candidates {
            if let Some(network) = self.load_network(id)? {
                let value =
                    serde_json::to_value(&network).map_err(|e| HcnFailure::io("network", e))?;
                if query.matches(&value, &[]) {
                    ids.push(id);
                }
            }
        }
        Ok(id_list(&ids))
    }

    /// `HcnCreateNetwork`. Validates the document like HNS: known type, unique ID
    /// and name, parseable subnets and next hops, documented policy types whose
    /// settings fit (a `DrMacAddress` that is a MAC), a valid MacPool (a default one is assigned when none is given). Overlay
    /// networks get a `DrMacAddress` policy if the document has none, as HNS adds one, and
    /// the `ProviderAddress` HNS adds once the host's switch has settled (see
    /// [`crate::VirtualSwitch`]); the first network bound to the host adapter creates that
    /// switch.
    pub fn create_network(&mut self, requested: Guid, settings: &str) -> Result<Guid, HcnFailure> {
        let network: HostComputeNetwork =
            document::read("network settings", settings, document::NETWORK_RULES)?;
        self.create_network_from(requested, network)
    }

    /// [`State::create_network`] of a document already read (a V1 `POST /networks/` comes
    /// here after its translation).
    pub(super) fn create_network_from(
        &mut self,
        requested: Guid,
        mut network: HostComputeNetwork,
    ) -> Result<Guid, HcnFailure> {
        let id = State::choose_id(requested, network.id)?;
        if self.object_exists(ObjectDir::Networks, id) {
            return Err(HcnFailure::new(
                HResult::HCN_E_NETWORK_ALREADY_EXISTS,
                format!("(network {id})"),
            ));
        }
        if let NetworkType::Other(name) = &network.network_type {
            return Err(HcnFailure::new(
                HResult::HCN_E_INVALID_NETWORK_TYPE,
                format!("(Type {name:?})"),
            ));
        }
        if network.name.is_empty() {
            return Err(HcnFailure::new(
                HResult::HCN_E_INVALID_NETWORK,
                "(Name is required)",
            ));
        }
        // Names are unique per host: HNS refuses a second network with the same name
        // (flanneld deletes the old network before re-creating one with its name).
        if let Some(other) = self.find_network(|existing| existing.name == network.name)? {
            return Err(HcnFailure::new(
                HResult::HCN_E_NETWORK_ALREADY_EXISTS,
                format!("(network {other} is already named {:?})", network.name),
            ));
        }
        validate_subnets(&network)?;
        check_policies(&network.policies)?;
        self.check_network_sets(&network.policies)?;
        if network.mac_pool.is_empty() {
            network.mac_pool = mac::default_pool(id);
        }
        Pool::new(&network.mac_pool)
            .map_err(|e| HcnFailure::new(HResult::HCN_E_INVALID_NETWORK, format!("({e})")))?;
        if network.network_type == NetworkType::Overlay
            && !network
                .policies
                .iter()
                .any(|policy| matches!(policy, NetworkPolicy::DrMacAddress(_)))
        {
            network
                .policies
                .push(NetworkPolicy::DrMacAddress(DrMacAddressPolicy {
                    address: mac::default_dr_mac(id),
                }));
        }
        network.id = id;
        network.health = None;
        network.schema_version = SchemaVersion::V2;
        if binds_adapter(&network.network_type)
            && self
                .find_network(|existing| binds_adapter(&existing.network_type))?
                .is_none()
        {
            self.host.switch.create();
        }
        self.purge_network_index(id)?;
        self.write_object(ObjectDir::Networks, id, &self.filled_in(network)?)?;
        Ok(id)
    }

    /// Every network, as HNS reports it.
    pub(super) fn networks(&self) -> Result<Vec<HostComputeNetwork>, HcnFailure> {
        let mut networks = Vec::new();
        for id in self.all_ids(ObjectDir::Networks)? {
            networks.extend(self.load_network(id)?);
        }
        Ok(networks)
    }

    /// The first network `matches` accepts.
    fn find_network(
        &self,
        matches: impl Fn(&HostComputeNetwork) -> bool,
    ) -> Result<Option<Guid>, HcnFailure> {
        Ok(self
            .networks()?
            .into_iter()
            .find(|network| matches(network))
            .map(|network| network.id))
    }

    /// `network` with what HNS fills in once the host's switch has settled: an Overlay
    /// network's `ProviderAddress`, the host's address. Reads store it, so it stays as HNS
    /// wrote it.
    pub(super) fn filled_in(
        &self,
        mut network: HostComputeNetwork,
    ) -> Result<HostComputeNetwork, HcnFailure> {
        let missing = network.network_type == NetworkType::Overlay
            && !network
                .policies
                .iter()
                .any(|policy| matches!(policy, NetworkPolicy::ProviderAddress(_)));
        if missing && self.host.switch.settled() {
            network
                .policies
                .push(NetworkPolicy::ProviderAddress(ProviderAddressPolicy {
                    provider_address: self.host.adapter.address.ip(),
                }));
            if self.object_exists(ObjectDir::Networks, network.id) {
                self.write_object(ObjectDir::Networks, network.id, &network)?;
            }
        }
        Ok(network)
    }

    /// The host's address on `network` as HNS reports it (V1 `ManagementIP`): the network's
    /// `ProviderAddress`, else, on a network bound to the host adapter, the adapter's address
    /// once the switch has settled.
    pub(super) fn management_ip(&self, network: &HostComputeNetwork) -> Option<IpAddr> {
        network
            .find_policy(|policy| match policy {
                NetworkPolicy::ProviderAddress(address) => Some(address.provider_address),
                _ => None,
            })
            .or_else(|| {
                (binds_adapter(&network.network_type) && self.host.switch.settled())
                    .then(|| self.host.adapter.address.ip())
            })
    }

    /// `HcnOpenNetwork`: fails unless the network exists.
    pub fn open_network(&self, id: Guid) -> Result<(), HcnFailure> {
        self.require_network(id).map(drop)
    }

    /// `HcnQueryNetworkProperties`.
    pub fn query_network(&self, id: Guid, query: &str) -> Result<String, HcnFailure> {
        let query = Query::parse(query)?;
        let mut network = self.require_network(id)?;
        if query.detailed {
            network.health = Some(detailed_health());
        }
        serde_json::to_string(&network).map_err(|e| HcnFailure::io("network", e))
    }

    /// `HcnModifyNetwork`: `Policy` requests add or remove network policies
    /// (flanneld's `RemoteSubnetRoute`s and `HostRoute`) and add, update or remove IP sets
    /// (`SetPolicy`, see [`crate::acl`]); the write is counted
    /// ([`crate::acl::PolicyWrites`]). `DNS` and `Extension` requests are not modelled.
    pub fn modify_network(&mut self, id: Guid, settings: &str) -> Result<(), HcnFailure> {
        let mut network = self.require_network(id)?;
        self.host.check_refusal(id)?;
        let request = read_policy_request::<NetworkPolicy>("network", settings)?;
        let before = network.policies.clone();
        for policy in request.policies.iter().cloned() {
            self.change_network_policy(&mut network.policies, request.request_type, policy)?;
        }
        self.check_set_changes(&network, &before)?;
        self.write_object(ObjectDir::Networks, id, &network)?;
        self.host
            .policy_writes
            .count_network(&request, &before, &network.policies);
        Ok(())
    }

    /// `HcnDeleteNetwork`. Like HNS, deleting a network removes its endpoints
    /// (detaching them from their namespaces) instead of refusing; the last network bound to
    /// the host adapter takes the switch with it.
    pub fn delete_network(&mut self, id: Guid) -> Result<(), HcnFailure> {
        self.require_network(id)?;
        self.remove_object(ObjectDir::Networks, id)?;
        for endpoint in self.markers(NETWORK_ENDPOINTS, id)? {
            if let Some(stored) = self.read_object(ObjectDir::Endpoints, endpoint)? {
                self.remove_endpoint_files(&stored)?;
            }
        }
        if self
            .find_network(|network| binds_adapter(&network.network_type))?
            .is_none()
        {
            self.host.switch.remove();
        }
        self.purge_network_index(id)
    }

    pub(super) fn require_network(&self, id: Guid) -> Result<HostComputeNetwork, HcnFailure> {
        self.load_network(id)?.ok_or_else(|| {
            HcnFailure::new(HResult::HCN_E_NETWORK_NOT_FOUND, format!("(network {id})"))
        })
    }

    /// Drops every index of a network (after a delete, or leftovers from an
    /// interrupted one before the ID is reused).
    fn purge_network_index(&self, id: Guid) -> Result<(), HcnFailure> {
        let key = id.to_upper_string();
        for kind in [NETWORK_ENDPOINTS, IPS, MACS] {
            store::remove_dir(&self.index_path(&[kind, &key]))?;
        }
        store::remove_file(&self.index_path(&[MAC_CURSOR, &key]))
    }
}

/// Addresses are parsed by the decode (see [`document`]); what is left is each subnet's policies.
fn validate_subnets(network: &HostComputeNetwork) -> Result<(), HcnFailure> {
    network
        .subnets()
        .try_for_each(|subnet| check_policies(&subnet.policies))
}
