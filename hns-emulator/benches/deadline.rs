//! What the HNS deadline layer costs per call: the same cheap call (a filtered
//! `HcnEnumerateNetworks` on an empty host) made directly and through
//! `Deadlined`, which runs each call on a thread of its own. The difference is
//! the layer's overhead; a pod's ADD makes 10 calls.
//!
//! Run: `cargo bench -p hns-emulator --bench deadline`. Prints one line per way.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hns::{Deadlined, RawHcn};
use hns_emulator::Emulator;

const ROUNDS: usize = 20;
const SAMPLES_PER_ROUND: usize = 50;
const QUERY: &str = r#"{"SchemaVersion":{"Major":2,"Minor":0},"Filter":"{\"Name\":\"cbr0\"}"}"#;

fn main() {
    let state = tempfile::Builder::new()
        .prefix("hns-bench-deadline-")
        .tempdir()
        .expect("state dir");
    let emulator = Arc::new(Emulator::open(state.path()).expect("emulator"));
    let direct: Arc<dyn RawHcn> = emulator.clone();
    let layered: Arc<dyn RawHcn> =
        Arc::new(Deadlined::new(direct.clone(), Duration::from_secs(30)));
    let mut ways = [
        ("direct", direct, Vec::new()),
        ("deadline layer", layered, Vec::new()),
    ];
    // Interleave the two ways round by round so machine load affects both alike; report medians.
    for _ in 0..ROUNDS {
        for (_, backend, samples) in &mut ways {
            for _ in 0..SAMPLES_PER_ROUND {
                let start = Instant::now();
                backend
                    .enumerate_networks(QUERY)
                    .expect("enumerate networks");
                samples.push(start.elapsed());
            }
        }
    }
    let medians: Vec<f64> = ways
        .iter_mut()
        .map(|(way, _, samples)| {
            let median = median(samples);
            println!(
                "{way:>15}: HcnEnumerateNetworks median {median:8.1} µs ({} calls)",
                samples.len()
            );
            median
        })
        .collect();
    println!(
        "{:>15}: {:+8.1} µs per call, {:+.2} ms per 10-call ADD",
        "overhead",
        medians[1] - medians[0],
        (medians[1] - medians[0]) * 10.0 / 1000.0
    );
}

fn median(samples: &mut [Duration]) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e6
}
