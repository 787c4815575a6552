//! Failure handling through the real binary: rollback when each HCN call of ADD fails, DEL
//! after a crash at each step, concurrency, GC's boundaries, and the raw-call budgets.

mod common;

use std::collections::BTreeSet;
use std::process::{Command, Stdio};

use common::{NETWORK, Node, PLUGIN};
use hns::schema::{HostComputeEndpoint, IpConfig, endpoint_flags};
use hns::{Function, Guid, HResult};
use serde_json::json;

/// Every raw call of a new pod's ADD, in order (closes included).
const ADD_CALLS: [Function; 10] = [
    Function::EnumerateNetworks,
    Function::OpenNetwork,
    Function::QueryNetworkProperties,
    Function::CreateEndpoint,
    Function::QueryEndpointProperties,
    Function::CloseEndpoint,
    Function::OpenNamespace,
    Function::ModifyNamespace,
    Function::CloseNamespace,
    Function::CloseNetwork,
];

#[test]
fn a_failure_at_each_hcn_call_of_add_leaves_nothing_behind() {
    let node = Node::new("rollback");
    let config = node.config("1.0.0");
    for (i, function) in ADD_CALLS.iter().enumerate().filter(|(_, f)| !f.is_close()) {
        let netns = node.namespace();
        node.engine()
            .inject_fault(*function, 1, HResult::E_FAIL)
            .unwrap();
        let reply = node.add(&format!("fault-{i}"), &netns, &config);
        assert_eq!(reply.status, Some(1), "{function:?}: {reply:?}");
        assert!(node.endpoints().is_empty(), "{function:?} left an endpoint");
        assert!(
            node.reservations().is_empty(),
            "{function:?} left {:?}",
            node.reservations()
        );
    }
    node.engine().clear_controls().unwrap();
}

#[test]
fn a_failed_repeated_add_keeps_the_existing_attachment() {
    let node = Node::new("repeat-fault");
    let config = node.config("1.0.0");
    let netns = node.namespace();
    let first = node.add("pod", &netns, &config).result();
    let reservations = node.reservations();
    // The endpoint left its namespace, so the repeated ADD attaches it again (and that may fail).
    let endpoint = node.endpoint("pod_cbr0");
    node.client()
        .detach_endpoint(netns.parse().unwrap(), endpoint.id)
        .unwrap();
    for function in [
        Function::EnumerateNetworks,
        Function::QueryNetworkProperties,
        Function::CreateEndpoint,
        Function::OpenEndpoint,
        Function::QueryEndpointProperties,
        Function::OpenNamespace,
        Function::ModifyNamespace,
    ] {
        node.engine()
            .inject_fault(function, 1, HResult::E_FAIL)
            .unwrap();
        let reply = node.add("pod", &netns, &config);
        assert_eq!(reply.status, Some(1), "{function:?}: {reply:?}");
        assert_eq!(node.endpoint("pod_cbr0").id, endpoint.id, "{function:?}");
        assert_eq!(node.reservations(), reservations, "{function:?}");
    }
    assert_eq!(node.add("pod", &netns, &config).result(), first);
}

#[test]
fn del_after_a_crash_at_any_step_of_add_leaves_nothing() {
    let node = Node::new("crash");
    let config = node.config("1.0.0");
    for (i, function) in ADD_CALLS.iter().enumerate() {
        let container = format!("crash-{i}");
        let netns = node.namespace();
        node.engine().crash_after(*function, 1).unwrap();
        let reply = node.add(&container, &netns, &config);
        assert_eq!(
            reply.status, None,
            "{function:?}: the plugin should have aborted: {reply:?}"
        );
        node.del(&container, Some(&netns), &config).silent();
        assert!(
            node.endpoints().is_empty(),
            "crash after {function:?} left an endpoint"
        );
        assert!(
            node.reservations().is_empty(),
            "crash after {function:?} left {:?}",
            node.reservations()
        );
    }
}

#[test]
fn a_failed_endpoint_delete_keeps_the_address() {
    let node = Node::new("del-fault");
    let config = node.config("1.0.0");
    let netns = node.namespace();
    node.add("pod", &netns, &config).result();
    let reservations = node.reservations();
    node.engine()
        .inject_fault(Function::DeleteEndpoint, 1, HResult::E_FAIL)
        .unwrap();
    node.del("pod", Some(&netns), &config).error(110);
    assert_eq!(node.reservations(), reservations);
    node.del("pod", Some(&netns), &config).silent();
    assert!(node.reservations().is_empty() && node.endpoints().is_empty());
}

#[test]
fn fifty_parallel_adds_get_fifty_addresses_and_fifty_dels_leave_nothing() {
    let node = Node::new("parallel");
    let config = node.config("1.1.0").to_string();
    let pods: Vec<(String, String)> = (0..50)
        .map(|i| (format!("pod-{i}"), node.namespace()))
        .collect();
    let spawn = |command: &str, (container, netns): &(String, String)| {
        let mut child = Command::new(PLUGIN)
            .env_clear()
            .env("CNI_COMMAND", command)
            .env("CNI_CONTAINERID", container)
            .env("CNI_IFNAME", "eth0")
            .env("CNI_NETNS", netns)
            .env("CNI_PATH", node.dir())
            .env(hns::emulator::STATE_ENV, node.state())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(config.as_bytes())
            .unwrap();
        child
    };
    let adds: Vec<_> = pods.iter().map(|pod| spawn("ADD", pod)).collect();
    let mut addresses = BTreeSet::new();
    for child in adds {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stdout)
        );
        let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        addresses.insert(result["ips"][0]["address"].as_str().unwrap().to_owned());
    }
    assert_eq!(addresses.len(), 50);
    assert_eq!(node.endpoints().len(), 50);
    assert_eq!(node.reservations().len(), 50);
    let dels: Vec<_> = pods.iter().map(|pod| spawn("DEL", pod)).collect();
    for child in dels {
        assert!(child.wait_with_output().unwrap().status.success());
    }
    assert!(node.endpoints().is_empty());
    assert!(node.reservations().is_empty());
}

/// Creates an endpoint directly, as another component would.
fn foreign_endpoint(node: &Node, network: &str, name: &str, ip: &str, flags: u32) -> Guid {
    let client = node.client();
    let open = client.find_network_by_name(network).unwrap();
    let settings = HostComputeEndpoint {
        name: name.to_owned(),
        ip_configurations: vec![IpConfig {
            ip_address: ip.to_owned(),
            prefix_length: None,
        }],
        flags,
        ..HostComputeEndpoint::default()
    };
    open.create_endpoint(Guid::ZERO, &settings).unwrap().id()
}

#[test]
fn gc_removes_only_our_stale_endpoints_on_this_network() {
    let node = Node::new("gc");
    node.create_network("other", "L2Bridge", &[("10.245.1.0/24", "10.245.1.1")]);
    let config = node.config("1.1.0");
    for pod in ["keep", "stale-a", "stale-b"] {
        node.add(pod, &node.namespace(), &config).result();
    }
    foreign_endpoint(&node, NETWORK, "cbr0_ep", "10.244.1.2", 0);
    foreign_endpoint(
        &node,
        NETWORK,
        "remote_cbr0",
        "10.244.1.200",
        endpoint_flags::REMOTE_ENDPOINT,
    );
    foreign_endpoint(&node, NETWORK, "kube-proxy-sourcevip", "10.244.1.201", 0);
    foreign_endpoint(&node, "other", "stale-c_cbr0", "10.245.1.9", 0);
    let mut gc = config.clone();
    gc["cni.dev/valid-attachments"] = json!([{"containerID": "keep", "ifname": "eth0"}]);
    node.run(&common::Call {
        command: "GC",
        container_id: "",
        ifname: "",
        netns: None,
        config: &gc,
    })
    .silent();
    let mut left: Vec<String> = node.endpoints().into_iter().map(|e| e.name).collect();
    left.sort();
    assert_eq!(
        left,
        [
            "cbr0_ep",
            "keep_cbr0",
            "kube-proxy-sourcevip",
            "remote_cbr0"
        ]
    );
    let other = node
        .client()
        .list_endpoints(Some(node.network_id("other")))
        .unwrap();
    assert_eq!(other.len(), 1);
    assert_eq!(node.reservations().len(), 1);
}

#[test]
fn call_budgets_do_not_depend_on_the_number_of_endpoints() {
    let node = Node::new("budget");
    let config = node.config("1.1.0");
    let measure = |label: &str| {
        let netns = node.namespace();
        let pod = format!("budget-{label}");
        node.calls();
        node.add(&pod, &netns, &config).result();
        let add = node.calls();
        node.add(&pod, &netns, &config).result();
        let repeat = node.calls();
        node.del(&pod, Some(&netns), &config).silent();
        let del = node.calls();
        eprintln!(
            "{label} endpoint(s) on the node: ADD {add:?}, repeated ADD {repeat:?}, DEL {del:?} (raw calls without, with closes)"
        );
        (add, repeat, del)
    };
    let few = measure("1");
    // 500 more: 100 on this network (above the addresses the pods get), 400 on another one.
    for i in 0..100 {
        foreign_endpoint(
            &node,
            NETWORK,
            &format!("filler-{i}_cbr0"),
            &format!("10.244.1.{}", 150 + i),
            0,
        );
    }
    node.create_network("filler", "L2Bridge", &[("10.246.0.0/16", "10.246.0.1")]);
    for i in 0..400 {
        let ip = format!("10.246.{}.{}", 1 + i / 200, 2 + i % 200);
        foreign_endpoint(&node, "filler", &format!("filler-{i}_filler"), &ip, 0);
    }
    assert_eq!(node.endpoints().len(), 100);
    let many = measure("501");
    assert_eq!(few, many);
    let ((add, add_all), _, (del, del_all)) = few;
    assert!(add <= 7 && add_all <= 10, "ADD {add}/{add_all}");
    assert!(del <= 4 && del_all <= 6, "DEL {del}/{del_all}");
}
