//! The truth tables' bed: an emulated node (a native HCN emulator state with `cbr0` and the
//! nine pods' endpoints, its conflist naming the snapshot, and, for a case's Services, the
//! load balancers kube-proxy would make), the cluster as the story put it into the API
//! server, and the verdicts the emulator gives on the rules the agent programmed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hns::schema::policy::protocol;
use hns::schema::{
    HostComputeEndpoint, HostComputeLoadBalancer, IpConfig, LoadBalancerFlags,
    LoadBalancerPortMapping,
};
use hns::{Client, Guid, HnsVersion, WindowsBuild};
use hns_emulator::acl::PolicyWrites;
use hns_emulator::{Emulator, Engine};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use netpol_truth_tables::{
    Case, Changes, Matrix, Outcome, Outcomes, Probe, ServiceProbe, Step, pod_ips, pods,
};
use node_lane::NODE_NAME;
use node_lane::agent_process::{AgentProcess, Launch};
use serde_json::{Value, json};

use super::{BUILDS, CONVERGE_DEADLINE, NAME, STILL};
use crate::lane::Lane;

/// The network the pods are on, in HNS and in the conflist.
const NETWORK: &str = "cbr0";

/// The emulated node, and the cluster as the story put it into the API.
pub struct Bed<'l> {
    lane: &'l Lane,
    dir: PathBuf,
    state: PathBuf,
    client: Client<Emulator>,
    engine: Engine,
    network: Guid,
    /// Whether the endpoints hold IPv6 addresses too; `None` before any exists.
    dual_stack: Option<bool>,
    /// Each pod's endpoint.
    endpoint_ids: BTreeMap<String, Guid>,
    /// Each pod's spec and addresses as the API server holds them.
    pods: BTreeMap<String, Value>,
    /// The policies in the API, `(namespace, name)`.
    policies: BTreeSet<(String, String)>,
}

impl<'l> Bed<'l> {
    /// A fresh emulator state with `cbr0` under the story's directory and its conflist; the
    /// cases' namespaces in the API, and the agent's ServiceAccount authorised.
    pub fn set_up(lane: &'l Lane) -> Result<Bed<'l>, String> {
        let dir = lane.scratch.join(NAME);
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
        Ok(Bed {
            lane,
            dir,
            state,
            client,
            engine,
            network,
            dual_stack: None,
            endpoint_ids: BTreeMap::new(),
            pods: BTreeMap::new(),
            policies: BTreeSet::new(),
        })
    }

    /// Deletes the story's pods (at once: they are bound to the node, and no kubelet confirms a
    /// graceful deletion) and its policies, which any later agent on the node would see.
    pub fn tear_down(&self) -> Result<(), String> {
        let kubectl = &self.lane.control_plane.kubectl;
        for ns in netpol_truth_tables::NAMESPACES {
            kubectl.delete_now("pod", ns, &netpol_truth_tables::POD_NAMES)?;
            kubectl.delete_now("networkpolicy", ns, &["--all"])?;
        }
        Ok(())
    }

    /// Has the emulated host report `version`, which decides the agent's mode when it starts.
    pub fn set_hns_version(&self, version: HnsVersion) -> Result<(), String> {
        self.engine
            .set_version(version)
            .map_err(|failure| failure.to_string())
    }

    /// The lane the bed is on.
    pub fn lane(&self) -> &'l Lane {
        self.lane
    }

    /// Starts the agent on the node: the Linux build, on the bed's emulator state.
    pub fn start_agent(&self) -> Result<AgentProcess, String> {
        let launch = Launch::native(
            &self.lane.cni_win,
            &self.state,
            self.dir.clone(),
            self.dir.join("net.d"),
            self.dir.join("bin"),
        );
        AgentProcess::start(&self.lane.control_plane, launch)
    }

    /// Puts `step` of `case`, waits until `agent` has programmed it (Windows Server 2025's
    /// semantics), and zeroes the count of policy writes: where a story that must not write
    /// starts.
    pub fn standing(
        &mut self,
        agent: &AgentProcess,
        case: &Case,
        step: &Step,
    ) -> Result<(), String> {
        let (_, build) = BUILDS[1];
        self.put(case, step)?;
        self.converged(agent, case, step, build, true)?;
        self.engine
            .reset_policy_writes()
            .map(drop)
            .map_err(|failure| failure.to_string())
    }

    /// Fails, naming `who`, if any policy write reached HNS since [`Bed::standing`].
    pub fn unwritten(&self, who: &str, agent: &AgentProcess) -> Result<(), String> {
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

    /// Puts `step` of `case` into the API (and the endpoints its addresses need into HNS).
    pub fn put(&mut self, case: &Case, step: &Step) -> Result<(), String> {
        let kubectl = &self.lane.control_plane.kubectl;
        let changes = step.changes(case);
        if self.dual_stack != Some(case.dual_stack) {
            self.endpoints(case.dual_stack)?;
        }
        self.load_balancers(case, &changes)?;
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
            let endpoint = network
                .create_endpoint(Guid::ZERO, &settings)
                .map_err(|e| format!("{pod}'s endpoint: {e}"))?;
            self.endpoint_ids.insert(pod, endpoint.id());
        }
        self.dual_stack = Some(dual_stack);
        Ok(())
    }

    /// The load balancers kube-proxy (with DSR, as the manifests run it) would make for the
    /// case's Services over the pods their selectors pick at this step, in place of the
    /// previous step's.
    fn load_balancers(&self, case: &Case, changes: &Changes) -> Result<(), String> {
        for balancer in self
            .client
            .list_load_balancers()
            .map_err(|e| e.to_string())?
        {
            self.client
                .delete_load_balancer(balancer.id)
                .map_err(|e| e.to_string())?;
        }
        for service in &case.services {
            let backends: Vec<Guid> = service
                .backends(changes)
                .iter()
                .filter_map(|pod| self.endpoint_ids.get(pod).copied())
                .collect();
            if backends.is_empty() {
                continue;
            }
            let mut port_mappings = Vec::new();
            for port in &service.ports {
                let number = protocol::number(&port.protocol)
                    .ok_or_else(|| format!("{}: protocol {}", service.name, port.protocol))?;
                port_mappings.push(LoadBalancerPortMapping {
                    protocol: number,
                    internal_port: port.target_port.unwrap_or(port.port),
                    external_port: port.port,
                    ..LoadBalancerPortMapping::default()
                });
            }
            let settings = HostComputeLoadBalancer {
                host_compute_endpoints: backends,
                frontend_vips: vec![service.cluster_ip],
                port_mappings,
                flags: LoadBalancerFlags::DSR,
                ..HostComputeLoadBalancer::default()
            };
            self.client
                .create_load_balancer(Guid::ZERO, &settings)
                .map_err(|e| format!("{}'s load balancer: {e}", service.name))?;
        }
        Ok(())
    }

    /// Waits until every probe of `step` gets the case's verdicts under `build`, and they
    /// stay so.
    pub fn converged(
        &self,
        agent: &AgentProcess,
        case: &Case,
        step: &Step,
        build: WindowsBuild,
        settle: bool,
    ) -> Result<(), String> {
        self.engine
            .set_windows_build(build)
            .map_err(|failure| failure.to_string())?;
        let deadline = Instant::now() + CONVERGE_DEADLINE;
        loop {
            let wrong = self.first_wrong(case, step)?;
            if wrong.is_none() {
                if !settle {
                    return Ok(());
                }
                std::thread::sleep(STILL);
                match self.first_wrong(case, step)? {
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
    pub fn sample(&self, case: &Case, step: &Step) -> Result<usize, String> {
        match self.first_wrong(case, step)? {
            None => Ok(step.probes.len() + step.service_probes.len()),
            Some(wrong) => Err(format!("a verdict changed: {wrong}")),
        }
    }

    /// The first probe whose matrix (or service probe whose column) is not the case's,
    /// printed.
    fn first_wrong(&self, case: &Case, step: &Step) -> Result<Option<String>, String> {
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
        for probe in &step.service_probes {
            let expected = probe.expected()?;
            let actual = self.column(case, probe, &expected)?;
            if actual != expected {
                return Ok(Some(format!(
                    "{}: expected\n{}actual\n{}",
                    probe.label(),
                    netpol_truth_tables::print_column(&probe.service, &expected),
                    netpol_truth_tables::print_column(&probe.service, &actual)
                )));
            }
        }
        Ok(None)
    }

    /// What the emulator makes of each connection `expected` names, through the Service's load
    /// balancer: a verdict, or its refusal.
    fn column(
        &self,
        case: &Case,
        probe: &ServiceProbe,
        expected: &Outcomes,
    ) -> Result<Outcomes, String> {
        let service = case.service(&probe.service)?;
        let mut actual = Outcomes::new();
        for from in expected.keys() {
            let path = self
                .engine
                .check_packet(&probe.packet(from, service)?)
                .map_err(|failure| failure.to_string())?;
            actual.insert(from.clone(), Outcome::of(path.verdict()));
        }
        Ok(actual)
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
                .map_err(|undocumented| undocumented.to_string())?;
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
