//! The drift campaign: pods churn on a node (some killed without DEL) while random HNS drift
//! of every kind the emulator can inject is added, and the node daemon runs with `--apply`
//! after each step. After every round: each repairable case (a killed pod's endpoint and
//! reservation, a remote endpoint on a live pod's address in the node's own subnet) is gone, each other case is reported, no live pod is broken (its endpoint attached
//! and holding its address, its reservation there), and nothing of another component's is
//! removed but those remote endpoints. Seeded; small here, full size with
//! `CNI_WIN_DRIFT_CAMPAIGN_ROUNDS` (and another seed with `CNI_WIN_DRIFT_CAMPAIGN_SEED`).

use std::collections::BTreeMap;
use std::time::Duration;

use cni_win::daemon::{self, Daemon};
use cni_win::paths::NodePaths;
use cni_win::shutdown::Shutdown;
use cni_win_core::identity::Identity;
use hns::Guid;
use hns::schema::EndpointFlags;
use hns_emulator::Injection;

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
        for reason in cni_win::drift::Reason::ALL {
            let count = scrape.sum(
                "cniwin_hns_drift",
                &format!("reason=\"{}\"", reason.as_str()),
            );
            *reported.entry(reason.as_str().to_owned()).or_default() += count as u64;
        }
        repaired = scrape.sum("cniwin_hns_drift_repairs_total", "result=\"removed\"");
    }
    let kept = injected.kept_endpoints.len() + injected.kept_balancers.len();
    println!(
        "drift campaign (seed {seed:#x}, {rounds} rounds): {started} pods started, {deleted} \
         deleted, {} live, {refused} ADDs refused (a stale remote endpoint on the address \
         host-local gave); injected {:?}; repaired {repaired} (of {} remote endpoints on a pod's \
         address), {collected} killed pods' endpoints collected; reported over the rounds {reported:?}; 0 live pods broken, 0 of {kept} \
         objects of other components removed",
        pods.len(),
        injected.count,
        injected.on_pods.len(),
    );
    assert!(repaired >= 1.0 || injected.on_pods.is_empty());
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
            node.client.attach_endpoint(node.namespace(), twin).unwrap();
            injected.kept_endpoints.push(twin);
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
