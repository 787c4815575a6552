//! `netpol-bench`: the NetworkPolicy agent's benchmark. An emulated node with its local pods, a
//! cluster of pods across nodes and a mix of policies, all put through the real kube-apiserver;
//! the native Linux `cni-win` agent on the node. Prints the initial sync's time, then for each
//! kind of change (a remote pod's label moving it into and out of a selector, a new policy, a
//! new local pod) the time from just before the API request to the emulated HNS holding the
//! result (the emulator's verdict on a packet, asked after each policy write), the policy
//! writes each change cost, the agent's memory and the size of the snapshot new pods start
//! from; then each goal, met or missed. Exit status
//! 1 when the benchmark could not run, 2 for a usage error; a missed goal is a figure, not a
//! failure.
//!
//! It runs no Wine: it lives beside the node lane (whose control plane it shares, from the
//! `node-lane` library) rather than under `wine/`.
//!
//! `scripts/bench-netpol` builds what it needs and runs this in a network namespace whose
//! adapter holds the address the API server's certificate names.
#![forbid(unsafe_code)]

mod api;
mod cluster;
mod measure;
mod node;

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::error::ErrorKind;
use clap::{CommandFactory as _, Parser as _};
use hns::features::HnsVersion;
use hns_emulator::acl::{PolicyWrites, Verdict};
use node_lane::NODE_NAME;
use node_lane::agent_process::AgentProcess;
use node_lane::cli::HarnessArgs;
use node_lane::control_plane::ControlPlane;

use api::Cluster;
use cluster::{ClusterPod, Shape};
use measure::{Histogram, Sample, quantile, verdict};
use node::BenchNode;

/// The benchmark's size: pods in the cluster.
const DEFAULT_CLUSTER: usize = 5000;

/// The agent's memory goal, in MB: 64 at the default size, 128 up to five times it.
fn rss_goal_mb(cluster: usize) -> Option<u64> {
    if cluster <= DEFAULT_CLUSTER {
        Some(64)
    } else if cluster <= 5 * DEFAULT_CLUSTER + 100 {
        // 25,100: the five-times size the goal was set at.
        Some(128)
    } else {
        None
    }
}

/// An address no policy admits, for the new local pod's check.
const STRANGER: Ipv4Addr = Ipv4Addr::new(10, 99, 0, 1);
const STRANGER_PORT: u16 = 12_345;
/// How long the agent may take for its first sync.
const SYNC_DEADLINE: Duration = Duration::from_secs(300);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    IpSets,
    Inline,
}

impl Mode {
    fn version(self) -> HnsVersion {
        match self {
            Mode::IpSets => HnsVersion::new(13, 2),
            Mode::Inline => HnsVersion::new(12, 0),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Mode::IpSets => "IP sets (HNS 13.2)",
            Mode::Inline => "inline rules (HNS 12.0)",
        }
    }
}

/// The NetworkPolicy agent's benchmark: an emulated node, a cluster through the real
/// kube-apiserver, the native Linux agent timed from API change to HNS.
#[derive(Debug, clap::Parser)]
#[command(name = "netpol-bench")]
struct Args {
    #[command(flatten)]
    harness: HarnessArgs,
    /// Pods on the agent's node
    #[arg(long, value_name = "N", default_value_t = 100)]
    local: usize,
    /// Pods in the cluster, the local ones included
    #[arg(long, value_name = "N", default_value_t = DEFAULT_CLUSTER)]
    cluster: usize,
    /// NetworkPolicies, more than the namespaces (each gets a default deny and a `clients`
    /// policy first)
    #[arg(long, value_name = "N", default_value_t = 500)]
    policies: usize,
    /// Namespaces the pods and policies go round
    #[arg(long, value_name = "N", default_value_t = cluster::NAMESPACES)]
    namespaces: usize,
    /// Changes of each kind timed
    #[arg(long, value_name = "N", default_value_t = 50)]
    changes: usize,
    /// The agent's programming modes to time
    #[arg(long, value_enum, default_value_t = Modes::Both)]
    mode: Modes,
}

/// `--mode`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Modes {
    /// IP sets (HNS 13.2, SetPolicy)
    IpSets,
    /// Inline rules (HNS 12.0)
    Inline,
    /// Both, IP sets first
    Both,
}

impl Modes {
    fn each(self) -> &'static [Mode] {
        match self {
            Modes::IpSets => &[Mode::IpSets],
            Modes::Inline => &[Mode::Inline],
            Modes::Both => &[Mode::IpSets, Mode::Inline],
        }
    }
}

impl Args {
    fn shape(&self) -> Shape {
        Shape {
            local: self.local,
            cluster: self.cluster,
            policies: self.policies,
            namespaces: self.namespaces,
        }
    }

    /// Whether the sizes fit the cluster's layout: namespace ns-0's default deny and `clients`
    /// policy are what the changes are judged by, and the addresses are the layout's.
    fn sizes_fit(&self) -> bool {
        let shape = self.shape();
        shape.namespaces > 0
            && shape.policies > shape.namespaces
            && shape.local > 0
            && shape.local + self.changes <= 40_000
            && shape.cluster >= shape.local + 2
            && shape.remote() <= 25_000
            && self.changes > 0
            && self.changes <= 5_000
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    if !args.sizes_fit() {
        Args::command()
            .error(
                ErrorKind::ValueValidation,
                "need 0 < --namespaces < --policies, 0 < --local < --cluster, at most 25,000 remote pods and \
                 40,000 local ones, 0 < --changes <= 5,000",
            )
            .exit();
    }
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("netpol-bench: {why}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let plane = args.harness.start_control_plane()?;
    plane.authorise_agent()?;
    let api = Cluster::connect(plane.admin_kubeconfig())?;
    let shape = args.shape();
    let took = Instant::now();
    populate(&api, &shape, &args.harness.node_ip.ip().to_string())?;
    println!(
        "netpol-bench: {} local pods, {} pods in the cluster across {} namespaces and {} nodes, {} policies: put through kube-apiserver in {:.1} s",
        shape.local,
        shape.cluster,
        shape.namespaces,
        1 + shape.remote().div_ceil(100),
        shape.policies,
        took.elapsed().as_secs_f64()
    );
    println!(
        "netpol-bench: the agent is the native Linux cni-win ({}); HNS is the emulator (no latency added), the API server Debian's 1.20",
        args.harness.cni_win.display()
    );
    for &mode in args.mode.each() {
        let bench = Bench {
            plane: &plane,
            api: &api,
            shape,
            changes: args.changes,
            node: BenchNode::new(mode.version()),
        };
        bench.run(mode, &args.harness.cni_win)?;
    }
    Ok(())
}

/// The node's Node object, the namespaces, every pod with its address, the policies.
fn populate(api: &Cluster, shape: &Shape, node_ip: &str) -> Result<(), String> {
    api.create_node(NODE_NAME, node_ip)?;
    api.create_namespaces(&cluster::namespaces(shape))?;
    let pods: Vec<_> = cluster::pods(shape)
        .iter()
        .map(|pod| (pod.object(), pod.status()))
        .collect();
    api.create_pods(&pods)?;
    api.create_policies(
        &(0..shape.policies)
            .map(|p| cluster::policy(shape, p))
            .collect::<Vec<_>>(),
    )
}

/// One mode's run: a fresh node with the local pods' endpoints, the agent, its first sync,
/// the changes.
struct Bench<'a> {
    plane: &'a ControlPlane,
    api: &'a Cluster,
    shape: Shape,
    changes: usize,
    node: BenchNode,
}

/// What the changes of one kind cost.
struct Kind {
    name: &'static str,
    samples: Vec<Sample>,
    /// The agent's own latency histogram around the series.
    histogram: (Histogram, Histogram),
}

impl Bench<'_> {
    fn run(&self, mode: Mode, binary: &Path) -> Result<(), String> {
        println!("\n== {}", mode.label());
        for k in 0..self.shape.local {
            self.node.add_endpoint(&ClusterPod::local(&self.shape, k))?;
        }
        let engine = self.node.engine();
        engine.reset_policy_writes().map_err(|f| f.to_string())?;
        let started = Instant::now();
        let agent = self.node.start_agent(self.plane, binary)?;
        let synced = self.first_sync(&agent, started)?;
        let writes = measure::quiet(&engine)?;
        println!(
            "initial sync: {:.2} s from the agent's start to every local endpoint programmed; {} endpoint writes ({} ACL rules), {} network writes ({} IP sets)",
            synced.as_secs_f64(),
            writes.endpoint_requests,
            writes.acl_rules_written,
            writes.network_requests,
            writes.sets_written
        );
        println!("snapshot after the sync: {}", self.node.snapshot_size()?);
        let kinds = [
            self.series(&agent, "remote pod's label", |k| self.relabel(k))?,
            self.series(&agent, "new policy", |k| self.add_policy(k))?,
            self.series(&agent, "new local pod", |k| self.add_local_pod(k))?,
        ];
        let (peak, resident) = agent.memory()?;
        let snapshot = self.node.snapshot_size()?;
        drop(agent);
        print_table(&kinds);
        println!("snapshot after the changes: {snapshot}");
        println!(
            "agent memory (Linux build): VmHWM {:.1} MiB, VmRSS {:.1} MiB",
            peak as f64 / 1024.0,
            resident as f64 / 1024.0
        );
        print_goals(mode, &kinds, peak, rss_goal_mb(self.shape.cluster));
        self.clean_up()
    }

    /// Waits until the agent has synced and programmed every local endpoint; the time since
    /// `started`.
    fn first_sync(&self, agent: &AgentProcess, started: Instant) -> Result<Duration, String> {
        let local = self.shape.local as f64;
        agent.poll(
            SYNC_DEADLINE,
            Duration::from_millis(20),
            "sync with every local endpoint programmed",
            || {
                let synced = agent.metric("cniwin_netpol_synced") == Some(1.0)
                    && agent.metric("cniwin_netpol_endpoints{state=\"programmed\"}") == Some(local);
                Ok(synced.then(|| started.elapsed()))
            },
        )
    }

    fn series(
        &self,
        agent: &AgentProcess,
        name: &'static str,
        mut change: impl FnMut(usize) -> Result<Sample, String>,
    ) -> Result<Kind, String> {
        let before = measure::histogram(&agent.scrape()?);
        let samples = (0..self.changes)
            .map(&mut change)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|why| format!("{name}: {why}; the agent's log ends: {}", agent.log_tail()))?;
        let after = measure::histogram(&agent.scrape()?);
        Ok(Kind {
            name,
            samples,
            histogram: (before, after),
        })
    }

    /// Change `k`: a remote pod labelled `role: client` (into the `clients` selector, which
    /// has members already; even `k`), then unlabelled (out of it; odd `k`), judged by its first packet to a local web
    /// pod on the clients' port.
    fn relabel(&self, k: usize) -> Result<Sample, String> {
        let pod = cluster::moving_client(&self.shape, k);
        let target = ClusterPod::local(&self.shape, 0);
        let joins = k.is_multiple_of(2);
        let (before, after) = if joins {
            (Verdict::Denied, Verdict::Allowed)
        } else {
            (Verdict::Allowed, Verdict::Denied)
        };
        let engine = self.node.engine();
        let judge = || verdict(&engine, pod.ip, target.ip, cluster::CLIENT_PORT);
        expect(judge()?, before, "before the label change")?;
        measure::time(
            &engine,
            || {
                self.api
                    .label_pod(&pod.namespace, &pod.name, "role", joins.then_some("client"))
            },
            || Ok(judge()? == after),
        )
    }

    /// Change `k`: a policy admitting api pods to every pod of a namespace on a new port,
    /// judged by a remote api pod's first packet to a local pod of that namespace.
    fn add_policy(&self, k: usize) -> Result<Sample, String> {
        let target =
            ClusterPod::local(&self.shape, k % self.shape.namespaces.min(self.shape.local));
        let source = (0..self.shape.remote())
            .map(|j| ClusterPod::remote(&self.shape, j))
            .find(|pod| pod.tier() == "api")
            .ok_or("no remote api pod")?;
        let (policy, port) = cluster::new_policy(&target.namespace, k);
        let engine = self.node.engine();
        let judge = || verdict(&engine, source.ip, target.ip, port);
        expect(judge()?, Verdict::Denied, "before the new policy")?;
        measure::time(
            &engine,
            || self.api.create_policy(&policy),
            || Ok(judge()? == Verdict::Allowed),
        )
    }

    /// Change `k`: a new pod on the node (its Pod bound here, its endpoint made as ADD makes
    /// it), timed from kubelet's status write with its address to its endpoint denying what
    /// its namespace's default deny denies.
    fn add_local_pod(&self, k: usize) -> Result<Sample, String> {
        let pod = ClusterPod::local(&self.shape, self.shape.local + k);
        self.api.create_pod(&pod.object())?;
        self.node.add_endpoint(&pod)?;
        let engine = self.node.engine();
        let judge = || verdict(&engine, STRANGER, pod.ip, STRANGER_PORT);
        expect(judge()?, Verdict::Allowed, "an endpoint without rules")?;
        measure::time(
            &engine,
            || {
                self.api
                    .set_pod_status(&pod.namespace, &pod.name, &pod.status())
            },
            || Ok(judge()? == Verdict::Denied),
        )
    }

    /// Puts the cluster back as `populate` left it, for the next mode.
    fn clean_up(&self) -> Result<(), String> {
        for k in 0..self.changes {
            let pod = cluster::moving_client(&self.shape, k);
            self.api
                .label_pod(&pod.namespace, &pod.name, "role", None)?;
            let target =
                ClusterPod::local(&self.shape, k % self.shape.namespaces.min(self.shape.local));
            let (policy, _) = cluster::new_policy(&target.namespace, k);
            let name = policy["metadata"]["name"].as_str().unwrap_or_default();
            self.api.delete_policy(&target.namespace, name)?;
            let pod = ClusterPod::local(&self.shape, self.shape.local + k);
            self.api.delete_pod(&pod.namespace, &pod.name)?;
        }
        Ok(())
    }
}

fn expect(seen: Verdict, want: Verdict, when: &str) -> Result<(), String> {
    if seen == want {
        Ok(())
    } else {
        Err(format!("{when}: the packet is {seen:?}, not {want:?}"))
    }
}

fn print_table(kinds: &[Kind]) {
    println!(
        "{:<20} {:>4} {:>8} {:>8} {:>8}  {:<22} {:<22} agent's histogram p50/p99",
        "change", "n", "p50", "p99", "max", "endpoint writes", "network writes",
    );
    for kind in kinds {
        let mut latencies: Vec<Duration> = kind.samples.iter().map(|s| s.latency).collect();
        latencies.sort();
        let spread = |of: fn(&PolicyWrites) -> u64| {
            let mut counts: Vec<u64> = kind.samples.iter().map(|s| of(&s.writes)).collect();
            counts.sort();
            format!(
                "{}/{}/{}",
                counts[0],
                quantile(&counts, 0.5),
                counts[counts.len() - 1]
            )
        };
        let (before, after) = &kind.histogram;
        let bucket = |q| {
            measure::histogram_quantile(before, after, q)
                .map_or("-".to_owned(), |le| format!("≤{le}s"))
        };
        println!(
            "{:<20} {:>4} {:>8} {:>8} {:>8}  {:<22} {:<22} {}/{}",
            kind.name,
            kind.samples.len(),
            millis(quantile(&latencies, 0.5)),
            millis(quantile(&latencies, 0.99)),
            millis(latencies[latencies.len() - 1]),
            format!(
                "{} req, {} rules",
                spread(|w| w.endpoint_requests),
                spread(|w| w.acl_rules_written)
            ),
            format!(
                "{} req, {} sets",
                spread(|w| w.network_requests),
                spread(|w| w.sets_written)
            ),
            bucket(0.5),
            bucket(0.99)
        );
    }
    println!("(writes: min/median/max per change; req = HcnModify requests)");
}

fn print_goals(mode: Mode, kinds: &[Kind], peak_kib: u64, rss_goal_mb: Option<u64>) {
    let worst = kinds
        .iter()
        .map(|kind| {
            let mut latencies: Vec<Duration> = kind.samples.iter().map(|s| s.latency).collect();
            latencies.sort();
            quantile(&latencies, 0.99)
        })
        .max()
        .unwrap_or_default();
    let verdict = |met: bool| if met { "met" } else { "MISSED" };
    println!(
        "goal p99 <= 1 s: {} (worst p99 {})",
        verdict(worst <= Duration::from_secs(1)),
        millis(worst)
    );
    let label = &kinds[0];
    let most = |of: fn(&PolicyWrites) -> u64| label.samples.iter().map(|s| of(&s.writes)).max();
    let endpoint = most(|w| w.endpoint_requests).unwrap_or_default();
    let network = most(|w| w.network_requests).unwrap_or_default();
    match mode {
        Mode::IpSets => println!(
            "goal membership change = O(1) writes: {} (at most {endpoint} endpoint and {network} network writes)",
            verdict(endpoint == 0 && network <= 1)
        ),
        Mode::Inline => println!(
            "membership change without IP sets: at most {endpoint} endpoint writes (no O(1) goal)"
        ),
    }
    let peak_mb = (peak_kib * 1024) as f64 / 1e6;
    match rss_goal_mb {
        Some(goal) => println!(
            "goal RSS <= {goal} MB: {} (VmHWM {peak_mb:.1} MB)",
            verdict(peak_kib * 1024 <= goal * 1_000_000)
        ),
        None => println!("RSS: VmHWM {peak_mb:.1} MB (no goal past five times the default size)"),
    }
}

fn millis(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::*;

    fn parse(more: &[&str]) -> Args {
        let required = [
            "netpol-bench",
            "--kube-bin",
            "kube",
            "--cni-win",
            "cni-win",
            "--scratch",
            "scratch",
            "--node-ip",
            "192.168.1.10/24",
        ];
        Args::try_parse_from(required.iter().chain(more)).unwrap()
    }

    #[test]
    fn the_flags_are_consistent() {
        Args::command().debug_assert();
    }

    #[test]
    fn the_default_and_smoke_sizes_fit_and_an_empty_or_small_cluster_does_not() {
        let default = parse(&[]);
        assert!(default.sizes_fit());
        assert_eq!(default.mode.each(), [Mode::IpSets, Mode::Inline]);
        let smoke = [
            "--local",
            "10",
            "--cluster",
            "200",
            "--policies",
            "20",
            "--changes",
            "5",
        ];
        assert!(parse(&smoke).sizes_fit());
        assert!(!parse(&["--local", "0"]).sizes_fit());
        assert!(!parse(&["--local", "100", "--cluster", "50"]).sizes_fit());
        assert_eq!(parse(&["--mode", "inline"]).mode.each(), [Mode::Inline]);
    }
}
