//! Services through kube-proxy, told once per Flannel backend (vxlan's overlay, host-gw's
//! L2Bridge) on a node of its own: the network made as flanneld makes it, pods attached by
//! cni-win's plugin as containerd would, Services through the API in the telling's namespace,
//! and kube-proxy.exe programming HNS load balancers over them; then a pod deleted, the
//! runtime's GC, `cni-win sweep --apply`, `cni-win doctor` and a kube-proxy restart, each
//! judged by what HNS holds afterwards; then HNS drift under kube-proxy and cni-win's daemon
//! (an HNS stop and restart, injected duplicates: [`drift`]).
//!
//! kube-proxy balances every Service of the cluster, whatever its namespace, and ClusterIPs and
//! NodePorts are the cluster's: each telling deletes its Services before it ends, or the next
//! one's kube-proxy would program them too.

mod balancers;
mod drift;
mod kube_proxy;
mod service;

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hns::schema::{EndpointFlags, HostComputeEndpoint, HostComputeLoadBalancer};
use serde_json::{Value, json};

use crate::lane::{Backend, Lane, write_config};
use crate::node::{Node, Pod};
use crate::report::Report;
use balancers::{Expected, KubeProxyObjects, holds, judge};
use kube_proxy::KubeProxy;
use service::Service;

/// kube-proxy programs a change within a sync or two (1 s apart at the least); under Wine on a
/// loaded 2-core machine its first sync after start can take tens of seconds.
const SYNC_DEADLINE: Duration = Duration::from_secs(180);
const POLL: Duration = Duration::from_secs(1);
/// The remote node's pod an overlay Service reaches through a remote endpoint.
const REMOTE_POD: &str = "10.244.2.10";

/// The story on Flannel vxlan's overlay network: kube-proxy with a source VIP.
pub fn overlay(lane: &Lane, report: &mut Report) {
    run(lane, Backend::Vxlan, report);
}

/// The story on Flannel host-gw's L2Bridge network: kube-proxy on the node's address.
pub fn l2bridge(lane: &Lane, report: &mut Report) {
    run(lane, Backend::HostGw, report);
}

/// The story's name for `backend`'s telling: its node's directory and its namespace.
fn name(backend: Backend) -> &'static str {
    match backend {
        Backend::Vxlan => "overlay",
        Backend::HostGw => "l2bridge",
    }
}

/// Runs the story on a fresh node with `backend` and records every check in `report`.
fn run(lane: &Lane, backend: Backend, report: &mut Report) {
    let mut node = match ServicesNode::set_up(lane, backend, report) {
        Ok(node) => node,
        Err(why) => {
            report.record("set-up", Err(why));
            return;
        }
    };
    node.tell(report);
    node.tear_down(report);
}

/// The node while the story runs on it: its pods, kube-proxy, and the Services.
struct ServicesNode<'a> {
    lane: &'a Lane,
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

impl<'a> ServicesNode<'a> {
    fn set_up(
        lane: &'a Lane,
        backend: Backend,
        report: &mut Report,
    ) -> Result<ServicesNode<'a>, String> {
        let node = lane.node(name(backend))?;
        report.record("flanneld makes the network", lane.flanneld(backend, &node));
        let config = write_config(&node, backend, None)?;
        let (proxy_flags, source_vip) = match backend {
            Backend::Vxlan => {
                let outcome = source_vip_flags(&node);
                let flags = outcome.clone().map(|(flags, _)| flags);
                report.record(
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
            // As deploy/kube-proxy-host-gw.yaml runs it: DSR, whose gate 1.20 has off.
            Backend::HostGw => (
                vec![
                    format!("--network-name={}", backend.network()),
                    "--enable-dsr".to_owned(),
                    "--feature-gates=WinDSR=true".to_owned(),
                ],
                None,
            ),
        };
        let proxy_log = node.dir().join("logs").join("kube-proxy.log");
        Ok(ServicesNode {
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
        let attached = self.attach_pods();
        report.record("pods attached by the plugin", attached);
        if self.pods.len() < 3 {
            return;
        }
        report.record("kube-proxy starts in kernelspace mode", self.start_proxy());
        if self.proxy.is_none() {
            return;
        }
        if self.backend == Backend::Vxlan {
            report.record(
                "kube-proxy's source VIP endpoint",
                self.source_vip_endpoint(),
            );
        }
        self.services = self.services();
        report.record(
            "Services and Endpoints through the API",
            self.apply_services(),
        );
        let programmed = self.wait_for_balancers();
        for outcome in &programmed {
            report.record(&outcome.0, outcome.1.clone());
        }
        if programmed.iter().any(|(_, outcome)| outcome.is_err()) {
            return;
        }
        report.record("a deleted pod leaves its load balancer", self.delete_pod());
        let before = self.kube_proxy_objects();
        report.record(
            "the runtime's GC leaves kube-proxy's objects",
            self.gc(&before),
        );
        report.record("cni-win sweep --apply leaves them", self.sweep(&before));
        report.record(
            "cni-win doctor: healthy, load balancers seen",
            self.doctor(),
        );
        report.record(
            "kube-proxy restarted finds its load balancers",
            self.restart_proxy(&before),
        );
        if self.proxy.is_none() {
            return;
        }
        self.hns_outage(report);
        self.injected_duplicates(report);
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
                if let Err(why) =
                    self.lane
                        .control_plane
                        .kubectl
                        .delete(kind, service.namespace, &name)
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
            report.record("tear-down", Err(failures.join("; ")));
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
            &self.lane.kube_bin,
            &kubeconfig,
            &self.lane.node_ip,
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
        let namespace = name(self.backend);
        let ip = |pod: &Pod| pod.ip;
        let (web, dns) = (&self.pods[..2], &self.pods[2]);
        let remote: Vec<IpAddr> = vec![REMOTE_POD.parse().expect("a literal address")];
        vec![
            Service {
                name: "web",
                namespace,
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
                namespace,
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
                namespace,
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
        let kubectl = &self.lane.control_plane.kubectl;
        kubectl.apply(&json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name(self.backend)}}))?;
        for service in &self.services {
            kubectl.apply(&service.objects())?;
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
    /// Service port on its ClusterIP, with DSR (kube-proxy runs with it, as the manifests
    /// run it), one more per NodePort, without (its Services keep the default
    /// `externalTrafficPolicy: Cluster`), and the API server's own `kubernetes` Service.
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
            dsr: true,
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
                dsr: true,
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
                    // externalTrafficPolicy Cluster: SNATed to the node even with DSR.
                    dsr: false,
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
        let (healthy, report) = self.run_doctor()?;
        let findings = report["findings"].as_array().cloned().unwrap_or_default();
        let bad: Vec<String> = findings
            .iter()
            .filter(|f| f["severity"] != "pass")
            .map(|f| format!("{} {}: {}", f["severity"], f["check"], f["evidence"]))
            .collect();
        if !healthy || report["healthy"] != true || !bad.is_empty() {
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

    /// `cni-win doctor --json` on the node: whether it found the node healthy (its exit
    /// status), and its report.
    fn run_doctor(&self) -> Result<(bool, Value), String> {
        let conf_dir = self.node.windows_path(&self.node.dir().join("net.d"));
        let bin_dir = self.node.windows_path(&self.lane.windows_bin);
        let args = [
            "doctor",
            "--json",
            "--conf-dir",
            &conf_dir,
            "--bin-dir",
            &bin_dir,
        ];
        let (healthy, out) = self.node.report("cni-win", &args)?;
        let report = serde_json::from_str(&out)
            .map_err(|error| format!("doctor --json ({error}): {out}"))?;
        Ok((healthy, report))
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
        if !after.alike(before) {
            return Err(format!("before {before:?}, after {after:?}"));
        }
        Ok(format!(
            "{} load balancers programmed again under new IDs, the same {} kube-proxy endpoints",
            after.balancers.len(),
            after.endpoints.len()
        ))
    }

    /// Whether HNS holds exactly the load balancers the Services ask for now, each balanced to
    /// its backends' endpoints (a local pod's own, whatever else holds its address); how many.
    fn all_reached(&self) -> Result<String, String> {
        let (endpoints, balancers) = self.read()?;
        let expected = self.expected_balancers_now()?;
        for want in &expected {
            judge(want, &endpoints, &balancers).map_err(|why| format!("{}: {why}", want.check))?;
        }
        if balancers.len() != expected.len() {
            return Err(format!(
                "{} load balancers, {} expected",
                balancers.len(),
                expected.len()
            ));
        }
        Ok(format!(
            "{} load balancers, each Service's on its backends' endpoints",
            balancers.len()
        ))
    }

    /// kube-proxy's objects as HNS holds them now.
    fn kube_proxy_objects(&self) -> Result<KubeProxyObjects, String> {
        let (endpoints, balancers) = self.read()?;
        let pods: BTreeSet<IpAddr> = self.pods.iter().map(|pod| pod.ip).collect();
        Ok(KubeProxyObjects::of(&endpoints, &balancers, &pods))
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

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default().trim()
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
