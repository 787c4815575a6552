//! `network`, `endpoint` and `namespace` commands.

use hns::Guid;
use hns::schema::policy::{
    DrMacAddressPolicy, IsolationIdPolicy, NetAdapterNamePolicy, ProviderAddressPolicy,
    VxlanPortPolicy,
};
use hns::schema::{
    HostComputeEndpoint, HostComputeNamespace, HostComputeNetwork, Ipam, NetworkPolicy, Subnet,
    SubnetPolicy,
};

use crate::cli::{EndpointCommand, NamespaceCommand, NetworkCommand, NetworkCreate};
use crate::{Context, fail, print_json, print_line, print_pretty};

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
        NetworkCommand::Show { network } => {
            let id = network_id(context, &network)?;
            print_pretty(context.client.open_network(id).map_err(fail)?.properties())
        }
        NetworkCommand::Delete { network } => {
            let id = network_id(context, &network)?;
            context.client.delete_network(id).map_err(fail)
        }
    }
}

/// `hnsctl endpoint ...`
pub fn endpoint(context: &Context, command: EndpointCommand) -> Result<(), String> {
    match command {
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
        EndpointCommand::Show { endpoint } => print_pretty(&find_endpoint(context, &endpoint)?),
        EndpointCommand::Delete { endpoint } => {
            let endpoint = find_endpoint(context, &endpoint)?;
            context.client.delete_endpoint(endpoint.id).map_err(fail)
        }
    }
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

fn network_id(context: &Context, name_or_id: &str) -> Result<Guid, String> {
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
