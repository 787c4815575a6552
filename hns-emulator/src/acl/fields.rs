//! How HNS reads an ACL's address fields, which no Microsoft document describes: what the
//! production software that passes NetworkPolicy conformance on real hosts writes.
//!
//! - **Plain addresses** (IPs and prefixes): `LocalAddresses` is the endpoint's side of the
//!   packet, `RemoteAddresses` the peer's, in both directions. Confirmed by what runs: Calico
//!   puts an inbound rule's source in `RemoteAddresses` and its destination in
//!   `LocalAddresses` (projectcalico/calico `felix/dataplane/windows/policysets/policysets.go`,
//!   `protoRuleToHnsRules`); Azure NPM's probe rule is `In` with the node's IP in
//!   `RemoteAddresses` (azure-container-networking
//!   `npm/pkg/dataplane/policies/policymanager_windows.go:501-511`); Microsoft's answer in
//!   hcsshim#1059 blocks an outbound destination in `RemoteAddresses` with the endpoint's IP
//!   in `LocalAddresses`.
//! - **IP set `Id`s**: `LocalAddresses` is the packet's *source*, `RemoteAddresses` its
//!   *destination*, in both directions. Azure NPM, the one production writer of sets, says so
//!   ("HNS has confusing Local and Remote address definitions … LocalAddresses = Source Sets,
//!   RemoteAddresses = Destination Sets", `npm/pkg/dataplane/policies/policy_windows.go:104-144`,
//!   ACN PR #1197 "according to the newly found info in VFP") and writes an ingress peer set in
//!   `LocalAddresses`, an egress peer set in `RemoteAddresses` (`policies/policy.go:197-216`,
//!   `AddSetInfo`); that layout passes the Cyclonus NetworkPolicy suite on Windows Server 2022
//!   (ACN `.pipelines/npm/npm-cyc-win-tests-latest-release.yaml`). Likely: no Microsoft
//!   document states it.
//!
//! Outbound, both readings agree (the endpoint is the source). Inbound they are swapped, and
//! the layouts no production writer uses stay unknown: a set in an inbound rule's
//! `RemoteAddresses` (the destination, the endpoint itself, by NPM's comment; the peer by
//! position), and a field mixing sets and addresses (read entry by entry, or the whole field
//! one way). Such a field is matched under each reading it may have; where they disagree,
//! so may HNS, and a verdict that rests on it is undocumented.

use std::net::IpAddr;

use ipnetwork::IpNetwork;

use super::sets::IpSets;
use hns::schema::policy::AclDirection;

/// A packet as one endpoint sees it: its own side local, the peer's remote.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seen {
    /// `Out`: the endpoint sends the packet; `In`: it receives it.
    pub(crate) direction: AclDirection,
    pub(crate) protocol: u8,
    pub(crate) local: IpAddr,
    pub(crate) remote: IpAddr,
    /// `(local, remote)` ports, for protocols that carry them.
    pub(crate) ports: Option<(u16, u16)>,
}

impl Seen {
    fn source(&self) -> IpAddr {
        match self.direction {
            AclDirection::Out => self.local,
            AclDirection::In => self.remote,
        }
    }

    fn destination(&self) -> IpAddr {
        match self.direction {
            AclDirection::Out => self.remote,
            AclDirection::In => self.local,
        }
    }
}

/// Which of an ACL's address fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    Local,
    Remote,
}

impl Field {
    /// The settings key.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Field::Local => "LocalAddresses",
            Field::Remote => "RemoteAddresses",
        }
    }
}

/// One entry of an address field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Address {
    /// An address (its /32 or /128) or a prefix.
    Network(IpNetwork),
    /// The `Id` of an IP set of the endpoint's network.
    Set(String),
}

/// Which address of a packet a field's entries are compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// `Local` the endpoint's side, `Remote` the peer's: plain addresses.
    Position,
    /// `Local` the source, `Remote` the destination: Azure NPM's sets.
    SourceDestination,
    /// Each entry by its kind: addresses by position, sets by source and destination.
    ByKind,
}

/// An address field as compiled: which field, and its entries (none: every address).
#[derive(Debug, Clone)]
pub(crate) struct AddressField {
    field: Field,
    entries: Vec<Address>,
}

/// Whether a field matches a packet: as the emulator reads it, and whether every reading
/// HNS may have agrees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FieldMatch {
    pub(crate) emulated: bool,
    pub(crate) certain: bool,
}

impl AddressField {
    pub(crate) fn new(field: Field, entries: Vec<Address>) -> AddressField {
        AddressField { field, entries }
    }

    /// The field's settings key.
    pub(crate) fn key(&self) -> &'static str {
        self.field.key()
    }

    /// How many entries the field lists.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The readings HNS may give the field of a rule of `direction`, the emulator's first
    /// (see the module documentation).
    fn readings(&self, direction: AclDirection) -> &'static [Reading] {
        let sets = self.entries.iter().any(|e| matches!(e, Address::Set(_)));
        let addresses = self
            .entries
            .iter()
            .any(|e| matches!(e, Address::Network(_)));
        match (sets, addresses, direction, self.field) {
            (false, _, _, _) => &[Reading::Position],
            // Azure NPM's layouts: an ingress source set, an egress destination set (and an
            // egress source set, the endpoint, which both readings agree on).
            (true, false, AclDirection::Out, _) | (true, false, AclDirection::In, Field::Local) => {
                &[Reading::SourceDestination]
            }
            (true, false, AclDirection::In, Field::Remote) => {
                &[Reading::SourceDestination, Reading::Position]
            }
            (true, true, _, _) => &[
                Reading::ByKind,
                Reading::Position,
                Reading::SourceDestination,
            ],
        }
    }

    /// Whether the field matches `seen` under each of its readings.
    pub(crate) fn matches(&self, seen: &Seen, sets: &IpSets) -> FieldMatch {
        if self.entries.is_empty() {
            return FieldMatch {
                emulated: true,
                certain: true,
            };
        }
        let mut outcomes = self
            .readings(seen.direction)
            .iter()
            .map(|reading| self.matches_as(*reading, seen, sets));
        let emulated = outcomes.next().unwrap_or(true);
        FieldMatch {
            emulated,
            certain: outcomes.all(|other| other == emulated),
        }
    }

    fn matches_as(&self, reading: Reading, seen: &Seen, sets: &IpSets) -> bool {
        let by_position = match self.field {
            Field::Local => seen.local,
            Field::Remote => seen.remote,
        };
        let by_flow = match self.field {
            Field::Local => seen.source(),
            Field::Remote => seen.destination(),
        };
        self.entries.iter().any(|entry| {
            let ip = match (reading, entry) {
                (Reading::Position, _) | (Reading::ByKind, Address::Network(_)) => by_position,
                (Reading::SourceDestination, _) | (Reading::ByKind, Address::Set(_)) => by_flow,
            };
            match entry {
                Address::Network(network) => network.contains(ip),
                Address::Set(id) => sets.contains(id, ip),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD: &str = "10.244.1.5";
    const PEER: &str = "10.244.1.6";

    fn seen(direction: AclDirection) -> Seen {
        let (local, remote) = (POD.parse().unwrap(), PEER.parse().unwrap());
        Seen {
            direction,
            protocol: 6,
            local,
            remote,
            ports: None,
        }
    }

    /// Sets `peer` (the peer's address) and `pod` (the endpoint's).
    fn sets() -> IpSets {
        let policies: Vec<hns::schema::NetworkPolicy> = [("peer", PEER), ("pod", POD)]
            .iter()
            .map(|(id, ip)| {
                serde_json::from_value(serde_json::json!({"Type": "SetPolicy",
                    "Settings": {"Id": id, "PolicyType": "IPSET", "Values": ip}}))
                .unwrap()
            })
            .collect();
        IpSets::of(&policies).unwrap()
    }

    fn field(field: Field, entries: &[&str]) -> AddressField {
        let entries = entries
            .iter()
            .map(|entry| match entry.parse::<IpNetwork>() {
                Ok(network) => Address::Network(network),
                Err(_) => Address::Set((*entry).to_owned()),
            })
            .collect();
        AddressField::new(field, entries)
    }

    fn known(emulated: bool) -> FieldMatch {
        FieldMatch {
            emulated,
            certain: true,
        }
    }

    #[test]
    fn plain_addresses_are_the_endpoints_side_and_the_peers() {
        let sets = sets();
        for direction in [AclDirection::In, AclDirection::Out] {
            let seen = seen(direction);
            assert_eq!(
                field(Field::Local, &[POD]).matches(&seen, &sets),
                known(true)
            );
            assert_eq!(
                field(Field::Remote, &[PEER]).matches(&seen, &sets),
                known(true)
            );
            assert_eq!(
                field(Field::Remote, &[POD]).matches(&seen, &sets),
                known(false)
            );
        }
    }

    /// Azure NPM's layouts: an ingress peer set in `LocalAddresses` is the source; an egress
    /// peer set in `RemoteAddresses` the destination.
    #[test]
    fn sets_are_the_source_and_the_destination() {
        let sets = sets();
        let inbound = seen(AclDirection::In);
        assert_eq!(
            field(Field::Local, &["peer"]).matches(&inbound, &sets),
            known(true)
        );
        assert_eq!(
            field(Field::Local, &["pod"]).matches(&inbound, &sets),
            known(false)
        );
        let outbound = seen(AclDirection::Out);
        assert_eq!(
            field(Field::Remote, &["peer"]).matches(&outbound, &sets),
            known(true)
        );
        assert_eq!(
            field(Field::Local, &["pod"]).matches(&outbound, &sets),
            known(true)
        );
        assert_eq!(
            field(Field::Remote, &["pod"]).matches(&outbound, &sets),
            known(false)
        );
    }

    /// An inbound set in `RemoteAddresses`, and a field mixing sets and addresses: no
    /// production writer uses them, so where the readings disagree nothing is certain.
    #[test]
    fn layouts_no_writer_uses_are_uncertain_where_the_readings_disagree() {
        let sets = sets();
        let inbound = seen(AclDirection::In);
        let unknown = |emulated| FieldMatch {
            emulated,
            certain: false,
        };
        // NPM's comment: the destination, the endpoint itself; by position: the peer.
        assert_eq!(
            field(Field::Remote, &["pod"]).matches(&inbound, &sets),
            unknown(true)
        );
        assert_eq!(
            field(Field::Remote, &["peer"]).matches(&inbound, &sets),
            unknown(false)
        );
        assert_eq!(
            field(Field::Local, &["peer", "10.0.0.0/8"]).matches(&inbound, &sets),
            known(true),
            "every reading finds one of them"
        );
        assert_eq!(
            field(Field::Local, &["peer", "192.168.0.0/16"]).matches(&inbound, &sets),
            unknown(true)
        );
        // Outbound, every reading is the same.
        let outbound = seen(AclDirection::Out);
        assert_eq!(
            field(Field::Remote, &["peer", "192.168.0.0/16"]).matches(&outbound, &sets),
            known(true)
        );
    }
}
