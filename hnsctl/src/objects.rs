//! `network`, `endpoint` and `namespace` commands.

use hns::schema::policy::{
    DrMacAddressPolicy, IsolationIdPolicy, NetAdapterNamePolicy, ProviderAddressPolicy,
    VxlanPortPolicy,
};
use hns::schema::{
    HostComputeEndpoint, HostComputeNamespace, HostComputeNetwork, Ipam, NetworkPolicy,
    NetworkType, Route, Subnet, SubnetPolicy,
};
use hns::{Guid, HnsError};
use ipnetwork::IpNetwork;

use crate::args::Args;
use crate::{Context, print_json, print_pretty};

/// `hnsctl network ...`
pub fn network(context: &Context, mut args: Args) -> Result<(), String> {
    let action = args.required_word("network action (create, list, show, delete)")?;
    match action.as_str() {
        "create" => {
            let id = args.parsed::<Guid>("id", "a GUID")?.unwrap_or(Guid::ZERO);
            let settings = network_settings(&mut args)?;
            args.finish("network create")?;
            let network = context.client.create_network(id, &settings).map_err(fail)?;
            if context.json {
                print_json(network.properties())
            } else {
                print_line(network.id())
            }
        }
        "list" => {
            args.finish("network list")?;
            let networks = context.client.list_networks().map_err(fail)?;
            if context.json {
                return print_json(&networks);
            }
            println!("{:<36}  {:<20}  {:<10}  SUBNETS", "ID", "NAME", "TYPE");
            for network in &networks {
                let subnets: Vec<&str> = network
                    .subnets()
                    .map(|subnet| subnet.ip_address_prefix.as_str())
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
        "show" => {
            let id = network_id(context, &args.required_word("network ID or name")?)?;
            args.finish("network show")?;
            print_pretty(context.client.open_network(id).map_err(fail)?.properties())
        }
        "delete" => {
            let id = network_id(context, &args.required_word("network ID or name")?)?;
            args.finish("network delete")?;
            context.client.delete_network(id).map_err(fail)
        }
        other => Err(format!(
            "unknown network action {other:?}; expected create, list, show or delete"
        )),
    }
}

/// `hnsctl endpoint ...`
pub fn endpoint(context: &Context, mut args: Args) -> Result<(), String> {
    let action = args.required_word("endpoint action (list, show, delete)")?;
    match action.as_str() {
        "list" => {
            let network = args
                .option("network")
                .map(|name| network_id(context, &name))
                .transpose()?;
            args.finish("endpoint list")?;
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
                    .map_or("", |config| config.ip_address.as_str());
                let namespace = if endpoint.host_compute_namespace.is_zero() {
                    String::from("-")
                } else {
                    endpoint.host_compute_namespace.to_string()
                };
                println!(
                    "{:<36}  {:<40}  {:<15}  {:<17}  {namespace}",
                    endpoint.id, endpoint.name, ip, endpoint.mac_address
                );
            }
            Ok(())
        }
        "show" => {
            let endpoint = find_endpoint(context, &args.required_word("endpoint ID or name")?)?;
            args.finish("endpoint show")?;
            print_pretty(&endpoint)
        }
        "delete" => {
            let endpoint = find_endpoint(context, &args.required_word("endpoint ID or name")?)?;
            args.finish("endpoint delete")?;
            context.client.delete_endpoint(endpoint.id).map_err(fail)
        }
        other => Err(format!(
            "unknown endpoint action {other:?}; expected list, show or delete"
        )),
    }
}

/// `hnsctl namespace ...`
pub fn namespace(context: &Context, mut args: Args) -> Result<(), String> {
    let action =
        args.required_word("namespace action (create, list, show, delete, attach, detach)")?;
    match action.as_str() {
        "create" => {
            let id = args.parsed::<Guid>("id", "a GUID")?.unwrap_or(Guid::ZERO);
            args.finish("namespace create")?;
            let namespace = context
                .client
                .create_namespace(id, &HostComputeNamespace::default())
                .map_err(fail)?;
            if context.json {
                print_json(&namespace)
            } else {
                print_line(namespace.id)
            }
        }
        "list" => {
            args.finish("namespace list")?;
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
        "show" => {
            let id = guid(&args.required_word("namespace ID")?)?;
            args.finish("namespace show")?;
            print_pretty(
                context
                    .client
                    .open_namespace(id)
                    .map_err(fail)?
                    .properties(),
            )
        }
        "delete" => {
            let id = guid(&args.required_word("namespace ID")?)?;
            args.finish("namespace delete")?;
            context.client.delete_namespace(id).map_err(fail)
        }
        "attach" | "detach" => {
            let namespace = guid(&args.required_word("namespace ID")?)?;
            let endpoint = find_endpoint(context, &args.required_word("endpoint ID or name")?)?.id;
            args.finish(&format!("namespace {action}"))?;
            let result = if action == "attach" {
                context.client.attach_endpoint(namespace, endpoint)
            } else {
                context.client.detach_endpoint(namespace, endpoint)
            };
            result.map_err(fail)
        }
        other => Err(format!(
            "unknown namespace action {other:?}; expected create, list, show, delete, attach or detach"
        )),
    }
}

/// Builds the network document from `network create` options, the way
/// flanneld and operators create networks. For an overlay network the
/// provider address and DR MAC are recorded as the network policies HNS shows
/// after flanneld created it.
fn network_settings(args: &mut Args) -> Result<HostComputeNetwork, String> {
    let name = args.required("name", "cbr0")?;
    let network_type = match args
        .required("type", "L2Bridge")?
        .to_ascii_lowercase()
        .as_str()
    {
        "l2bridge" => NetworkType::L2Bridge,
        "l2tunnel" => NetworkType::L2Tunnel,
        "overlay" => NetworkType::Overlay,
        "nat" => NetworkType::Nat,
        other => {
            return Err(format!(
                "--type {other:?}: expected L2Bridge, L2Tunnel, Overlay or NAT"
            ));
        }
    };
    let subnet: IpNetwork = args
        .parsed("subnet", "a CIDR such as 10.244.1.0/24")?
        .ok_or("missing --subnet (e.g. --subnet 10.244.1.0/24)")?;
    let gateway: std::net::IpAddr = args
        .parsed("gateway", "an IP address")?
        .ok_or("missing --gateway (e.g. --gateway 10.244.1.1)")?;
    if !subnet.contains(gateway) {
        return Err(format!(
            "--gateway {gateway} is not inside --subnet {subnet}"
        ));
    }
    let vni: Option<u32> = args.parsed("vni", "a number such as 4096")?;
    let vxlan_port: Option<u16> = args.parsed("vxlan-port", "a UDP port such as 4789")?;
    let mut policies = Vec::new();
    if let Some(adapter) = args.option("adapter") {
        policies.push(NetworkPolicy::NetAdapterName(NetAdapterNamePolicy {
            network_adapter_name: adapter,
        }));
    }
    if let Some(port) = vxlan_port {
        policies.push(NetworkPolicy::VxlanPort(VxlanPortPolicy { port }));
    }
    if let Some(address) = args.parsed::<std::net::IpAddr>("provider-address", "an IP address")? {
        policies.push(NetworkPolicy::ProviderAddress(ProviderAddressPolicy {
            provider_address: address.to_string(),
        }));
    }
    if let Some(mac) = args.option("dr-mac") {
        policies.push(NetworkPolicy::DrMacAddress(DrMacAddressPolicy {
            address: mac,
        }));
    }
    let default_route = if subnet.is_ipv4() {
        "0.0.0.0/0"
    } else {
        "::/0"
    };
    Ok(HostComputeNetwork {
        name,
        network_type,
        policies,
        ipams: vec![Ipam {
            ipam_type: "Static".to_owned(),
            subnets: vec![Subnet {
                ip_address_prefix: subnet.to_string(),
                policies: vni
                    .map(|isolation_id| SubnetPolicy::Vsid(IsolationIdPolicy { isolation_id }))
                    .into_iter()
                    .collect(),
                routes: vec![Route {
                    next_hop: gateway.to_string(),
                    destination_prefix: default_route.to_owned(),
                    metric: None,
                }],
                flags: 0,
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

fn find_endpoint(context: &Context, name_or_id: &str) -> Result<HostComputeEndpoint, String> {
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

fn guid(text: &str) -> Result<Guid, String> {
    text.parse().map_err(|e: hns::GuidParseError| e.to_string())
}

fn print_line(id: Guid) -> Result<(), String> {
    println!("{id}");
    Ok(())
}

fn fail(error: HnsError) -> String {
    error.to_string()
}
