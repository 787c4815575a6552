//! The drift campaign: pods churn on a node (some killed without DEL) while random HNS drift
//! of every kind the emulator can inject is added and HNS restarts, and the node daemon runs
//! with `--apply` after each step. After every round: each repairable case (a killed pod's
//! endpoint and reservation, a remote endpoint on a live pod's address in the node's own
//! subnet) is gone, each other case is reported, no live pod is broken (its endpoint attached
//! and holding its address, its reservation there), and nothing of another component's is
//! removed but those remote endpoints. HNS stops before some rounds (the round removes
//! nothing, then HNS restarts and restores everything) and, in others, restarts losing every
//! endpoint as older builds do: then no live pod's address is released and each is reported
//! `endpoint-lost`, until the runtime deletes those pods; the node reboots now and then, and
//! the round after releases every address its pods held. Seeded; small here, full size with
//! `CNI_WIN_DRIFT_CAMPAIGN_ROUNDS` (and another seed with `CNI_WIN_DRIFT_CAMPAIGN_SEED`).

use std::collections::BTreeMap;
use std::time::Duration;

use cni_win::daemon::{self, Daemon};
use cni_win::paths::NodePaths;
use cni_win::shutdown::Shutdown;
use cni_win_core::identity::Identity;
use hns::Guid;
use hns::schema::EndpointFlags;
use hns_emulator::{Injection, Outage};

use crate::support::ScratchNode;
use crate::support::daemon::Scrape;

/// Rounds at the size `scripts/test` runs.
const SMALL: u64 = 12;

/// Live pods at most: pods are deleted beyond it, so a long campaign recycles addresses.
const MOST_PODS: usize = 16;

/// A seeded xorshift generator: the same seed, the same campaign.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A live pod of the campaign.
struct Pod {
    container: String,
    namespace: Guid,
    endpoint: Guid,
    ip: String,
}

/// What was injected that the daemon must leave alone, and what it must remove.
#[derive(Default)]
struct Injected {
    /// Remote endpoints on a pod's address, with that pod's container.
    on_pods: Vec<(Guid, String)>,
    /// Everything another component owns that must stay: endpoints and load balancers.
    kept_endpoints: Vec<Guid>,
    /// The namespaces of the running pods given a live pod's address.
    twin_namespaces: Vec<Guid>,
    /// Other components' endpoints a restart losing endpoints dropped (HNS, not cni-win).
    dropped_by_hns: usize,
    kept_balancers: Vec<Guid>,
    /// Injections per kind.
    count: BTreeMap<&'static str, u64>,
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

#[test]
fn pods_churn_under_random_drift_and_only_the_provably_wrong_is_repaired() {
    let rounds = env("CNI_WIN_DRIFT_CAMPAIGN_ROUNDS", SMALL);
    let seed = env("CNI_WIN_DRIFT_CAMPAIGN_SEED", 0x5eed_d21f7);
    let mut dice = Dice(seed | 1);
    let node = ScratchNode::new();
    let settings = daemon::Settings {
        paths: NodePaths::with_bin_dir(node.conf_dir(), node.dir().join("bin")),
        apply: true,
        every: Duration::from_secs(60),
        metrics_address: None,
    };
    let mut daemon = Daemon::new(settings, Ok(node.new_client()), |_| {}).unwrap();
    let mut pods: Vec<Pod> = Vec::new();
    let mut injected = Injected::default();
    let (mut started, mut deleted, mut refused, mut serial) = (0u64, 0u64, 0u64, 0u64);
    let mut collected = 0u64;
    let mut reported: BTreeMap<String, u64> = BTreeMap::new();
    let mut repaired = 0.0;
    let (mut stops, mut lossy_restarts, mut lost, mut reboots) = (0u64, 0u64, 0u64, 0u64);
    for _ in 0..rounds {
        for _ in 0..=dice.below(3) {
            serial += 1;
            match start(&node, &format!("pod{serial}")) {
                Some(pod) => {
                    pods.push(pod);
                    started += 1;
                }
                None => refused += 1,
            }
        }
        let mut killed = Vec::new();
        while pods.len() > MOST_PODS || (pods.len() > 2 && dice.below(2) == 0) {
            let pod = pods.remove(dice.below(pods.len() as u64) as usize);
            if dice.below(3) == 0 {
                // Killed with its sandbox, no DEL: the sweep's to collect.
                node.client.delete_namespace(pod.namespace).unwrap();
                killed.push(pod);
            } else {
                delete(&node, &pod);
            }
            deleted += 1;
        }
        let mut this_round = Vec::new();
        for _ in 0..=dice.below(3) {
            let Some(pod) = pods.get(dice.below(pods.len().max(1) as u64) as usize) else {
                break;
            };
            this_round.extend(inject(&node, &mut dice, pod, &mut injected, &mut serial));
        }

        if dice.below(4) == 0 {
            // HNS is stopped (or restarting and not back) when the round runs: it reads
            // nothing and removes nothing; then HNS restarts and restores what it held.
            node.engine.suffer(Outage::Stop).unwrap();
            let before = node.reserved();
            daemon.round(&Shutdown::new());
            let scrape = Scrape::parse(&daemon.metrics().render());
            assert_eq!(
                scrape.sum("cniwin_hns_drift", r#"reason="hns-unreadable""#),
                1.0
            );
            assert_eq!(node.reserved(), before, "released while HNS was stopped");
            tally(&mut reported, &scrape);
            node.engine.suffer(Outage::Restart).unwrap();
            stops += 1;
        }
        daemon.round(&Shutdown::new());
        let scrape = Scrape::parse(&daemon.metrics().render());
        let endpoints: Vec<Guid> = node
            .client
            .list_endpoint_ids(None)
            .unwrap()
            .into_iter()
            .collect();
        // Every repairable case repaired.
        for (remote, pod) in &injected.on_pods {
            if pods.iter().any(|live| &live.container == pod) {
                assert!(!endpoints.contains(remote), "remote {remote} on {pod} left");
            }
        }
        // What a killed pod left is collected: its endpoint, and its address unless another
        // endpoint still holds it (then it is never released).
        let holding = node.endpoints_holding();
        for pod in &killed {
            assert!(!endpoints.contains(&pod.endpoint), "{} left", pod.container);
            let released = !node.reserved().contains(&pod.ip);
            assert!(released || holding.contains(&pod.ip), "{} kept", pod.ip);
            collected += 1;
        }
        // No live pod broken.
        let reservations = node.reserved();
        for pod in &pods {
            let endpoint = node.client.open_endpoint(pod.endpoint).unwrap();
            let endpoint = endpoint.properties();
            assert_eq!(
                endpoint.host_compute_namespace, pod.namespace,
                "{}",
                pod.container
            );
            assert_eq!(endpoint.ip_configurations[0].ip_address.to_string(), pod.ip);
            assert!(
                reservations.contains(&pod.ip),
                "{} lost {}",
                pod.container,
                pod.ip
            );
        }
        // Nothing of another component's removed.
        for kept in &injected.kept_endpoints {
            assert!(
                endpoints.contains(kept),
                "another component's endpoint {kept} removed"
            );
        }
        let balancers = node.client.list_load_balancers().unwrap();
        for kept in &injected.kept_balancers {
            assert!(
                balancers.iter().any(|b| b.id == *kept),
                "load balancer {kept} removed"
            );
        }
        // Every case injected this round reported (the repaired ones too: found, then
        // removed).
        for reason in this_round {
            assert!(
                scrape.sum("cniwin_hns_drift", &format!("reason=\"{reason}\"")) >= 1.0,
                "{reason} not reported"
            );
        }
        tally(&mut reported, &scrape);
        repaired = scrape.sum("cniwin_hns_drift_repairs_total", "result=\"removed\"");

        if dice.below(12) == 0 {
            let scrape = lose_every_endpoint(&node, &mut daemon, &mut pods, &mut injected);
            lost += scrape.sum("cniwin_hns_drift", r#"reason="endpoint-lost""#) as u64;
            tally(&mut reported, &scrape);
            lossy_restarts += 1;
        } else if dice.below(25) == 0 {
            let scrape = reboot(&node, &mut daemon, &mut pods, &mut injected);
            tally(&mut reported, &scrape);
            reboots += 1;
        }
    }
    let kept = injected.kept_endpoints.len() + injected.kept_balancers.len();
    let on_pods = injected
        .count
        .get("duplicate-address-remote")
        .copied()
        .unwrap_or(0);
    println!(
        "drift campaign (seed {seed:#x}, {rounds} rounds): {started} pods started, {deleted} \
         deleted, {} live, {refused} ADDs refused (a stale remote endpoint on the address \
         host-local gave); injected {:?}; repaired {repaired} (of {on_pods} remote endpoints on a pod's \
         address), {collected} killed pods' endpoints collected; HNS stopped before {stops} \
         rounds and restarted losing its endpoints {lossy_restarts} times ({lost} live pods' \
         endpoints lost, each reported and its address kept), and the node rebooted \
         {reboots} times (every old pod's address released in the round after); reported over \
         the rounds \
         {reported:?}; 0 live pods broken but by HNS, 0 of {kept} objects of other components \
         removed ({} more dropped by HNS's restarts and reboots)",
        pods.len(),
        injected.count,
        injected.dropped_by_hns,
    );
    assert!(repaired >= 1.0 || on_pods == 0);
}

/// A pod as ADD leaves it: a reservation, cni-win's endpoint attached to its namespace; or
/// nothing, when HNS refuses the endpoint because a stale remote endpoint holds the address
/// host-local gave (ADD rolls its reservation back and fails).
fn start(node: &ScratchNode, container: &str) -> Option<Pod> {
    let ip = node.reserve(container);
    let identity = Identity::of("cbr0", container, "eth0");
    let Ok(endpoint) = node.try_endpoint(identity.guid, &identity.name, &ip, EndpointFlags::NONE)
    else {
        node.host_local.release(container, "eth0").unwrap();
        return None;
    };
    let namespace = node.namespace();
    node.client.attach_endpoint(namespace, endpoint).unwrap();
    Some(Pod {
        container: container.to_owned(),
        namespace,
        endpoint,
        ip,
    })
}

/// HNS restarts losing every endpoint (older builds, calico#5164), after the round's checks.
/// The next round releases no live pod's address and reports each pod as `endpoint-lost`;
/// then the runtime deletes those pods (the operator's remedy: their DEL finds no endpoint
/// and releases the address) and the running pods given a live pod's address. What HNS
/// dropped of other components is no longer theirs to keep. Returns the round's metrics.
fn lose_every_endpoint(
    node: &ScratchNode,
    daemon: &mut Daemon,
    pods: &mut Vec<Pod>,
    injected: &mut Injected,
) -> Scrape {
    node.engine.suffer(Outage::RestartLosingEndpoints).unwrap();
    daemon.round(&Shutdown::new());
    let scrape = Scrape::parse(&daemon.metrics().render());
    let reservations = node.reserved();
    for pod in pods.iter() {
        assert!(
            reservations.contains(&pod.ip),
            "{} lost {}",
            pod.container,
            pod.ip
        );
    }
    assert_eq!(
        scrape.sum("cniwin_hns_drift", r#"reason="endpoint-lost""#),
        pods.len() as f64
    );
    for pod in pods.drain(..) {
        node.host_local.release(&pod.container, "eth0").unwrap();
        node.client.delete_namespace(pod.namespace).unwrap();
    }
    for namespace in injected.twin_namespaces.drain(..) {
        node.client.delete_namespace(namespace).unwrap();
    }
    injected.forget_endpoints();
    scrape
}

/// The node reboots (every endpoint and namespace gone, the pods with them), after the
/// round's checks: the next round releases every address the pods held, and removes no load
/// balancer. Returns the round's metrics.
fn reboot(
    node: &ScratchNode,
    daemon: &mut Daemon,
    pods: &mut Vec<Pod>,
    injected: &mut Injected,
) -> Scrape {
    node.engine.suffer(Outage::Reboot).unwrap();
    daemon.round(&Shutdown::new());
    let reservations = node.reserved();
    for pod in pods.drain(..) {
        assert!(
            !reservations.contains(&pod.ip),
            "{} kept {}",
            pod.container,
            pod.ip
        );
    }
    injected.twin_namespaces.clear();
    injected.forget_endpoints();
    Scrape::parse(&daemon.metrics().render())
}

impl Injected {
    /// Forgets the endpoints HNS itself dropped: no longer another component's to keep.
    fn forget_endpoints(&mut self) {
        self.dropped_by_hns += self.kept_endpoints.len() + self.on_pods.len();
        self.kept_endpoints.clear();
        self.on_pods.clear();
    }
}

/// Adds what a round reported, per reason, to `reported`.
fn tally(reported: &mut BTreeMap<String, u64>, scrape: &Scrape) {
    for reason in cni_win::drift::Reason::ALL {
        let count = scrape.sum(
            "cniwin_hns_drift",
            &format!("reason=\"{}\"", reason.as_str()),
        );
        *reported.entry(reason.as_str().to_owned()).or_default() += count as u64;
    }
}

/// A pod as DEL and the runtime leave it: nothing.
fn delete(node: &ScratchNode, pod: &Pod) {
    node.client.delete_endpoint(pod.endpoint).unwrap();
    node.host_local.release(&pod.container, "eth0").unwrap();
    node.client.delete_namespace(pod.namespace).unwrap();
}

/// One drift of a random kind around `pod`: the reason the daemon must report it under, if
/// it is drift.
fn inject(
    node: &ScratchNode,
    dice: &mut Dice,
    pod: &Pod,
    injected: &mut Injected,
    serial: &mut u64,
) -> Option<&'static str> {
    *serial += 1;
    let endpoint = |id, name: &str, ip: &str, remote| node.inject_endpoint(id, name, ip, remote);
    let kind = match dice.below(6) {
        0 => {
            let remote = endpoint(Guid::ZERO, "stale-lease", &pod.ip, true);
            injected.on_pods.push((remote, pod.container.clone()));
            "duplicate-address-remote"
        }
        1 => {
            let foreign = endpoint(Guid::ZERO, "other-plugin", &pod.ip, false);
            injected.kept_endpoints.push(foreign);
            "duplicate-address-foreign"
        }
        2 => {
            // A second pod of ours given the same address, attached and running.
            let identity = Identity::of("cbr0", &format!("twin{serial}"), "eth0");
            let twin = endpoint(identity.guid, &identity.name, &pod.ip, false);
            let namespace = node.namespace();
            node.client.attach_endpoint(namespace, twin).unwrap();
            injected.kept_endpoints.push(twin);
            injected.twin_namespaces.push(namespace);
            "duplicate-address-ours"
        }
        3 => {
            let other_node = format!("10.244.2.{}", 2 + *serial % 250);
            let remote = endpoint(Guid::ZERO, "other-node", &other_node, true);
            injected.kept_endpoints.push(remote);
            OTHER_NODE
        }
        4 => {
            // An address of the subnet no pod has: a lease kube-proxy still believes in.
            let reserved = node.reserved();
            let held = node.endpoints_holding();
            let free = (200..250)
                .map(|host| format!("10.244.1.{host}"))
                .find(|ip| !reserved.contains(ip) && !held.contains(ip))?;
            let remote = endpoint(Guid::ZERO, "stale-in-subnet", &free, true);
            injected.kept_endpoints.push(remote);
            "remote-endpoint-in-pod-subnet"
        }
        _ => {
            let balancer = node
                .engine
                .inject(&Injection::HalfCreatedLoadBalancer {
                    frontend: format!("10.96.0.{}", 10 + *serial % 200).parse().unwrap(),
                    backends: vec![pod.endpoint],
                })
                .unwrap();
            injected.kept_balancers.push(balancer);
            "load-balancer-half-created"
        }
    };
    *injected.count.entry(kind).or_default() += 1;
    (kind != OTHER_NODE).then_some(kind)
}

/// A remote endpoint of another node's pod: not drift.
const OTHER_NODE: &str = "remote-endpoint-of-another-node";
