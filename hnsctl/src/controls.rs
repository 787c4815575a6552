//! `host`, `stats`, `fault` and `inject` commands.

use std::collections::BTreeMap;

use crate::cli::HostCommand;
#[cfg(not(windows))]
use crate::cli::{FaultCommand, InjectCommand};
use crate::{Context, print_json};
#[cfg(not(windows))]
use hns_emulator::{Injection, Outage};

/// `hnsctl host version|features|call|stop|restart|reboot|adapter|switch`
pub fn host(context: &Context, command: HostCommand) -> Result<(), String> {
    match command {
        #[cfg(not(windows))]
        HostCommand::Adapter { name, address, mac } => adapter(context, name, address, mac),
        #[cfg(not(windows))]
        HostCommand::Switch {
            settle_ms,
            settle_now,
        } => switch(context, settle_ms, settle_now),
        HostCommand::Call { method, path, body } => {
            let response = context
                .client
                .raw()
                .hns_call(&method, &path, &body)
                .map_err(|e| e.to_string())?;
            println!("{response}");
            Ok(())
        }
        #[cfg(not(windows))]
        HostCommand::Stop => outage(context, Outage::Stop),
        #[cfg(not(windows))]
        HostCommand::Restart { losing_endpoints } => outage(
            context,
            if losing_endpoints {
                Outage::RestartLosingEndpoints
            } else {
                Outage::Restart
            },
        ),
        #[cfg(not(windows))]
        HostCommand::Reboot => outage(context, Outage::Reboot),
        #[cfg(not(windows))]
        HostCommand::Version { set: Some(version) } => context
            .engine
            .set_version(version)
            .map_err(|e| e.to_string()),
        HostCommand::Version { .. } => {
            let version = context.client.version().map_err(|e| e.to_string())?;
            if context.json {
                return print_json(&version);
            }
            println!("{version}");
            Ok(())
        }
        HostCommand::Features => {
            let features = context
                .client
                .supported_features()
                .map_err(|e| e.to_string())?;
            let table: BTreeMap<&str, bool> = features
                .table()
                .into_iter()
                .map(|(feature, on)| (feature.name(), on))
                .collect();
            if context.json {
                return print_json(&table);
            }
            println!("HNS {}", features.version());
            for (feature, on) in features.table() {
                println!("  {:<26} {}", feature.name(), if on { "yes" } else { "no" });
            }
            Ok(())
        }
    }
}

/// `hnsctl host adapter`: sets what is given, prints the adapter.
#[cfg(not(windows))]
fn adapter(
    context: &Context,
    name: Option<String>,
    address: Option<hns::schema::IpPrefix>,
    mac: Option<hns::schema::MacAddress>,
) -> Result<(), String> {
    let engine = &context.engine;
    let mut adapter = engine.adapter().map_err(|e| e.to_string())?;
    if name.is_some() || address.is_some() || mac.is_some() {
        adapter.name = name.unwrap_or(adapter.name);
        adapter.address = address.unwrap_or(adapter.address);
        adapter.mac_address = mac.unwrap_or(adapter.mac_address);
        engine
            .set_adapter(adapter.clone())
            .map_err(|e| e.to_string())?;
    }
    if context.json {
        return print_json(&adapter);
    }
    println!(
        "{}  {}  {}",
        adapter.name, adapter.address, adapter.mac_address
    );
    Ok(())
}

/// `hnsctl host switch`: changes what is given, prints the switch.
#[cfg(not(windows))]
fn switch(context: &Context, settle_ms: Option<u64>, settle_now: bool) -> Result<(), String> {
    let engine = &context.engine;
    if let Some(millis) = settle_ms {
        engine
            .set_switch_settle(std::time::Duration::from_millis(millis))
            .map_err(|e| e.to_string())?;
    }
    if settle_now {
        engine.settle_switch_now().map_err(|e| e.to_string())?;
    }
    let switch = engine.switch().map_err(|e| e.to_string())?;
    if context.json {
        return print_json(&serde_json::json!({
            "SettleMillis": switch.settle_millis,
            "Settled": switch.settled(),
        }));
    }
    println!(
        "settle {} ms, {}",
        switch.settle_millis,
        if switch.settled() {
            "settled"
        } else {
            "settling"
        }
    );
    Ok(())
}

/// `hnsctl host stop|restart|reboot`: what the emulated host drops, as counts.
#[cfg(not(windows))]
fn outage(context: &Context, outage: Outage) -> Result<(), String> {
    let dropped = context.engine.suffer(outage).map_err(|e| e.to_string())?;
    if context.json {
        return print_json(&serde_json::json!({
            "Endpoints": dropped.endpoints,
            "Namespaces": dropped.namespaces,
            "Networks": dropped.networks,
        }));
    }
    println!(
        "dropped {} endpoints, {} namespaces, {} networks",
        dropped.endpoints, dropped.namespaces, dropped.networks
    );
    Ok(())
}

/// `hnsctl stats [--writes] [--reset]`
#[cfg(not(windows))]
pub fn stats(context: &Context, reset: bool, writes_only: bool) -> Result<(), String> {
    let engine = &context.engine;
    let (counters, writes) = if reset {
        (engine.reset_stats(), engine.reset_policy_writes())
    } else {
        (engine.stats(), engine.policy_writes())
    };
    let (counters, writes) = (
        counters.map_err(|e| e.to_string())?,
        writes.map_err(|e| e.to_string())?,
    );
    if context.json {
        // Harnesses sum the calls map: the writes have their own switch.
        return if writes_only {
            print_json(&writes)
        } else {
            print_json(&counters)
        };
    }
    if !writes_only && !counters.is_empty() {
        for (function, calls) in &counters {
            println!("{function:<32} {calls}");
        }
        println!();
    }
    println!("policy writes");
    for (what, count) in [
        ("endpoint policy requests", writes.endpoint_requests),
        ("ACL rules written", writes.acl_rules_written),
        ("ACL rules removed", writes.acl_rules_removed),
        ("network policy requests", writes.network_requests),
        ("IP sets written", writes.sets_written),
        ("IP sets removed", writes.sets_removed),
    ] {
        println!("  {what:<30} {count}");
    }
    Ok(())
}

/// `hnsctl fault inject|crash|latency|clear|list`
#[cfg(not(windows))]
pub fn fault(context: &Context, command: FaultCommand) -> Result<(), String> {
    let engine = &context.engine;
    let result = match command {
        FaultCommand::Inject { call, hresult } => {
            engine.inject_fault(call.function, call.nth, hresult)
        }
        FaultCommand::Crash { call } => engine.crash_after(call.function, call.nth),
        FaultCommand::Latency { micros } => engine.set_latency(micros),
        FaultCommand::Clear => engine.clear_controls(),
        FaultCommand::List => {
            let host = engine
                .with_host(|host| host.clone())
                .map_err(|e| e.to_string())?;
            return print_json(&serde_json::json!({
                "Faults": host.faults, "Crashes": host.crashes, "Refusals": host.refusals,
                "LatencyMicros": host.latency_micros,
            }));
        }
    };
    result.map_err(|e| e.to_string())
}

/// `hnsctl inject endpoint|loadbalancer`: prints the new object's GUID.
#[cfg(not(windows))]
pub fn inject(context: &Context, command: InjectCommand) -> Result<(), String> {
    let injection = match command {
        InjectCommand::Endpoint {
            network,
            ip,
            remote,
            name,
            id,
        } => Injection::Endpoint {
            id: id.unwrap_or(hns::Guid::ZERO),
            network: crate::objects::network_id(context, &network)?,
            name,
            ip,
            remote,
        },
        InjectCommand::LoadBalancer { frontend, backend } => Injection::HalfCreatedLoadBalancer {
            frontend,
            backends: backend,
        },
    };
    let id = context
        .engine
        .inject(&injection)
        .map_err(|e| e.to_string())?;
    crate::print_line(id)
}
