//! Kubernetes NetworkPolicy enforced with HNS ACLs: the translation, as pure functions.
//!
//! The node agent keeps a [`Cluster`] (namespaces, pods, validated [`Policy`]s) up to date
//! from its watches, reads what HNS holds ([`Programmed`]), and asks:
//!
//! - [`desired`]: every local pod endpoint's ACLs, ordered, with the rules no policy states
//!   (the node's traffic, each direction's default allow or block), and the IP sets they
//!   name ([`Mode::IpSets`], HNS 13.0) or with peers listed inline ([`Mode::Inline`]);
//! - [`diff`]: the fewest writes that converge HNS on that, without a window;
//! - [`pending_pod_acls`], [`namespace_posture`]: what ADD writes for a new pod, before the
//!   pod has an address or before the agent has seen it.
//!
//! A [`Translation`] asks all of them of one state of the cluster, finding each group of
//! pods' members once.
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
pub mod policy;
mod ports;
pub mod render;
mod rules;
mod selector;

pub use cluster::{Cluster, NamedPort, PodInfo, PodKey};
pub use desired::{
    Desired, LocalEndpoint, Node, Translation, desired, is_agents, namespace_posture,
    pending_pod_acls,
};
pub use diff::{Programmed, Write, diff};
pub use invalid::Invalid;
pub use policy::{Policy, PolicyKey, Refused};
pub use ports::{PortRange, Protocol};
pub use render::{IpSet, Mode, Priorities, PriorityConflict, RULE_ID_PREFIX, SET_ID_PREFIX};
pub use selector::{Labels, Selector};
