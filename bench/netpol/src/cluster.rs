//! The cluster the benchmark puts through the API server, the same on every run: namespaces
//! labelled by team and environment, pods of a few apps and tiers spread over nodes of 100
//! pods each, and a mix of policies as operators write them (default deny, selectors within
//! and across namespaces, `ipBlock` with `except`, named ports, egress).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;

use node_lane::NODE_NAME;
use serde_json::{Value, json};

/// Namespaces `ns-0` to `ns-9` unless `--namespaces` says otherwise; pods and policies go
/// round them.
pub const NAMESPACES: usize = 10;
const APPS: usize = 10;
const TIERS: [&str; 5] = ["web", "api", "db", "cache", "worker"];
const PODS_PER_REMOTE_NODE: usize = 100;
/// The port of each namespace's `clients` policy: web pods admit pods labelled `role: client`
/// (the first pod of each remote node, and those the changes label) from any namespace on it,
/// and nothing else names it.
pub const CLIENT_PORT: u16 = 7000;
/// The local pods' network, `cbr0` (host-gw): wide enough for any `--local`.
pub const LOCAL_SUBNET: &str = "10.245.0.0/16";
pub const LOCAL_GATEWAY: &str = "10.245.0.1";

/// How big the cluster is.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Pods on the agent's node.
    pub local: usize,
    /// Pods in the cluster, the local ones included.
    pub cluster: usize,
    /// NetworkPolicies.
    pub policies: usize,
    /// Namespaces, `ns-0` on: pods and policies go round them.
    pub namespaces: usize,
}

impl Shape {
    pub fn remote(&self) -> usize {
        self.cluster - self.local
    }
}

/// A pod as the benchmark makes it.
#[derive(Debug, Clone)]
pub struct ClusterPod {
    pub namespace: String,
    pub name: String,
    pub node: String,
    pub ip: Ipv4Addr,
    pub labels: BTreeMap<String, String>,
}

impl ClusterPod {
    /// The `k`th pod of the agent's node (those from `Shape::local` on are the new pods the
    /// benchmark adds), on `cbr0`.
    pub fn local(shape: &Shape, k: usize) -> ClusterPod {
        let ip = Ipv4Addr::new(10, 245, (k / 200) as u8, (k % 200 + 10) as u8);
        ClusterPod::labelled(shape, k, format!("l{k}"), NODE_NAME.to_owned(), ip)
    }

    /// The `j`th pod of the other nodes, 100 to a node, each node with its own /24.
    pub fn remote(shape: &Shape, j: usize) -> ClusterPod {
        let node = 2 + j / PODS_PER_REMOTE_NODE;
        let ip = Ipv4Addr::new(10, 244, node as u8, (j % PODS_PER_REMOTE_NODE + 2) as u8);
        let mut pod = ClusterPod::labelled(
            shape,
            shape.local + j,
            format!("r{j}"),
            format!("node{node}"),
            ip,
        );
        if j.is_multiple_of(PODS_PER_REMOTE_NODE) {
            pod.labels.insert("role".to_owned(), "client".to_owned());
        }
        pod
    }

    /// The `g`th pod of the cluster's labels: its namespace, app, tier and version go round.
    fn labelled(shape: &Shape, g: usize, suffix: String, node: String, ip: Ipv4Addr) -> ClusterPod {
        let app = (g / shape.namespaces) % APPS;
        let labels = BTreeMap::from([
            ("app".to_owned(), format!("app-{app}")),
            ("tier".to_owned(), TIERS[app % TIERS.len()].to_owned()),
            ("version".to_owned(), format!("v{}", g % 3)),
        ]);
        ClusterPod {
            namespace: format!("ns-{}", g % shape.namespaces),
            name: format!("app-{app}-{suffix}"),
            node,
            ip,
            labels,
        }
    }

    pub fn tier(&self) -> &str {
        &self.labels["tier"]
    }

    /// The Pod as the scheduler leaves it: bound to its node, no address yet.
    pub fn object(&self) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": self.namespace, "name": self.name, "labels": self.labels},
            "spec": {"nodeName": self.node, "automountServiceAccountToken": false,
                     "containers": [{"name": "main", "image": "app",
                         "ports": [{"name": "http", "containerPort": 8080},
                                   {"name": "metrics", "containerPort": 9090}]}]}
        })
    }

    /// The status kubelet writes once the pod's sandbox has its address.
    pub fn status(&self) -> Value {
        json!({"status": {"phase": "Running", "podIP": self.ip.to_string(),
                          "podIPs": [{"ip": self.ip.to_string()}]}})
    }
}

/// The remote pod the `k`th label change moves into (even `k`) or out of (odd `k`) the
/// `clients` selector: one that is not a client to begin with.
pub fn moving_client(shape: &Shape, k: usize) -> ClusterPod {
    let j = (k / 2 * 97) % shape.remote();
    let j = match j {
        0 => 1,
        j if j.is_multiple_of(PODS_PER_REMOTE_NODE) => j - 1,
        j => j,
    };
    ClusterPod::remote(shape, j)
}

/// Every pod of the cluster: the local ones first.
pub fn pods(shape: &Shape) -> Vec<ClusterPod> {
    (0..shape.local)
        .map(|k| ClusterPod::local(shape, k))
        .chain((0..shape.remote()).map(|j| ClusterPod::remote(shape, j)))
        .collect()
}

/// The namespaces, each with the name label API servers from 1.21 set (1.20 does not).
pub fn namespaces(shape: &Shape) -> Vec<Value> {
    (0..shape.namespaces)
        .map(|n| {
            let name = format!("ns-{n}");
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name,
                "labels": {"kubernetes.io/metadata.name": name, "team": format!("team-{}", n % 3),
                           "env": if n % 2 == 0 { "prod" } else { "staging" }}}})
        })
        .collect()
}

/// The `p`th policy: its namespace's default deny first, then its `clients` policy, then a
/// mix of eight kinds.
pub fn policy(shape: &Shape, p: usize) -> Value {
    let namespace = format!("ns-{}", p % shape.namespaces);
    let q = p / shape.namespaces;
    let app = |offset: usize| format!("app-{}", (q + offset) % APPS);
    let (name, spec) = match q {
        0 => (
            "default-deny".to_owned(),
            json!({"podSelector": {}, "policyTypes": ["Ingress"]}),
        ),
        1 => (
            "clients".to_owned(),
            json!({"podSelector": {"matchLabels": {"tier": "web"}},
                   "ingress": [{"from": [{"namespaceSelector": {},
                                          "podSelector": {"matchLabels": {"role": "client"}}}],
                                "ports": [{"protocol": "TCP", "port": CLIENT_PORT}]}]}),
        ),
        _ => {
            let spec = match (q - 2) % 8 {
                0 => json!({"podSelector": {"matchLabels": {"app": app(0)}},
                    "ingress": [{"from": [{"podSelector": {"matchLabels": {"tier": "web"}}}],
                                 "ports": [{"protocol": "TCP", "port": 8080}]}]}),
                1 => json!({"podSelector": {"matchLabels": {"tier": "api"}},
                    "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": format!("team-{}", q % 3)}},
                                           "podSelector": {"matchLabels": {"app": app(1)}}}],
                                 "ports": [{"protocol": "TCP", "port": "http"}]}]}),
                2 => json!({"podSelector": {"matchLabels": {"app": app(2)}},
                    "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8",
                                           "except": ["10.244.0.0/16", "10.245.0.0/16"]}}],
                                 "ports": [{"protocol": "TCP", "port": 443}]}]}),
                3 => json!({"podSelector": {"matchLabels": {"app": app(3)}},
                    "policyTypes": ["Egress"],
                    "egress": [{"to": [{"podSelector": {"matchLabels": {"tier": "db"}}}],
                                "ports": [{"protocol": "TCP", "port": 5432}]},
                               {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}}}],
                                "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]}]}),
                4 => {
                    json!({"podSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["api", "web"]}]},
                    "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"env": "prod"}},
                                           "podSelector": {"matchLabels": {"tier": "worker"}}}],
                                 "ports": [{"protocol": "TCP", "port": "metrics"}]}]})
                }
                5 => {
                    json!({"podSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": [app(4), app(5)]}]},
                    "ingress": [{"from": [{"podSelector": {"matchExpressions": [{"key": "version", "operator": "NotIn", "values": ["v0"]}]}}],
                                 "ports": [{"protocol": "TCP", "port": 8000}, {"protocol": "TCP", "port": 8001}]}]})
                }
                6 => json!({"podSelector": {"matchLabels": {"app": app(6)}},
                    "ingress": [{"from": [{"podSelector": {}}],
                                 "ports": [{"protocol": "TCP", "port": 8080}, {"protocol": "UDP", "port": 8080}]}]}),
                _ => json!({"podSelector": {"matchLabels": {"tier": "web"}},
                    "policyTypes": ["Egress"],
                    "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["169.254.169.254/32"]}}],
                                "ports": [{"protocol": "TCP", "port": 443}]}]}),
            };
            (format!("mix-{q}"), spec)
        }
    };
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
           "metadata": {"namespace": namespace, "name": name}, "spec": spec})
}

/// The policy the `k`th new-policy change adds: every pod of its namespace admits api pods
/// from any namespace on a port of its own.
pub fn new_policy(namespace: &str, k: usize) -> (Value, u16) {
    let port = 10_000 + k as u16;
    let policy = json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"namespace": namespace, "name": format!("bench-new-{k}")},
        "spec": {"podSelector": {},
                 "ingress": [{"from": [{"namespaceSelector": {},
                                        "podSelector": {"matchLabels": {"tier": "api"}}}],
                              "ports": [{"protocol": "TCP", "port": port}]}]}});
    (policy, port)
}
