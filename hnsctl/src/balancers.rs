//! `loadbalancer` commands: kube-proxy's Service rules with their backends, and a way for tests
//! and node lanes to create and modify them from the document kube-proxy would send.

use std::collections::HashMap;
use std::path::Path;

use hns::Guid;
use hns::schema::policy::protocol;
use hns::schema::{HostComputeLoadBalancer, LoadBalancerPortMapping};

use crate::cli::LoadBalancerCommand;
use crate::{Context, fail, print_json, print_line, print_pretty, read_input};

/// `hnsctl loadbalancer ...`
pub fn load_balancer(context: &Context, command: LoadBalancerCommand) -> Result<(), String> {
    let client = &context.client;
    match command {
        LoadBalancerCommand::List => {
            let balancers = client.list_load_balancers().map_err(fail)?;
            if context.json {
                return print_json(&balancers);
            }
            let addresses = backend_addresses(context)?;
            println!(
                "{:<36}  {:<16}  {:<22}  {:<15}  BACKENDS",
                "ID", "FRONTEND", "PORTS", "SOURCE VIP"
            );
            for balancer in &balancers {
                let frontend = if balancer.frontend_vips.is_empty() {
                    "(node)".to_owned()
                } else {
                    joined(&balancer.frontend_vips)
                };
                let ports: Vec<String> = balancer.port_mappings.iter().map(describe).collect();
                let source = balancer
                    .source_vip
                    .map_or_else(|| "-".to_owned(), |vip| vip.to_string());
                let backends: Vec<String> = balancer
                    .host_compute_endpoints
                    .iter()
                    .map(|id| match addresses.get(id) {
                        Some(address) => format!("{address} ({id})"),
                        None => format!("gone ({id})"),
                    })
                    .collect();
                println!(
                    "{:<36}  {frontend:<16}  {:<22}  {source:<15}  {}",
                    balancer.id,
                    ports.join(","),
                    backends.join(", ")
                );
            }
            Ok(())
        }
        LoadBalancerCommand::Show { id } => {
            print_pretty(client.open_load_balancer(id).map_err(fail)?.properties())
        }
        LoadBalancerCommand::Delete { id } => client.delete_load_balancer(id).map_err(fail),
        LoadBalancerCommand::Create { file, id } => {
            let settings = read_document(&file)?;
            let created = client
                .create_load_balancer(id.unwrap_or(Guid::ZERO), &settings)
                .map_err(fail)?;
            if context.json {
                print_json(&created)
            } else {
                print_line(created.id)
            }
        }
        LoadBalancerCommand::Modify { id, file } => {
            let settings = read_document(&file)?;
            let modified = client.modify_load_balancer(id, &settings).map_err(fail)?;
            if context.json {
                print_json(&modified)
            } else {
                print_line(modified.id)
            }
        }
    }
}

/// Each endpoint's first address, by ID: what a backend is, for the listing.
fn backend_addresses(context: &Context) -> Result<HashMap<Guid, String>, String> {
    let endpoints = context.client.list_endpoints(None).map_err(fail)?;
    Ok(endpoints
        .into_iter()
        .map(|endpoint| {
            let address = endpoint
                .ip_configurations
                .first()
                .map_or_else(|| "-".to_owned(), |config| config.ip_address.to_string());
            (endpoint.id, address)
        })
        .collect())
}

/// `TCP 80->8080`: the protocol, the port clients use and the port the backends listen on.
fn describe(mapping: &LoadBalancerPortMapping) -> String {
    let name = match mapping.protocol {
        protocol::TCP => "TCP".to_owned(),
        protocol::UDP => "UDP".to_owned(),
        other => format!("protocol {other}"),
    };
    format!(
        "{name} {}->{}",
        mapping.external_port, mapping.internal_port
    )
}

fn joined<T: std::fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// A load balancer document from `path` (`-` is stdin), decoded through the HCN schema so a
/// document HNS would refuse for a malformed value is refused here first, naming the field.
fn read_document(path: &Path) -> Result<HostComputeLoadBalancer, String> {
    let text = read_input(path)?;
    hns::schema::decode(&text).map_err(|e| {
        format!(
            "{} is not a load balancer document: {e}",
            if path == Path::new("-") {
                "stdin".to_owned()
            } else {
                path.display().to_string()
            }
        )
    })
}
