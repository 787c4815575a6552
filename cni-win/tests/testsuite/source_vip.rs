//! `cni-win source-vip` on an emulated Flannel vxlan node: the VIP comes from the pods' store
//! and ranges, never the gateway, the same every run, a script's reservation adopted, and
//! kube-proxy's endpoint created exactly as kube-proxy would.

use std::fs;
use std::net::IpAddr;

use cni::NetConf;
use cni_win::source_vip::{self, Settings};
use cni_win_conformance::kube_proxy::HOST_MAC;
use hns::schema::{EndpointFlags, MacAddress};
use ipam_host_local::HostLocal;
use serde_json::json;

use crate::support::overlay::Overlay;

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

#[test]
fn reserves_one_address_of_the_pods_range_the_same_every_run() {
    let node = Overlay::new();
    let first = source_vip::reserve(&node.client, &node.settings(), None).unwrap();
    assert_eq!(first.network, "flannel.4096");
    // .1 is the pod gateway (HNS's): never the VIP.
    assert_eq!(first.ip, ip("10.244.1.2"));
    assert_eq!(first.owner, "kube-proxy/source-vip");
    assert!(first.reserved_now);
    assert_eq!(first.endpoint, None);
    let again = source_vip::reserve(&node.client, &node.settings(), None).unwrap();
    assert_eq!(again.ip, first.ip);
    assert!(!again.reserved_now);
    assert_eq!(node.reservations(), ["10.244.1.2"]);
    // A pod's ADD never gets it.
    let pod = node.script().allocate("pod", "eth0").unwrap();
    assert_ne!(pod.result().ips[0].address.ip(), first.ip);
}

#[test]
fn adopts_the_reservation_a_start_script_made() {
    let node = Overlay::new();
    node.script().allocate("pod-a", "eth0").unwrap();
    let script = node.script().allocate("dummy", "dummy").unwrap();
    let vip = source_vip::reserve(&node.client, &node.settings(), None).unwrap();
    assert_eq!(vip.ip, script.result().ips[0].address.ip());
    assert_eq!(vip.owner, "dummy/dummy");
    assert!(!vip.reserved_now);
    assert_eq!(node.reservations().len(), 2);
}

#[test]
fn refuses_an_l2bridge_network_and_changes_nothing() {
    let node = Overlay::with("L2Bridge", "win-bridge");
    let err = source_vip::reserve(&node.client, &node.settings(), None).unwrap_err();
    assert!(err.to_string().contains("no win-overlay network"), "{err}");
    let named = Settings {
        network: Some("flannel.4096".to_owned()),
        ..node.settings()
    };
    let err = source_vip::reserve(&node.client, &named, None).unwrap_err();
    assert!(err.to_string().contains("L2Bridge"), "{err}");
    assert!(node.reservations().is_empty());
}

#[test]
fn refuses_a_network_hns_does_not_have_and_changes_nothing() {
    let node = Overlay::new();
    node.write_config(&json!({
        "cniVersion": "1.0.0", "name": "vxlan0", "type": "win-overlay",
        "ipam": {"type": "host-local", "subnet": "10.244.1.0/24", "dataDir": node.node.ipam_dir()}
    }));
    let err = source_vip::reserve(&node.client, &node.settings(), None).unwrap_err();
    assert!(err.to_string().contains("does not exist"), "{err}");
    assert!(node.node.reservations("vxlan0").is_empty());
}

#[test]
fn creates_kube_proxys_endpoint_once_and_release_gives_everything_back() {
    let node = Overlay::new();
    let mac: MacAddress = HOST_MAC.parse().unwrap();
    let vip = source_vip::reserve(&node.client, &node.settings(), Some(mac)).unwrap();
    assert!(vip.endpoint_created);
    let endpoints = node.node.endpoints("flannel.4096");
    assert_eq!(endpoints.len(), 1);
    let endpoint = &endpoints[0];
    assert_eq!(Some(endpoint.id), vip.endpoint);
    assert!(source_vip::is_source_vip_endpoint(endpoint, vip.ip));
    assert_eq!(endpoint.mac_address, Some(mac));
    assert_eq!(endpoint.flags, EndpointFlags::NONE);

    let again = source_vip::reserve(&node.client, &node.settings(), Some(mac)).unwrap();
    assert!(!again.endpoint_created);
    assert_eq!(again.endpoint, vip.endpoint);
    assert_eq!(node.node.endpoints("flannel.4096").len(), 1);

    let released = source_vip::release(&node.client, &node.settings()).unwrap();
    assert_eq!(released.ips, [vip.ip]);
    assert_eq!(released.endpoints, [endpoint.id]);
    assert!(node.node.endpoints("flannel.4096").is_empty());
    assert!(node.reservations().is_empty());
}

#[test]
fn release_leaves_everything_when_another_endpoint_holds_the_vip() {
    let node = Overlay::new();
    let vip = source_vip::reserve(&node.client, &node.settings(), None).unwrap();
    node.node.foreign_endpoint(
        "flannel.4096",
        "someone",
        &vip.ip.to_string(),
        EndpointFlags::NONE,
    );
    let err = source_vip::release(&node.client, &node.settings()).unwrap_err();
    assert!(err.to_string().contains("nothing was released"), "{err}");
    assert_eq!(node.reservations(), [vip.ip.to_string()]);
}

/// kube-proxy runs with DSR where HNS has it (so NetworkPolicy sees Service clients), with
/// the feature gates only before they were on by default.
#[test]
fn flags_turn_dsr_on_and_add_the_feature_gates_only_before_they_were_on_by_default() {
    let node = Overlay::new();
    let vip = source_vip::reserve(&node.client, &node.settings(), None).unwrap();
    assert!(vip.dsr_supported, "the emulated host's HNS has DSR");
    let base = [
        "--source-vip=10.244.1.2",
        "--network-name=flannel.4096",
        "--enable-dsr",
    ];
    assert_eq!(source_vip::kube_proxy_flags(&vip, None), base);
    assert_eq!(source_vip::kube_proxy_flags(&vip, Some(33)), base);
    assert_eq!(
        source_vip::kube_proxy_flags(&vip, Some(32)).last().unwrap(),
        "--feature-gates=WinOverlay=true,WinDSR=true"
    );

    // HNS 10.1 has no DSR: kube-proxy would refuse --enable-dsr and not start.
    node.node
        .engine()
        .set_version(hns::HnsVersion::new(10, 1))
        .unwrap();
    let vip = source_vip::reserve(&node.client, &node.settings(), None).unwrap();
    assert!(!vip.dsr_supported);
    assert_eq!(
        source_vip::kube_proxy_flags(&vip, Some(32)),
        [
            "--source-vip=10.244.1.2",
            "--network-name=flannel.4096",
            "--feature-gates=WinOverlay=true"
        ]
    );
}

/// A Flannel conflist delegating to win-overlay: the ranges are subnet.env's (here the node's
/// 10.244.1.0/24 in a config that names none), the store the one Flannel's delegate uses.
#[test]
fn a_flannel_native_config_takes_its_range_from_subnet_env() {
    let node = Overlay::new();
    let subnet_env = node.node.dir().join("subnet.env");
    fs::write(
        &subnet_env,
        "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n",
    )
    .unwrap();
    fs::remove_file(node.conf_dir().join("10-net.conf")).unwrap();
    fs::write(
        node.conf_dir().join("10-flannel.conflist"),
        serde_json::to_vec(&json!({
            "cniVersion": "0.3.0", "name": "flannel.4096", "plugins": [{
                "type": "flannel", "subnetFile": subnet_env,
                "dataDir": node.node.dir().join("flannel"),
                "delegate": {"type": "win-overlay", "ipam": {"dataDir": node.node.ipam_dir()}}
            }]
        }))
        .unwrap(),
    )
    .unwrap();
    let vip = source_vip::reserve(&node.client, &node.settings(), None).unwrap();
    assert_eq!(vip.ip, ip("10.244.1.2"));
    assert_eq!(node.reservations(), ["10.244.1.2"]);

    fs::remove_file(&subnet_env).unwrap();
    let again = source_vip::reserve(&node.client, &node.settings(), None).unwrap_err();
    assert!(again.to_string().contains("subnet"), "{again}");
    assert_eq!(node.reservations(), ["10.244.1.2"]);
}

/// A node that rejoined with another pod subnet: the VIP it held in the old one is given back
/// and a new one reserved in the current range.
#[test]
fn a_vip_left_outside_the_current_range_is_replaced() {
    let node = Overlay::new();
    let old_range = NetConf::parse(
        &serde_json::to_vec(&json!({
            "cniVersion": "1.0.0", "name": "flannel.4096",
            "ipam": {"type": "host-local", "subnet": "10.244.9.0/24",
                     "dataDir": node.node.ipam_dir()}
        }))
        .unwrap(),
    )
    .unwrap();
    HostLocal::from_conf(&old_range, &cni::CniArgs::default())
        .unwrap()
        .allocate("kube-proxy", "source-vip")
        .unwrap();
    assert_eq!(node.reservations(), ["10.244.9.2"]);
    let vip = source_vip::reserve(&node.client, &node.settings(), None).unwrap();
    assert_eq!(vip.ip, ip("10.244.1.2"));
    assert!(vip.reserved_now);
    assert_eq!(node.reservations(), ["10.244.1.2"]);
}

/// `cni-win sweep --apply` keeps the VIP, kube-proxy's endpoint on it and its remote endpoints
/// (a Service's ClusterIP, a pod of another node): none is a pod's.
#[test]
fn sweep_keeps_the_vip_and_kube_proxys_endpoints() {
    let node = Overlay::new();
    let mac: MacAddress = HOST_MAC.parse().unwrap();
    let vip = source_vip::reserve(&node.client, &node.settings(), Some(mac)).unwrap();
    for ip in ["10.96.0.50", "10.244.2.7"] {
        node.kube_proxy_remote_endpoint(ip);
    }
    let snapshot = cni_win_core::snapshot::NodeSnapshot::read(&node.client).unwrap();
    let networks: Vec<_> = cni_win::confdir::read(&node.conf_dir(), &[])
        .unwrap()
        .networks
        .into_iter()
        .map(|network| network.decode(Some(snapshot.features)))
        .collect();
    let pass = cni_win::sweep::sweep(
        &node.client,
        &snapshot,
        &networks,
        &cni_win::sweep::AttachmentLocks,
        true,
        &cni_win::shutdown::Shutdown::new(),
    );
    assert!(pass.stale.is_empty() && !pass.failed(), "{pass:?}");
    assert_eq!(node.reservations(), [vip.ip.to_string()]);
    assert_eq!(node.node.endpoints("flannel.4096").len(), 3);
}
