//! One node's story, told twice (Flannel vxlan's overlay, Flannel host-gw's L2Bridge): the
//! network made as flanneld makes it, pods attached by cni-win's plugin as containerd would,
//! Services through the API, and kube-proxy.exe programming HNS load balancers over them; then
//! a pod deleted, the runtime's GC, `cni-win sweep --apply`, `cni-win doctor` and a kube-proxy
//! restart, each judged by what HNS holds afterwards.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hns::Guid;
use hns::schema::{
    EndpointFlags, HostComputeEndpoint, HostComputeLoadBalancer, IpPrefix, MacAddress,
};
use serde_json::{Value, json};

use crate::kube_proxy::KubeProxy;
use crate::node::{Node, Pod};
use crate::report::Report;
use crate::services::Service;
use node_lane::control_plane::ControlPlane;

/// kube-proxy programs a change within a sync or two (1 s apart at the least); under Wine on a
/// loaded 2-core machine its first sync after start can take tens of seconds.
const SYNC_DEADLINE: Duration = Duration::from_secs(180);
const POLL: Duration = Duration::from_secs(1);

/// What differs between the two Flannel backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Flannel vxlan: `flannel.4096`, `win-overlay`, kube-proxy with a source VIP.
    Vxlan,
    /// Flannel host-gw: `cbr0`, `win-bridge`, kube-proxy on the node IP.
    HostGw,
}

impl Backend {
    /// The report's name for the node.
    pub fn label(self) -> &'static str {
        match self {
            Backend::Vxlan => "overlay",
            Backend::HostGw => "l2bridge",
        }
    }

    fn network(self) -> &'static str {
        match self {
            Backend::Vxlan => "flannel.4096",
            Backend::HostGw => "cbr0",
        }
    }

    pub(crate) fn plugin(self) -> &'static str {
        match self {
            Backend::Vxlan => "win-overlay",
            Backend::HostGw => "win-bridge",
        }
    }
}

/// What every scenario shares.
#[derive(Debug)]
pub struct Lane<'a> {
    pub kube_bin: &'a Path,
    pub windows_bin: &'a Path,
    /// cni-win's Linux binaries (the NetworkPolicy agent of the truth tables).
    pub linux_bin: &'a Path,
    pub scratch: &'a Path,
    /// flanneld's documents (the emulator's test data, whose addresses are the lane's node's).
    pub flanneld: &'a Path,
    pub node_ip: &'a str,
    pub node_address: IpPrefix,
    pub node_mac: MacAddress,
    pub control_plane: &'a ControlPlane,
}

/// The remote node's pod an overlay Service reaches through a remote endpoint.
const REMOTE_POD: &str = "10.244.2.10";

/// Runs the story on a fresh node with `backend` and records every check in `report`.
pub fn run(lane: &Lane<'_>, backend: Backend, report: &mut Report) {
    let label = backend.label();
    let mut story = match Story::set_up(lane, backend, report) {
        Ok(story) => story,
        Err(why) => {
            report.record(label, "set-up", Err(why));
            return;
        }
    };
    story.tell(report);
    story.tear_down(report);
}

/// One node while the story runs.
struct Story<'a> {
    lane: &'a Lane<'a>,
    backend: Backend,
    node: Node,
    config: Value,
    pods: Vec<Pod>,
    proxy_flags: Vec<String>,
    proxy: Option<KubeProxy>,
    proxy_log: PathBuf,
    services: Vec<Service>,
    /// The source VIP kube-proxy balances from on the overlay.
    source_vip: Option<IpAddr>,
}

impl<'a> Story<'a> {
    fn set_up(
        lane: &'a Lane<'a>,
        backend: Backend,
        report: &mut Report,
    ) -> Result<Story<'a>, String> {
        let label = backend.label();
        let node = Node::new(lane.windows_bin, &lane.scratch.join(label))?;
        node.set_host_adapter(lane.node_address, lane.node_mac)?;
        report.record(
            label,
            "flanneld makes the network",
            flanneld(lane, backend, &node),
        );
        let config = write_config(&node, backend)?;
        let (proxy_flags, source_vip) = match backend {
            Backend::Vxlan => {
                let outcome = source_vip_flags(&node);
                let flags = outcome.clone().map(|(flags, _)| flags);
                report.record(
                    label,
                    "cni-win source-vip reserves kube-proxy's VIP",
                    outcome.map(|(flags, vip)| format!("{vip}; flags {}", flags.join(" "))),
                );
                let flags = flags?;
                let vip = flags
                    .iter()
                    .find_map(|flag| flag.strip_prefix("--source-vip="))
                    .and_then(|vip| vip.parse().ok());
                (flags, vip)
            }
            Backend::HostGw => (vec![format!("--network-name={}", backend.network())], None),
        };
        let proxy_log = node.dir().join("logs").join("kube-proxy.log");
        Ok(Story {
            lane,
            backend,
            node,
            config,
            pods: Vec::new(),
            proxy_flags,
            proxy: None,
            proxy_log,
            services: Vec::new(),
            source_vip,
        })
    }

    fn tell(&mut self, report: &mut Report) {
        let label = self.backend.label();
        let attached = self.attach_pods();
        report.record(label, "pods attached by the plugin", attached);
        if self.pods.len() < 3 {
            return;
        }
        report.record(
            label,
            "kube-proxy starts in kernelspace mode",
            self.start_proxy(),
        );
        if self.proxy.is_none() {
            return;
        }
        if self.backend == Backend::Vxlan {
            report.record(
                label,
                "kube-proxy's source VIP endpoint",
                self.source_vip_endpoint(),
            );
        }
        self.services = self.services();
        report.record(
            label,
            "Services and Endpoints through the API",
            self.apply_services(),
        );
        let programmed = self.wait_for_balancers();
        for outcome in &programmed {
            report.record(label, &outcome.0, outcome.1.clone());
        }
        if programmed.iter().any(|(_, outcome)| outcome.is_err()) {
            return;
        }
        report.record(
            label,
            "a deleted pod leaves its load balancer",
            self.delete_pod(),
        );
        let before = self.kube_proxy_objects();
        report.record(
            label,
            "the runtime's GC leaves kube-proxy's objects",
            self.gc(&before),
        );
        report.record(
            label,
            "cni-win sweep --apply leaves them",
            self.sweep(&before),
        );
        report.record(
            label,
            "cni-win doctor: healthy, load balancers seen",
            self.doctor(),
        );
        report.record(
            label,
            "kube-proxy restarted finds its load balancers",
            self.restart_proxy(&before),
        );
    }

    fn tear_down(&mut self, report: &mut Report) {
        self.proxy = None;
        let mut failures = Vec::new();
        for service in &self.services {
            for kind in ["service", "endpoints", "endpointslice"] {
                let name = if kind == "endpointslice" {
                    format!("{}-lane", service.name)
                } else {
                    service.name.to_owned()
                };
                if let Err(why) = self
                    .lane
                    .control_plane
                    .kubectl
                    .delete(kind, "default", &name)
                {
                    failures.push(why);
                }
            }
        }
        for pod in std::mem::take(&mut self.pods) {
            if let Err(why) = self.node.del_pod(self.backend.plugin(), &self.config, &pod) {
                failures.push(why);
            }
        }
        if !failures.is_empty() {
            report.record(self.backend.label(), "tear-down", Err(failures.join("; ")));
        }
    }

    fn attach_pods(&mut self) -> Result<String, String> {
        for name in ["web-1", "web-2", "dns-1"] {
            let pod = self
                .node
                .add_pod(self.backend.plugin(), &self.config, name)?;
            self.pods.push(pod);
        }
        Ok(self
            .pods
            .iter()
            .map(|pod| format!("{} {}", pod.name, pod.ip))
            .collect::<Vec<_>>()
            .join(", "))
    }

    fn start_proxy(&mut self) -> Result<String, String> {
        let kubeconfig = self.node.dir().join("kube-proxy.kubeconfig");
        self.lane
            .control_plane
            .write_proxy_kubeconfig(&kubeconfig, |path| self.node.windows_path(path))?;
        let mut proxy = KubeProxy::start(
            &self.node,
            self.lane.kube_bin,
            &kubeconfig,
            self.lane.node_ip,
            &self.proxy_flags,
            &self.proxy_log,
        )?;
        let deadline = Instant::now() + SYNC_DEADLINE;
        loop {
            match proxy.kernel_proxier() {
                Some(true) => {
                    self.proxy = Some(proxy);
                    return Ok(
                        "\"Using Kernelspace Proxier\" (HNS answered GET /policylists/)".to_owned(),
                    );
                }
                Some(false) => {
                    return Err(format!(
                        "kube-proxy fell back to its userspace proxier: {}",
                        proxy.log_tail()
                    ));
                }
                None if !proxy.running() || Instant::now() >= deadline => {
                    return Err(format!("kube-proxy did not start: {}", proxy.log_tail()));
                }
                None => std::thread::sleep(POLL),
            }
        }
    }

    /// kube-proxy's own endpoint on the VIP: local, nameless, with the host's MAC.
    fn source_vip_endpoint(&mut self) -> Result<String, String> {
        let vip = self.source_vip.ok_or("no source VIP was reserved")?;
        let endpoint =
            self.wait(|endpoints, _| Ok(endpoints.iter().find(|e| holds(e, vip)).cloned()))?;
        if endpoint.flags.contains(EndpointFlags::REMOTE_ENDPOINT) || !endpoint.name.is_empty() {
            return Err(format!(
                "the endpoint holding {vip} is not kube-proxy's local nameless one: {endpoint:?}"
            ));
        }
        Ok(format!(
            "local endpoint {} on {vip}, MAC {}",
            endpoint.id,
            endpoint
                .mac_address
                .map(|mac| mac.to_string())
                .unwrap_or_default()
        ))
    }

    fn services(&self) -> Vec<Service> {
        let ip = |pod: &Pod| pod.ip;
        let (web, dns) = (&self.pods[..2], &self.pods[2]);
        let remote: Vec<IpAddr> = vec![REMOTE_POD.parse().expect("a literal address")];
        vec![
            Service {
                name: "web",
                cluster_ip: "10.96.0.100".parse().expect("a literal address"),
                protocol: "TCP",
                port: 80,
                target_port: 8080,
                node_port: None,
                local: web.iter().map(ip).collect(),
                remote: remote.clone(),
            },
            Service {
                name: "dns",
                cluster_ip: "10.96.0.10".parse().expect("a literal address"),
                protocol: "UDP",
                port: 53,
                target_port: 53,
                node_port: None,
                local: vec![dns.ip],
                remote: Vec::new(),
            },
            Service {
                name: "web-nodeport",
                cluster_ip: "10.96.0.101".parse().expect("a literal address"),
                protocol: "TCP",
                port: 80,
                target_port: 8080,
                node_port: Some(30080),
                local: vec![web[0].ip],
                remote: Vec::new(),
            },
        ]
    }

    fn apply_services(&self) -> Result<String, String> {
        for service in &self.services {
            self.lane.control_plane.kubectl.apply(&service.objects())?;
        }
        Ok(self
            .services
            .iter()
            .map(|s| {
                let node_port = s
                    .node_port
                    .map(|p| format!(" nodePort {p}"))
                    .unwrap_or_default();
                format!(
                    "{} {}:{}/{}{node_port} → {} backend(s)",
                    s.name,
                    s.cluster_ip,
                    s.port,
                    s.protocol,
                    s.backends().count()
                )
            })
            .collect::<Vec<_>>()
            .join("; "))
    }

    /// Waits until HNS holds exactly the load balancers the Services ask for, then judges
    /// each one; a check per Service plus one for the total.
    fn wait_for_balancers(&mut self) -> Vec<(String, Result<String, String>)> {
        let expected = match self.expected_balancers_now() {
            Ok(expected) => expected,
            Err(why) => return vec![("load balancers".to_owned(), Err(why))],
        };
        let settled = self.wait(|endpoints, balancers| {
            let all = expected
                .iter()
                .all(|want| judge(want, endpoints, balancers).is_ok());
            Ok((all && balancers.len() == expected.len()).then_some(()))
        });
        let (endpoints, balancers) = match self.read() {
            Ok(read) => read,
            Err(why) => return vec![("load balancers".to_owned(), Err(why))],
        };
        let mut outcomes: Vec<(String, Result<String, String>)> = expected
            .iter()
            .map(|want| (want.check.clone(), judge(want, &endpoints, &balancers)))
            .collect();
        outcomes.push((
            "no other load balancer".to_owned(),
            match settled {
                Ok(()) => Ok(format!(
                    "{} load balancers, {} expected",
                    balancers.len(),
                    expected.len()
                )),
                Err(why) => Err(format!(
                    "{} load balancers, {} expected ({why}); kube-proxy: {}",
                    balancers.len(),
                    expected.len(),
                    self.proxy
                        .as_ref()
                        .map(KubeProxy::log_tail)
                        .unwrap_or_default()
                )),
            },
        ));
        outcomes
    }

    /// What kube-proxy must program for the Services as they are now: a load balancer per
    /// Service port on its ClusterIP, one more per NodePort, and the API server's own
    /// `kubernetes` Service.
    fn expected_balancers_now(&self) -> Result<Vec<Expected>, String> {
        let pod_source = match self.backend {
            Backend::Vxlan => self.source_vip,
            // kube-proxy 1.20 sets no source VIP on an L2Bridge network.
            Backend::HostGw => None,
        };
        let node_ip: IpAddr = self
            .lane
            .node_ip
            .parse()
            .map_err(|error| format!("node IP: {error}"))?;
        let mut expected = vec![Expected {
            check: "Service kubernetes (the API server)".to_owned(),
            frontend: Some("10.96.0.1".parse().expect("a literal address")),
            protocol: 6,
            internal_port: 6443,
            external_port: 443,
            backends: vec![node_ip],
            source_vip: match self.backend {
                // An address outside every pod subnet is balanced from the node's own address.
                Backend::Vxlan => Some(node_ip),
                Backend::HostGw => None,
            },
        }];
        for service in &self.services {
            let backends: Vec<IpAddr> = service.backends().collect();
            expected.push(Expected {
                check: format!(
                    "Service {} ({}:{}/{} → {})",
                    service.name,
                    service.cluster_ip,
                    service.port,
                    service.protocol,
                    service.target_port
                ),
                frontend: Some(service.cluster_ip),
                protocol: service.protocol_number(),
                internal_port: service.target_port,
                external_port: service.port,
                backends: backends.clone(),
                source_vip: pod_source,
            });
            if let Some(node_port) = service.node_port {
                expected.push(Expected {
                    check: format!("Service {} (NodePort {node_port})", service.name),
                    frontend: None,
                    protocol: service.protocol_number(),
                    internal_port: service.target_port,
                    external_port: node_port,
                    backends,
                    source_vip: pod_source,
                });
            }
        }
        Ok(expected)
    }

    fn delete_pod(&mut self) -> Result<String, String> {
        let pod = self.pods.remove(1);
        self.node
            .del_pod(self.backend.plugin(), &self.config, &pod)?;
        for service in &mut self.services {
            service.local.retain(|ip| *ip != pod.ip);
            self.lane.control_plane.kubectl.apply(&service.objects())?;
        }
        let web = self
            .expected_balancers_now()?
            .into_iter()
            .find(|want| want.frontend == Some(self.services[0].cluster_ip))
            .ok_or("no expectation for the web Service")?;
        self.wait(|endpoints, balancers| Ok(judge(&web, endpoints, balancers).ok()))
            .map(|saw| format!("{} DEL'd and left web's Endpoints: {saw}", pod.ip))
    }

    fn gc(&self, before: &Result<KubeProxyObjects, String>) -> Result<String, String> {
        let alive: Vec<&Pod> = self.pods.iter().collect();
        self.node.gc(self.backend.plugin(), &self.config, &alive)?;
        self.unchanged(before, "GC")
    }

    fn sweep(&self, before: &Result<KubeProxyObjects, String>) -> Result<String, String> {
        let conf_dir = self.node.windows_path(&self.node.dir().join("net.d"));
        let out = self
            .node
            .tool("cni-win", &["sweep", "--apply", "--conf-dir", &conf_dir])?;
        self.unchanged(before, "sweep --apply")
            .map(|saw| format!("{saw}; sweep said: {}", first_line(&out)))
    }

    fn doctor(&self) -> Result<String, String> {
        let conf_dir = self.node.windows_path(&self.node.dir().join("net.d"));
        let bin_dir = self.node.windows_path(self.lane.windows_bin);
        let out = self
            .node
            .tool(
                "cni-win",
                &[
                    "doctor",
                    "--json",
                    "--conf-dir",
                    &conf_dir,
                    "--bin-dir",
                    &bin_dir,
                ],
            )
            .map_err(|failed| format!("doctor found the node unhealthy: {failed}"))?;
        let report: Value =
            serde_json::from_str(&out).map_err(|error| format!("doctor --json: {error}"))?;
        let findings = report["findings"].as_array().cloned().unwrap_or_default();
        let bad: Vec<String> = findings
            .iter()
            .filter(|f| f["verdict"] != "pass")
            .map(|f| format!("{} {}: {}", f["verdict"], f["check"], f["evidence"]))
            .collect();
        if report["healthy"] != true || !bad.is_empty() {
            return Err(format!("doctor: {}", bad.join("; ")));
        }
        let balancers = findings
            .iter()
            .find(|f| {
                f["check"]
                    .as_str()
                    .is_some_and(|c| c.ends_with("load balancers"))
            })
            .map(|f| f["evidence"].as_str().unwrap_or_default().to_owned());
        match (self.backend, balancers) {
            (Backend::Vxlan, None) => {
                Err("doctor ran no kube-proxy load-balancer check".to_owned())
            }
            (_, balancers) => Ok(format!(
                "{} checks pass{}",
                findings.len(),
                balancers
                    .map(|b| format!("; load balancers: {b}"))
                    .unwrap_or_default()
            )),
        }
    }

    /// kube-proxy deletes every load balancer when it starts (its V1 policy-list clean-up) and
    /// programs them again: after a restart the same Services are balanced over the same
    /// endpoints, under new IDs, none twice and none missing.
    fn restart_proxy(
        &mut self,
        before: &Result<KubeProxyObjects, String>,
    ) -> Result<String, String> {
        let before = before.as_ref().map_err(Clone::clone)?;
        self.proxy = None;
        self.start_proxy()?;
        let expected = self.expected_balancers_now()?;
        self.wait(|endpoints, balancers| {
            let all = expected
                .iter()
                .all(|want| judge(want, endpoints, balancers).is_ok());
            let fresh = balancers.iter().all(|b| !before.balancers.contains(&b.id));
            Ok((all && fresh && balancers.len() == expected.len()).then_some(()))
        })?;
        let after = self.kube_proxy_objects()?;
        if after.programming != before.programming || after.endpoints != before.endpoints {
            return Err(format!("before {before:?}, after {after:?}"));
        }
        Ok(format!(
            "{} load balancers programmed again under new IDs, the same {} kube-proxy endpoints",
            after.balancers.len(),
            after.endpoints.len()
        ))
    }

    /// The load balancers and kube-proxy's own endpoints (every nameless endpoint no pod of
    /// ours holds).
    fn kube_proxy_objects(&self) -> Result<KubeProxyObjects, String> {
        let (endpoints, balancers) = self.read()?;
        let pods: BTreeSet<IpAddr> = self.pods.iter().map(|pod| pod.ip).collect();
        Ok(KubeProxyObjects {
            balancers: balancers.iter().map(|b| b.id).collect(),
            programming: balancers.iter().map(Programmed::of).collect(),
            endpoints: endpoints
                .iter()
                .filter(|e| {
                    !e.ip_configurations
                        .iter()
                        .any(|c| pods.contains(&c.ip_address))
                })
                .filter(|e| e.name.is_empty())
                .map(|e| e.id)
                .collect(),
        })
    }

    fn unchanged(
        &self,
        before: &Result<KubeProxyObjects, String>,
        what: &str,
    ) -> Result<String, String> {
        let before = before.as_ref().map_err(Clone::clone)?;
        let after = self.kube_proxy_objects()?;
        if &after == before {
            Ok(format!(
                "after {what}: the same {} load balancers and {} kube-proxy endpoints",
                after.balancers.len(),
                after.endpoints.len()
            ))
        } else {
            Err(format!("after {what}: before {before:?}, after {after:?}"))
        }
    }

    fn read(&self) -> Result<(Vec<HostComputeEndpoint>, Vec<HostComputeLoadBalancer>), String> {
        Ok((self.node.endpoints()?, self.node.load_balancers()?))
    }

    /// Polls HNS (through `hnsctl.exe`) until `probe` yields, or fails at the deadline with
    /// what kube-proxy last logged.
    fn wait<T>(
        &mut self,
        mut probe: impl FnMut(
            &[HostComputeEndpoint],
            &[HostComputeLoadBalancer],
        ) -> Result<Option<T>, String>,
    ) -> Result<T, String> {
        let deadline = Instant::now() + SYNC_DEADLINE;
        loop {
            let (endpoints, balancers) = self.read()?;
            if let Some(value) = probe(&endpoints, &balancers)? {
                return Ok(value);
            }
            if let Some(proxy) = self.proxy.as_mut()
                && !proxy.running()
            {
                return Err(format!("kube-proxy exited: {}", proxy.log_tail()));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "not within {} s; kube-proxy: {}",
                    SYNC_DEADLINE.as_secs(),
                    self.proxy
                        .as_ref()
                        .map(KubeProxy::log_tail)
                        .unwrap_or_default()
                ));
            }
            std::thread::sleep(POLL);
        }
    }
}

/// kube-proxy's HNS objects, compared before and after an operation that must leave them.
#[derive(Debug, Clone, PartialEq, Eq)]
struct KubeProxyObjects {
    balancers: BTreeSet<Guid>,
    /// What the load balancers do, whatever their IDs.
    programming: BTreeSet<Programmed>,
    endpoints: BTreeSet<Guid>,
}

/// One load balancer's programming: frontend, port mapping, source VIP and backends.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Programmed {
    frontends: Vec<IpAddr>,
    ports: Vec<(u32, u16, u16)>,
    source_vip: Option<IpAddr>,
    backends: BTreeSet<Guid>,
}

impl Programmed {
    fn of(balancer: &HostComputeLoadBalancer) -> Programmed {
        Programmed {
            frontends: balancer.frontend_vips.clone(),
            ports: balancer
                .port_mappings
                .iter()
                .map(|m| (m.protocol, m.internal_port, m.external_port))
                .collect(),
            source_vip: balancer.source_vip,
            backends: balancer.host_compute_endpoints.iter().copied().collect(),
        }
    }
}

/// One load balancer kube-proxy must have programmed.
#[derive(Debug, Clone)]
struct Expected {
    check: String,
    frontend: Option<IpAddr>,
    protocol: u32,
    internal_port: u16,
    external_port: u16,
    /// The backends' addresses: each must be one endpoint of the balancer, local for this
    /// node's pods, remote for another node's.
    backends: Vec<IpAddr>,
    source_vip: Option<IpAddr>,
}

/// Whether exactly one load balancer matches `want` and its backends are exactly the
/// endpoints holding `want`'s addresses; what it saw, or why not.
fn judge(
    want: &Expected,
    endpoints: &[HostComputeEndpoint],
    balancers: &[HostComputeLoadBalancer],
) -> Result<String, String> {
    let matching: Vec<&HostComputeLoadBalancer> = balancers
        .iter()
        .filter(|b| b.frontend_vips.first().copied() == want.frontend)
        .filter(|b| {
            b.port_mappings.first().is_some_and(|m| {
                m.protocol == want.protocol && m.external_port == want.external_port
            })
        })
        .collect();
    let balancer = match matching.as_slice() {
        [one] => *one,
        [] => return Err("no load balancer for it".to_owned()),
        many => return Err(format!("{} load balancers for it (duplicates)", many.len())),
    };
    let mapping = &balancer.port_mappings[0];
    if mapping.internal_port != want.internal_port {
        return Err(format!(
            "load balancer {} maps to port {}, not {}",
            balancer.id, mapping.internal_port, want.internal_port
        ));
    }
    let mut wanted = BTreeSet::new();
    for ip in &want.backends {
        let endpoint = endpoints
            .iter()
            .find(|e| holds(e, *ip))
            .ok_or_else(|| format!("no endpoint holds backend {ip}"))?;
        wanted.insert(endpoint.id);
    }
    let actual: BTreeSet<Guid> = balancer.host_compute_endpoints.iter().copied().collect();
    if actual != wanted || actual.len() != balancer.host_compute_endpoints.len() {
        return Err(format!(
            "load balancer {} has backends {:?}, the Service's endpoints are {:?}",
            balancer.id, balancer.host_compute_endpoints, wanted
        ));
    }
    if want.source_vip.is_some() && balancer.source_vip != want.source_vip {
        return Err(format!(
            "load balancer {} has source VIP {:?}, not {:?}",
            balancer.id, balancer.source_vip, want.source_vip
        ));
    }
    let describe = |ip: &IpAddr| {
        let remote = endpoints
            .iter()
            .find(|e| holds(e, *ip))
            .is_some_and(|e| e.flags.contains(EndpointFlags::REMOTE_ENDPOINT));
        format!("{ip}{}", if remote { " (remote)" } else { "" })
    };
    Ok(format!(
        "load balancer {}: backends {}{}",
        balancer.id,
        want.backends
            .iter()
            .map(describe)
            .collect::<Vec<_>>()
            .join(", "),
        balancer
            .source_vip
            .map(|vip| format!(", source VIP {vip}"))
            .unwrap_or_default()
    ))
}

fn holds(endpoint: &HostComputeEndpoint, ip: IpAddr) -> bool {
    endpoint
        .ip_configurations
        .iter()
        .any(|config| config.ip_address == ip)
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default().trim()
}

/// Runs `flannel-hns.exe` with flanneld's documents for `backend`.
pub(crate) fn flanneld(lane: &Lane<'_>, backend: Backend, node: &Node) -> Result<String, String> {
    let data = |name: &str| node.windows_path(&lane.flanneld.join(format!("flanneld-{name}.json")));
    let args: Vec<String> = match backend {
        Backend::Vxlan => vec![
            "vxlan".to_owned(),
            data("vxlan-network"),
            data("vxlan-remote-subnet-route"),
            data("vxlan-host-route"),
        ],
        Backend::HostGw => vec![
            "host-gw".to_owned(),
            data("host-gw-network"),
            data("host-gw-bridge-endpoint"),
        ],
    };
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = node.tool("flannel-hns", &args)?;
    let made: Value =
        serde_json::from_str(&out).map_err(|error| format!("flannel-hns: {error}"))?;
    if made["managementIp"] != lane.node_ip {
        return Err(format!(
            "HNS gave {} the management IP {}, not the host adapter's {}",
            backend.network(),
            made["managementIp"],
            lane.node_ip
        ));
    }
    Ok(format!(
        "{} {} with management IP {} (filled in by HNS)",
        backend.network(),
        made["network"].as_str().unwrap_or_default(),
        made["managementIp"].as_str().unwrap_or_default()
    ))
}

/// subnet.env as flanneld writes it, and the Flannel-native conflist the runtime reads; the
/// plugin's own config (the conflist's plugin with its name and version), as the runtime
/// passes it.
pub(crate) fn write_config(node: &Node, backend: Backend) -> Result<Value, String> {
    let subnet_env = node.dir().join("subnet.env");
    std::fs::write(
        &subnet_env,
        "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n",
    )
    .map_err(|error| format!("subnet.env: {error}"))?;
    let mut plugin = json!({
        "type": backend.plugin(),
        "subnetFile": node.windows_path(&subnet_env),
        "dataDir": node.windows_path(&node.dir().join("flannel")),
        "ipam": { "dataDir": node.windows_path(&node.dir().join("ipam")) },
        "capabilities": { "portMappings": true, "dns": true },
        "apiVersion": 2,
        "dns": { "nameservers": ["10.96.0.10"], "search": ["svc.cluster.local"] },
        "policies": [
            { "name": "EndpointPolicy", "value": { "Type": "OutBoundNAT", "Settings": { "Exceptions": ["10.96.0.0/12", "10.244.0.0/16"] } } },
        ],
    });
    if backend == Backend::Vxlan {
        plugin["policies"].as_array_mut().expect("an array").push(json!(
            { "name": "EndpointPolicy", "value": { "Type": "SDNRoute", "Settings": { "DestinationPrefix": "10.96.0.0/12", "NeedEncap": true } } }
        ));
    }
    let conflist =
        json!({ "name": backend.network(), "cniVersion": "1.1.0", "plugins": [plugin.clone()] });
    let file = node
        .dir()
        .join("net.d")
        .join(format!("10-{}.conflist", backend.plugin()));
    std::fs::write(&file, conflist.to_string())
        .map_err(|error| format!("{}: {error}", file.display()))?;
    plugin["name"] = json!(backend.network());
    plugin["cniVersion"] = json!("1.1.0");
    Ok(plugin)
}

/// `cni-win source-vip --format flags`: kube-proxy's flags, and the VIP among them.
fn source_vip_flags(node: &Node) -> Result<(Vec<String>, String), String> {
    let conf_dir = node.windows_path(&node.dir().join("net.d"));
    let out = node.tool(
        "cni-win",
        &[
            "source-vip",
            "--conf-dir",
            &conf_dir,
            "--format",
            "flags",
            "--kube-proxy-version",
            "1.20",
        ],
    )?;
    let flags: Vec<String> = out
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("--"))
        .map(|line| line.split_whitespace().next().unwrap_or(line).to_owned())
        .collect();
    let vip = flags
        .iter()
        .find_map(|flag| flag.strip_prefix("--source-vip="))
        .ok_or_else(|| format!("source-vip printed no --source-vip: {out}"))?
        .to_owned();
    Ok((flags, vip))
}
