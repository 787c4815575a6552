//! Kubernetes NetworkPolicy enforced with HNS ACLs: the translation, as pure functions.
//!
//! The node agent keeps a [`Cluster`] (namespaces, pods, validated [`Policy`]s) up to date
//! from its watches, reads what HNS holds ([`Held`]), and asks a [`Translation`] of one state
//! of the cluster (which finds each group of pods' members once):
//!
//! - [`Translation::desired`]: every local pod endpoint's ACLs, ordered, with the rules no
//!   policy states (the node's traffic, each direction's default allow or block), and the IP
//!   sets they name ([`Mode::IpSets`], HNS 13.0) or with peers listed inline
//!   ([`Mode::Inline`]);
//! - [`Translation::pending_pod_acls`], [`Translation::namespace_posture`]: what ADD writes
//!   for a new pod, before the pod has an address or before the agent has seen it, its peers
//!   inline, as the network's IP sets, or left out ([`NewPodPeers`]);
//!
//! then [`diff`]: the fewest writes that converge HNS on what is desired, without a window,
//! each endpoint's its own unit, so a write HNS refuses holds back only what depends on it
//! ([`Writes::apply`]).
//!
//! The policy vocabulary the node's other parts share is defined here once: the programming
//! [`Mode`] (chosen from HNS's features, and its one name), the agent's rule identity
//! ([`RULE_ID_PREFIX`], [`is_agents`]) and the priority plan ([`Priorities`]).
//!
//! Nothing here talks to the API server or HNS, reads a clock or has state: the same inputs
//! give the same rules with the same `Id`s, so an unchanged cluster costs no write.
//!
//! Policies the API accepts but HNS cannot enforce, or objects that make no sense, are
//! [`Refused`] with the field named; what is enforced instead fails closed (see [`policy`]).
//! Rules of other owners on an endpoint (the conflist's ACLs, `allowAclPortMapping`'s) are
//! never removed and keep precedence; the priority plan is in [`render`].

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod cidr;
mod cluster;
mod desired;
mod diff;
mod invalid;
mod members;
pub mod policy;
mod ports;
pub mod render;
mod rules;
mod selector;
mod sets;

pub use cluster::{Cluster, NamedPort, PodInfo, PodKey};
pub use desired::{Desired, LocalEndpoint, NewPodPeers, NewPodSets, NodeAddresses, Translation};
pub use diff::{Applied, Failed, Held, Item, RefusedWrite, Write, Writes, diff, renamed_sets};
pub use invalid::Invalid;
pub use policy::{Policy, PolicyKey, Refused};
pub use ports::{PortRange, Protocol};
pub use render::{
    IpSet, Mode, Priorities, PriorityConflict, RULE_ID_PREFIX, SET_ID_PREFIX, is_agents,
};
pub use selector::{Labels, Selector};
pub use sets::SetCollision;
