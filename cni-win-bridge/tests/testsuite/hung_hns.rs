//! HNS that does not answer (the emulator's latency above the HNS deadline):
//! the command fails with code 110 in time, naming the function and the wait,
//! and leaves nothing it created behind.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use cni_win_conformance::node::{Call, Node};
use serde_json::Value;

use crate::{NETWORK, config};

const ENV_VAR: &str = "CNI_WIN_HNS_TIMEOUT_SECONDS";

/// Far above the deadlines below: a command that waited for HNS would take this long per call.
const LATENCY_MICROS: u64 = 3_000_000;

/// `command` for the attachment `pod` in `netns`, with `ENV_VAR=seconds` added.
fn run_with_deadline_env(
    node: &Node,
    command: &str,
    netns: &str,
    config: &Value,
    seconds: &str,
) -> cni_win_conformance::node::Reply {
    let call = Call {
        command,
        container_id: "pod",
        ifname: "eth0",
        netns: Some(netns),
        config,
    };
    node.run_with(&call, &BTreeMap::from([(ENV_VAR, seconds.to_owned())]))
}

fn assert_names_the_wait(message: &str) {
    assert!(message.contains("HNS did not answer in "), "{message}");
    assert!(message.contains("Hcn"), "no function named: {message}");
}

#[test]
fn add_against_a_hung_hns_fails_with_110_and_leaves_nothing() {
    let node = crate::node("hung-add");
    let mut config = config(&node, "1.0.0");
    config["hnsTimeoutSeconds"] = 0.3.into();
    let netns = node.namespace();
    node.engine().set_latency(LATENCY_MICROS).unwrap();

    let started = Instant::now();
    let reply = node.add("pod", &netns, &config);
    let took = started.elapsed();

    assert_names_the_wait(&reply.error(110));
    assert!(took < Duration::from_secs(3), "ADD took {took:?}");
    node.engine().set_latency(0).unwrap();
    assert!(node.endpoints(NETWORK).is_empty(), "endpoint left behind");
    assert!(node.reservations(NETWORK).is_empty(), "address left behind");
    node.add("pod", &netns, &config).result();
}

#[test]
fn del_against_a_hung_hns_fails_with_110_keeps_the_address_and_a_later_del_cleans_up() {
    let node = crate::node("hung-del");
    let config = config(&node, "1.0.0");
    let netns = node.namespace();
    node.add("pod", &netns, &config).result();
    let reservations = node.reservations(NETWORK);
    node.engine().set_latency(LATENCY_MICROS).unwrap();

    let started = Instant::now();
    let reply = run_with_deadline_env(&node, "DEL", &netns, &config, "0.3");
    let took = started.elapsed();

    assert_names_the_wait(&reply.error(110));
    assert!(took < Duration::from_secs(3), "DEL took {took:?}");
    node.engine().set_latency(0).unwrap();
    assert_eq!(node.reservations(NETWORK), reservations);
    node.del("pod", Some(&netns), &config).silent();
    assert!(node.reservations(NETWORK).is_empty() && node.endpoints(NETWORK).is_empty());
}

#[test]
fn a_bad_deadline_is_a_config_or_environment_error() {
    let node = crate::node("hung-config");
    let mut config = config(&node, "1.0.0");
    let netns = node.namespace();
    config["hnsTimeoutSeconds"] = "soon".into();
    let message = node.add("pod", &netns, &config).error(7);
    assert!(message.starts_with("hnsTimeoutSeconds"), "{message}");

    config.as_object_mut().unwrap().remove("hnsTimeoutSeconds");
    let message = run_with_deadline_env(&node, "ADD", &netns, &config, "0").error(4);
    assert!(message.starts_with(ENV_VAR), "{message}");
    assert!(node.reservations(NETWORK).is_empty());
}
