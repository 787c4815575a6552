//! A network of the node's config directory as its plugin's own code reads it: decoded once,
//! then no longer generic over the plugin kind, so the node tools ask it every question (is
//! the config accepted, what would STATUS say, which pool do pods get their addresses from,
//! where are its reservations) without knowing which plugin it is or decoding it again.
//!
//! The plugin kind is chosen once, by whoever knows the plugins ([`ConfiguredNetwork::load`]
//! with the kind's type): a third kind is one more choice there and nothing here.
//!
//! Decodes, per network: the config as configured, once; in Flannel-native mode also the
//! config subnet.env makes of it, once. The review, STATUS and the pool are of the config ADD
//! runs on: the second where there is one. A config the plugin refuses is read once more, by DEL's teardown
//! view only, for where its reservations are: collecting never needs a config ADD accepts.

use std::fmt;
use std::path::PathBuf;

use cni::{CniArgs, Error, ErrorCode, NetworkRequest};
use hns::schema::HostComputeNetwork;
use hns::schema::policy::AclPolicy;
use hns::{ErrorKind, HnsError, SupportedFeatures};
use ipam_host_local::{Exhausted, HostLocal};

use crate::acl_fallback;
use crate::config::ConfigReview;
use crate::ipam::Ipam;
use crate::kind::NetworkKind;
use crate::prepare::Prepared;

/// One configured network, decoded (see the module docs).
#[derive(Debug)]
pub struct ConfiguredNetwork {
    request: NetworkRequest,
    /// What the plugin's config code says of the config ADD runs on (in Flannel-native mode,
    /// the one subnet.env completes, once it can be read).
    review: Result<ConfigReview, Error>,
    /// The config STATUS and ADD run on this round, decoded; or why there is none (refused,
    /// subnet.env incomplete).
    effective: Result<Box<dyn Decoded>, Error>,
    /// The host-local store holding the network's reservations; `None` for a delegated IPAM
    /// (its store is its own) or a config without `ipam`.
    store: Result<Option<HostLocal>, Error>,
    /// What the policy agent follows of the config.
    policy: PolicySettings,
}

/// A network's NetworkPolicy settings, as the config ADD runs on has them (none when ADD
/// refuses it): what the node's policy agent follows of each config.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PolicySettings {
    /// The network's (and its HNS network's) name.
    pub network: String,
    /// `networkPolicySnapshot`: where new pods of the network read their rules; `None` when
    /// NetworkPolicy is not enforced on the network.
    pub snapshot: Option<PathBuf>,
    /// The ACLs the config itself writes on every endpoint (its `policies`, as HNS applies
    /// them, and the Host-layer allow-alls ADD adds beside them): the agent's rules keep clear
    /// of them.
    pub acls: Vec<AclPolicy>,
}

impl PolicySettings {
    fn of<K>(network: &str, prepared: &Result<Prepared<K>, Error>) -> PolicySettings {
        let Ok(prepared) = prepared else {
            return PolicySettings {
                network: network.to_owned(),
                ..PolicySettings::default()
            };
        };
        let mut acls = prepared.conf.acls();
        acls.extend(acl_fallback::host_rules(&acls));
        PolicySettings {
            network: network.to_owned(),
            snapshot: prepared
                .conf
                .network_policy_snapshot
                .clone()
                .map(PathBuf::from),
            acls,
        }
    }
}

impl ConfiguredNetwork {
    /// Decodes the network `request` configures with plugin `K`'s code. `features` are the
    /// node's HNS features as last read (Flannel-native mode asks them for dual-stack);
    /// `None` when HNS could not be read.
    pub fn load<K: NetworkKind + 'static>(
        request: NetworkRequest,
        features: Option<SupportedFeatures>,
    ) -> ConfiguredNetwork {
        let args = CniArgs::default();
        let as_configured = Prepared::<K>::load(&request.config, &args);
        let known =
            || features.ok_or_else(|| HnsError::new(ErrorKind::Backend, "HNS could not be read"));
        // The review is of the config ADD runs on: in Flannel-native mode the one subnet.env
        // completes (an `ipam` section there may lack what subnet.env fills in); while
        // subnet.env cannot be read (install time, flanneld not started) of the config as
        // configured, which is all that can be judged then.
        // So are the NetworkPolicy settings the policy agent follows.
        let (review, policy, effective) = match crate::flannel::effective_network(&request, known) {
            Ok(None) => (
                reviewed(&as_configured),
                PolicySettings::of(&request.config.name, &as_configured),
                as_configured.map(|prepared| Effective::boxed(request.clone(), prepared)),
            ),
            Ok(Some(derived)) => {
                let prepared = Prepared::<K>::load(&derived.config, &args);
                (
                    reviewed(&prepared),
                    PolicySettings::of(&request.config.name, &prepared),
                    prepared.map(|prepared| Effective::boxed(derived, prepared)),
                )
            }
            // A Flannel key ADD refuses (`subnetFile` or `dataDir` not a path): so is the
            // config, whatever subnet.env holds.
            Err(refused) if refused.code() == ErrorCode::InvalidConfig => (
                Err(refused.clone()),
                PolicySettings {
                    network: request.config.name.clone(),
                    ..PolicySettings::default()
                },
                Err(refused),
            ),
            Err(not_ready) => (
                reviewed(&as_configured),
                PolicySettings::of(&request.config.name, &as_configured),
                Err(not_ready),
            ),
        };
        let store = match &effective {
            Ok(decoded) => Ok(decoded.store()),
            Err(_) => {
                crate::flannel::teardown_ipam(&request.config, &args).map(|ipam| match ipam {
                    Some(Ipam::HostLocal(host_local)) => Some(host_local),
                    _ => None,
                })
            }
        };
        ConfiguredNetwork {
            request,
            review,
            effective,
            store,
            policy,
        }
    }

    /// The network's (and HNS network's) name.
    pub fn name(&self) -> &str {
        &self.request.config.name
    }

    /// The config as the runtime hands it, with `CNI_PATH`: what DEL of one of its
    /// attachments runs with.
    pub fn request(&self) -> &NetworkRequest {
        &self.request
    }

    /// What the plugin's config code says of the config ADD runs on: accepted (with what it
    /// may still do otherwise than meant), or why ADD refuses it.
    pub fn review(&self) -> Result<&ConfigReview, &Error> {
        self.review.as_ref()
    }

    /// What the NetworkPolicy agent follows of the config ADD runs on: where its snapshot
    /// is (`networkPolicySnapshot`; `None`: NetworkPolicy is not enforced on the network, or
    /// the plugin refuses the config) and the ACLs the config itself writes.
    pub fn policy(&self) -> &PolicySettings {
        &self.policy
    }

    /// The store the network's reservations are in (`None`: its IPAM is another plugin's),
    /// or why it cannot be told.
    pub fn store(&self) -> Result<Option<&HostLocal>, &Error> {
        self.store.as_ref().map(Option::as_ref)
    }

    /// STATUS as the runtime's STATUS would answer with the HNS network `network` (`None`:
    /// HNS has none of that name): ready with the full range sets, or why not.
    pub fn status(&self, network: Option<&HostComputeNetwork>) -> Result<Vec<Exhausted>, Error> {
        self.effective
            .as_ref()
            .map_err(Clone::clone)?
            .status(network)
    }

    /// host-local over the pods' store with exactly the ranges and exclusions ADD allocates
    /// from on `network` (in Flannel-native mode subnet.env's; the pod gateways and the HNS
    /// subnets' gateways kept out). What a node component reserves here (kube-proxy's source
    /// VIP) is an address ADD would hand out, so no pod ever gets it. Refused, naming the
    /// cause, when the network is missing or does not fit the config, or the IPAM is not
    /// host-local.
    pub fn pod_pool(&self, network: Option<&HostComputeNetwork>) -> Result<HostLocal, Error> {
        self.effective
            .as_ref()
            .map_err(Clone::clone)?
            .pod_pool(network)
    }
}

/// A decoded config, whatever its plugin: the kind-erased questions.
trait Decoded: fmt::Debug {
    fn status(&self, network: Option<&HostComputeNetwork>) -> Result<Vec<Exhausted>, Error>;
    fn pod_pool(&self, network: Option<&HostComputeNetwork>) -> Result<HostLocal, Error>;
    fn store(&self) -> Option<HostLocal>;
}

/// The config STATUS and ADD run on, decoded by plugin `K`.
#[derive(Debug)]
struct Effective<K> {
    request: NetworkRequest,
    prepared: Prepared<K>,
}

impl<K: NetworkKind + 'static> Effective<K> {
    fn boxed(request: NetworkRequest, prepared: Prepared<K>) -> Box<dyn Decoded> {
        Box::new(Effective { request, prepared })
    }
}

impl<K: NetworkKind> Decoded for Effective<K> {
    fn status(&self, network: Option<&HostComputeNetwork>) -> Result<Vec<Exhausted>, Error> {
        crate::status::status_of(&self.prepared, network, &self.request)
    }

    fn pod_pool(&self, network: Option<&HostComputeNetwork>) -> Result<HostLocal, Error> {
        let name = &self.request.config.name;
        self.prepared.required_ipam()?;
        let network = network.ok_or_else(|| {
            Error::try_again_later(format!(
                "HNS network {name:?} does not exist (yet); flanneld or the node's setup creates it"
            ))
        })?;
        let ipam = self
            .prepared
            .fitted_ipam(network)
            .map_err(|unusable| unusable.into_error(name))?;
        match ipam {
            Some(Ipam::HostLocal(host_local)) => Ok(host_local),
            _ => Err(Error::invalid_config(format!(
                "network {name:?}: ipam.type is not host-local, so the pods' addresses are \
                 another IPAM plugin's to give; reserve the address with that plugin"
            ))),
        }
    }

    fn store(&self) -> Option<HostLocal> {
        match &self.prepared.ipam {
            Some(Ipam::HostLocal(host_local)) => Some(host_local.clone()),
            _ => None,
        }
    }
}

/// The review of a decoded config, or why it was refused.
fn reviewed<K>(prepared: &Result<Prepared<K>, Error>) -> Result<ConfigReview, Error> {
    prepared
        .as_ref()
        .map(|prepared| prepared.conf.review())
        .map_err(Clone::clone)
}
