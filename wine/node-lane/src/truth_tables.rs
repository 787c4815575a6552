//! NetworkPolicy's truth tables through the real API server: every case of
//! `netpol-truth-tables` put into kube-apiserver as a cluster operator would (namespaces,
//! pods bound to this node with their addresses, the policies of each step), cni-win's agent
//! (`cni-win sweep --every … --network-policy`, the Linux build: this is about what it
//! programs, the Wine story proves the `.exe` against the same server) watching it as
//! deploy/rbac.yaml's ServiceAccount, and every (from, to, port, protocol) verdict the
//! emulator computes from the rules it programmed compared with the case's matrix, under
//! Windows Server 2022's and 2025's semantics (no match passes; no match is dropped), with
//! network IP sets (HNS 13.2).
//!
//! Then two cases of our own that need a real API server: the agent killed and started
//! again (no verdict ever changes, nothing is written), and the API server stopped (the rules
//! stay, nothing is written, the agent says so).
//!
//! All nine pods are on the node, so every connection passes the sender's egress rules and
//! the receiver's ingress rules. Pods have no kubelet: the lane writes their `status`, and
//! creates the HNS endpoints first, as ADD does before the kubelet reports an address.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hns::schema::{HostComputeEndpoint, IpConfig};
use hns::{Client, Guid, HnsVersion, WindowsBuild};
use hns_emulator::acl::PolicyWrites;
use hns_emulator::{Emulator, Engine};
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicyPort};
use netpol_truth_tables::{Case, Matrix, Probe, Step, pod_ips, pods};
use node_lane::NODE_NAME;
use node_lane::agent_process::{AgentProcess, Launch};
use serde_json::{Value, json};

use crate::report::Report;
use crate::scenario::Lane;

const LABEL: &str = "netpol-tables";
/// The network the pods are on, in HNS and in the conflist.
const NETWORK: &str = "cbr0";
/// How long a step's verdicts may take to become the case's (the agent reacts in tens of
/// milliseconds; kubectl and the watches add the rest).
const CONVERGE_DEADLINE: Duration = Duration::from_secs(30);
/// How long verdicts that match must stay so before the step counts: longer than the
/// agent's longest debounce (200 ms), so a match on the way to another state is not taken.
const STILL: Duration = Duration::from_millis(400);

const BUILDS: [(&str, WindowsBuild); 2] = [
    ("Windows Server 2022", WindowsBuild::SERVER_2022),
    ("Windows Server 2025", WindowsBuild::SERVER_2025),
];

/// The modes the agent picks by the host's HNS version that run here: network IP sets, what
/// Windows Server 2022 and later hosts get. Rules listing their peers inline (HNS before
/// 13.0) pass the same tables below the API server (`cni-win-netpol`'s tests); through it they
/// would double this story's five minutes.
const MODES: [(&str, HnsVersion); 1] = [("IP sets (HNS 13.2)", HnsVersion::new(13, 2))];

/// The case the restart and the outage start from: ingress and egress rules, pod and
/// namespace selectors.
const STANDING_CASE: &str = "u27-ingress-and-egress.yaml";
/// The case put into the API once it is back from the outage: the agent must program it.
const AFTER_OUTAGE_CASE: &str = "u01-default-deny-ingress.yaml";
/// How long the agent's watches may take to resume once the API server answers again: its
/// watches back off up to 30 s between tries, and a restarted API server refuses requests
/// for a few seconds until its authoriser has loaded RBAC.
const RESUME_DEADLINE: Duration = Duration::from_secs(90);

/// Runs the truth tables and the cases of our own, recording one row per mode and case.
pub fn run(lane: &Lane<'_>, report: &mut Report) {
    let cases = match load_cases() {
        Ok(cases) => cases,
        Err(why) => return report.record(LABEL, "the cases", Err(why)),
    };
    let mut bed = match Bed::set_up(lane) {
        Ok(bed) => bed,
        Err(why) => return report.record(LABEL, "set-up", Err(why)),
    };
    let mut agent = None;
    for (mode, version) in MODES {
        agent = None;
        let started = bed
            .engine
            .set_version(version)
            .map_err(|failure| failure.to_string())
            .and_then(|()| start_agent(lane, &bed));
        match started {
            Ok(started) => {
                let tally = tables(&mut bed, &started, &cases);
                report.record(LABEL, &format!("truth tables, {mode}"), tally.outcome());
                agent = Some(started);
            }
            Err(why) => report.record(LABEL, &format!("the agent starts, {mode}"), Err(why)),
        }
    }
    let Some(agent) = agent else { return };
    let Some((_, standing)) = cases.iter().find(|(file, _)| file == STANDING_CASE) else {
        return report.record(
            LABEL,
            "own cases",
            Err(format!("{STANDING_CASE} is missing")),
        );
    };
    let Some(standing_step) = standing.steps.last() else {
        return;
    };
    let restarted = restart_without_window(lane, &mut bed, agent, standing, standing_step);
    let agent = match restarted {
        Ok((agent, outcome)) => {
            report.record(LABEL, "agent restarted: no window, no write", Ok(outcome));
            agent
        }
        Err(why) => {
            return report.record(LABEL, "agent restarted: no window, no write", Err(why));
        }
    };
    report.record(
        LABEL,
        "API server down: rules kept, no write, api_up 0",
        api_server_down(lane, &mut bed, &agent, standing, standing_step),
    );
    let Some((_, after)) = cases.iter().find(|(file, _)| file == AFTER_OUTAGE_CASE) else {
        return report.record(
            LABEL,
            "upstream cases",
            Err(format!("{AFTER_OUTAGE_CASE} is missing")),
        );
    };
    report.record(
        LABEL,
        "API server back: watches resume, a new policy enforced",
        api_server_back(&mut bed, &agent, after),
    );
}

/// Every case file with its case.
fn load_cases() -> Result<Vec<(String, Case)>, String> {
    let files = netpol_truth_tables::case_files()?;
    let mut cases = Vec::new();
    for path in files {
        let name = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        cases.push((name, netpol_truth_tables::read_case(&path)?));
    }
    Ok(cases)
}

/// Why a case cannot go through Debian's 1.20 API server, if it cannot.
fn skip_reason(case: &Case) -> Option<&'static str> {
    let has_end_port = |ports: Option<&Vec<NetworkPolicyPort>>| {
        ports
            .into_iter()
            .flatten()
            .any(|port| port.end_port.is_some())
    };
    let uses_end_port = case
        .steps
        .iter()
        .flat_map(|step| &step.policies)
        .any(|policy| {
            let spec = policy.spec.as_ref();
            let ingress = spec.and_then(|spec| spec.ingress.as_ref());
            let egress = spec.and_then(|spec| spec.egress.as_ref());
            ingress
                .into_iter()
                .flatten()
                .any(|rule| has_end_port(rule.ports.as_ref()))
                || egress
                    .into_iter()
                    .flatten()
                    .any(|rule| has_end_port(rule.ports.as_ref()))
        });
    uses_end_port.then_some("endPort (1.21+), which the 1.20 API server does not know")
}

/// How the cases went, per build.
#[derive(Default)]
struct Tally {
    run: usize,
    passed: BTreeMap<&'static str, usize>,
    skipped: Vec<String>,
    failures: Vec<String>,
}

impl Tally {
    fn outcome(&self) -> Result<String, String> {
        let per_build: Vec<String> = BUILDS
            .iter()
            .map(|(build, _)| {
                let passed = self.passed.get(build).copied().unwrap_or(0);
                format!("{build} {passed}/{}", self.run)
            })
            .collect();
        let summary = format!(
            "{} ({} skipped: {})",
            per_build.join(", "),
            self.skipped.len(),
            self.skipped.join("; ")
        );
        if self.failures.is_empty() && self.run > 0 {
            Ok(summary)
        } else {
            let shown: Vec<&String> = self.failures.iter().take(3).collect();
            Err(format!(
                "{summary}; {} failure(s), the first:\n{}",
                self.failures.len(),
                shown
                    .iter()
                    .map(|failure| failure.as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            ))
        }
    }
}

/// Every case, step by step, judged on both builds.
fn tables(bed: &mut Bed<'_>, agent: &AgentProcess, cases: &[(String, Case)]) -> Tally {
    let mut tally = Tally::default();
    'cases: for (file, case) in cases {
        if let Some(reason) = skip_reason(case) {
            tally.skipped.push(format!("{file}, {reason}"));
            continue;
        }
        let mut failed: BTreeSet<&str> = BTreeSet::new();
        for (index, step) in case.steps.iter().enumerate() {
            if let Err(why) = bed.put(case, step) {
                // The API server's validation (kubectl quotes it): the agent's refusal of
                // what it refuses is tested below the API server.
                if index == 0 && why.contains("The NetworkPolicy ") && why.contains(" is invalid: ")
                {
                    let refused = why
                        .split(" ended with exit status 1: ")
                        .last()
                        .unwrap_or(&why);
                    tally
                        .skipped
                        .push(format!("{file}, the API server refuses it: {refused}"));
                    continue 'cases;
                }
                eprintln!("node-lane: {LABEL}: {file} step {index}: {why}");
                tally.failures.push(format!("{file} step {index}: {why}"));
                failed.extend(BUILDS.map(|(build, _)| build));
                continue;
            }
            for (at, (build, windows_build)) in BUILDS.into_iter().enumerate() {
                // The second build judges the rules the first saw settle.
                let settle = at == 0;
                if let Err(why) = bed.converged(agent, step, windows_build, settle) {
                    eprintln!("node-lane: {LABEL}: {file} step {index}, {build}: {why}");
                    tally
                        .failures
                        .push(format!("{file} step {index}, {build}: {why}"));
                    failed.insert(build);
                }
            }
        }
        tally.run += 1;
        for (build, _) in BUILDS {
            if !failed.contains(build) {
                *tally.passed.entry(build).or_default() += 1;
            }
        }
    }
    tally
}

/// The agent killed and started again over a node it programmed: every verdict stays the
/// case's while no agent runs and while the new one starts, and the new one writes nothing.
fn restart_without_window(
    lane: &Lane<'_>,
    bed: &mut Bed<'_>,
    agent: AgentProcess,
    case: &Case,
    step: &Step,
) -> Result<(AgentProcess, String), String> {
    bed.standing(&agent, case, step)?;
    drop(agent);
    let stopped = Instant::now();
    let mut samples = bed.sample(step)?;
    let agent = start_agent(lane, bed)?;
    agent.poll(
        CONVERGE_DEADLINE,
        Duration::from_millis(20),
        "sync of the new agent",
        || {
            samples += bed.sample(step)?;
            let synced = agent.metric(METRICS_SYNCED) == Some(1.0)
                && agent.metric(METRICS_PROGRAMMED) == Some(pods().len() as f64);
            Ok(synced.then_some(()))
        },
    )?;
    let synced_after = stopped.elapsed();
    std::thread::sleep(STILL);
    samples += bed.sample(step)?;
    bed.unwritten("the restarted agent", &agent)?;
    Ok((
        agent,
        format!(
            "synced {} ms after the kill; {samples} matrices sampled meanwhile, all the case's; \
             0 HNS writes",
            synced_after.as_millis()
        ),
    ))
}

/// The API server stopped: the agent reports it (`cniwin_netpol_api_up` 0), every verdict
/// stays and nothing is written.
fn api_server_down(
    lane: &Lane<'_>,
    bed: &mut Bed<'_>,
    agent: &AgentProcess,
    case: &Case,
    step: &Step,
) -> Result<String, String> {
    bed.standing(agent, case, step)?;
    let during = lane.control_plane.api_server_down(|| {
        let took = Instant::now();
        let mut samples = 0;
        agent.poll(
            CONVERGE_DEADLINE,
            Duration::from_millis(100),
            "cniwin_netpol_api_up 0 after the API server stopped",
            || {
                samples += bed.sample(step)?;
                Ok((agent.metric(METRICS_API_UP) == Some(0.0)).then_some(()))
            },
        )?;
        let noticed = took.elapsed();
        // The agent's watches retry meanwhile; HNS keeps what it holds.
        std::thread::sleep(Duration::from_secs(3));
        samples += bed.sample(step)?;
        Ok::<_, String>((noticed, samples))
    })?;
    let (noticed, samples) = during?;
    bed.unwritten("while the API server was down, the agent", agent)?;
    Ok(format!(
        "api_up 0 {} ms after the stop, {samples} matrices sampled while down, all the case's, \
         0 HNS writes",
        noticed.as_millis(),
    ))
}

/// After the outage: the agent's watches resume (`cniwin_netpol_api_up` 1 again) and what is
/// put into the API then is programmed.
fn api_server_back(bed: &mut Bed<'_>, agent: &AgentProcess, case: &Case) -> Result<String, String> {
    let (_, build) = BUILDS[1];
    let back = Instant::now();
    agent.poll(
        RESUME_DEADLINE,
        Duration::from_millis(250),
        "cniwin_netpol_api_up 1 after the API server came back",
        || Ok((agent.metric(METRICS_API_UP) == Some(1.0)).then_some(())),
    )?;
    let resumed = back.elapsed();
    for step in &case.steps {
        bed.put(case, step)?;
        bed.converged(agent, step, build, true)?;
    }
    Ok(format!(
        "api_up 1 {} ms after the API server was ready; {} enforced after it",
        resumed.as_millis(),
        case.name
    ))
}

/// The emulated node, the cluster as the lane put it into the API, and the admin's kubectl.
struct Bed<'l> {
    lane: &'l Lane<'l>,
    dir: PathBuf,
    state: PathBuf,
    client: Client<Emulator>,
    engine: Engine,
    network: Guid,
    /// Whether the endpoints hold IPv6 addresses too; `None` before any exists.
    dual_stack: Option<bool>,
    /// Each pod's spec and addresses as the API server holds them.
    pods: BTreeMap<String, Value>,
    /// The policies in the API, `(namespace, name)`.
    policies: BTreeSet<(String, String)>,
}

impl<'l> Bed<'l> {
    fn set_up(lane: &'l Lane<'l>) -> Result<Bed<'l>, String> {
        let dir = lane.scratch.join(LABEL);
        let state = dir.join("hns");
        std::fs::create_dir_all(&state).map_err(|e| format!("{}: {e}", state.display()))?;
        let emulator = Emulator::open(&state).map_err(|e| e.to_string())?;
        let engine = emulator.engine().clone();
        let client = Client::from_box(Box::new(emulator));
        let settings = cni_win_conformance::node::network_settings(
            NETWORK,
            "L2Bridge",
            &[
                ("10.244.0.0/16", "10.244.0.1"),
                ("fd00:10:244::/48", "fd00:10:244::1"),
            ],
        );
        let network = client
            .create_network(Guid::ZERO, &settings)
            .map_err(|e| format!("cannot create {NETWORK}: {e}"))?
            .id();
        let conf_dir = dir.join("net.d");
        std::fs::create_dir_all(&conf_dir).map_err(|e| format!("{}: {e}", conf_dir.display()))?;
        let conf = json!({
            "cniVersion": "1.0.0", "name": NETWORK, "type": "win-bridge",
            "ipam": {"type": "host-local", "subnet": "10.244.0.0/16", "dataDir": dir.join("ipam")},
            "networkPolicySnapshot": dir.join("network-policy.json"),
        });
        let file = conf_dir.join("10-cbr0.conf");
        std::fs::write(&file, conf.to_string()).map_err(|e| format!("{}: {e}", file.display()))?;
        lane.control_plane.authorise_agent()?;
        let mut namespaces = Vec::new();
        for ns in netpol_truth_tables::NAMESPACES {
            namespaces.push(namespace(ns, &Default::default()));
            // No controller-manager makes it; the ServiceAccount admission wants it.
            namespaces.push(json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"namespace": ns, "name": "default"}}));
        }
        let kubectl = &lane.control_plane.kubectl;
        kubectl.apply(&json!({"apiVersion": "v1", "kind": "List", "items": namespaces}))?;
        // What another story left in these namespaces (its pods are bound to this node, and
        // no kubelet confirms a graceful deletion).
        for ns in netpol_truth_tables::NAMESPACES {
            kubectl.delete_now("pod", ns, &netpol_truth_tables::POD_NAMES)?;
            kubectl.delete_now("networkpolicy", ns, &["--all"])?;
        }
        Ok(Bed {
            lane,
            dir,
            state,
            client,
            engine,
            network,
            dual_stack: None,
            pods: BTreeMap::new(),
            policies: BTreeSet::new(),
        })
    }

    /// Puts `step` of `case` into the API (and the endpoints its addresses need into HNS).
    /// Puts `step` of `case`, waits until `agent` has programmed it (Windows Server 2025's
    /// semantics), and zeroes the count of policy writes: where a story that must not write
    /// starts.
    fn standing(&mut self, agent: &AgentProcess, case: &Case, step: &Step) -> Result<(), String> {
        let (_, build) = BUILDS[1];
        self.put(case, step)?;
        self.converged(agent, step, build, true)?;
        self.engine
            .reset_policy_writes()
            .map(drop)
            .map_err(|failure| failure.to_string())
    }

    /// Fails, naming `who`, if any policy write reached HNS since [`Bed::standing`].
    fn unwritten(&self, who: &str, agent: &AgentProcess) -> Result<(), String> {
        let writes = self
            .engine
            .policy_writes()
            .map_err(|failure| failure.to_string())?;
        if writes == PolicyWrites::default() {
            return Ok(());
        }
        Err(format!(
            "{who} wrote to HNS: {writes:?}; its log: {}",
            agent.log_tail()
        ))
    }

    fn put(&mut self, case: &Case, step: &Step) -> Result<(), String> {
        let kubectl = &self.lane.control_plane.kubectl;
        let changes = step.changes(case);
        if self.dual_stack != Some(case.dual_stack) {
            self.endpoints(case.dual_stack)?;
        }
        // A container's ports and a pod's addresses cannot change: such a pod is made again.
        let mut wanted = BTreeMap::new();
        let mut remade: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for pod in pods() {
            let object = serde_json::to_value(changes.api_pod(&pod, NODE_NAME))
                .map_err(|e| format!("{pod}: {e}"))?;
            let identity = json!([object["spec"]["containers"], object["status"]["podIPs"]]);
            match self.pods.get(&pod) {
                Some(held) if *held == identity => {}
                held => {
                    let (ns, name) = pod.split_once('/').unwrap_or_default();
                    if held.is_some() {
                        remade
                            .entry(ns.to_owned())
                            .or_default()
                            .push(name.to_owned());
                    }
                    wanted.insert(pod.clone(), (object, identity));
                }
            }
        }
        for (ns, names) in &remade {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            kubectl.delete_now("pod", ns, &names)?;
            for name in names {
                self.pods.remove(&format!("{ns}/{name}"));
            }
        }
        let step_policies: BTreeSet<(String, String)> =
            step.policies.iter().map(policy_key).collect();
        let stale: Vec<(String, String)> =
            self.policies.difference(&step_policies).cloned().collect();
        for (ns, name) in &stale {
            kubectl.delete_now("networkpolicy", ns, &[name])?;
        }
        self.policies = step_policies;
        let mut items: Vec<Value> = netpol_truth_tables::NAMESPACES
            .iter()
            .map(|ns| namespace(ns, &changes.namespace_labels(ns)))
            .collect();
        for pod in pods() {
            let mut object = serde_json::to_value(changes.api_pod(&pod, NODE_NAME))
                .map_err(|e| format!("{pod}: {e}"))?;
            if let Some(object) = object.as_object_mut() {
                object.remove("status");
            }
            object["spec"]["automountServiceAccountToken"] = json!(false);
            items.push(object);
        }
        for policy in &step.policies {
            items.push(serde_json::to_value(policy).map_err(|e| format!("a policy: {e}"))?);
        }
        kubectl.apply(&json!({"apiVersion": "v1", "kind": "List", "items": items}))?;
        for (pod, (object, identity)) in wanted {
            let (ns, name) = pod.split_once('/').unwrap_or_default();
            kubectl.replace_raw(
                &format!("/api/v1/namespaces/{ns}/pods/{name}/status"),
                &object,
            )?;
            self.pods.insert(pod, identity);
        }
        Ok(())
    }

    /// The nine endpoints ADD would have made, with the case's address families.
    fn endpoints(&mut self, dual_stack: bool) -> Result<(), String> {
        for endpoint in self
            .client
            .list_endpoints(None)
            .map_err(|e| e.to_string())?
        {
            self.client
                .delete_endpoint(endpoint.id)
                .map_err(|e| e.to_string())?;
        }
        let network = self
            .client
            .open_network(self.network)
            .map_err(|e| e.to_string())?;
        for pod in pods() {
            let settings = HostComputeEndpoint {
                name: format!("{NETWORK}_{}", pod.replace('/', "-")),
                ip_configurations: pod_ips(&pod, dual_stack)
                    .into_iter()
                    .map(|ip_address| IpConfig {
                        ip_address,
                        prefix_length: None,
                    })
                    .collect(),
                ..HostComputeEndpoint::default()
            };
            network
                .create_endpoint(Guid::ZERO, &settings)
                .map_err(|e| format!("{pod}'s endpoint: {e}"))?;
        }
        self.dual_stack = Some(dual_stack);
        Ok(())
    }

    /// Waits until every probe of `step` gets the case's verdicts under `build`, and they
    /// stay so.
    fn converged(
        &self,
        agent: &AgentProcess,
        step: &Step,
        build: WindowsBuild,
        settle: bool,
    ) -> Result<(), String> {
        self.engine
            .set_windows_build(build)
            .map_err(|failure| failure.to_string())?;
        let deadline = Instant::now() + CONVERGE_DEADLINE;
        loop {
            let wrong = self.first_wrong(step)?;
            if wrong.is_none() {
                if !settle {
                    return Ok(());
                }
                std::thread::sleep(STILL);
                match self.first_wrong(step)? {
                    None => return Ok(()),
                    Some(wrong) => return Err(format!("a matrix changed after matching: {wrong}")),
                }
            }
            agent.running()?;
            if Instant::now() >= deadline {
                return Err(format!(
                    "not the case's within {} s: {}",
                    CONVERGE_DEADLINE.as_secs(),
                    wrong.unwrap_or_default()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Every probe's matrix, once; an error naming the first that is not the case's.
    fn sample(&self, step: &Step) -> Result<usize, String> {
        match self.first_wrong(step)? {
            None => Ok(step.probes.len()),
            Some(wrong) => Err(format!("a verdict changed: {wrong}")),
        }
    }

    /// The first probe whose matrix is not the case's, printed.
    fn first_wrong(&self, step: &Step) -> Result<Option<String>, String> {
        for probe in &step.probes {
            let expected = probe.expected()?;
            let actual = self.matrix(probe, &expected)?;
            if actual != expected {
                return Ok(Some(format!(
                    "{}: expected\n{}actual\n{}",
                    probe.label(),
                    netpol_truth_tables::print(&expected),
                    netpol_truth_tables::print(&actual)
                )));
            }
        }
        Ok(None)
    }

    /// The emulator's verdict on each connection `expected` names.
    fn matrix(&self, probe: &Probe, expected: &Matrix) -> Result<Matrix, String> {
        let mut actual = Matrix::new();
        for (from, to) in expected.keys() {
            let packet = probe.packet(from, to)?;
            let verdict = self
                .engine
                .check_packet(&packet)
                .map_err(|failure| failure.to_string())?
                .verdict()
                .map_err(|tie| tie.to_string())?;
            actual.insert((from.clone(), to.clone()), verdict);
        }
        Ok(actual)
    }
}

fn namespace(name: &str, labels: &BTreeMap<String, String>) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
}

fn policy_key(policy: &NetworkPolicy) -> (String, String) {
    (
        policy.metadata.namespace.clone().unwrap_or_default(),
        policy.metadata.name.clone().unwrap_or_default(),
    )
}

const METRICS_API_UP: &str = "cniwin_netpol_api_up";
const METRICS_SYNCED: &str = "cniwin_netpol_synced";
const METRICS_PROGRAMMED: &str = "cniwin_netpol_endpoints{state=\"programmed\"}";

/// Starts the agent: the Linux build, on the bed's emulator state.
fn start_agent(lane: &Lane<'_>, bed: &Bed<'_>) -> Result<AgentProcess, String> {
    let launch = Launch::native(
        lane.linux_bin.join("cni-win").as_path(),
        &bed.state,
        bed.dir.clone(),
        bed.dir.join("net.d"),
        bed.dir.join("bin"),
    );
    AgentProcess::start(lane.control_plane, launch)
}
