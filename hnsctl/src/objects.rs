//! `network`, `endpoint` and `namespace` commands.

use std::path::Path;

use hns::client::{EndpointKind, NetworkKind, ObjectKind};
use hns::schema::policy::{
    DrMacAddressPolicy, IsolationIdPolicy, NetAdapterNamePolicy, ProviderAddressPolicy, RawPolicy,
    VxlanPortPolicy,
};
use hns::schema::{
    EndpointPolicy, HostComputeEndpoint, HostComputeNamespace, HostComputeNetwork,
    HostComputeQuery, IpConfig, Ipam, ModifyRequest, NetworkPolicy, RequestType, Subnet,
    SubnetPolicy,
};
use hns::{Guid, RawError};

use crate::cli::{
    EndpointCommand, EndpointCreate, NamespaceCommand, NetworkCommand, NetworkCreate,
    PolicyCommand, PolicyRequest,
};
use crate::{Context, fail, print_json, print_line, print_pretty, read_input};

/// `hnsctl network ...`
pub fn network(context: &Context, command: NetworkCommand) -> Result<(), String> {
    match command {
        NetworkCommand::Create(create) => {
            let id = create.id.unwrap_or(Guid::ZERO);
            let settings = network_settings(create)?;
            let network = context.client.create_network(id, &settings).map_err(fail)?;
            if context.json {
                print_json(network.properties())
            } else {
                print_line(network.id())
            }
        }
        NetworkCommand::List => {
            let networks = context.client.list_networks().map_err(fail)?;
            if context.json {
                return print_json(&networks);
            }
            println!("{:<36}  {:<20}  {:<10}  SUBNETS", "ID", "NAME", "TYPE");
            for network in &networks {
                let subnets: Vec<String> = network
                    .subnets()
                    .map(|subnet| subnet.ip_address_prefix.to_string())
                    .collect();
                println!(
                    "{:<36}  {:<20}  {:<10}  {}",
                    network.id,
                    network.name,
                    network.network_type,
                    subnets.join(",")
                );
            }
            Ok(())
        }
        NetworkCommand::Show { network, raw } => {
            let id = network_id(context, &network)?;
            if raw {
                return print_raw::<NetworkKind>(context, "network", id, |raw| {
                    raw.open_network(&id)
                });
            }
            print_pretty(context.client.open_network(id).map_err(fail)?.properties())
        }
        NetworkCommand::Delete { network } => {
            let id = network_id(context, &network)?;
            context.client.delete_network(id).map_err(fail)
        }
        NetworkCommand::Policy(command) => {
            let (request_type, request) = policy_request(command);
            let id = network_id(context, &request.target)?;
            let policies = read_policies(&request.file)?
                .into_iter()
                .map(NetworkPolicy::Other)
                .collect();
            context
                .client
                .modify_network_policies(id, &ModifyRequest::policies(request_type, policies))
                .map_err(fail)
        }
    }
}

/// `hnsctl endpoint ...`
pub fn endpoint(context: &Context, command: EndpointCommand) -> Result<(), String> {
    match command {
        EndpointCommand::Create(create) => {
            let network = network_id(context, &create.network)?;
            let created = create_endpoint(context, network, create)?;
            if context.json {
                print_json(&created)
            } else {
                print_line(created.id)
            }
        }
        EndpointCommand::List { network } => {
            let network = network.map(|name| network_id(context, &name)).transpose()?;
            let endpoints = context.client.list_endpoints(network).map_err(fail)?;
            if context.json {
                return print_json(&endpoints);
            }
            println!(
                "{:<36}  {:<40}  {:<15}  {:<17}  NAMESPACE",
                "ID", "NAME", "IP", "MAC"
            );
            for endpoint in &endpoints {
                let ip = endpoint
                    .ip_configurations
                    .first()
                    .map_or_else(String::new, |config| config.ip_address.to_string());
                let mac = endpoint
                    .mac_address
                    .map_or_else(String::new, |mac| mac.to_string());
                let namespace = if endpoint.host_compute_namespace.is_zero() {
                    String::from("-")
                } else {
                    endpoint.host_compute_namespace.to_string()
                };
                println!(
                    "{:<36}  {:<40}  {:<15}  {:<17}  {namespace}",
                    endpoint.id, endpoint.name, ip, mac
                );
            }
            Ok(())
        }
        EndpointCommand::Show {
            endpoint,
            raw: false,
        } => print_pretty(&find_endpoint(context, &endpoint)?),
        EndpointCommand::Show {
            endpoint,
            raw: true,
        } => {
            let id = find_endpoint(context, &endpoint)?.id;
            print_raw::<EndpointKind>(context, "endpoint", id, |raw| raw.open_endpoint(&id))
        }
        EndpointCommand::Delete { endpoint } => {
            let endpoint = find_endpoint(context, &endpoint)?;
            context.client.delete_endpoint(endpoint.id).map_err(fail)
        }
        EndpointCommand::Policy(command) => {
            let (request_type, request) = policy_request(command);
            let id = find_endpoint(context, &request.target)?.id;
            let policies = read_policies(&request.file)?
                .into_iter()
                .map(EndpointPolicy::Other)
                .collect();
            context
                .client
                .modify_endpoint_policies(id, &ModifyRequest::policies(request_type, policies))
                .map_err(fail)
        }
    }
}

/// `hnsctl endpoint create`: the endpoint HNS made, as it reads back.
fn create_endpoint(
    context: &Context,
    network: Guid,
    create: EndpointCreate,
) -> Result<HostComputeEndpoint, String> {
    let policies = match &create.policies {
        Some(path) => read_policies(path)?
            .into_iter()
            .map(EndpointPolicy::Other)
            .collect(),
        None => Vec::new(),
    };
    let settings = HostComputeEndpoint {
        name: create.name,
        policies,
        ip_configurations: vec![IpConfig {
            ip_address: create.ip,
            prefix_length: None,
        }],
        ..HostComputeEndpoint::default()
    };
    let network = context.client.open_network(network).map_err(fail)?;
    let created = network
        .create_endpoint(create.id.unwrap_or(Guid::ZERO), &settings)
        .map_err(|e| fail(e.into()))?;
    Ok(created.into_properties())
}

/// The request type a `policy` subcommand names, and its arguments.
fn policy_request(command: PolicyCommand) -> (RequestType, PolicyRequest) {
    match command {
        PolicyCommand::Add(request) => (RequestType::Add, request),
        PolicyCommand::Remove(request) => (RequestType::Remove, request),
        PolicyCommand::Update(request) => {
            // On a real host this may take away what keeps a pod reachable.
            eprintln!(
                "hnsctl: warning: which policies an Update replaces is not documented: on an \
                 endpoint it may replace every policy of the file's types, or all of them \
                 (OutBoundNAT and routes included); docs/real-host-checks.md, check 3, finds out"
            );
            (RequestType::Update, request)
        }
    }
}

/// The policy objects of a JSON array in `path` (`-` is stdin), each kept as written: what a
/// check on a real host sends must be what the operator wrote, not hnsctl's reading of it.
fn read_policies(path: &Path) -> Result<Vec<RawPolicy>, String> {
    let text = read_input(path)?;
    let name = if path == Path::new("-") {
        "stdin".to_owned()
    } else {
        path.display().to_string()
    };
    let items: Vec<Box<serde_json::value::RawValue>> = serde_json::from_str(&text).map_err(|e| {
        format!("{name} is not a JSON array of policy objects ([{{\"Type\":...,\"Settings\":...}}]): {e}")
    })?;
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            RawPolicy::from_json(item.get()).map_err(|e| format!("{name}: policy [{index}]: {e}"))
        })
        .collect()
}

/// Prints an object's document as HNS returned it: open, query, close, nothing decoded.
fn print_raw<K: ObjectKind>(
    context: &Context,
    what: &str,
    id: Guid,
    open: impl FnOnce(&dyn hns::RawHcn) -> Result<K::Handle, RawError>,
) -> Result<(), String> {
    let raw = context.client.raw();
    let handle = open(raw).map_err(|e| format!("open {what} {id}: {e}"))?;
    let document = K::query(raw, &handle, &HostComputeQuery::all().to_json());
    let _ = K::close(raw, handle);
    println!(
        "{}",
        document.map_err(|e| format!("query {what} {id}: {e}"))?
    );
    Ok(())
}

/// `hnsctl namespace ...`
pub fn namespace(context: &Context, command: NamespaceCommand) -> Result<(), String> {
    match command {
        NamespaceCommand::Create { id } => {
            let namespace = context
                .client
                .create_namespace(id.unwrap_or(Guid::ZERO), &HostComputeNamespace::default())
                .map_err(fail)?;
            if context.json {
                print_json(&namespace)
            } else {
                print_line(namespace.id)
            }
        }
        NamespaceCommand::List => {
            let namespaces = context.client.list_namespaces().map_err(fail)?;
            if context.json {
                return print_json(&namespaces);
            }
            println!(
                "{:<36}  {:<12}  {:<11}  ENDPOINTS",
                "ID", "COMPARTMENT", "TYPE"
            );
            for namespace in &namespaces {
                let endpoints: Vec<String> =
                    namespace.endpoint_ids().map(|id| id.to_string()).collect();
                println!(
                    "{:<36}  {:<12}  {:<11}  {}",
                    namespace.id,
                    namespace.namespace_id,
                    format!("{:?}", namespace.namespace_type),
                    endpoints.join(",")
                );
            }
            Ok(())
        }
        NamespaceCommand::Show { id } => print_pretty(
            context
                .client
                .open_namespace(id)
                .map_err(fail)?
                .properties(),
        ),
        NamespaceCommand::Delete { id } => context.client.delete_namespace(id).map_err(fail),
        NamespaceCommand::Attach(attachment) => {
            let endpoint = find_endpoint(context, &attachment.endpoint)?.id;
            context
                .client
                .attach_endpoint(attachment.namespace, endpoint)
                .map_err(fail)
        }
        NamespaceCommand::Detach(attachment) => {
            let endpoint = find_endpoint(context, &attachment.endpoint)?.id;
            context
                .client
                .detach_endpoint(attachment.namespace, endpoint)
                .map_err(fail)
        }
    }
}

/// Builds the network document from `network create` options, the way
/// flanneld and operators create networks. For an overlay network the
/// provider address and DR MAC are recorded as the network policies HNS shows
/// after flanneld created it.
fn network_settings(create: NetworkCreate) -> Result<HostComputeNetwork, String> {
    let NetworkCreate {
        name,
        network_type,
        subnet,
        gateway,
        adapter,
        vni,
        vxlan_port,
        provider_address,
        dr_mac,
        id: _,
    } = create;
    if !subnet.network().contains(gateway) {
        return Err(format!(
            "--gateway {gateway} is not inside --subnet {subnet}"
        ));
    }
    let mut policies = Vec::new();
    if let Some(adapter) = adapter {
        policies.push(NetworkPolicy::NetAdapterName(NetAdapterNamePolicy {
            network_adapter_name: adapter,
        }));
    }
    if let Some(port) = vxlan_port {
        policies.push(NetworkPolicy::VxlanPort(VxlanPortPolicy { port }));
    }
    if let Some(address) = provider_address {
        policies.push(NetworkPolicy::ProviderAddress(ProviderAddressPolicy {
            provider_address: address,
        }));
    }
    if let Some(mac) = dr_mac {
        policies.push(NetworkPolicy::DrMacAddress(DrMacAddressPolicy {
            address: mac,
        }));
    }
    Ok(HostComputeNetwork {
        name,
        network_type: network_type.into(),
        policies,
        ipams: vec![Ipam {
            ipam_type: "Static".to_owned(),
            subnets: vec![Subnet {
                policies: vni
                    .map(|isolation_id| SubnetPolicy::Vsid(IsolationIdPolicy { isolation_id }))
                    .into_iter()
                    .collect(),
                ..Subnet::with_gateway(subnet, gateway)
            }],
        }],
        ..HostComputeNetwork::default()
    })
}

/// The network with this GUID or name.
pub(crate) fn network_id(context: &Context, name_or_id: &str) -> Result<Guid, String> {
    match name_or_id.parse() {
        Ok(id) => Ok(id),
        Err(_) => context
            .client
            .find_network_by_name(name_or_id)
            .map(|network| network.id())
            .map_err(fail),
    }
}

/// The endpoint with this GUID or name.
pub(crate) fn find_endpoint(
    context: &Context,
    name_or_id: &str,
) -> Result<HostComputeEndpoint, String> {
    let endpoint = match name_or_id.parse() {
        Ok(id) => Some(context.client.open_endpoint(id).map_err(fail)?),
        Err(_) => context
            .client
            .find_endpoint_by_name(name_or_id)
            .map_err(fail)?,
    };
    endpoint
        .map(|endpoint| endpoint.into_properties())
        .ok_or_else(|| format!("no endpoint is named {name_or_id:?}"))
}
