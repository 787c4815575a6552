//! A hostPort another pod already holds: HNS refuses the endpoint with
//! `HCN_E_PORT_ALREADY_EXISTS` (0x803B0013), which says neither which port nor who holds it.
//! The error names both, so the operator knows which pod to look at.
//!
//! The holder comes from the error record when it names one (the HCN emulator's records do,
//! see [`hns::Holder`]); otherwise from the host's endpoints, looking for one that maps the
//! same external port and protocol (1 enumeration + 3 calls per endpoint, on this error
//! path only). A port held by no endpoint (a kube-proxy load balancer, a host process) is
//! reported as such.

use cni::Error;
use hns::schema::EndpointPolicy;
use hns::schema::policy::{PortMappingPolicy, protocol};
use hns::{Client, Guid, HResult, HnsError};

use crate::codes::ENDPOINT_CONFLICT;
use crate::hns_error::details;

/// True when `error` is HNS refusing a host port.
pub fn is_port_conflict(error: &HnsError) -> bool {
    error.hresult() == Some(HResult::HCN_E_PORT_ALREADY_EXISTS)
}

/// The CNI error for endpoint `name` (ID `own`) refused because of a host port in `policies`.
pub fn error(
    client: &Client,
    error: &HnsError,
    name: &str,
    own: Guid,
    policies: &[EndpointPolicy],
) -> Error {
    let mappings: Vec<&PortMappingPolicy> = policies
        .iter()
        .filter_map(|policy| match policy {
            EndpointPolicy::PortMapping(mapping) if mapping.external_port != 0 => Some(mapping),
            _ => None,
        })
        .collect();
    let (port, holder) = match error.raw().and_then(|raw| raw.holder()) {
        Some(named) => (
            named
                .resource
                .strip_prefix("PortMapping ")
                .unwrap_or(&named.resource)
                .to_owned(),
            Some(named.endpoint),
        ),
        None => match find_holder(client, own, &mappings) {
            Some((mapping, holder)) => (describe(mapping), Some(holder)),
            None => (
                mappings
                    .iter()
                    .map(|m| describe(m))
                    .collect::<Vec<_>>()
                    .join(", "),
                None,
            ),
        },
    };
    let held_by = match holder {
        Some(holder) => match client.open_endpoint(holder) {
            Ok(endpoint) => format!(
                "the pod of endpoint {:?} ({holder})",
                endpoint.properties().name
            ),
            Err(_) => format!("endpoint {holder}"),
        },
        None => {
            "something other than a pod endpoint (a load balancer or a host process)".to_owned()
        }
    };
    Error::new(
        ENDPOINT_CONFLICT,
        format!(
            "create endpoint {name}: host port {port} is already used by {held_by}; \
             remove that pod or give this one another hostPort"
        ),
    )
    .with_details(details(error))
}

/// The first mapping of ours that another endpoint of the host maps too, and that endpoint.
fn find_holder<'a>(
    client: &Client,
    own: Guid,
    mappings: &[&'a PortMappingPolicy],
) -> Option<(&'a PortMappingPolicy, Guid)> {
    let endpoints = client.list_endpoints(None).ok()?;
    mappings.iter().find_map(|mine| {
        endpoints
            .iter()
            .filter(|endpoint| endpoint.id != own)
            .find(|endpoint| {
                endpoint.policies.iter().any(|policy| {
                    matches!(policy, EndpointPolicy::PortMapping(theirs)
                        if theirs.external_port == mine.external_port
                            && theirs.protocol == mine.protocol)
                })
            })
            .map(|endpoint| (*mine, endpoint.id))
    })
}

/// `TCP 8080` or `TCP 10.0.0.4:8080`, as the emulator's records spell a host port.
fn describe(mapping: &PortMappingPolicy) -> String {
    let name = match mapping.protocol {
        protocol::TCP => "TCP".to_owned(),
        protocol::UDP => "UDP".to_owned(),
        other => format!("protocol {other}"),
    };
    match mapping.vip {
        Some(vip) => format!("{name} {vip}:{}", mapping.external_port),
        None => format!("{name} {}", mapping.external_port),
    }
}

#[cfg(all(test, not(windows)))] // the emulator is a Linux-only dependency
mod tests {
    use super::*;
    use hns::schema::{HostComputeEndpoint, HostComputeNetwork, IpConfig, NetworkType};
    use hns::{ErrorRecord, RawError};
    use hns_emulator::Emulator;

    fn mapping(port: u16) -> EndpointPolicy {
        EndpointPolicy::PortMapping(PortMappingPolicy {
            protocol: protocol::TCP,
            internal_port: 80,
            external_port: port,
            vip: None,
            flags: hns::schema::NatFlags::NONE,
        })
    }

    /// HNS's own record says only that the port exists: the holder is found among the
    /// host's endpoints and named.
    #[test]
    fn without_a_holder_in_the_record_the_endpoints_are_searched() {
        let root = std::env::temp_dir().join(format!("cni-win-port-{}", std::process::id()));
        let emulator: Box<dyn hns::RawHcn> = Box::new(Emulator::open(&root).unwrap());
        let client = Client::from_box(emulator);
        let network = client
            .create_network(
                Guid::ZERO,
                &HostComputeNetwork {
                    name: "cbr0".to_owned(),
                    network_type: NetworkType::L2Bridge,
                    ..HostComputeNetwork::default()
                },
            )
            .unwrap();
        let holder = network
            .create_endpoint(
                Guid::ZERO,
                &HostComputeEndpoint {
                    name: "first_cbr0".to_owned(),
                    policies: vec![mapping(9090)],
                    ip_configurations: Vec::<IpConfig>::new(),
                    ..HostComputeEndpoint::default()
                },
            )
            .unwrap()
            .id();
        let plain = ErrorRecord::failure(
            HResult::HCN_E_PORT_ALREADY_EXISTS,
            "The specified port already exists. ",
        );
        let refused = HnsError::from_raw(
            RawError::new(
                hns::Function::CreateEndpoint,
                HResult::HCN_E_PORT_ALREADY_EXISTS,
                plain.to_json(),
            ),
            "create endpoint",
        );
        assert!(is_port_conflict(&refused));
        let error = error(
            &client,
            &refused,
            "second_cbr0",
            Guid::from_u128(7),
            &[mapping(8080), mapping(9090)],
        );
        let _ = std::fs::remove_dir_all(&root);
        assert_eq!(error.code(), ENDPOINT_CONFLICT);
        assert!(
            error.msg().contains("host port TCP 9090"),
            "{}",
            error.msg()
        );
        assert!(error.msg().contains("\"first_cbr0\""), "{}", error.msg());
        assert!(error.msg().contains(&holder.to_string()), "{}", error.msg());
        assert!(
            error.details().contains("0x803B0013"),
            "{}",
            error.details()
        );
    }
}
