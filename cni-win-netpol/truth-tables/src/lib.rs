//! The NetworkPolicy truth tables: upstream's cluster (`kubernetes/kubernetes`
//! `test/e2e/network/netpol/`: namespaces x, y, z; pods a, b, c in each, serving 80 and 81
//! over TCP and UDP on upstream's port names) and the cases of `cases/` (see its README),
//! each a list of steps with the expected reachability matrices, and, where a case has
//! Services, the expected outcome of every pod's connection to a Service's ClusterIP.
//!
//! Two harnesses judge cni-win by them: `cni-win-netpol`'s tests (the translation, below the
//! API server) and the node lane (the agent, through the real API server). Both read the
//! cases and build the cluster here, so they judge by the same data.

use std::collections::BTreeMap;
use std::fs;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use hns_emulator::acl::{Packet, UndocumentedVerdict, Verdict};
use k8s_openapi::api::core::v1::{Container, ContainerPort, Pod, PodIP, PodSpec, PodStatus};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

/// The namespaces of the cluster.
pub const NAMESPACES: [&str; 3] = ["x", "y", "z"];
/// The pods of each namespace.
pub const POD_NAMES: [&str; 3] = ["a", "b", "c"];

/// Every pod of the cluster, `ns/pod`, in matrix order.
pub fn pods() -> Vec<String> {
    NAMESPACES
        .iter()
        .flat_map(|ns| POD_NAMES.iter().map(move |pod| format!("{ns}/{pod}")))
        .collect()
}

/// A pod's address of one family: `10.244.<ns>.<pod>`, `fd00:10:244:<ns>::<pod>`, counting
/// from 1 (x/b is 10.244.1.2).
pub fn pod_ip(pod: &str, v6: bool) -> IpAddr {
    let (ns, name) = split(pod);
    let ns = NAMESPACES
        .iter()
        .position(|n| *n == ns)
        .expect("a namespace of the cluster")
        + 1;
    let name = POD_NAMES
        .iter()
        .position(|n| *n == name)
        .expect("a pod of the cluster")
        + 1;
    if v6 {
        format!("fd00:10:244:{ns}::{name}")
            .parse()
            .expect("an IPv6 address")
    } else {
        format!("10.244.{ns}.{name}")
            .parse()
            .expect("an IPv4 address")
    }
}

/// A pod's addresses: IPv4, and IPv6 after it when the case is dual-stack.
pub fn pod_ips(pod: &str, dual_stack: bool) -> Vec<IpAddr> {
    let mut ips = vec![pod_ip(pod, false)];
    if dual_stack {
        ips.push(pod_ip(pod, true));
    }
    ips
}

fn split(pod: &str) -> (&str, &str) {
    pod.split_once('/').expect("a pod is named ns/name")
}

/// A named container port a case adds to a pod.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraPort {
    pub name: String,
    pub port: i32,
    pub protocol: String,
}

/// What a step changes in the standard cluster.
#[derive(Debug, Clone, Default)]
pub struct Changes {
    pub dual_stack: bool,
    pub namespace_labels: BTreeMap<String, BTreeMap<String, String>>,
    pub pod_labels: BTreeMap<String, BTreeMap<String, String>>,
    pub named_ports: BTreeMap<String, Vec<ExtraPort>>,
}

impl Changes {
    /// A namespace's labels: `ns: <name>`, `kubernetes.io/metadata.name: <name>` (which API
    /// servers from 1.21 set themselves), and the step's.
    pub fn namespace_labels(&self, ns: &str) -> BTreeMap<String, String> {
        let mut labels = BTreeMap::from([
            ("ns".to_owned(), ns.to_owned()),
            ("kubernetes.io/metadata.name".to_owned(), ns.to_owned()),
        ]);
        labels.extend(self.namespace_labels.get(ns).cloned().unwrap_or_default());
        labels
    }

    /// A pod's labels: `pod: <name>`, and the step's.
    pub fn pod_labels(&self, pod: &str) -> BTreeMap<String, String> {
        let (_, name) = split(pod);
        let mut labels = BTreeMap::from([("pod".to_owned(), name.to_owned())]);
        labels.extend(self.pod_labels.get(pod).cloned().unwrap_or_default());
        labels
    }

    /// The pod as the API server holds it once scheduled on `node` and running.
    pub fn api_pod(&self, pod: &str, node: &str) -> Pod {
        let (ns, name) = split(pod);
        let labels = self.pod_labels(pod);
        let mut containers: Vec<Container> = [80, 81]
            .into_iter()
            .flat_map(|port| ["TCP", "UDP"].map(|protocol| (port, protocol)))
            .map(|(port, protocol)| {
                let lower = protocol.to_lowercase();
                container(
                    format!("cont-{port}-{lower}"),
                    vec![container_port(
                        format!("serve-{port}-{lower}"),
                        port,
                        protocol,
                    )],
                )
            })
            .collect();
        if let Some(extra) = self.named_ports.get(pod) {
            containers.push(container(
                "extra".to_owned(),
                extra
                    .iter()
                    .map(|port| container_port(port.name.clone(), port.port, &port.protocol))
                    .collect(),
            ));
        }
        let ips = pod_ips(pod, self.dual_stack);
        Pod {
            metadata: ObjectMeta {
                namespace: Some(ns.to_owned()),
                name: Some(name.to_owned()),
                labels: Some(labels),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                containers,
                node_name: Some(node.to_owned()),
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                phase: Some("Running".to_owned()),
                pod_ip: Some(ips[0].to_string()),
                pod_ips: Some(ips.iter().map(|ip| PodIP { ip: ip.to_string() }).collect()),
                ..PodStatus::default()
            }),
        }
    }
}

fn container(name: String, ports: Vec<ContainerPort>) -> Container {
    Container {
        name,
        image: Some("agnhost".to_owned()),
        ports: Some(ports),
        ..Container::default()
    }
}

fn container_port(name: String, port: i32, protocol: &str) -> ContainerPort {
    ContainerPort {
        name: Some(name),
        container_port: port,
        protocol: Some(protocol.to_owned()),
        ..ContainerPort::default()
    }
}

/// One case of `cases/`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Case {
    pub name: String,
    /// The upstream `It` the case is written from; `None` for our own.
    pub upstream: Option<String>,
    #[serde(default)]
    pub dual_stack: bool,
    /// The Services its service probes connect to.
    #[serde(default)]
    pub services: Vec<Service>,
    pub steps: Vec<Step>,
}

impl Case {
    /// The Service named `name` (`ns/name`).
    pub fn service(&self, name: &str) -> Result<&Service, String> {
        self.services
            .iter()
            .find(|service| service.name == name)
            .ok_or_else(|| format!("{}: no Service {name}", self.name))
    }
}

/// A ClusterIP Service, as kube-proxy programs it on the node: a load balancer from its
/// ClusterIP to the pods its selector picks in its namespace (all on the node).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Service {
    /// `ns/name`.
    pub name: String,
    #[serde(rename = "clusterIP")]
    pub cluster_ip: IpAddr,
    /// Labels a backend pod carries, all of them.
    pub selector: BTreeMap<String, String>,
    pub ports: Vec<ServicePort>,
}

/// A port of a Service.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServicePort {
    pub port: u16,
    /// The backends' port; the Service's port when absent.
    #[serde(default)]
    pub target_port: Option<u16>,
    pub protocol: String,
}

impl Service {
    /// The pods of its namespace its selector picks under `changes`, in matrix order.
    pub fn backends(&self, changes: &Changes) -> Vec<String> {
        let (namespace, _) = split(&self.name);
        pods()
            .into_iter()
            .filter(|pod| split(pod).0 == namespace)
            .filter(|pod| {
                let labels = changes.pod_labels(pod);
                self.selector
                    .iter()
                    .all(|(key, value)| labels.get(key) == Some(value))
            })
            .collect()
    }

    /// The port its backends serve `port` of `protocol` on.
    pub fn target_port(&self, port: u16, protocol: &str) -> Result<u16, String> {
        self.ports
            .iter()
            .find(|p| p.port == port && p.protocol == protocol)
            .map(|p| p.target_port.unwrap_or(p.port))
            .ok_or_else(|| format!("Service {} has no port {protocol} {port}", self.name))
    }
}

/// A state of the cluster and what it must allow.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Step {
    /// Every policy of the cluster at this step.
    pub policies: Vec<NetworkPolicy>,
    #[serde(default)]
    namespace_labels: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(default)]
    pod_labels: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(default)]
    named_ports: BTreeMap<String, Vec<ExtraPort>>,
    pub probes: Vec<Probe>,
    /// Connections from every pod to a Service's ClusterIP.
    #[serde(default)]
    pub service_probes: Vec<ServiceProbe>,
}

impl Step {
    /// What the step changes in the standard cluster of `case`.
    pub fn changes(&self, case: &Case) -> Changes {
        Changes {
            dual_stack: case.dual_stack,
            namespace_labels: self.namespace_labels.clone(),
            pod_labels: self.pod_labels.clone(),
            named_ports: self.named_ports.clone(),
        }
    }
}

/// One port and protocol, probed between every two pods.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    pub port: u16,
    protocol: String,
    #[serde(default)]
    family: Option<String>,
    reachability: String,
}

impl Probe {
    /// `TCP 80 IPv4`, for a message.
    pub fn label(&self) -> String {
        let family = self.family.as_deref().unwrap_or("IPv4");
        format!("{} {} {family}", self.protocol, self.port)
    }

    /// The packet of a connection from `from` to `to`.
    pub fn packet(&self, from: &str, to: &str) -> Result<Packet, String> {
        let protocol = match self.protocol.as_str() {
            "TCP" => 6,
            "UDP" => 17,
            other => return Err(format!("protocol {other} is not probed")),
        };
        let v6 = self.family.as_deref() == Some("IPv6");
        Ok(Packet::with_ports(
            pod_ip(from, v6),
            pod_ip(to, v6),
            protocol,
            self.port,
        ))
    }

    /// The expected verdict of every connection probed, `(from, to)`: the matrix as the case
    /// writes it, rows from, columns to; `.` allowed, `X` denied, `-` (a pod to itself) not
    /// probed, as upstream ignores loopback (kubernetes#95879).
    pub fn expected(&self) -> Result<Matrix, String> {
        let pods = pods();
        let mut lines = self.reachability.lines().map(str::split_whitespace);
        let header: Vec<&str> = lines.next().ok_or("an empty matrix")?.skip(1).collect();
        if header != pods {
            return Err(format!("matrix header {header:?}, not {pods:?}"));
        }
        let mut cells = Matrix::new();
        for (row, mut line) in lines.enumerate() {
            let from = line.next().ok_or("an empty row")?;
            if pods.get(row).is_none_or(|pod| pod != from) {
                return Err(format!("row {row} is {from}"));
            }
            let marks: Vec<&str> = line.collect();
            if marks.len() != pods.len() {
                return Err(format!("row {from} has {} cells", marks.len()));
            }
            for (to, mark) in pods.iter().zip(marks) {
                let verdict = match mark {
                    "." => Verdict::Allowed,
                    "X" => Verdict::Denied,
                    "-" if from == to => continue,
                    other => return Err(format!("row {from}: {other:?} is not ., X or -")),
                };
                cells.insert((from.to_owned(), to.clone()), verdict);
            }
        }
        if cells.len() != pods.len() * (pods.len() - 1) {
            return Err(format!("{} cells, not a full matrix", cells.len()));
        }
        Ok(cells)
    }
}

/// Verdicts by `(from, to)`.
pub type Matrix = BTreeMap<(String, String), Verdict>;

/// What a connection gets from the emulator: a verdict, or none because the verdict rests on
/// what HNS does not document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `.`
    Allowed,
    /// `X`
    Denied,
    /// `?`: the emulator refuses the verdict.
    Refused,
}

impl Outcome {
    /// The outcome of a verdict query.
    pub fn of(verdict: Result<Verdict, UndocumentedVerdict>) -> Outcome {
        match verdict {
            Ok(Verdict::Allowed) => Outcome::Allowed,
            Ok(Verdict::Denied) => Outcome::Denied,
            Err(_) => Outcome::Refused,
        }
    }

    fn mark(self) -> &'static str {
        match self {
            Outcome::Allowed => ".",
            Outcome::Denied => "X",
            Outcome::Refused => "?",
        }
    }
}

/// One port and protocol of a Service, probed from every pod to its ClusterIP: a column
/// headed by the Service's name, a row per pod; `.` allowed, `X` denied, `?` refused as
/// resting on what HNS does not document (whether egress rules are matched before or after
/// the load balancer's rewrite). A pod that is one of the Service's backends is probed too.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceProbe {
    pub service: String,
    pub port: u16,
    pub protocol: String,
    reachability: String,
}

impl ServiceProbe {
    /// `UDP 53 to z/dns`, for a message.
    pub fn label(&self) -> String {
        format!("{} {} to {}", self.protocol, self.port, self.service)
    }

    /// The packet a connection from `from` sends to `service`'s ClusterIP.
    pub fn packet(&self, from: &str, service: &Service) -> Result<Packet, String> {
        let protocol = match self.protocol.as_str() {
            "TCP" => 6,
            "UDP" => 17,
            other => return Err(format!("protocol {other} is not probed")),
        };
        Ok(Packet::with_ports(
            pod_ip(from, service.cluster_ip.is_ipv6()),
            service.cluster_ip,
            protocol,
            self.port,
        ))
    }

    /// The expected outcome for every pod, as the case writes it.
    pub fn expected(&self) -> Result<Outcomes, String> {
        let mut lines = self.reachability.lines().map(str::split_whitespace);
        let header: Vec<&str> = lines.next().ok_or("an empty column")?.collect();
        if header != ["-", self.service.as_str()] {
            return Err(format!(
                "column header {header:?}, not [\"-\", {:?}]",
                self.service
            ));
        }
        let mut outcomes = Outcomes::new();
        for (row, line) in lines.enumerate() {
            let cells: Vec<&str> = line.collect();
            let (from, outcome) = match cells[..] {
                [from, "."] => (from, Outcome::Allowed),
                [from, "X"] => (from, Outcome::Denied),
                [from, "?"] => (from, Outcome::Refused),
                _ => return Err(format!("row {row} is {cells:?}, not a pod and ., X or ?")),
            };
            if pods().get(row).is_none_or(|pod| pod != from) {
                return Err(format!("row {row} is {from}"));
            }
            outcomes.insert(from.to_owned(), outcome);
        }
        if outcomes.len() != pods().len() {
            return Err(format!("{} rows, not one per pod", outcomes.len()));
        }
        Ok(outcomes)
    }
}

/// Outcomes by the pod the connection comes from.
pub type Outcomes = BTreeMap<String, Outcome>;

/// A service probe's column as the case writes it, for a failure message.
pub fn print_column(service: &str, outcomes: &Outcomes) -> String {
    let mut out = format!("-   {service}\n");
    for (from, outcome) in outcomes {
        out.push_str(&format!("{from} {}\n", outcome.mark()));
    }
    out
}

/// Upstream's printout of a matrix, for a failure message.
pub fn print(cells: &Matrix) -> String {
    let pods = pods();
    let mut out = format!("-   {}\n", pods.join(" "));
    for from in &pods {
        out.push_str(from);
        for to in &pods {
            let mark = match cells.get(&(from.clone(), to.clone())) {
                None => "-",
                Some(Verdict::Allowed) => ".",
                Some(Verdict::Denied) => "X",
            };
            out.push_str(&format!(" {mark:<3}"));
        }
        out.push('\n');
    }
    out
}

/// The directory of the cases.
pub fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cases")
}

/// Every case file, in name order: `u*` upstream's, `o*` our own.
pub fn case_files() -> Result<Vec<PathBuf>, String> {
    let dir = cases_dir();
    let entries = fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| format!("{}: {e}", dir.display()))?.path();
        if path.extension().is_some_and(|ext| ext == "yaml") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Reads one case.
pub fn read_case(path: &Path) -> Result<Case, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_saphyr::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}
