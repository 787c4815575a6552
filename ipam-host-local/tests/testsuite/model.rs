//! Model-based test: random ADD/DEL/GC sequences, with random damage to the index in between,
//! against an in-memory oracle. After every step the reservation files are exactly the
//! oracle's, so the index can never hand out an address twice, lose one or leak one.

use crate::common::{Scratch, host_local, reservations};
use cni::GcAttachment;
use ipam_host_local::{INDEX_DIR, POOL_EXHAUSTED, Retention};
use proptest::prelude::*;
use serde_json::json;
use std::collections::BTreeMap;
use std::fs;
use std::net::IpAddr;

/// Pool: 10.0.0.2 to 10.0.0.14 (13 addresses; .1 is the gateway).
const POOL: usize = 13;
const CONTAINERS: u8 = 16;

#[derive(Debug, Clone)]
enum Step {
    Add(u8),
    Del(u8),
    /// GC keeping the containers whose bit is set.
    Gc(u16),
    /// Damage standing in for a crash or a foreign writer.
    Damage(Damage),
}

#[derive(Debug, Clone)]
enum Damage {
    DropStamp,
    DropIndex,
    FillMap,
    ClearMap,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        5 => (0..CONTAINERS).prop_map(Step::Add),
        3 => (0..CONTAINERS).prop_map(Step::Del),
        1 => any::<u16>().prop_map(Step::Gc),
        1 => prop_oneof![
            Just(Damage::DropStamp),
            Just(Damage::DropIndex),
            Just(Damage::FillMap),
            Just(Damage::ClearMap),
        ]
        .prop_map(Step::Damage),
    ]
}

fn id(container: u8) -> String {
    format!("c{container}")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn store_matches_the_oracle(steps in proptest::collection::vec(step(), 1..40)) {
        let dir = Scratch::new("model");
        let ipam = host_local(dir.path(), json!({"subnet": "10.0.0.0/28"}));
        let index = ipam.network_dir().join(INDEX_DIR);
        let mut oracle: BTreeMap<u8, IpAddr> = BTreeMap::new();

        for step in steps {
            match step {
                Step::Add(c) => match ipam.allocate(&id(c), "eth0") {
                    Ok(allocation) => {
                        let got = allocation.result().ips[0].address.ip();
                        match oracle.get(&c) {
                            Some(held) => {
                                prop_assert_eq!(*held, got);
                                prop_assert!(allocation.already_held());
                            }
                            None => {
                                prop_assert!(!oracle.values().any(|ip| *ip == got), "{} handed out twice", got);
                                prop_assert!(!allocation.already_held());
                                oracle.insert(c, got);
                            }
                        }
                    }
                    Err(err) => {
                        prop_assert_eq!(err.code(), POOL_EXHAUSTED, "{}", err.msg());
                        prop_assert!(!oracle.contains_key(&c));
                        prop_assert_eq!(oracle.len(), POOL);
                    }
                },
                Step::Del(c) => {
                    ipam.release(&id(c), "eth0").unwrap();
                    oracle.remove(&c);
                }
                Step::Gc(mask) => {
                    let valid: Vec<GcAttachment> = (0..CONTAINERS)
                        .filter(|c| mask & (1 << c) != 0)
                        .map(|c| GcAttachment { container_id: id(c), ifname: "eth0".into() })
                        .collect();
                    ipam.gc(&Retention::attachments(&valid)).unwrap();
                    oracle.retain(|c, _| mask & (1 << c) != 0);
                }
                Step::Damage(Damage::DropStamp) => {
                    let _ = fs::remove_file(index.join("stamp"));
                }
                Step::Damage(Damage::DropIndex) => {
                    let _ = fs::remove_dir_all(&index);
                }
                Step::Damage(damage) => {
                    let map = index.join("occupancy.0");
                    if let Ok(mut bytes) = fs::read(&map) {
                        let header = bytes.len() - 2;
                        let fill = if matches!(damage, Damage::FillMap) { 0xff } else { 0 };
                        bytes[header..].fill(fill);
                        fs::write(&map, bytes).unwrap();
                    }
                }
            }
            let expected: BTreeMap<String, String> = oracle
                .iter()
                .map(|(c, ip)| (ip.to_string(), format!("{}\r\neth0", id(*c))))
                .collect();
            prop_assert_eq!(reservations(ipam.network_dir()), expected);
        }
    }
}
