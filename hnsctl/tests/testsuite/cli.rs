//! hnsctl as an operator runs it: the emulator behind it on Linux, errors on stderr, usage
//! errors from the parser with exit status 2, help and shell completions.
#![cfg(not(windows))]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use hns::Guid;
use hns::schema::HostComputeLoadBalancer;
use serde_json::{Value, json};

const HNSCTL: &str = env!("CARGO_BIN_EXE_hnsctl");

#[test]
fn hnsctl_drives_the_emulator_and_reports_errors_on_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let hnsctl = |args: &[&str]| {
        Command::new(HNSCTL)
            .args(args)
            .env("HCN_EMULATOR_STATE", dir.path())
            .output()
            .unwrap()
    };
    let created = hnsctl(&[
        "network",
        "create",
        "--name",
        "flannel.4096",
        "--type",
        "Overlay",
        "--subnet",
        "10.244.1.0/24",
        "--gateway",
        "10.244.1.1",
        "--vni",
        "4096",
        "--vxlan-port",
        "4789",
        "--provider-address",
        "192.168.1.10",
        "--dr-mac",
        "0E-2A-C0-A8-01-0A",
    ]);
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let shown = hnsctl(&["--json", "network", "show", "flannel.4096"]);
    let network: hns::schema::HostComputeNetwork = serde_json::from_slice(&shown.stdout).unwrap();
    let json = serde_json::to_string(&network).unwrap();
    for needle in [
        r#""ProviderAddress":"192.168.1.10""#,
        r#""Address":"0E-2A-C0-A8-01-0A""#,
        r#""IsolationId":4096"#,
        r#""Port":4789"#,
    ] {
        assert!(json.contains(needle), "{needle} missing in {json}");
    }
    let namespace = hnsctl(&["namespace", "create"]);
    let text = String::from_utf8(namespace.stdout).unwrap();
    assert!(
        text.trim().parse::<Guid>().is_ok() && text.lines().count() == 1,
        "{text:?}"
    );
    let stats = hnsctl(&["--json", "stats"]);
    let counters: std::collections::BTreeMap<String, u64> =
        serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(counters["HcnCreateNetwork"], 1);
    assert_eq!(counters["HcnCreateNamespace"], 1);

    let failed = hnsctl(&["endpoint", "delete", "deadbeef-0000-0000-0000-000000000001"]);
    assert!(!failed.status.success());
    let stderr = String::from_utf8(failed.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("0x803B0002"), "{stderr}");

    let unset = Command::new(HNSCTL)
        .args(["network", "list"])
        .env_remove("HCN_EMULATOR_STATE")
        .output()
        .unwrap();
    assert!(!unset.status.success());
    assert!(String::from_utf8_lossy(&unset.stderr).contains("HCN_EMULATOR_STATE is not set"));
}

/// hnsctl on the emulated host under `state`, with `stdin` on its standard input.
fn run(state: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(HNSCTL)
        .args(args)
        .env("HCN_EMULATOR_STATE", state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

/// What a successful [`run`] printed.
fn succeeded(state: &Path, args: &[&str], stdin: &str) -> String {
    let output = run(state, args, stdin);
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// `network create` of cbr0, 10.244.1.0/24 with gateway .1.
const CBR0: [&str; 10] = [
    "network",
    "create",
    "--name",
    "cbr0",
    "--type",
    "L2Bridge",
    "--subnet",
    "10.244.1.0/24",
    "--gateway",
    "10.244.1.1",
];

#[test]
fn hnsctl_creates_lists_modifies_and_deletes_load_balancers() {
    let dir = tempfile::tempdir().unwrap();
    let ok = |args: &[&str], stdin: &str| succeeded(dir.path(), args, stdin);
    ok(&CBR0, "");
    let pods: Vec<String> = ["10.244.1.5", "10.244.1.6"]
        .iter()
        .map(|ip| {
            let body = json!({"Name": ip, "VirtualNetworkName": "cbr0", "IPAddress": ip});
            let body = body.to_string();
            let created = ok(
                &["host", "call", "POST", "/endpoints/", "--body", &body],
                "",
            );
            let reply: Value = serde_json::from_str(&created).unwrap();
            reply["Output"]["ID"].as_str().unwrap().to_owned()
        })
        .collect();
    // kube-proxy's document for a ClusterIP Service, from a file and from stdin.
    let document = |backends: &[String]| {
        json!({
            "HostComputeEndpoints": backends, "SourceVIP": "10.244.1.2",
            "FrontendVIPs": ["10.96.0.10"],
            "PortMappings": [{"Protocol": 6, "InternalPort": 8080, "ExternalPort": 80}],
            "SchemaVersion": {"Major": 2, "Minor": 0}
        })
        .to_string()
    };
    let file = dir.path().join("service.json");
    std::fs::write(&file, document(&pods[..1])).unwrap();
    let created = ok(
        &["loadbalancer", "create", "--file", file.to_str().unwrap()],
        "",
    );
    let id: Guid = created.trim().parse().unwrap();
    let listed: Vec<HostComputeLoadBalancer> =
        serde_json::from_str(&ok(&["--json", "lb", "list"], "")).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, id);
    assert_eq!(
        listed[0].host_compute_endpoints,
        [pods[0].parse::<Guid>().unwrap()]
    );
    let table = ok(&["loadbalancer", "list"], "");
    for needle in [
        id.to_string(),
        "10.96.0.10".to_owned(),
        "TCP 80->8080".to_owned(),
        "10.244.1.2".to_owned(),
        format!("10.244.1.5 ({})", pods[0]),
    ] {
        assert!(table.contains(&needle), "{needle} missing in {table}");
    }

    // Modify is HNS 15.4's: refused on the emulated Windows Server 2022 (15.0), taken once
    // the host has it.
    let modify = ["lb", "modify", &id.to_string(), "--file", "-"];
    let refused = run(dir.path(), &modify, &document(&pods));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && stderr.contains("0x80004001"),
        "{stderr}"
    );
    ok(&["host", "version", "--set", "15.4"], "");
    ok(&modify, &document(&pods));
    let shown: HostComputeLoadBalancer =
        serde_json::from_str(&ok(&["loadbalancer", "show", &id.to_string()], "")).unwrap();
    assert_eq!(shown.host_compute_endpoints.len(), 2);

    // A backend deleted under the load balancer is listed as gone.
    ok(&["endpoint", "delete", &pods[1]], "");
    let table = ok(&["loadbalancer", "list"], "");
    assert!(table.contains(&format!("gone ({})", pods[1])), "{table}");

    let delete = ["loadbalancer", "delete", &id.to_string()];
    ok(&delete, "");
    assert_eq!(ok(&["--json", "lb", "list"], "").trim(), "[]");
    let again = run(dir.path(), &delete, "");
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        !again.status.success() && stderr.contains("0x80070490"),
        "{stderr}"
    );
}

#[test]
fn hnsctl_creates_endpoints_and_sends_policy_requests_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let ok = |args: &[&str], stdin: &str| succeeded(dir.path(), args, stdin);
    let failed = |args: &[&str], stdin: &str| {
        let output = run(dir.path(), args, stdin);
        assert_eq!(output.status.code(), Some(1), "{args:?} succeeded");
        String::from_utf8(output.stderr).unwrap()
    };
    ok(&CBR0, "");
    // An endpoint made with a policy file, as PowerShell's `-Encoding utf8` writes it (a BOM).
    let block = json!({"Type": "ACL", "Settings": {"Id": "block-in", "Action": "Block",
        "Direction": "In", "Protocols": "256", "Priority": 65000}});
    // The Host-layer allow-all production writes beside switch rules (without it the
    // emulator's verdicts on an L2Bridge endpoint rest on what no source settles).
    let host = json!({"Type": "ACL", "Settings": {"Id": "host-in", "Action": "Allow",
        "Direction": "In", "Protocols": "256", "RuleType": "Host"}});
    let file = dir.path().join("policies.json");
    std::fs::write(&file, format!("\u{feff}{}", json!([block, host]))).unwrap();
    let created = ok(
        &[
            "endpoint",
            "create",
            "--network",
            "cbr0",
            "--name",
            "pod-a",
            "--ip",
            "10.244.1.5",
            "--policies",
            file.to_str().unwrap(),
        ],
        "",
    );
    let id: Guid = created.trim().parse().unwrap();
    let policies = |endpoint: &str| -> Vec<Value> {
        let raw = ok(&["endpoint", "show", endpoint, "--raw"], "");
        assert_eq!(raw.lines().count(), 1, "{raw}");
        let document: Value = serde_json::from_str(&raw).unwrap();
        assert_eq!(document["ID"], id.to_string());
        document["Policies"].as_array().cloned().unwrap_or_default()
    };
    assert_eq!(policies("pod-a"), [block.clone(), host.clone()]);

    // Add from stdin; the rule is enforced at once.
    let allow = json!({"Type": "ACL", "Settings": {"Id": "allow-8080", "Action": "Allow",
        "Direction": "In", "Protocols": "6", "LocalPorts": "8080",
        "RemoteAddresses": "10.244.1.1", "Priority": 4300}});
    let add = ["endpoint", "policy", "add", "pod-a", "--file", "-"];
    ok(&add, &json!([allow]).to_string());
    assert_eq!(
        policies(&id.to_string()),
        [block.clone(), host.clone(), allow.clone()]
    );
    let check = |port: &str| {
        run(
            dir.path(),
            &["acl", "check", "--from", "10.244.1.1", "--to", "10.244.1.5"]
                .into_iter()
                .chain(["--protocol", "tcp", "--port", port])
                .collect::<Vec<_>>(),
            "",
        )
        .status
        .code()
    };
    assert_eq!((check("8080"), check("80")), (Some(0), Some(1)));
    // HNS's refusal is the one line hnsctl prints.
    let stderr = failed(&add, &json!([allow]).to_string());
    assert!(
        stderr.contains("0x803B0012") && stderr.lines().count() == 1,
        "{stderr}"
    );
    // Remove of the identical rule, then of a rule the endpoint does not hold.
    let remove = ["endpoint", "policy", "remove", "pod-a", "--file", "-"];
    ok(&remove, &json!([allow]).to_string());
    assert_eq!(policies("pod-a"), [block.clone(), host.clone()]);
    assert!(failed(&remove, &json!([allow]).to_string()).contains("0x803B0008"));
    // Update: the emulator's reading (the policies of the types it carries are replaced).
    ok(
        &["endpoint", "policy", "update", "pod-a", "--file", "-"],
        &json!([allow]).to_string(),
    );
    assert_eq!(policies("pod-a"), [allow]);

    // A network's IP sets: add, update, remove; `show --raw` is HNS's document.
    let set = |values: &str| {
        json!([{"Type": "SetPolicy", "Settings": {"Id": "chk-set", "Name": "chk-set",
            "PolicyType": "IPSET", "Values": values}}])
        .to_string()
    };
    let sets = || -> Vec<Value> {
        let raw = ok(&["network", "show", "cbr0", "--raw"], "");
        let document: Value = serde_json::from_str(&raw).unwrap();
        document["Policies"].as_array().cloned().unwrap_or_default()
    };
    ok(
        &["network", "policy", "add", "cbr0", "--file", "-"],
        &set("10.244.1.6"),
    );
    ok(
        &["network", "policy", "update", "cbr0", "--file", "-"],
        &set("10.244.1.7"),
    );
    assert_eq!(sets()[0]["Settings"]["Values"], "10.244.1.7");
    ok(
        &["network", "policy", "remove", "cbr0", "--file", "-"],
        &set("10.244.1.7"),
    );
    assert_eq!(sets(), Vec::<Value>::new());

    // What is not a list of policy objects is refused before any call, naming the input.
    let before = ok(&["--json", "stats", "--writes"], "");
    for (input, says) in [
        (
            r#"{"Type":"ACL"}"#,
            "stdin is not a JSON array of policy objects",
        ),
        (r#"[{"Settings":{}}]"#, "stdin: policy [0]"),
    ] {
        let stderr = failed(&add, input);
        assert!(stderr.contains(says), "{stderr}");
    }
    assert_eq!(ok(&["--json", "stats", "--writes"], ""), before);
    let missing = dir.path().join("missing.json");
    let stderr = failed(
        &[
            "endpoint",
            "policy",
            "add",
            "pod-a",
            "--file",
            missing.to_str().unwrap(),
        ],
        "",
    );
    assert!(stderr.contains("missing.json"), "{stderr}");
}

#[test]
fn hnsctl_sets_the_host_adapter_and_settles_its_switch() {
    let dir = tempfile::tempdir().unwrap();
    let ok = |args: &[&str]| succeeded(dir.path(), args, "");
    let default: Value = serde_json::from_str(&ok(&["--json", "host", "adapter"])).unwrap();
    assert_eq!(default["Address"], "192.168.1.10/24");
    let set = ["--json", "host", "adapter", "--address", "10.0.0.4/24"];
    let set: Value = serde_json::from_str(&ok(&set)).unwrap();
    assert_eq!(set["Address"], "10.0.0.4/24");
    assert_eq!(set["Name"], default["Name"]);
    ok(&["host", "switch", "--settle-ms", "3600000"]);
    ok(&CBR0);
    let management_ip = || {
        let reply: Value =
            serde_json::from_str(&ok(&["host", "call", "GET", "/networks/"])).unwrap();
        reply["Output"][0]["ManagementIP"].clone()
    };
    assert_eq!(management_ip(), Value::Null, "the switch is settling");
    let switch: Value =
        serde_json::from_str(&ok(&["--json", "host", "switch", "--settle-now"])).unwrap();
    assert_eq!(switch, json!({"SettleMillis": 3_600_000, "Settled": true}));
    assert_eq!(management_ip(), "10.0.0.4");
}

#[test]
fn hnsctl_refuses_an_empty_state_directory() {
    let cwd = tempfile::tempdir().unwrap();
    let output = Command::new(HNSCTL)
        .args(["--state", "", "network", "list"])
        .current_dir(cwd.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let first = stderr.lines().next().unwrap_or_default();
    assert!(
        first.contains("--state") && first.contains("needs a directory"),
        "{stderr}"
    );
    let written: Vec<_> = std::fs::read_dir(cwd.path()).unwrap().collect();
    assert!(
        written.is_empty(),
        "state written into the working directory: {written:?}"
    );
}

#[test]
fn help_usage_errors_and_completions_are_the_parsers() {
    let run = |args: &[&str]| Command::new(HNSCTL).args(args).output().unwrap();
    let help = run(&["network", "create", "--help"]);
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(help.status.success(), "{text}");
    for option in [
        "--name",
        "--type",
        "--subnet",
        "--gateway",
        "--vni",
        "--provider-address",
    ] {
        assert!(text.contains(option), "{option} missing in {text}");
    }
    let typo = run(&["netwrok", "list"]);
    let stderr = String::from_utf8_lossy(&typo.stderr);
    assert_eq!(typo.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("network"), "no suggestion in {stderr}");
    let missing = run(&["network", "create", "--name", "cbr0"]);
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert_eq!(missing.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--type"), "{stderr}");
    let completions = run(&["completions", "bash"]);
    let script = String::from_utf8_lossy(&completions.stdout);
    assert!(completions.status.success());
    assert!(
        script.contains("hnsctl") && script.contains("namespace"),
        "{script}"
    );
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let output = Command::new(HNSCTL).arg("--version").output().unwrap();
    assert!(output.status.success());
    let commit = option_env!("CNI_WIN_COMMIT").unwrap_or("unknown");
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        format!("hnsctl {} (commit {commit})\n", env!("CARGO_PKG_VERSION"))
    );
    assert_ne!(commit, "unknown", "a git checkout names its commit");
}

/// `inject` writes what HNS's create checks refuse, as the field finds it: a second endpoint
/// on a pod's address, a remote one beside it, and a load balancer with no port mapping whose
/// backend does not exist; each is an ordinary object afterwards (listed, deleted).
#[test]
fn hnsctl_injects_duplicates_and_a_half_created_load_balancer() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path();
    succeeded(state, &CBR0, "");
    let create = [
        "endpoint",
        "create",
        "--network",
        "cbr0",
        "--name",
        "pod",
        "--ip",
        "10.244.1.5",
    ];
    succeeded(state, &create, "");
    assert!(!run(state, &create, "").status.success(), "HNS refuses it");
    let local = succeeded(
        state,
        &[
            "inject",
            "endpoint",
            "--network",
            "cbr0",
            "--ip",
            "10.244.1.5",
        ],
        "",
    );
    let remote = succeeded(
        state,
        &[
            "inject",
            "endpoint",
            "--network",
            "cbr0",
            "--ip",
            "10.244.1.5",
            "--remote",
            "--name",
            "stale",
        ],
        "",
    );
    let listed = succeeded(state, &["--json", "endpoint", "list"], "");
    let endpoints: Vec<hns::schema::HostComputeEndpoint> = serde_json::from_str(&listed).unwrap();
    let holding = |ip: &str| {
        endpoints
            .iter()
            .filter(|e| {
                e.ip_configurations
                    .iter()
                    .any(|c| c.ip_address.to_string() == ip)
            })
            .count()
    };
    assert_eq!(holding("10.244.1.5"), 3, "{listed}");
    let stale = endpoints.iter().find(|e| e.name == "stale").unwrap();
    assert!(
        stale
            .flags
            .contains(hns::schema::EndpointFlags::REMOTE_ENDPOINT)
    );
    assert_eq!(stale.id.to_string(), remote.trim());

    let gone = "deadbeef-0000-0000-0000-000000000001";
    let balancer = succeeded(
        state,
        &[
            "inject",
            "lb",
            "--frontend",
            "10.96.0.10",
            "--backend",
            gone,
        ],
        "",
    );
    let shown = succeeded(state, &["--json", "lb", "show", balancer.trim()], "");
    let shown: HostComputeLoadBalancer = serde_json::from_str(&shown).unwrap();
    assert!(shown.port_mappings.is_empty(), "{shown:?}");
    assert_eq!(
        shown.host_compute_endpoints,
        [gone.parse::<Guid>().unwrap()]
    );
    succeeded(state, &["lb", "delete", balancer.trim()], "");
    succeeded(state, &["endpoint", "delete", local.trim()], "");
    succeeded(state, &["endpoint", "delete", remote.trim()], "");
    assert!(
        !run(state, &create, "").status.success(),
        "the pod's endpoint still holds the address"
    );
}
