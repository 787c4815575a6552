//! `cni-win doctor` on a Flannel vxlan node: what kube-proxy's winkernel proxier needs there,
//! with kube-proxy's objects created exactly as it creates them.

use cni_win::doctor::Severity;
use cni_win::source_vip;
use cni_win_conformance::kube_proxy::{self, HOST_MAC};
use cni_win_core::identity::Identity;
use hns::Guid;
use hns::features::HnsVersion;
use hns::schema::{HostComputeEndpoint, HostComputeLoadBalancer, IpConfig};
use serde_json::json;

use crate::support::doctor::Doctor;
use crate::support::overlay::Overlay;
use crate::support::problems;

/// A node with `flannel.4096` and win-overlay's stand-in.
fn doctor() -> Doctor<Overlay> {
    Doctor::new(Overlay::new(), "win-overlay")
}

/// What only a Flannel vxlan node with kube-proxy needs of the fixture.
impl Doctor<Overlay> {
    /// `cni-win source-vip --create-endpoint`: kube-proxy's VIP and its endpoint.
    fn source_vip(&self) -> source_vip::SourceVip {
        source_vip::reserve(
            &self.node.client,
            &self.node.settings(),
            Some(HOST_MAC.parse().unwrap()),
        )
        .unwrap()
    }

    /// A pod as cni-win's ADD leaves it: reservation and endpoint (not attached).
    fn pod(&self, container_id: &str) -> Guid {
        let allocation = self.node.script().allocate(container_id, "eth0").unwrap();
        let ip = allocation.result().ips[0].address.ip();
        self.endpoint(container_id, ip)
    }

    fn endpoint(&self, container_id: &str, ip: std::net::IpAddr) -> Guid {
        let identity = Identity::of("flannel.4096", container_id, "eth0");
        let network = self
            .node
            .client
            .find_network_by_name("flannel.4096")
            .unwrap();
        let settings = HostComputeEndpoint {
            name: identity.name.clone(),
            ip_configurations: vec![IpConfig {
                ip_address: ip,
                prefix_length: None,
            }],
            ..HostComputeEndpoint::default()
        };
        let id = network
            .create_endpoint(identity.guid, &settings)
            .unwrap()
            .id();
        let ns = self.node.node.namespace().parse().unwrap();
        self.node.client.attach_endpoint(ns, id).unwrap();
        id
    }

    /// kube-proxy's load balancer for a service, created as kube-proxy creates it: source
    /// VIP, ClusterIP, one port mapping, the pods' backends.
    fn load_balancer(&self, vip: std::net::IpAddr, backends: &[Guid]) {
        let backends: Vec<String> = backends.iter().map(Guid::to_string).collect();
        let settings: HostComputeLoadBalancer = serde_json::from_value(kube_proxy::load_balancer(
            &vip.to_string(),
            &backends,
            json!({}),
        ))
        .unwrap();
        self.node
            .client
            .create_load_balancer(Guid::ZERO, &settings)
            .unwrap();
    }
}

fn finding(check: &str) -> (String, Severity) {
    (
        format!("network \"flannel.4096\": kube-proxy {check}"),
        Severity::Warn,
    )
}

#[test]
fn a_synced_kube_proxy_passes_every_check() {
    let doctor = doctor();
    let vip = doctor.source_vip();
    let backends = [doctor.pod("a"), doctor.pod("b")];
    doctor.load_balancer(vip.ip, &backends);
    for ip in ["10.96.0.50", "10.244.2.7"] {
        doctor.node.kube_proxy_remote_endpoint(ip);
    }
    let report = doctor.report();
    println!("{report}");
    assert_eq!(problems(&report), [], "{report}");
    let kube_proxy: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.check.contains("kube-proxy"))
        .map(|f| f.check.rsplit("kube-proxy ").next().unwrap().to_owned())
        .collect();
    assert_eq!(
        kube_proxy,
        [
            "remote subnets",
            "source VIP",
            "source VIP endpoint",
            "load balancers"
        ]
    );
}

#[test]
fn no_vip_reserved_is_a_warning_with_the_command_that_fixes_it() {
    let doctor = doctor();
    let report = doctor.report();
    assert_eq!(problems(&report), [finding("source VIP")], "{report}");
    assert!(report.healthy);
    assert!(
        report.to_string().contains("cni-win source-vip"),
        "{report}"
    );
}

#[test]
fn a_vip_no_endpoint_holds_yet_is_a_warning() {
    let doctor = doctor();
    source_vip::reserve(&doctor.node.client, &doctor.node.settings(), None).unwrap();
    let report = doctor.report();
    assert_eq!(
        problems(&report),
        [finding("source VIP endpoint")],
        "{report}"
    );
}

/// A pod got the VIP (reserved elsewhere before, then reserved here under a script's owner
/// while the pod's endpoint held it): kube-proxy's endpoint cannot be created.
#[test]
fn a_pod_holding_the_vip_fails() {
    let doctor = doctor();
    let vip = source_vip::reserve(&doctor.node.client, &doctor.node.settings(), None).unwrap();
    doctor.endpoint("thief", vip.ip);
    let report = doctor.report();
    let failed: Vec<_> = problems(&report)
        .into_iter()
        .filter(|(_, verdict)| *verdict == Severity::Fail)
        .collect();
    assert!(
        failed.contains(&(
            "network \"flannel.4096\": kube-proxy source VIP endpoint".to_owned(),
            Severity::Fail
        )),
        "{report}"
    );
    assert!(!report.healthy);
}

/// A pod's DEL removed a backend of kube-proxy's load balancer before kube-proxy synced: HNS
/// drift, reported with whose it is, never touched.
#[test]
fn a_load_balancer_backend_gone_is_reported() {
    let doctor = doctor();
    let vip = doctor.source_vip();
    let backends = [doctor.pod("a"), doctor.pod("b")];
    doctor.load_balancer(vip.ip, &backends);
    doctor.node.client.delete_endpoint(backends[1]).unwrap();
    doctor.node.script().release("b", "eth0").unwrap();
    let report = doctor.report();
    println!("{report}");
    assert_eq!(
        problems(&report),
        [(
            "network \"flannel.4096\": drift load-balancer-backend-gone".to_owned(),
            Severity::Warn
        )],
        "{report}"
    );
    assert!(report.to_string().contains(&backends[1].to_string()));
    assert!(report.to_string().contains("kube-proxy's"), "{report}");
    assert_eq!(doctor.node.client.list_load_balancers().unwrap().len(), 1);
}

/// kube-proxy made its source VIP endpoint (it has synced) but holds no load balancer, though
/// the `kubernetes` Service always exists: it fails every Service, and the node is not fine.
#[test]
fn a_synced_kube_proxy_without_a_load_balancer_is_a_warning() {
    let doctor = doctor();
    doctor.source_vip();
    doctor.pod("a");
    let report = doctor.report();
    assert_eq!(problems(&report), [finding("load balancers")], "{report}");
    assert!(
        report.to_string().contains("Policy creation failed"),
        "{report}"
    );
}

#[test]
fn hns_without_remote_subnets_fails() {
    let doctor = doctor();
    doctor.source_vip();
    doctor
        .node
        .node
        .engine()
        .set_version(HnsVersion::new(8, 0))
        .unwrap();
    let report = doctor.report();
    assert!(
        problems(&report).contains(&(
            "network \"flannel.4096\": kube-proxy remote subnets".to_owned(),
            Severity::Fail
        )),
        "{report}"
    );
}
