//! `hnsctl acl` answers any harness: verdicts as exit statuses, the deciding rule per side,
//! rules in evaluation order, and the policy writes in `stats`.
#![cfg(not(windows))]

use std::process::{Command, Output};

use hns::{Guid, RawHcn, WindowsRelease};
use hns_emulator::Emulator;

const HNSCTL: &str = env!("CARGO_BIN_EXE_hnsctl");
const POD_A: &str = "10.244.1.5";
const POD_B: &str = "10.244.1.6";
const B_ID: &str = "0af40106-0000-0000-0000-000000000000";

fn hnsctl(state: &std::path::Path, args: &[&str]) -> Output {
    Command::new(HNSCTL)
        .args(args)
        .env("HCN_EMULATOR_STATE", state)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A Windows Server 2025 host: pod A without ACLs, pod B that takes TCP 80 from A's /32 only,
/// with a rule tied with a block at priority 300 for port 8080, and the Host-layer allow-alls
/// production writes beside switch rules.
fn host(state: &std::path::Path) -> Emulator {
    let emulator = Emulator::open(state).unwrap();
    emulator
        .engine()
        .set_release(WindowsRelease::SERVER_2025)
        .unwrap();
    let network = emulator
        .create_network(
            &Guid::ZERO,
            r#"{"Name":"cbr0","Type":"L2Bridge","Ipams":[{"Subnets":[{"IpAddressPrefix":"10.244.1.0/24"}]}]}"#,
        )
        .unwrap();
    let endpoint = |id: &str, ip: &str, policies: &str| {
        let settings = format!(
            r#"{{"Name":"pod-{ip}","IpConfigurations":[{{"IpAddress":"{ip}"}}],"Policies":[{policies}]}}"#
        );
        let handle = emulator
            .create_endpoint(&network, &id.parse().unwrap(), &settings)
            .unwrap();
        emulator.close_endpoint(handle).unwrap();
    };
    endpoint("0af40105-0000-0000-0000-000000000000", POD_A, "");
    endpoint(
        B_ID,
        POD_B,
        r#"{"Type":"ACL","Settings":{"Id":"from-a","Action":"Allow","Direction":"In","Protocols":"6","LocalPorts":"80","RemoteAddresses":"10.244.1.5/32","Priority":200}},
           {"Type":"ACL","Settings":{"Id":"web-alt","Action":"Allow","Direction":"In","Protocols":"6","LocalPorts":"8080","Priority":300}},
           {"Type":"ACL","Settings":{"Id":"deny","Action":"Block","Direction":"In","Priority":300}},
           {"Type":"ACL","Settings":{"Action":"Allow","Direction":"Out","Protocols":"256","Priority":65500}},
           {"Type":"ACL","Settings":{"Id":"host-in","Action":"Allow","Direction":"In","Protocols":"256","RuleType":"Host"}},
           {"Type":"ACL","Settings":{"Id":"host-out","Action":"Allow","Direction":"Out","Protocols":"256","RuleType":"Host"}}"#,
    );
    emulator.close_network(network).unwrap();
    emulator
}

#[test]
fn acl_check_answers_with_its_exit_status_and_the_deciding_rules() {
    let dir = tempfile::tempdir().unwrap();
    let _host = host(dir.path());
    // `acl check` with options written as one line.
    let check = |options: &str| {
        let args: Vec<&str> = ["acl", "check"]
            .into_iter()
            .chain(options.split_whitespace())
            .collect();
        hnsctl(dir.path(), &args)
    };

    let allowed = check("--from 10.244.1.5 --to 10.244.1.6 --protocol tcp --port 80");
    let stdout = text(&allowed.stdout);
    assert_eq!(
        allowed.status.code(),
        Some(0),
        "{stdout}{}",
        text(&allowed.stderr)
    );
    assert!(
        stdout.starts_with("allowed: tcp 10.244.1.5:49152 -> 10.244.1.6:80\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("destination 10.244.1.6: endpoint {B_ID} In: allowed by rule #0 (Switch, priority 200, Allow, id from-a)")),
        "{stdout}"
    );
    assert!(stdout.contains("source 10.244.1.5: endpoint 0af40105-0000-0000-0000-000000000000 Out: allowed, the endpoint has no ACL"), "{stdout}");

    // Not from A's /32: the block at 300; not TCP: no rule matches, and the 2025 default denies.
    let denied = check("--from 10.244.1.9 --to 10.244.1.6 --protocol 6 --port 80");
    assert_eq!(denied.status.code(), Some(1), "{}", text(&denied.stdout));
    assert!(
        text(&denied.stdout).contains("denied by rule #2 (Switch, priority 300, Block, id deny)")
    );
    let icmp = check("--from 10.244.1.5 --to 10.244.1.6 --protocol icmp --json");
    assert_eq!(icmp.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&icmp.stdout).unwrap();
    assert_eq!(json["Verdict"], "Denied");
    assert_eq!(json["Undocumented"], false);
    assert_eq!(json["Destination"]["Decision"]["Reason"]["Kind"], "Rule");
    assert_eq!(json["Destination"]["Decision"]["Reason"]["Id"], "deny");
    assert_eq!(json["Source"]["Kind"], "Endpoint");

    // Allow and Block at one priority: the emulator denies, and says it is not evidence.
    let tied = check("--from 10.244.1.5 --to 10.244.1.6 --protocol tcp --port 8080");
    assert_eq!(tied.status.code(), Some(3), "{}", text(&tied.stdout));
    assert!(
        text(&tied.stdout).contains("undocumented: "),
        "{}",
        text(&tied.stdout)
    );

    // Usage errors and checks that cannot be made have their own statuses.
    let no_port = check("--from 10.244.1.5 --to 10.244.1.6 --protocol udp");
    assert_eq!(no_port.status.code(), Some(2));
    assert!(text(&no_port.stderr).contains("--port is required"));
    let bad_protocol = check("--from 10.244.1.5 --to 10.244.1.6 --protocol sctpx --port 1");
    assert_eq!(bad_protocol.status.code(), Some(2));
    let unset = Command::new(HNSCTL)
        .args("acl check --from 10.244.1.5 --to 10.244.1.6 --protocol tcp --port 80".split(' '))
        .env_remove("HCN_EMULATOR_STATE")
        .output()
        .unwrap();
    assert_eq!(unset.status.code(), Some(4), "{}", text(&unset.stderr));
}

#[test]
fn acl_list_prints_rules_in_evaluation_order_and_stats_the_writes() {
    let dir = tempfile::tempdir().unwrap();
    let host = host(dir.path());
    let listed = hnsctl(dir.path(), &["acl", "list", "--endpoint", "pod-10.244.1.6"]);
    let stdout = text(&listed.stdout);
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    let rows: Vec<&str> = stdout.lines().skip(2).collect();
    let order: Vec<&str> = rows
        .iter()
        .map(|row| row.split_whitespace().last().unwrap())
        .collect();
    assert_eq!(
        order,
        ["from-a", "deny", "web-alt", "host-in", "-", "host-out"],
        "{stdout}"
    );
    let json = hnsctl(dir.path(), &["--json", "acl", "list"]);
    let endpoints: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(endpoints.as_array().unwrap().len(), 1, "pod A has no ACL");
    assert_eq!(endpoints[0]["Rules"][4]["Priority"], 65500);
    assert_eq!(endpoints[0]["Rules"][0]["RuleType"], "Switch");
    assert_eq!(
        (
            &endpoints[0]["Rules"][3]["RuleType"],
            &endpoints[0]["Rules"][3]["Priority"]
        ),
        (&serde_json::json!("Host"), &serde_json::json!(0))
    );

    let endpoint = host.open_endpoint(&B_ID.parse().unwrap()).unwrap();
    host.modify_endpoint(
        &endpoint,
        r#"{"ResourceType":"Policy","RequestType":"Add","Settings":{"Policies":[{"Type":"ACL","Settings":{"Action":"Allow","Direction":"In","Protocols":"17","LocalPorts":"53","Priority":100}}]}}"#,
    )
    .unwrap();
    host.close_endpoint(endpoint).unwrap();
    // The calls map stays a map of function to count: harnesses sum it.
    let calls: std::collections::BTreeMap<String, u64> =
        serde_json::from_slice(&hnsctl(dir.path(), &["--json", "stats"]).stdout).unwrap();
    assert_eq!(calls["HcnModifyEndpoint"], 1);
    let writes = hnsctl(dir.path(), &["--json", "stats", "--writes", "--reset"]);
    let writes: serde_json::Value = serde_json::from_slice(&writes.stdout).unwrap();
    assert_eq!(writes["EndpointRequests"], 1);
    assert_eq!(writes["AclRulesWritten"], 1);
    let stats = text(&hnsctl(dir.path(), &["stats"]).stdout);
    assert!(
        stats.starts_with("policy writes\n  endpoint policy requests       0\n"),
        "--reset clears calls and writes: {stats}"
    );
}
