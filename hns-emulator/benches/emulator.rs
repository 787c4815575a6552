//! Emulator cost per call at 10 and 5,000 endpoints: open+query by ID must not
//! grow with the number of endpoints; create and delete are shown alongside.
//!
//! Run: `cargo bench -p hns-emulator --bench emulator`. Prints one line per host size.

use std::time::{Duration, Instant};

use hns::schema::{HostComputeEndpoint, HostComputeNetwork, IpConfig, Ipam, NetworkType, Subnet};
use hns::{Client, Guid};
use hns_emulator::Emulator;

const ROUNDS: usize = 10;
const SAMPLES_PER_ROUND: usize = 30;

/// One emulated host filled with `count` endpoints.
struct Host {
    count: usize,
    client: Client<Emulator>,
    network: Guid,
    ids: Vec<Guid>,
    next: usize,
    open_query: Vec<Duration>,
    create_delete: Vec<Duration>,
    /// The emulator's state directory, held (and removed) as long as the host lives.
    _state: tempfile::TempDir,
}

fn main() {
    let mut hosts: Vec<Host> = [10usize, 5_000].into_iter().map(fill).collect();
    // Interleave the hosts round by round so machine load affects both alike; report medians.
    for _ in 0..ROUNDS {
        for host in &mut hosts {
            for i in 0..SAMPLES_PER_ROUND {
                let id = host.ids[(i * 7919) % host.ids.len()];
                let start = Instant::now();
                drop(host.client.open_endpoint(id).expect("open endpoint"));
                host.open_query.push(start.elapsed());

                let start = Instant::now();
                let network = host
                    .client
                    .open_network(host.network)
                    .expect("open network");
                let created = network
                    .create_endpoint(Guid::ZERO, &endpoint(host.next))
                    .expect("create endpoint")
                    .id();
                drop(network);
                host.client
                    .delete_endpoint(created)
                    .expect("delete endpoint");
                host.create_delete.push(start.elapsed());
                host.next += 1;
            }
        }
    }
    for host in &mut hosts {
        println!(
            "endpoints={:>5}  open+query+close by ID (3 raw calls): median {:>7.1} µs  |  open network + create + query + delete (4 raw calls + 2 closes): median {:>7.1} µs",
            host.count,
            median(&mut host.open_query),
            median(&mut host.create_delete),
        );
    }
}

fn fill(count: usize) -> Host {
    let root = tempfile::Builder::new()
        .prefix(&format!("hns-bench-{count}-"))
        .tempdir()
        .expect("create the state directory");
    let client = Client::new(Emulator::open(root.path()).expect("open emulator state"));
    let network = client
        .create_network(Guid::ZERO, &network())
        .expect("create network")
        .id();
    let ids = {
        let open = client.open_network(network).expect("open network");
        (0..count)
            .map(|n| {
                open.create_endpoint(Guid::ZERO, &endpoint(n))
                    .expect("create endpoint")
                    .id()
            })
            .collect()
    };
    Host {
        count,
        client,
        network,
        ids,
        next: count,
        open_query: Vec::new(),
        create_delete: Vec::new(),
        _state: root,
    }
}

fn median(samples: &mut [Duration]) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e6
}

fn network() -> HostComputeNetwork {
    HostComputeNetwork {
        name: "bench".into(),
        network_type: NetworkType::L2Bridge,
        ipams: vec![Ipam {
            ipam_type: "Static".into(),
            subnets: vec![Subnet::with_gateway(
                "10.0.0.0/8".parse().unwrap(),
                "10.0.0.1".parse().unwrap(),
            )],
        }],
        ..HostComputeNetwork::default()
    }
}

fn endpoint(n: usize) -> HostComputeEndpoint {
    HostComputeEndpoint {
        name: format!("pod-{n}"),
        ip_configurations: vec![IpConfig {
            ip_address: std::net::Ipv4Addr::from(0x0A00_0002 + n as u32).into(),
            prefix_length: None,
        }],
        ..HostComputeEndpoint::default()
    }
}
