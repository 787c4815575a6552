//! Property tests: results survive every lossless conversion, and no input makes the protocol
//! layer panic.

use cni::{CniArgs, Dns, Interface, IpConfig, NetConf, Route, Success, Version};
use ipnetwork::IpNetwork;
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

fn ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<u32>().prop_map(|n| IpAddr::V4(Ipv4Addr::from(n))),
        any::<u128>().prop_map(|n| IpAddr::V6(Ipv6Addr::from(n))),
    ]
}

fn network() -> impl Strategy<Value = IpNetwork> {
    ip().prop_flat_map(|addr| {
        let max: u8 = if addr.is_ipv4() { 32 } else { 128 };
        (0..=max).prop_map(move |prefix| IpNetwork::new(addr, prefix).expect("prefix in range"))
    })
}

fn word() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9.:_-]{1,12}"
}

fn interface(v1_fields: bool) -> impl Strategy<Value = Interface> {
    (
        word(),
        proptest::option::of(word()),
        proptest::option::of(word()),
        proptest::option::of(any::<u32>()),
        proptest::option::of(word()),
    )
        .prop_map(move |(name, mac, sandbox, mtu, socket_path)| Interface {
            name,
            mac,
            sandbox,
            mtu: mtu.filter(|_| v1_fields),
            socket_path: socket_path.filter(|_| v1_fields),
            pci_id: None,
        })
}

fn route() -> impl Strategy<Value = Route> {
    (
        network(),
        proptest::option::of(ip()),
        proptest::option::of(any::<u32>()),
    )
        .prop_map(|(dst, gw, mtu)| Route {
            mtu,
            ..Route::new(dst, gw)
        })
}

fn dns() -> impl Strategy<Value = Dns> {
    (
        proptest::collection::vec(word(), 0..3),
        proptest::option::of(word()),
        proptest::collection::vec(word(), 0..3),
    )
        .prop_map(|(nameservers, domain, search)| Dns {
            nameservers,
            domain,
            search,
            options: vec![],
        })
}

fn success(v1_fields: bool) -> impl Strategy<Value = Success> {
    (
        proptest::collection::vec(interface(v1_fields), 0..3),
        proptest::collection::vec(
            (
                network(),
                proptest::option::of(ip()),
                proptest::option::of(0usize..3),
            ),
            0..4,
        ),
        proptest::collection::vec(route(), 0..4),
        dns(),
    )
        .prop_map(|(interfaces, ips, routes, dns)| Success {
            interfaces,
            ips: ips
                .into_iter()
                .map(|(address, gateway, interface)| IpConfig {
                    address,
                    gateway,
                    interface,
                })
                .collect(),
            routes,
            dns,
        })
}

proptest! {
    #[test]
    fn v1_layout_round_trips(result in success(true)) {
        for version in [Version::V1_0_0, Version::V1_1_0] {
            let text = result.to_json(version).unwrap();
            prop_assert_eq!(&Success::from_slice(text.as_bytes(), Version::V0_1_0).unwrap(), &result);
        }
    }

    #[test]
    fn v04_layout_round_trips_without_1_1_interface_fields(result in success(false)) {
        for version in [Version::V0_3_0, Version::V0_3_1, Version::V0_4_0] {
            let text = result.to_json(version).unwrap();
            prop_assert_eq!(&Success::from_slice(text.as_bytes(), Version::V0_1_0).unwrap(), &result);
        }
    }

    #[test]
    fn legacy_layout_keeps_the_first_address_of_each_family(result in success(false)) {
        match result.to_json(Version::V0_2_0) {
            Err(_) => prop_assert!(result.ips.is_empty()),
            Ok(text) => {
                let back = Success::from_slice(text.as_bytes(), Version::V0_1_0).unwrap();
                let first = |v4: bool| result.ips.iter().find(|ip| ip.address.is_ipv4() == v4).map(|ip| (ip.address, ip.gateway));
                let got = |v4: bool| back.ips.iter().find(|ip| ip.address.is_ipv4() == v4).map(|ip| (ip.address, ip.gateway));
                prop_assert_eq!(first(true), got(true));
                prop_assert_eq!(first(false), got(false));
                prop_assert_eq!(&back.dns, &result.dns);
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_parsers(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = NetConf::parse(&bytes);
        let _ = Success::from_slice(&bytes, Version::V1_1_0);
        let _ = cni::Error::from_json(&bytes);
        let _ = CniArgs::parse(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn json_shaped_configs_never_panic(
        version in proptest::option::of(prop_oneof![Just("1.1.0".to_string()), Just("0.2.0".to_string()), word()]),
        name in proptest::option::of(".{0,10}"),
        ipam in proptest::option::of(proptest::option::of(".{0,10}")),
        prev in proptest::option::of(any::<u32>()),
    ) {
        let mut conf = serde_json::json!({"type": "win-bridge"});
        if let Some(v) = version { conf["cniVersion"] = v.into(); }
        if let Some(n) = name { conf["name"] = n.into(); }
        if let Some(t) = ipam { conf["ipam"] = serde_json::json!({"type": t}); }
        if let Some(p) = prev { conf["prevResult"] = serde_json::json!({"ips": [{"address": p.to_string()}]}); }
        if let Ok(parsed) = NetConf::parse(conf.to_string().as_bytes()) {
            let _ = parsed.prev_result();
            let _ = parsed.valid_attachments();
        }
    }
}
