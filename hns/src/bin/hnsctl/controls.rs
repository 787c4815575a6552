//! `host`, `stats` and `fault` commands.

use std::collections::BTreeMap;

use hns::emulator::Outage;
use hns::{Function, HResult, HnsVersion};

use crate::args::Args;
use crate::{Context, print_json};

/// `hnsctl host version|features|call|restart|reboot`
pub fn host(context: &Context, mut args: Args) -> Result<(), String> {
    let action = args.required_word("host action (version, features, call, restart, reboot)")?;
    match action.as_str() {
        "call" => {
            let method = args.required_word("HNSCall method (GET, POST, DELETE)")?;
            let path = args.required_word("HNSCall path, e.g. /endpoints/")?;
            let body = args.option("body").unwrap_or_default();
            args.finish("host call")?;
            let response = context
                .client
                .raw()
                .hns_call(&method, &path, &body)
                .map_err(|e| e.to_string())?;
            println!("{response}");
            Ok(())
        }
        "restart" | "reboot" => {
            args.finish(&format!("host {action}"))?;
            let outage = if action == "restart" {
                Outage::Restart
            } else {
                Outage::Reboot
            };
            let dropped = context
                .engine(&format!("host {action}"))?
                .suffer(outage)
                .map_err(|e| e.to_string())?;
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
        "version" => {
            if let Some(version) = args.parsed::<HnsVersion>("set", "MAJOR.MINOR, e.g. 13.2")? {
                args.finish("host version")?;
                return context
                    .engine("host version --set")?
                    .set_version(version)
                    .map_err(|e| e.to_string());
            }
            args.finish("host version")?;
            let version = context.client.version().map_err(|e| e.to_string())?;
            if context.json {
                return print_json(&version);
            }
            println!("{version}");
            Ok(())
        }
        "features" => {
            args.finish("host features")?;
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
        other => Err(format!(
            "unknown host action {other:?}; expected version, features, call, restart or reboot"
        )),
    }
}

/// `hnsctl stats [--reset]`
pub fn stats(context: &Context, mut args: Args) -> Result<(), String> {
    let reset = args.flag("reset");
    args.finish("stats")?;
    let engine = context.engine("stats")?;
    let counters = if reset {
        engine.reset_stats()
    } else {
        engine.stats()
    }
    .map_err(|e| e.to_string())?;
    if context.json {
        return print_json(&counters);
    }
    for (function, calls) in &counters {
        println!("{function:<32} {calls}");
    }
    Ok(())
}

/// `hnsctl fault inject|crash|latency|clear|list`
pub fn fault(context: &Context, mut args: Args) -> Result<(), String> {
    let action = args.required_word("fault action (inject, crash, latency, clear, list)")?;
    let engine = context.engine("fault")?;
    let function = |args: &mut Args| -> Result<Function, String> {
        let name = args.required("function", "HcnCreateEndpoint")?;
        Function::from_name(&name).ok_or_else(|| {
            format!("--function {name:?}: not an HCN function name such as HcnCreateEndpoint")
        })
    };
    let result = match action.as_str() {
        "inject" => {
            let function = function(&mut args)?;
            let code: HResult = args.required("hresult", "0x803B0002")?.parse()?;
            let nth = args
                .parsed("nth", "a call number, 1 = the next call")?
                .unwrap_or(1);
            args.finish("fault inject")?;
            engine.inject_fault(function, nth, code)
        }
        "crash" => {
            let function = function(&mut args)?;
            let nth = args
                .parsed("nth", "a call number, 1 = the next call")?
                .unwrap_or(1);
            args.finish("fault crash")?;
            engine.crash_after(function, nth)
        }
        "latency" => {
            let micros = args
                .parsed("micros", "microseconds")?
                .ok_or("missing --micros (e.g. --micros 5000)")?;
            args.finish("fault latency")?;
            engine.set_latency(micros)
        }
        "clear" => {
            args.finish("fault clear")?;
            engine.clear_controls()
        }
        "list" => {
            args.finish("fault list")?;
            let host = engine
                .with_host(|host| host.clone())
                .map_err(|e| e.to_string())?;
            return print_json(&serde_json::json!({
                "Faults": host.faults, "Crashes": host.crashes, "LatencyMicros": host.latency_micros,
            }));
        }
        other => {
            return Err(format!(
                "unknown fault action {other:?}; expected inject, crash, latency, clear or list"
            ));
        }
    };
    result.map_err(|e| e.to_string())
}
