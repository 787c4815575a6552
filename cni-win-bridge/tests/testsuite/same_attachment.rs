//! Commands of one attachment racing each other (runtime retries, a DEL racing a slow ADD):
//! whatever the interleaving, the endpoint and the reservation either both exist and hold the
//! address the last successful ADD returned, or are both gone.

use std::collections::BTreeSet;
use std::time::Instant;

use cni_win_conformance::node::{Node, Reply, first_address};
use serde_json::Value;

use crate::{NETWORK, config};

/// The attachment's endpoint address and host-local's reservations, as they stand.
fn state(node: &Node, container_id: &str) -> (Option<String>, Vec<String>) {
    let endpoint = node
        .endpoints(NETWORK)
        .into_iter()
        .find(|e| e.name == format!("{container_id}_{NETWORK}"))
        .map(|e| e.ip_configurations[0].ip_address.to_string());
    (endpoint, node.reservations(NETWORK))
}

/// The config a CHECK of the attachment gets: the runtime's, with ADD's result.
fn check_config(node: &Node, prev_result: &Value) -> Value {
    let mut config = config(node, "1.0.0");
    config["prevResult"] = prev_result.clone();
    config
}

/// Runs `commands` for one attachment at once (CHECK with `prev_result`); each reply with
/// when it finished.
fn race(
    node: &Node,
    container_id: &str,
    netns: &str,
    commands: &[&str],
    prev_result: &Value,
) -> Vec<(String, Reply, Instant)> {
    let config = config(node, "1.0.0");
    let check = check_config(node, prev_result);
    std::thread::scope(|scope| {
        let handles: Vec<_> = commands
            .iter()
            .map(|command| {
                let (config, check) = (&config, &check);
                scope.spawn(move || {
                    let reply = match *command {
                        "ADD" => node.add(container_id, netns, config),
                        "DEL" => node.del(container_id, Some(netns), config),
                        _ => node.check(container_id, netns, check),
                    };
                    ((*command).to_owned(), reply, Instant::now())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn address(result: &Value) -> String {
    let (address, _) = first_address(result);
    address.split('/').next().unwrap().to_owned()
}

#[test]
fn twenty_concurrent_adds_agree_with_what_they_returned() {
    let node = crate::node("race-adds");
    let netns = node.namespace();
    for trial in 0..3 {
        let pod = format!("race-adds-{}-{trial}", std::process::id());
        let replies = race(&node, &pod, &netns, &["ADD"; 20], &Value::Null);
        let returned: BTreeSet<String> = replies
            .iter()
            .filter(|(_, reply, _)| reply.ok())
            .map(|(_, reply, _)| address(&reply.json()))
            .collect();
        let failures: Vec<&Reply> = replies
            .iter()
            .filter(|(_, r, _)| !r.ok())
            .map(|(_, r, _)| r)
            .collect();
        assert!(
            failures.is_empty(),
            "serialized ADDs all succeed: {failures:?}"
        );
        assert_eq!(
            returned.len(),
            1,
            "one attachment, one address: {returned:?}"
        );
        let (endpoint, reservations) = state(&node, &pod);
        let address = returned.into_iter().next().unwrap();
        assert_eq!(endpoint.as_deref(), Some(address.as_str()), "trial {trial}");
        assert!(
            reservations.contains(&address),
            "trial {trial}: {reservations:?}"
        );
        node.del(&pod, Some(&netns), &config(&node, "1.0.0"))
            .silent();
    }
}

#[test]
fn adds_dels_and_checks_interleaved_leave_both_or_neither() {
    let node = crate::node("race-mixed");
    let netns = node.namespace();
    let mut commands = vec!["ADD"; 12];
    commands.extend(["DEL"; 6]);
    commands.extend(["CHECK"; 2]);
    for trial in 0..3 {
        let pod = format!("race-mixed-{}-{trial}", std::process::id());
        commands.rotate_left(5);
        let first = node.add(&pod, &netns, &config(&node, "1.0.0")).result();
        let replies = race(&node, &pod, &netns, &commands, &first);
        for (command, reply, _) in &replies {
            // CHECK may run before any ADD or after a DEL; ADD and DEL, serialized, succeed.
            if command != "CHECK" {
                assert!(reply.ok(), "{command}: {reply:?}");
            }
        }
        let (endpoint, reservations) = state(&node, &pod);
        let last = replies
            .iter()
            .filter(|(command, reply, _)| command != "CHECK" && reply.ok())
            .max_by_key(|(_, _, finished)| *finished)
            .unwrap();
        match endpoint {
            Some(held) => {
                assert_eq!(reservations, vec![held.clone()], "trial {trial}");
                assert_eq!(last.0, "ADD", "trial {trial}: the last command was a DEL");
                assert_eq!(address(&last.1.json()), held, "trial {trial}");
                node.check(&pod, &netns, &check_config(&node, &last.1.json()))
                    .silent();
            }
            None => {
                assert!(reservations.is_empty(), "trial {trial}: {reservations:?}");
                assert_eq!(last.0, "DEL", "trial {trial}: the last command was an ADD");
            }
        }
        node.del(&pod, Some(&netns), &config(&node, "1.0.0"))
            .silent();
    }
}

#[test]
fn a_command_waits_for_the_attachments_lock_and_gives_up_with_11() {
    let node = crate::node("lock-wait");
    let netns = node.namespace();
    let pod = format!("lock-wait-{}", std::process::id());
    let held = cni_win_core::attachment_lock::try_lock(NETWORK, &pod, "eth0")
        .unwrap()
        .expect("free");
    let mut config = config(&node, "1.0.0");
    config["attachmentLockTimeoutSeconds"] = serde_json::json!(0.2);
    for command in ["ADD", "DEL", "CHECK"] {
        let reply = match command {
            "ADD" => node.add(&pod, &netns, &config),
            "DEL" => node.del(&pod, Some(&netns), &config),
            _ => node.check(&pod, &netns, &config),
        };
        let message = reply.error(11);
        assert!(
            message.contains(&cni_win_core::attachment_lock::name(NETWORK, &pod, "eth0")),
            "{command}: {message}"
        );
    }
    // Nothing was allocated while the lock was held.
    assert!(node.reservations(NETWORK).is_empty());
    drop(held);
    node.add(&pod, &netns, &config).result();
}

#[test]
fn a_refused_create_looks_for_the_endpoint_before_giving_the_address_back() {
    // The attachment's endpoint exists, holding .3, but host-local lost its record (a wiped
    // data dir), so the repeated ADD reserves .3 anew; HNS then fails the create with an
    // error that does not say the endpoint exists. Giving .3 back would leave the endpoint
    // holding an address the store hands to the next pod: the endpoint is looked up by its
    // ID first, found, and adopted, and the address stays reserved.
    let node = crate::node("refused-create");
    let netns = node.namespace();
    let pod = format!("refused-create-{}", std::process::id());
    let config = config(&node, "1.0.0");
    let first = node.add(&pod, &netns, &config).result();
    std::fs::remove_dir_all(node.ipam_dir().join(NETWORK)).unwrap();
    node.engine()
        .inject_fault(hns::Function::CreateEndpoint, 1, hns::HResult::E_FAIL)
        .unwrap();
    let again = node.add(&pod, &netns, &config).result();
    assert_eq!(address(&again), address(&first));
    let (endpoint, reservations) = state(&node, &pod);
    assert_eq!(endpoint.as_deref(), Some(address(&first).as_str()));
    assert_eq!(reservations, vec![address(&first)]);
}

#[test]
fn gc_leaves_an_attachment_with_a_command_in_flight() {
    // An ADD that has not returned is not in the runtime's list yet: GC must not remove its
    // endpoint or its address under it.
    let node = crate::node("gc-in-flight");
    let netns = node.namespace();
    let pod = format!("gc-in-flight-{}", std::process::id());
    let mut gc = config(&node, "1.1.0");
    node.add(&pod, &netns, &gc).result();
    gc["cni.dev/valid-attachments"] = serde_json::json!([]);
    let in_flight = cni_win_core::attachment_lock::try_lock(NETWORK, &pod, "eth0")
        .unwrap()
        .expect("free");
    node.run(&cni_win_conformance::node::Call::network("GC", &gc))
        .silent();
    let (endpoint, reservations) = state(&node, &pod);
    assert!(
        endpoint.is_some() && reservations.len() == 1,
        "{reservations:?}"
    );
    drop(in_flight);
    node.run(&cni_win_conformance::node::Call::network("GC", &gc))
        .silent();
    assert_eq!(state(&node, &pod), (None, Vec::new()));
}
