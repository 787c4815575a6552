//! Per-operation cost of ADD and DEL, through the library and through the `host-local` binary
//! (spawned as a runtime does), with 10, 250 and 5,000 reservations already in a /16.
//!
//! `cargo bench -p ipam-host-local --bench store` (release profile). Figures are medians; set
//! `BENCH_ROUNDS` to change how many ADD+DEL pairs each is taken over (default 200 for the
//! library, 100 for the binary). "first op" is the one-time index build over a store the
//! reference wrote; "mixed-store ADD" is a library ADD right after the reference wrote to the
//! store (each such write makes the next operation rebuild the index), median of 50.

use cni::{CniArgs, NetConf};
use ipam_host_local::HostLocal;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BINARY: &str = env!("CARGO_BIN_EXE_host-local");
const SIZES: [usize; 3] = [10, 250, 5_000];

struct Figures {
    add: Duration,
    del: Duration,
}

fn config(data_dir: &Path) -> Value {
    json!({"cniVersion": "1.1.0", "name": "bench", "type": "host-local",
           "ipam": {"type": "host-local", "subnet": "10.0.0.0/16", "dataDir": data_dir}})
}

/// Writes `count` reservations as the reference would (10.0.0.2 onwards) and its
/// `last_reserved_ip.0`.
fn populate(data_dir: &Path, count: usize) {
    let net = data_dir.join("bench");
    std::fs::create_dir_all(&net).expect("create the network directory");
    let mut last = String::new();
    for i in 0..count {
        let n = 2 + i as u32;
        last = format!("10.0.{}.{}", n >> 8, n & 0xff);
        std::fs::write(net.join(&last), format!("existing{i}\r\neth0"))
            .expect("write a reservation");
    }
    std::fs::write(net.join("last_reserved_ip.0"), last).expect("write last_reserved_ip.0");
}

fn scratch(label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "ipam-host-local-bench-{label}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the scratch directory");
    dir
}

/// The median: the machine is shared, and a few slow outliers should not move a figure.
fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn library(data_dir: &Path, rounds: usize) -> (Duration, Figures) {
    let conf = NetConf::parse(config(data_dir).to_string().as_bytes()).expect("config");
    let ipam = HostLocal::from_conf(&conf, &CniArgs::default()).expect("host-local");
    let first = Instant::now();
    ipam.release("warm-up", "eth0").expect("first operation");
    let rebuild = first.elapsed();
    let (mut add, mut del) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let id = format!("lib{round}");
        let start = Instant::now();
        ipam.allocate(&id, "eth0").expect("ADD");
        add.push(start.elapsed());
        let start = Instant::now();
        ipam.release(&id, "eth0").expect("DEL");
        del.push(start.elapsed());
    }
    (
        rebuild,
        Figures {
            add: median(add),
            del: median(del),
        },
    )
}

/// An ADD right after the reference's host-local wrote to the same store (a node switched
/// while the reference still serves some calls, or rolled back and forth): every such write
/// changes the directory, so each ADD first rebuilds the index. Median over `rounds`.
fn mixed(data_dir: &Path, rounds: usize) -> Duration {
    let conf = NetConf::parse(config(data_dir).to_string().as_bytes()).expect("config");
    let ipam = HostLocal::from_conf(&conf, &CniArgs::default()).expect("host-local");
    let net = data_dir.join("bench");
    let mut add = Vec::new();
    for round in 0..rounds {
        let reference = format!("10.0.254.{}", round % 250);
        std::fs::write(net.join(&reference), format!("reference{round}\r\neth0"))
            .expect("write the reference's reservation");
        let id = format!("mixed{round}");
        let start = Instant::now();
        ipam.allocate(&id, "eth0").expect("ADD");
        add.push(start.elapsed());
        ipam.release(&id, "eth0").expect("DEL");
        std::fs::remove_file(net.join(&reference)).expect("the reference's DEL");
    }
    median(add)
}

fn spawn(command: &str, id: &str, stdin: &[u8]) -> Duration {
    let start = Instant::now();
    let mut child = Command::new(BINARY)
        .env("CNI_COMMAND", command)
        .env("CNI_CONTAINERID", id)
        .env("CNI_IFNAME", "eth0")
        .env("CNI_NETNS", "/var/run/netns/bench")
        .env("CNI_PATH", "/opt/cni/bin")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn host-local");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write the config");
    let output = child.wait_with_output().expect("wait for host-local");
    let elapsed = start.elapsed();
    assert!(
        output.status.success(),
        "{command} failed: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    elapsed
}

fn binary(data_dir: &Path, rounds: usize) -> Figures {
    let stdin = config(data_dir).to_string().into_bytes();
    spawn("DEL", "warm-up", &stdin);
    let (mut add, mut del) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let id = format!("bin{round}");
        add.push(spawn("ADD", &id, &stdin));
        del.push(spawn("DEL", &id, &stdin));
    }
    Figures {
        add: median(add),
        del: median(del),
    }
}

fn micros(d: Duration) -> String {
    format!("{:>8.1} µs", d.as_secs_f64() * 1e6)
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is understood.
    let rounds: usize = std::env::var("BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    let lib_rounds = if rounds > 0 { rounds } else { 200 };
    let bin_rounds = if rounds > 0 { rounds } else { 100 };

    let version = json!({"cniVersion": "1.1.0"}).to_string().into_bytes();
    let spawn_only = (0..bin_rounds)
        .map(|_| spawn("VERSION", "v", &version))
        .collect();
    println!(
        "process spawn + VERSION (no store work): {}",
        micros(median(spawn_only))
    );
    println!(
        "{:>12} | {:>11} {:>11} | {:>11} {:>11} | {:>16} | {:>16}",
        "reservations",
        "lib ADD",
        "lib DEL",
        "bin ADD",
        "bin DEL",
        "first op (index)",
        "mixed-store ADD"
    );
    let mut rows = Vec::new();
    for size in SIZES {
        let lib_dir = scratch(&format!("lib{size}"));
        populate(&lib_dir, size);
        let (rebuild, lib) = library(&lib_dir, lib_rounds);
        let mixed = mixed(&lib_dir, lib_rounds.min(50));
        let bin_dir = scratch(&format!("bin{size}"));
        populate(&bin_dir, size);
        let bin = binary(&bin_dir, bin_rounds);
        println!(
            "{size:>12} | {} {} | {} {} | {} | {}",
            micros(lib.add),
            micros(lib.del),
            micros(bin.add),
            micros(bin.del),
            micros(rebuild),
            micros(mixed)
        );
        rows.push((lib, bin));
        let _ = std::fs::remove_dir_all(&lib_dir);
        let _ = std::fs::remove_dir_all(&bin_dir);
    }
    let ratio = |pick: fn(&(Figures, Figures)) -> Duration| {
        pick(&rows[2]).as_secs_f64() / pick(&rows[0]).as_secs_f64()
    };
    println!(
        "cost at 5,000 / cost at 10: lib ADD {:.2}x, lib DEL {:.2}x, bin ADD {:.2}x, bin DEL {:.2}x \
         (goal <= 1.5x)",
        ratio(|r| r.0.add),
        ratio(|r| r.0.del),
        ratio(|r| r.1.add),
        ratio(|r| r.1.del)
    );
    println!(
        "bin ADD at 250: {} (goal <= 1500 µs; the reference takes about 6 ms)",
        micros(rows[1].1.add).trim()
    );
}
