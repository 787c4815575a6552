//! A packet's path through the emulated host: egress on its source endpoint, ingress on its
//! destination endpoint, each where the host enforces ACLs; a packet to a load balancer's
//! frontend goes on to each of its backends (`super::service`).
//!
//! A side is a *local* endpoint of this host (its ACLs decide), a *remote* endpoint
//! (`RemoteEndpoint` flag: kube-proxy's stand-in for a pod of another node, whose own host
//! filters it; nothing here), this *host* (a network's `ProviderAddress`), a load balancer's
//! *frontend*, or an address no endpoint of this host holds. Traffic from the host or from
//! elsewhere to a pod is therefore ingress on the pod only, and a pod's traffic to them egress
//! on the pod only. The verdict does not depend on knowing the host's address: it only names
//! the side.

use std::fmt;
use std::net::IpAddr;

use serde::Serialize;

use super::evaluate::{Decision, EndpointAcls, Packet, Verdict, evaluate};
use super::service::{Delivery, egress_through};
use super::sets::IpSets;
use super::undocumented::Undocumented;
use crate::engine::{Engine, State};
use crate::failure::HcnFailure;
use crate::state::{IPS, ip_key};
use crate::store::ObjectDir;
use hns::guid::Guid;
use hns::hresult::HResult;
use hns::schema::policy::AclDirection;
use hns::schema::{EndpointFlags, HostComputeEndpoint, HostComputeNetwork, NetworkPolicy};

/// One end of a packet's path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "Kind")]
pub enum Side {
    /// A local endpoint: its ACLs decide for its direction.
    #[serde(rename_all = "PascalCase")]
    Endpoint {
        /// The endpoint holding the address.
        endpoint: Guid,
        /// Its decision.
        decision: Decision,
    },
    /// A remote endpoint: this host enforces no ACL for it.
    #[serde(rename_all = "PascalCase")]
    RemoteEndpoint {
        /// The endpoint holding the address.
        endpoint: Guid,
    },
    /// This host (the `ProviderAddress` of one of its networks).
    Host,
    /// A frontend of load balancers: the packet goes on to one of their backends
    /// ([`PathVerdict::backends`]).
    #[serde(rename_all = "PascalCase")]
    Frontend {
        /// The load balancers.
        load_balancers: Vec<Guid>,
    },
    /// An address no endpoint of this host holds.
    Elsewhere,
}

impl Side {
    /// The decision, for a local endpoint.
    pub fn decision(&self) -> Option<&Decision> {
        match self {
            Side::Endpoint { decision, .. } => Some(decision),
            _ => None,
        }
    }
}

/// Where a packet goes through the host, and what each side decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct PathVerdict {
    /// The packet checked.
    pub packet: Packet,
    /// The source's side (egress).
    pub source: Side,
    /// The destination's side (ingress); [`Side::Frontend`] for a load balancer's frontend.
    pub destination: Side,
    /// For a packet to a load balancer's frontend, its path to each backend; `source` is then
    /// the source's egress decision on the packet as sent, for reading only (each path's own
    /// `source` decides).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub backends: Vec<BackendPath>,
}

/// A packet's path from a load balancer's frontend to one backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct BackendPath {
    /// The load balancer.
    pub load_balancer: Guid,
    /// The backend endpoint.
    pub endpoint: Guid,
    /// What the backend receives.
    pub delivered: Packet,
    /// The source's side (egress), its decision matched both before and after the load
    /// balancer's rewrite ([`super::egress_through`]).
    pub source: Side,
    /// The backend's side (ingress), on the delivered packet.
    pub destination: Side,
}

impl BackendPath {
    fn decisions(&self) -> impl Iterator<Item = &Decision> {
        [&self.source, &self.destination]
            .into_iter()
            .filter_map(Side::decision)
    }
}

/// A verdict that rests on what HNS does not document ([`Undocumented`](super::Undocumented)): the emulator's
/// choice is not evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndocumentedVerdict {
    /// The emulator's verdict.
    pub emulated: Verdict,
    /// The decision that rests on it.
    pub decision: Decision,
}

impl fmt::Display for UndocumentedVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why: Vec<String> = self
            .decision
            .undocumented
            .iter()
            .map(ToString::to_string)
            .collect();
        write!(
            f,
            "the {:?} verdict rests on what HNS does not document: {}",
            self.decision.direction,
            why.join("; ")
        )
    }
}

impl std::error::Error for UndocumentedVerdict {}

impl PathVerdict {
    /// The verdict: denied when either side surely denies. A verdict that rests on what HNS
    /// does not document is an error, so a test cannot assert what only the emulator decided.
    /// Through a load balancer, every backend's path must reach the same verdict.
    pub fn verdict(&self) -> Result<Verdict, UndocumentedVerdict> {
        if self.backends.is_empty() {
            return settle(&self.decisions().collect::<Vec<_>>());
        }
        let mut allowed = None;
        let mut denied = None;
        for path in &self.backends {
            match settle(&path.decisions().collect::<Vec<_>>())? {
                Verdict::Allowed => allowed = allowed.or(Some(path.endpoint)),
                // `settle` denies only where a decision denies: the one to report.
                Verdict::Denied if denied.is_none() => {
                    denied = path
                        .decisions()
                        .find(|decision| decision.verdict == Verdict::Denied)
                        .map(|decision| (path.endpoint, decision));
                }
                Verdict::Denied => {}
            }
        }
        match (allowed, denied) {
            (Some(allowed), Some((endpoint, decision))) => Err(UndocumentedVerdict {
                emulated: Verdict::Denied,
                decision: Decision {
                    undocumented: vec![Undocumented::Backend {
                        allowed,
                        denied: endpoint,
                    }],
                    ..decision.clone()
                },
            }),
            (None, Some(_)) => Ok(Verdict::Denied),
            _ => Ok(Verdict::Allowed),
        }
    }

    /// The emulator's verdict, what HNS does not document decided as the emulator decides
    /// it.
    pub fn emulated_verdict(&self) -> Verdict {
        if self
            .decisions()
            .any(|decision| decision.verdict == Verdict::Denied)
        {
            Verdict::Denied
        } else {
            Verdict::Allowed
        }
    }

    /// The local sides' decisions, egress first; through a load balancer, each backend's
    /// path's.
    pub fn decisions(&self) -> Box<dyn Iterator<Item = &Decision> + '_> {
        if self.backends.is_empty() {
            Box::new(
                [&self.source, &self.destination]
                    .into_iter()
                    .filter_map(Side::decision),
            )
        } else {
            Box::new(self.backends.iter().flat_map(BackendPath::decisions))
        }
    }

    /// The first decision that rests on what HNS does not document.
    pub fn undocumented(&self) -> Option<&Decision> {
        self.decisions()
            .find(|decision| !decision.undocumented.is_empty())
    }
}

/// The verdict of one path's `decisions`: denied when one surely denies; an error when one
/// rests on what HNS does not document and none surely denies.
fn settle(decisions: &[&Decision]) -> Result<Verdict, UndocumentedVerdict> {
    let denies = |decision: &Decision| decision.verdict == Verdict::Denied;
    let emulated = if decisions.iter().any(|decision| denies(decision)) {
        Verdict::Denied
    } else {
        Verdict::Allowed
    };
    let surely_denied = decisions
        .iter()
        .any(|decision| denies(decision) && decision.undocumented.is_empty());
    match decisions
        .iter()
        .find(|decision| !decision.undocumented.is_empty())
    {
        Some(decision) if !surely_denied => Err(UndocumentedVerdict {
            emulated,
            decision: (*decision).clone(),
        }),
        _ => Ok(emulated),
    }
}

/// A local endpoint's ACLs, for listing.
#[derive(Debug, Clone)]
pub struct EndpointRules {
    /// The endpoint.
    pub endpoint: Guid,
    /// Its name.
    pub name: String,
    /// Its addresses.
    pub addresses: Vec<IpAddr>,
    /// Its ACLs.
    pub acls: EndpointAcls,
}

impl Engine {
    /// Whether `packet` passes the ACLs of the endpoints it leaves and enters on this host, on
    /// this host's Windows build. A test-only query: not an HCN call, not counted, nothing
    /// written.
    pub fn check_packet(&self, packet: &Packet) -> Result<PathVerdict, HcnFailure> {
        self.inspect(|state| state.check_packet(packet))
    }

    /// The local endpoints that have ACLs, with their rules.
    pub fn endpoint_rules(&self) -> Result<Vec<EndpointRules>, HcnFailure> {
        self.inspect(|state| {
            let mut listed = Vec::new();
            for id in state.all_ids(ObjectDir::Endpoints)? {
                let Some(endpoint) = state.load_endpoint(id)? else {
                    continue;
                };
                if endpoint.flags.contains(EndpointFlags::REMOTE_ENDPOINT) {
                    continue;
                }
                let acls = state.acls_of(&endpoint)?;
                if !acls.is_empty() {
                    listed.push(EndpointRules {
                        endpoint: id,
                        addresses: endpoint
                            .ip_configurations
                            .iter()
                            .map(|c| c.ip_address)
                            .collect(),
                        name: endpoint.name,
                        acls,
                    });
                }
            }
            Ok(listed)
        })
    }
}

impl State<'_> {
    fn check_packet(&self, packet: &Packet) -> Result<PathVerdict, HcnFailure> {
        let mut networks = Vec::new();
        for id in self.all_ids(ObjectDir::Networks)? {
            networks.extend(self.load_network(id)?);
        }
        let build = self.host.windows_build;
        let decide = |direction, packet: &Packet| {
            let packet = *packet;
            move |acls: &EndpointAcls| evaluate(acls, direction, &packet, build)
        };
        let source = self.side(&networks, packet.source, decide(AclDirection::Out, packet))?;
        let deliveries = self.deliveries(packet)?;
        if deliveries.is_empty() {
            return Ok(PathVerdict {
                packet: *packet,
                source,
                destination: self.side(
                    &networks,
                    packet.destination,
                    decide(AclDirection::In, packet),
                )?,
                backends: Vec::new(),
            });
        }
        let mut load_balancers: Vec<Guid> = deliveries.iter().map(|d| d.load_balancer).collect();
        load_balancers.dedup();
        let mut backends = Vec::new();
        for Delivery {
            load_balancer,
            backend,
            toward,
            delivered,
        } in deliveries
        {
            backends.push(BackendPath {
                load_balancer,
                endpoint: backend,
                delivered,
                source: self.side(&networks, packet.source, |acls: &EndpointAcls| {
                    egress_through(acls, packet, &toward, build)
                })?,
                destination: self.side(
                    &networks,
                    delivered.destination,
                    decide(AclDirection::In, &delivered),
                )?,
            });
        }
        Ok(PathVerdict {
            packet: *packet,
            source,
            destination: Side::Frontend { load_balancers },
            backends,
        })
    }

    /// The side `ip` is on; a local endpoint's decision is `decide`'s on its ACLs.
    fn side(
        &self,
        networks: &[HostComputeNetwork],
        ip: IpAddr,
        decide: impl FnOnce(&EndpointAcls) -> Decision,
    ) -> Result<Side, HcnFailure> {
        let mut holders = Vec::new();
        for network in networks {
            let holds = |endpoint: &HostComputeEndpoint| {
                endpoint
                    .ip_configurations
                    .iter()
                    .any(|c| c.ip_address == ip)
            };
            if let Some(id) = self.live_holder(IPS, network.id, &ip_key(ip), holds)? {
                holders.extend(self.load_endpoint(id)?);
            }
        }
        let endpoint = match holders.as_slice() {
            [] if networks.iter().any(|network| provides(network, ip)) => return Ok(Side::Host),
            [] => return Ok(Side::Elsewhere),
            [endpoint] => endpoint,
            [first, second, ..] => {
                return Err(HcnFailure::new(
                    HResult::E_INVALIDARG,
                    format!(
                        "({ip} is held by endpoint {} and endpoint {} on different networks: \
                         which one the packet is for cannot be told from its address)",
                        first.id, second.id
                    ),
                ));
            }
        };
        if endpoint.flags.contains(EndpointFlags::REMOTE_ENDPOINT) {
            return Ok(Side::RemoteEndpoint {
                endpoint: endpoint.id,
            });
        }
        let acls = self.acls_of(endpoint)?;
        Ok(Side::Endpoint {
            endpoint: endpoint.id,
            decision: decide(&acls),
        })
    }

    /// An endpoint's ACLs against its network's IP sets and type.
    fn acls_of(&self, endpoint: &HostComputeEndpoint) -> Result<EndpointAcls, HcnFailure> {
        let network = self.require_network(endpoint.host_compute_network)?;
        let sets = IpSets::of(&network.policies)?;
        EndpointAcls::new(&endpoint.policies, &sets, network.network_type).map_err(|failure| {
            HcnFailure::new(
                failure.code,
                format!("(endpoint {}: {})", endpoint.id, failure.detail),
            )
        })
    }
}

/// Whether `ip` is the host's address on `network` (its `ProviderAddress` policy).
fn provides(network: &HostComputeNetwork, ip: IpAddr) -> bool {
    network.policies.iter().any(|policy| {
        matches!(policy, NetworkPolicy::ProviderAddress(provider) if provider.provider_address == ip)
    })
}
