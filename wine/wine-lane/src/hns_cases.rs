//! The HNS cases: `hnsctl` and `hns-probe` drive the HNS client of one side; under Wine that
//! is `hns::native` calling the emulator's `computenetwork.dll` and `vmcompute.dll`. Each case
//! checks what the side printed and cross-checks the state with Linux `hnsctl`. One case runs
//! win-bridge itself, for what depends on how the side spells a path (`CNI_NETNS`).

use std::time::{Duration, Instant};

use cni_win_conformance::hns::{L2BRIDGE_NETWORK, OVERLAY_NETWORK};
use serde_json::{Value, json};

use crate::cbr0::cbr0_pod_setup;
use crate::lane::{Bench, Lane, Side};
use crate::table::Outcome;

/// One HNS case, run once per side on a fresh emulated host.
#[derive(Debug)]
pub struct HnsCase {
    pub id: &'static str,
    check: fn(&Bench<'_>) -> Result<String, String>,
    /// Why the case has no native run, if it only exists in the Windows build.
    windows_only: Option<&'static str>,
}

impl HnsCase {
    const fn new(id: &'static str, check: fn(&Bench<'_>) -> Result<String, String>) -> HnsCase {
        HnsCase {
            id,
            check,
            windows_only: None,
        }
    }

    pub fn run(&self, lane: &Lane, side: Side) -> Outcome {
        if let (Side::Native, Some(why)) = (side, self.windows_only) {
            return Outcome::skip(why);
        }
        match lane
            .bench(side, self.id)
            .and_then(|bench| (self.check)(&bench))
        {
            Ok(note) => Outcome::pass(note),
            Err(why) => Outcome::fail(why),
        }
    }
}

/// Every HNS case, in the order they run.
pub fn all() -> Vec<HnsCase> {
    vec![
        HnsCase::new("hnsctl.network-lifecycle", network_lifecycle),
        HnsCase::new("hnsctl.namespace-lifecycle", namespace_lifecycle),
        HnsCase::new("hnsctl.not-found", not_found),
        HnsCase::new("hnsctl.injected-fault", injected_fault),
        HnsCase::new("hnsctl.record-with-success", record_with_success),
        HnsCase::new("hnsctl.host-version", host_version),
        HnsCase::new("probe.attach-detach", attach_detach),
        HnsCase::new("probe.error-records", error_records),
        HnsCase::new("probe.v1-networks", v1_networks),
        HnsCase::new("probe.v1-endpoints", v1_endpoints),
        HnsCase::new("probe.load-balancers", load_balancers),
        HnsCase::new("probe.load-balancer-lifecycle", load_balancer_lifecycle),
        HnsCase::new("win-bridge.netns-path", netns_path),
        HnsCase::new("win-bridge.hung-hns", hung_hns),
        HnsCase::new("cni-win.sweep", sweep),
        HnsCase::new("cni-win.doctor", doctor),
        HnsCase::new("cni-win.source-vip", source_vip),
        HnsCase::new("win-bridge.attachment-lock", attachment_lock),
        HnsCase::new("win-bridge.flannel-native", flannel_native),
        HnsCase::new("win-bridge.network-policy", network_policy),
        HnsCase::new("win-bridge.exit-status", crate::exit_status::exit_status),
        HnsCase::new(
            "logs.concurrent-writers",
            crate::log_rotation::concurrent_writers,
        ),
        HnsCase {
            windows_only: Some("the C ABI exists only in the Windows build"),
            ..HnsCase::new("probe.dll-edge-arguments", dll_edge_arguments)
        },
    ]
}

// Fixed GUIDs of hns-probe (see its docs).
const PROBE_NETWORK: &str = "5eed0001-0000-4000-8000-000000000001";
const PROBE_ENDPOINT: &str = "5eed0002-0000-4000-8000-000000000002";
const PROBE_NAMESPACE: &str = "5eed0003-0000-4000-8000-000000000003";
const PROBE_MISSING: &str = "5eed0004-0000-4000-8000-000000000004";
const PROBE_LOAD_BALANCER: &str = "5eed0005-0000-4000-8000-000000000005";

fn parse(what: &str, text: &str) -> Result<Value, String> {
    serde_json::from_str(text.trim()).map_err(|e| format!("{what} is not JSON ({e}): {text:?}"))
}

fn ensure(condition: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if condition { Ok(()) } else { Err(why()) }
}

/// `hnsctl --json <object> list` on the side under test equals Linux hnsctl's on the same state.
fn listed_alike(bench: &Bench<'_>, object: &str) -> Result<Value, String> {
    let side = parse("list", &bench.hnsctl(&["--json", object, "list"])?.ok()?)?;
    let linux = parse(
        "Linux list",
        &bench.linux_hnsctl(&["--json", object, "list"])?.ok()?,
    )?;
    ensure(side == linux, || {
        format!(
            "{object} list differs from Linux hnsctl's view of the same state: {side} vs {linux}"
        )
    })?;
    Ok(side)
}

fn empty_for_linux(bench: &Bench<'_>, object: &str) -> Result<(), String> {
    let linux = parse(
        "Linux list",
        &bench.linux_hnsctl(&["--json", object, "list"])?.ok()?,
    )?;
    ensure(linux == json!([]), || {
        format!("Linux hnsctl still sees {object}s: {linux}")
    })
}

fn network_lifecycle(bench: &Bench<'_>) -> Result<String, String> {
    let id = bench
        .hnsctl(&[
            "network",
            "create",
            "--name",
            "lane-bridge",
            "--type",
            "L2Bridge",
            "--subnet",
            "10.98.0.0/24",
            "--gateway",
            "10.98.0.1",
        ])?
        .ok()?
        .trim()
        .to_owned();
    let listed = listed_alike(bench, "network")?;
    let network = &listed[0];
    ensure(
        listed.as_array().map(Vec::len) == Some(1)
            && network["ID"] == id.as_str()
            && network["Name"] == "lane-bridge"
            && network["Ipams"][0]["Subnets"][0]["IpAddressPrefix"] == "10.98.0.0/24",
        || format!("created {id}, but the list is {listed}"),
    )?;
    let shown = parse(
        "network show",
        &bench.hnsctl(&["network", "show", "lane-bridge"])?.ok()?,
    )?;
    ensure(shown == *network, || {
        format!("show {shown} differs from list entry {network}")
    })?;
    bench.hnsctl(&["network", "delete", "lane-bridge"])?.ok()?;
    empty_for_linux(bench, "network")?;
    Ok(format!(
        "network {id} created, listed, shown, deleted; Linux hnsctl agrees"
    ))
}

fn namespace_lifecycle(bench: &Bench<'_>) -> Result<String, String> {
    let id = bench
        .hnsctl(&["namespace", "create"])?
        .ok()?
        .trim()
        .to_owned();
    let listed = listed_alike(bench, "namespace")?;
    ensure(
        listed.as_array().map(Vec::len) == Some(1) && listed[0]["ID"] == id.as_str(),
        || format!("created {id}, but the list is {listed}"),
    )?;
    let shown = parse(
        "namespace show",
        &bench.hnsctl(&["namespace", "show", &id])?.ok()?,
    )?;
    ensure(shown == listed[0], || {
        format!("show {shown} differs from list entry {}", listed[0])
    })?;
    bench.hnsctl(&["namespace", "delete", &id])?.ok()?;
    empty_for_linux(bench, "namespace")?;
    Ok(format!(
        "namespace {id} created, listed, shown, deleted; Linux hnsctl agrees"
    ))
}

/// The HRESULT and the error record's detail both reach the caller's message.
fn not_found(bench: &Bench<'_>) -> Result<String, String> {
    let stderr = bench
        .hnsctl(&["network", "show", PROBE_MISSING])?
        .failed()?;
    for needle in [
        "(not found)",
        "HcnOpenNetwork failed with HRESULT 0x803B0001 (HCN_E_NETWORK_NOT_FOUND)",
        &format!("The network was not found. (network {PROBE_MISSING})"),
    ] {
        ensure(stderr.contains(needle), || {
            format!("error {:?} lacks {needle:?}", stderr.trim())
        })?;
    }
    Ok("HCN_E_NETWORK_NOT_FOUND with its error record, reported as not found".to_owned())
}

/// A fault injected with Linux hnsctl hits the side's next call, once, through the same engine.
fn injected_fault(bench: &Bench<'_>) -> Result<String, String> {
    bench.linux_hnsctl(&["stats", "--reset"])?.ok()?;
    network_list_fails_after_fault(
        bench,
        "0x803B0015",
        "HcnEnumerateNetworks failed with HRESULT 0x803B0015 (HCN_E_REQUEST_UNSUPPORTED)",
    )?;
    bench.hnsctl(&["network", "list"])?.ok()?;
    let stats = parse("stats", &bench.linux_hnsctl(&["--json", "stats"])?.ok()?)?;
    ensure(stats["HcnEnumerateNetworks"] == 2, || {
        format!("the engine counted {stats} (expected HcnEnumerateNetworks: 2)")
    })?;
    Ok(
        "0x803B0015 injected by Linux hnsctl surfaced once; the engine counted both calls"
            .to_owned(),
    )
}

/// A failure reported in the error record alone (HRESULT `S_OK`, as the emulator DLL returns a
/// fault injected with 0) is still a failure: the backend must read the record on success too.
fn record_with_success(bench: &Bench<'_>) -> Result<String, String> {
    network_list_fails_after_fault(
        bench,
        "0",
        "HcnEnumerateNetworks failed with HRESULT 0x80004005",
    )?;
    Ok("S_OK with a non-empty error record reported as a failure, with the record".to_owned())
}

/// Injects `hresult` into the side's next `HcnEnumerateNetworks` (with Linux hnsctl) and checks
/// that the side's `hnsctl network list` fails saying `expected` and quoting the error record.
fn network_list_fails_after_fault(
    bench: &Bench<'_>,
    hresult: &str,
    expected: &str,
) -> Result<(), String> {
    bench
        .linux_hnsctl(&[
            "fault",
            "inject",
            "--function",
            "HcnEnumerateNetworks",
            "--hresult",
            hresult,
        ])?
        .ok()?;
    let stderr = bench.hnsctl(&["network", "list"])?.failed()?;
    for needle in [expected, "(fault injected into HcnEnumerateNetworks)"] {
        ensure(stderr.contains(needle), || {
            format!("error {:?} lacks {needle:?}", stderr.trim())
        })?;
    }
    Ok(())
}

/// `hnsctl host version` goes through `HNSCall GET /globals/version` (vmcompute.dll under Wine).
fn host_version(bench: &Bench<'_>) -> Result<String, String> {
    bench
        .linux_hnsctl(&["host", "version", "--set", "11.7"])?
        .ok()?;
    let version = bench.hnsctl(&["host", "version"])?.ok()?;
    ensure(version.trim() == "11.7", || {
        format!("host version printed {:?}, expected 11.7", version.trim())
    })?;
    Ok("11.7 set by Linux hnsctl, read back through HNSCall".to_owned())
}

/// Endpoint create and namespace attach/detach through the typed client.
fn attach_detach(bench: &Bench<'_>) -> Result<String, String> {
    let attached = parse("probe attach", &bench.probe(&["attach"])?.ok()?)?;
    let endpoint = &attached["endpoint"];
    ensure(
        endpoint["ID"] == PROBE_ENDPOINT
            && endpoint["HostComputeNetwork"] == PROBE_NETWORK
            && endpoint["IpConfigurations"][0]["IpAddress"] == "10.99.0.5"
            && endpoint["MacAddress"]
                .as_str()
                .is_some_and(|mac| mac.len() == 17),
        || format!("created endpoint reads back as {endpoint}"),
    )?;
    let resources = attached["namespace"]["Resources"]
        .to_string()
        .to_lowercase();
    ensure(resources.contains(PROBE_ENDPOINT), || {
        format!("namespace after attach: {}", attached["namespace"])
    })?;
    let linux_namespace = parse(
        "Linux namespace show",
        &bench
            .linux_hnsctl(&["namespace", "show", PROBE_NAMESPACE])?
            .ok()?,
    )?;
    ensure(linux_namespace == attached["namespace"], || {
        format!(
            "Linux hnsctl sees namespace {linux_namespace}, the probe {}",
            attached["namespace"]
        )
    })?;
    let endpoints = listed_alike(bench, "endpoint")?;
    ensure(endpoints[0]["MacAddress"] == endpoint["MacAddress"], || {
        format!("endpoint list {endpoints} vs created {endpoint}")
    })?;

    let detached = parse("probe detach", &bench.probe(&["detach"])?.ok()?)?;
    ensure(detached["namespace"].get("Resources").is_none(), || {
        format!("namespace after detach: {}", detached["namespace"])
    })?;
    for object in ["endpoint", "namespace", "network"] {
        empty_for_linux(bench, object)?;
    }
    Ok("endpoint created, attached, listed, detached, deleted; Linux hnsctl agrees".to_owned())
}

/// Each failure family reaches the caller as the right `HnsError` kind, with the HRESULT and
/// the emulator's error record intact.
fn error_records(bench: &Bench<'_>) -> Result<String, String> {
    let observed = parse("probe errors", &bench.probe(&["errors"])?.ok()?)?;
    let expectations = [
        (
            "open-missing-endpoint",
            "NotFound",
            0x803B_0002_u32,
            format!("(endpoint {PROBE_MISSING})"),
        ),
        (
            "create-network-twice",
            "AlreadyExists",
            0x803B_0010,
            String::new(),
        ),
        (
            "create-network-invalid-json",
            "InvalidInput",
            0x803B_001B,
            "network settings".to_owned(),
        ),
        (
            "attach-twice",
            "AlreadyAttached",
            0x803B_0014,
            String::new(),
        ),
    ];
    for (name, kind, hresult, detail) in expectations {
        let failure = &observed[name];
        ensure(
            failure["kind"] == kind && failure["hresult"] == hresult,
            || format!("{name}: expected {kind} {hresult:#010X}, observed {failure}"),
        )?;
        let record = parse(
            &format!("{name} error record"),
            failure["record"].as_str().unwrap_or_default(),
        )?;
        ensure(
            record["Success"] == false
                && record["ErrorCode"] == hresult
                && record["Error"]
                    .as_str()
                    .is_some_and(|text| text.contains(&detail)),
            || {
                format!(
                    "{name}: error record {record} (expected ErrorCode {hresult} and {detail:?})"
                )
            },
        )?;
    }
    ensure(observed["cleanup"]["kind"] == "succeeded", || {
        format!("cleanup: {}", observed["cleanup"])
    })?;
    empty_for_linux(bench, "network")?;
    Ok(
        "not found, already exists, invalid JSON, already attached: kinds, HRESULTs, records"
            .to_owned(),
    )
}

/// V1 readers get `Subnets[0]` (with its ID and VSID policy), the DR MAC and `ManagementIP`
/// through `HNSCall GET /networks/`.
fn v1_networks(bench: &Bench<'_>) -> Result<String, String> {
    bench
        .hnsctl(&[
            "network",
            "create",
            "--name",
            "lane-overlay",
            "--type",
            "Overlay",
            "--subnet",
            "10.97.0.0/24",
            "--gateway",
            "10.97.0.1",
            "--vni",
            "4097",
            "--provider-address",
            "192.168.50.10",
        ])?
        .ok()?;
    let observed = parse("probe v1", &bench.probe(&["v1"])?.ok()?)?;
    let listing = &observed["networks"];
    let network = &listing["Output"][0];
    ensure(
        listing["Success"] == true
            && network["Name"] == "lane-overlay"
            && network["Type"] == "Overlay"
            && network["Subnets"][0]["AddressPrefix"] == "10.97.0.0/24"
            && network["Subnets"][0]["GatewayAddress"] == "10.97.0.1"
            && network["Subnets"][0]["ID"].is_string()
            && network["Subnets"][0]["Policies"] == json!([{"Type": "VSID", "VSID": 4097}])
            && network["DrMacAddress"].is_string()
            && network["ManagementIP"] == "192.168.50.10",
        || format!("GET /networks/ answered {listing}"),
    )?;
    let version = bench.linux_hnsctl(&["host", "version"])?.ok()?;
    let reported = format!(
        "{}.{}",
        observed["version"]["Major"], observed["version"]["Minor"]
    );
    ensure(reported == version.trim(), || {
        format!(
            "probe saw version {reported}, Linux hnsctl {}",
            version.trim()
        )
    })?;
    Ok(
        "Subnets[0], DrMacAddress and ManagementIP of the overlay network; version agrees"
            .to_owned(),
    )
}

/// The V1 endpoint resource through `HNSCall` (under Wine: `vmcompute.dll`): one object with
/// the V2 view, a duplicate name failing the call with 0x80071392, "Element not found." after
/// the delete.
fn v1_endpoints(bench: &Bench<'_>) -> Result<String, String> {
    let observed = parse("probe v1-endpoints", &bench.probe(&["v1-endpoints"])?.ok()?)?;
    let created = &observed["created"]["Output"];
    ensure(
        observed["created"]["Success"] == true
            && created["ID"]
                .as_str()
                .map(str::to_ascii_lowercase)
                .as_deref()
                == Some(PROBE_ENDPOINT)
            && created["IPAddress"] == "10.99.0.5"
            && created["Policies"][0]["Type"] == "NAT",
        || format!("POST /endpoints/ answered {}", observed["created"]),
    )?;
    ensure(observed["duplicate"]["HResult"] == 0x8007_1392_u32, || {
        format!("a duplicate name answered {}", observed["duplicate"])
    })?;
    ensure(
        observed["listed"]["Output"].as_array().map(Vec::len) == Some(1)
            && observed["listed"]["Output"][0] == *created,
        || format!("GET /endpoints/ answered {}", observed["listed"]),
    )?;
    let v2 = &observed["v2"];
    ensure(
        v2["IpConfigurations"][0]["IpAddress"] == "10.99.0.5"
            && v2["MacAddress"] == created["MacAddress"]
            && v2["Policies"][0]["Type"] == "PortMapping",
        || format!("the V2 view of the V1 endpoint is {v2}"),
    )?;
    ensure(
        observed["deleted"]["Success"] == true
            && observed["after"] == json!({"Success": false, "Error": "Element not found."}),
        || {
            format!(
                "DELETE answered {}, then GET {}",
                observed["deleted"], observed["after"]
            )
        },
    )?;
    empty_for_linux(bench, "endpoint")?;
    Ok("V1 create/list/delete over the V2 object; duplicate name 0x80071392".to_owned())
}

/// Load balancers (kube-proxy's; the emulator lists those in its state) through
/// Enumerate/Open/Query/Close.
fn load_balancers(bench: &Bench<'_>) -> Result<String, String> {
    let id = "5EED0005-0000-4000-8000-000000000005";
    let balancer = json!({
        "ID": id.to_lowercase(),
        "SourceVIP": "10.98.0.2",
        "FrontendVIPs": ["10.96.0.10"],
        "SchemaVersion": {"Major": 2, "Minor": 0}
    });
    let path = bench
        .state()
        .join("loadbalancers")
        .join(format!("{id}.json"));
    std::fs::create_dir_all(bench.state().join("loadbalancers"))
        .and_then(|()| std::fs::write(&path, balancer.to_string()))
        .map_err(|e| format!("cannot seed {}: {e}", path.display()))?;
    let observed = parse(
        "probe load-balancers",
        &bench.probe(&["load-balancers"])?.ok()?,
    )?;
    ensure(
        observed.as_array().map(Vec::len) == Some(1)
            && observed[0]["ID"] == balancer["ID"]
            && observed[0]["FrontendVIPs"] == balancer["FrontendVIPs"],
        || format!("listed {observed}, seeded {balancer}"),
    )?;
    Ok("the seeded load balancer listed through Enumerate/Open/Query/Close".to_owned())
}

/// `HcnCreateLoadBalancer`, `HcnModifyLoadBalancer` and `HcnDeleteLoadBalancer` through the
/// side's backend (under Wine: `hns::native` calling the DLL): created as sent, modify refused
/// with `E_NOTIMPL` on the emulated HNS 15.0 and taken on 15.4, delete once, then 0x490.
fn load_balancer_lifecycle(bench: &Bench<'_>) -> Result<String, String> {
    let run = |modified_backends: usize| -> Result<Value, String> {
        let observed = parse(
            "probe load-balancer-lifecycle",
            &bench.probe(&["load-balancer-lifecycle"])?.ok()?,
        )?;
        let created = &observed["created"];
        ensure(
            created["ID"]
                .as_str()
                .map(str::to_ascii_lowercase)
                .as_deref()
                == Some(PROBE_LOAD_BALANCER)
                && created["HostComputeEndpoints"].as_array().map(Vec::len) == Some(1)
                && created["FrontendVIPs"] == json!(["10.96.0.10"])
                && created["PortMappings"]
                    == json!([{"Protocol": 6, "InternalPort": 8080, "ExternalPort": 80}]),
            || format!("HcnCreateLoadBalancer answered {created}"),
        )?;
        ensure(
            observed["listed"][0]["HostComputeEndpoints"]
                .as_array()
                .map(Vec::len)
                == Some(modified_backends),
            || {
                format!(
                    "listed {} after modify {}",
                    observed["listed"], observed["modified"]
                )
            },
        )?;
        ensure(
            observed["deleted"] == json!({"kind": "succeeded"})
                && observed["deleted-again"]["hresult"] == 0x8007_0490_u32
                && observed["deleted-again"]["kind"] == "NotFound",
            || {
                format!(
                    "delete answered {}, then {}",
                    observed["deleted"], observed["deleted-again"]
                )
            },
        )?;
        Ok(observed)
    };
    let refused = run(1)?;
    let modified = &refused["modified"];
    ensure(
        modified["hresult"] == 0x8000_4001_u32 && modified["kind"] == "Unsupported",
        || format!("HcnModifyLoadBalancer on HNS 15.0 answered {modified}"),
    )?;
    bench
        .linux_hnsctl(&["host", "version", "--set", "15.4"])?
        .ok()?;
    let taken = run(2)?;
    ensure(
        taken["modified"]["HostComputeEndpoints"]
            .as_array()
            .map(Vec::len)
            == Some(2),
        || {
            format!(
                "HcnModifyLoadBalancer on HNS 15.4 answered {}",
                taken["modified"]
            )
        },
    )?;
    let stats = parse(
        "Linux stats",
        &bench.linux_hnsctl(&["--json", "stats"])?.ok()?,
    )?;
    ensure(
        stats["HcnCreateLoadBalancer"] == 2
            && stats["HcnModifyLoadBalancer"] == 2
            && stats["HcnDeleteLoadBalancer"] == 4,
        || format!("the emulator counted {stats}"),
    )?;
    empty_for_linux(bench, "loadbalancer")?;
    Ok(
        "create, modify (E_NOTIMPL on 15.0, taken on 15.4), delete, delete again (0x490)"
            .to_owned(),
    )
}

/// The DLL's own contract for arguments `hns::native` never passes: null pointers, broken
/// UTF-16 and foreign handles fail with the documented HRESULTs (and records), never a crash.
fn dll_edge_arguments(bench: &Bench<'_>) -> Result<String, String> {
    let observed = parse("probe abi", &bench.probe(&["abi"])?.ok()?)?;
    let listing = &observed["enumerate-null-query"];
    ensure(
        listing["hresult"] == 0
            && listing["record"].is_null()
            && listing["output"]
                .as_str()
                .and_then(|text| serde_json::from_str::<Vec<String>>(text).ok())
                .is_some(),
        || format!("enumerate with a null query: {listing}"),
    )?;
    let expectations = [
        ("enumerate-null-result", 0x8000_4003_u32, "null pointer"),
        ("create-invalid-utf16", 0x8007_0057, "not valid UTF-16"),
        ("open-null-id", 0x8007_0057, "Id is a null pointer"),
    ];
    for (name, hresult, detail) in expectations {
        let call = &observed[name];
        let record = parse(
            &format!("{name} error record"),
            call["record"].as_str().unwrap_or_default(),
        )?;
        ensure(
            call["hresult"] == hresult
                && record["ErrorCode"] == hresult
                && record["Error"]
                    .as_str()
                    .is_some_and(|text| text.contains(detail))
                && matches!(call["output"].as_u64(), None | Some(0)),
            || format!("{name}: expected {hresult:#010X} with {detail:?}, observed {call}"),
        )?;
    }
    let close = &observed["close-foreign-handle"];
    ensure(close["hresult"] == 0x8007_0006_u32, || {
        format!("closing a handle the DLL never issued: {close}")
    })?;
    empty_for_linux(bench, "network")?;
    Ok("null query, null out pointer, broken UTF-16, null ID, foreign handle".to_owned())
}

/// cnitool's `CNI_NETNS`: the namespace GUID as the last component of an absolute path
/// (`C:\some\dir\<GUID>` under Wine, `/some/dir/<GUID>` natively) names that namespace; a
/// path ending in anything else is refused with code 4, printed with single backslashes.
fn netns_path(bench: &Bench<'_>) -> Result<String, String> {
    let mut create = vec!["network", "create"];
    create.extend(L2BRIDGE_NETWORK.split_whitespace());
    bench.hnsctl(&create)?.ok()?;
    let namespace = bench
        .hnsctl(&["namespace", "create"])?
        .ok()?
        .trim()
        .to_owned();
    let directory = match bench.side() {
        Side::Native => "/some/dir/",
        Side::Wine => r"C:\some\dir\",
    };
    let config = json!({
        "cniVersion": "1.0.0", "name": "cbr0", "type": "win-bridge",
        "ipam": {"type": "host-local", "subnet": "10.244.1.0/24",
            "dataDir": bench.side_path(&bench.state().join("ipam"))}
    });
    let state = bench.side_path(bench.state());
    let call = |command: &str, netns: &str| {
        bench.plugin(
            "win-bridge",
            &[
                ("CNI_COMMAND", command),
                ("CNI_CONTAINERID", "pod"),
                ("CNI_IFNAME", "eth0"),
                ("CNI_NETNS", netns),
                ("CNI_PATH", &state),
            ],
            &config,
        )
    };

    let refused = format!("{directory}not-a-guid");
    let ran = call("ADD", &refused)?;
    let error = parse("ADD error", &ran.stdout)?;
    let quoted = format!("CNI_NETNS \"{refused}\" is not an HCN namespace GUID");
    ensure(
        !ran.succeeded()
            && error["code"] == 4
            && error["msg"]
                .as_str()
                .is_some_and(|msg| msg.contains(&quoted)),
        || format!("ADD in {refused} answered {error} (expected code 4 quoting {quoted:?})"),
    )?;

    let netns = format!("{directory}{namespace}");
    let result = parse("ADD result", &call("ADD", &netns)?.ok()?)?;
    ensure(result["interfaces"][0]["sandbox"] == netns.as_str(), || {
        format!("ADD in {netns} answered {result}")
    })?;
    let shown = parse(
        "Linux namespace show",
        &bench
            .linux_hnsctl(&["namespace", "show", &namespace])?
            .ok()?,
    )?;
    let endpoints = listed_alike(bench, "endpoint")?;
    let endpoint = endpoints[0]["ID"]
        .as_str()
        .unwrap_or_default()
        .to_lowercase();
    ensure(
        !endpoint.is_empty()
            && shown["Resources"]
                .to_string()
                .to_lowercase()
                .contains(&endpoint),
        || format!("namespace {namespace} after ADD: {shown}; endpoints {endpoints}"),
    )?;
    call("DEL", &netns)?.ok()?;
    empty_for_linux(bench, "endpoint")?;
    Ok(format!(
        "ADD/DEL in {netns} attached to and detached from {namespace}; {refused} refused with 4"
    ))
}

/// Per-call latency of the hung host: far beyond what the case allows the whole ADD.
const HUNG_LATENCY_MICROS: &str = "30000000";
/// The ADD's HNS deadline in the case's config.
const HUNG_DEADLINE_SECONDS: u64 = 1;
/// What the whole ADD may take: the deadline, the rollback's shorter waits and a Wine start.
const HUNG_ADD_LIMIT: Duration = Duration::from_secs(15);

/// HNS that does not answer (the emulator's latency far above the config's
/// `hnsTimeoutSeconds`): the side's win-bridge ADD fails with 110 naming the
/// function and "HNS did not answer", long before HNS would have answered, and
/// leaves no endpoint and no address behind. Under Wine the abandoned call
/// sleeps inside the emulated computenetwork.dll while the plugin exits.
fn hung_hns(bench: &Bench<'_>) -> Result<String, String> {
    let (netns, ipam, config) =
        cbr0_pod_setup(bench, "hnsTimeoutSeconds", json!(HUNG_DEADLINE_SECONDS))?;
    let env = [
        ("CNI_COMMAND", "ADD"),
        ("CNI_CONTAINERID", "hung-pod"),
        ("CNI_NETNS", &netns),
        ("CNI_IFNAME", "eth0"),
    ];
    bench
        .linux_hnsctl(&["fault", "latency", "--micros", HUNG_LATENCY_MICROS])?
        .ok()?;
    let started = Instant::now();
    let ran = bench.plugin("win-bridge", &env, &config)?;
    let took = started.elapsed();
    bench.linux_hnsctl(&["fault", "clear"])?.ok()?;

    ensure(ran.status == Some(1), || {
        format!("ADD on a hung HNS did not fail: {ran:?}")
    })?;
    let error = parse("the ADD's error", &ran.stdout)?;
    let msg = error["msg"].as_str().unwrap_or_default();
    ensure(
        error["code"] == 110 && msg.contains("HNS did not answer") && msg.contains("Hcn"),
        || format!("expected code 110 naming the HCN function and \"HNS did not answer\": {error}"),
    )?;
    ensure(took < HUNG_ADD_LIMIT, || {
        format!("the ADD took {took:?} (limit {HUNG_ADD_LIMIT:?})")
    })?;
    let endpoints = parse(
        "Linux endpoint list",
        &bench.linux_hnsctl(&["--json", "endpoint", "list"])?.ok()?,
    )?;
    ensure(endpoints == json!([]), || {
        format!("the failed ADD left endpoints: {endpoints}")
    })?;
    let reserved: Vec<String> = std::fs::read_dir(ipam.join("cbr0"))
        .map(|dir| {
            dir.filter_map(|entry| entry.ok()?.file_name().into_string().ok())
                .filter(|name| name.parse::<std::net::IpAddr>().is_ok())
                .collect()
        })
        .unwrap_or_default();
    ensure(reserved.is_empty(), || {
        format!("the failed ADD left reservations {reserved:?}")
    })?;
    Ok(format!(
        "code 110 after {:.1} s with HNS answering after 30 s per call; nothing left",
        took.as_secs_f64()
    ))
}

/// A node with `cbr0`, its conflist in a config directory and one pod; returns the config
/// directory as the side sees it, the config and the pod's namespace.
fn node_with_a_pod(bench: &Bench<'_>) -> Result<(String, Value, String), String> {
    let mut create = vec!["network", "create"];
    create.extend(L2BRIDGE_NETWORK.split_whitespace());
    bench.hnsctl(&create)?.ok()?;
    let config = json!({
        "cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
        "ipam": {"type": "host-local", "subnet": "10.244.1.0/24",
            "dataDir": bench.side_path(&bench.state().join("ipam"))}
    });
    let conf_dir = bench.state().join("net.d");
    std::fs::create_dir_all(&conf_dir).map_err(|e| format!("create {conf_dir:?}: {e}"))?;
    std::fs::write(conf_dir.join("10-cbr0.conf"), config.to_string())
        .map_err(|e| format!("write the conflist: {e}"))?;
    let namespace = add_pod(bench, &config, "live")?;
    Ok((bench.side_path(&conf_dir), config, namespace))
}

/// ADD of pod `container` in a new namespace; returns the namespace.
fn add_pod(bench: &Bench<'_>, config: &Value, container: &str) -> Result<String, String> {
    let namespace = bench
        .hnsctl(&["namespace", "create"])?
        .ok()?
        .trim()
        .to_owned();
    bench
        .plugin(
            "win-bridge",
            &[
                ("CNI_COMMAND", "ADD"),
                ("CNI_CONTAINERID", container),
                ("CNI_IFNAME", "eth0"),
                ("CNI_NETNS", &namespace),
            ],
            config,
        )?
        .ok()?;
    Ok(namespace)
}

/// `cni-win sweep` on the side: a killed pod's endpoint (its namespace deleted) is reported
/// by the dry run and removed by --apply; the live pod stays.
fn sweep(bench: &Bench<'_>) -> Result<String, String> {
    let (conf_dir, config, _) = node_with_a_pod(bench)?;
    let killed = add_pod(bench, &config, "killed")?;
    bench
        .linux_hnsctl(&["namespace", "delete", &killed])?
        .ok()?;
    let dry = parse(
        "sweep --json",
        &bench
            .cni_win(&["sweep", "--conf-dir", &conf_dir, "--json"])?
            .ok()?,
    )?;
    ensure(
        dry["stale"].as_array().map(Vec::len) == Some(1)
            && dry["stale"][0]["containerId"] == "killed"
            && dry["stale"][0]["outcome"].is_null(),
        || format!("the dry run reported {dry}"),
    )?;
    let applied = parse(
        "sweep --apply --json",
        &bench
            .cni_win(&["sweep", "--conf-dir", &conf_dir, "--apply", "--json"])?
            .ok()?,
    )?;
    ensure(
        applied["stale"][0]["outcome"]["result"] == "removed",
        || format!("--apply reported {applied}"),
    )?;
    let endpoints = parse(
        "Linux endpoint list",
        &bench.linux_hnsctl(&["--json", "endpoint", "list"])?.ok()?,
    )?;
    ensure(
        endpoints.as_array().map(Vec::len) == Some(1) && endpoints[0]["Name"] == "live_cbr0",
        || format!("after --apply the endpoints are {endpoints}"),
    )?;
    Ok(
        "dry run listed the killed pod's endpoint; --apply removed it, kept the live one"
            .to_owned(),
    )
}

/// `cni-win doctor` on the side: healthy (exit 0) on a working node; with the HNS network
/// gone, exit non-zero and a failed readiness check naming it.
fn doctor(bench: &Bench<'_>) -> Result<String, String> {
    let (conf_dir, _, _) = node_with_a_pod(bench)?;
    let bin_dir = bench.side_path(&bench.bin_dir());
    let args = [
        "doctor",
        "--conf-dir",
        &conf_dir,
        "--bin-dir",
        &bin_dir,
        "--json",
    ];
    let healthy = parse("doctor --json", &bench.cni_win(&args)?.ok()?)?;
    ensure(healthy["healthy"] == true, || {
        format!("doctor on a working node said {healthy}")
    })?;
    bench.linux_hnsctl(&["network", "delete", "cbr0"])?.ok()?;
    let ran = bench.cni_win(&args)?;
    let broken = parse("doctor --json", &ran.stdout)?;
    let failed = broken["findings"].as_array().is_some_and(|findings| {
        findings.iter().any(|f| {
            f["check"] == "network \"cbr0\": ready"
                && f["severity"] == "fail"
                && f["evidence"]
                    .as_str()
                    .is_some_and(|e| e.contains("does not exist"))
        })
    });
    ensure(
        !ran.succeeded() && broken["healthy"] == false && failed,
        || {
            format!(
                "doctor without the network exited {:?} with {broken}",
                ran.status
            )
        },
    )?;
    Ok("healthy node exits 0; without the HNS network readiness fails, exit non-zero".to_owned())
}

/// `cni-win source-vip` on the side, on Flannel vxlan's network: two runs print the same VIP
/// (never the gateway), `--create-endpoint` creates kube-proxy's nameless endpoint on it, and
/// `--release` takes both back.
fn source_vip(bench: &Bench<'_>) -> Result<String, String> {
    let mut create = vec!["network", "create"];
    create.extend(OVERLAY_NETWORK.split_whitespace());
    bench.hnsctl(&create)?.ok()?;
    let config = json!({
        "cniVersion": "1.0.0", "name": "flannel.4096", "type": "win-overlay",
        "ipam": {"type": "host-local", "subnet": "10.244.1.0/24",
            "dataDir": bench.side_path(&bench.state().join("ipam"))}
    });
    let conf_dir = bench.state().join("net.d");
    std::fs::create_dir_all(&conf_dir).map_err(|e| format!("create {conf_dir:?}: {e}"))?;
    std::fs::write(conf_dir.join("10-flannel.conf"), config.to_string())
        .map_err(|e| format!("write the config: {e}"))?;
    let conf_dir = bench.side_path(&conf_dir);
    let first = bench
        .cni_win(&["source-vip", "--conf-dir", &conf_dir])?
        .ok()?;
    let second = bench
        .cni_win(&["source-vip", "--conf-dir", &conf_dir])?
        .ok()?;
    ensure(first.trim() == "10.244.1.2" && second == first, || {
        format!("two runs printed {first:?} and {second:?}")
    })?;
    let created = parse(
        "source-vip --format json",
        &bench
            .cni_win(&[
                "source-vip",
                "--conf-dir",
                &conf_dir,
                "--create-endpoint",
                "00-15-5D-52-C0-01",
                "--format",
                "json",
            ])?
            .ok()?,
    )?;
    let endpoints = parse(
        "Linux endpoint list",
        &bench.linux_hnsctl(&["--json", "endpoint", "list"])?.ok()?,
    )?;
    ensure(
        created["endpointCreated"] == true
            && endpoints.as_array().map(Vec::len) == Some(1)
            && endpoints[0]["IpConfigurations"][0]["IpAddress"] == "10.244.1.2"
            && endpoints[0]["Name"].as_str().unwrap_or_default().is_empty(),
        || format!("--create-endpoint said {created}; the endpoints are {endpoints}"),
    )?;
    bench
        .cni_win(&["source-vip", "--conf-dir", &conf_dir, "--release"])?
        .ok()?;
    let endpoints = parse(
        "Linux endpoint list",
        &bench.linux_hnsctl(&["--json", "endpoint", "list"])?.ok()?,
    )?;
    ensure(endpoints.as_array().is_some_and(Vec::is_empty), || {
        format!("after --release the endpoints are {endpoints}")
    })?;
    Ok("two runs print 10.244.1.2; --create-endpoint made kube-proxy's endpoint; --release took it back".to_owned())
}

/// Per-call latency while the first ADD of the lock case holds the attachment's lock.
const SLOW_LATENCY_MICROS: &str = "1500000";
/// How long the second ADD waits for the lock.
const LOCK_DEADLINE_SECONDS: f64 = 1.0;
/// When the second ADD starts: the first has started (a Wine start takes a few seconds) and
/// holds the lock, which it takes before its first HCN call.
const SECOND_ADD_AFTER: Duration = Duration::from_secs(5);

/// Two ADDs of one attachment at once: the side's second win-bridge waits for the attachment
/// lock the first holds (a named mutex under Wine, an abstract socket natively), gives up with
/// code 11 naming the lock, and the first completes; one endpoint, one reservation.
fn attachment_lock(bench: &Bench<'_>) -> Result<String, String> {
    let (netns, ipam, config) = cbr0_pod_setup(
        bench,
        "attachmentLockTimeoutSeconds",
        json!(LOCK_DEADLINE_SECONDS),
    )?;
    let env = [
        ("CNI_COMMAND", "ADD"),
        ("CNI_CONTAINERID", "locked-pod"),
        ("CNI_NETNS", &netns),
        ("CNI_IFNAME", "eth0"),
    ];
    bench
        .linux_hnsctl(&["fault", "latency", "--micros", SLOW_LATENCY_MICROS])?
        .ok()?;
    let (first, second) = std::thread::scope(|scope| {
        let first = scope.spawn(|| bench.plugin("win-bridge", &env, &config));
        std::thread::sleep(SECOND_ADD_AFTER);
        let second = bench.plugin("win-bridge", &env, &config);
        (first.join(), second)
    });
    bench.linux_hnsctl(&["fault", "clear"])?.ok()?;
    let first = first.map_err(|_| "the first ADD's thread panicked".to_owned())??;
    let second = second?;
    ensure(first.status == Some(0), || {
        format!("the first ADD did not succeed: {first:?}")
    })?;
    ensure(second.status == Some(1), || {
        format!("the second ADD did not fail while the first held the lock: {second:?}")
    })?;
    let error = parse("the second ADD's error", &second.stdout)?;
    let msg = error["msg"].as_str().unwrap_or_default();
    ensure(
        error["code"] == 11
            && msg.contains("cni-win-attachment-")
            && msg.contains("locked-pod/eth0"),
        || format!("expected code 11 naming the attachment and its lock: {error}"),
    )?;
    let endpoints = parse(
        "Linux endpoint list",
        &bench.linux_hnsctl(&["--json", "endpoint", "list"])?.ok()?,
    )?;
    ensure(endpoints.as_array().map_or(0, Vec::len) == 1, || {
        format!("expected the first ADD's endpoint alone: {endpoints}")
    })?;
    let reserved = std::fs::read_dir(ipam.join("cbr0")).map_or(0, |dir| {
        dir.filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| name.parse::<std::net::IpAddr>().is_ok())
            .count()
    });
    ensure(reserved == 1, || {
        format!("expected the first ADD's reservation alone, found {reserved}")
    })?;
    let lock = msg
        .split_whitespace()
        .find(|word| word.contains("cni-win-attachment-"))
        .unwrap_or_default();
    Ok(format!(
        "second ADD refused with 11 on {lock}; first ADD done"
    ))
}

/// What flanneld writes for this node (`FLANNEL_SUBNET` is the first usable address).
const SUBNET_ENV: &str = "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n";

/// Flannel-native mode as the side reads paths: win-bridge listed directly with `subnetFile`
/// and no `ipam` takes its range from subnet.env (ADD gets an address of FLANNEL_SUBNET), STATUS
/// is ready, then not ready (50 naming subnet.env) once flanneld's file is gone, and DEL still
/// releases the pod without it.
fn flannel_native(bench: &Bench<'_>) -> Result<String, String> {
    let (netns, ipam, _) = cbr0_pod_setup(bench, "cniVersion", json!("1.1.0"))?;
    let subnet_env = bench.state().join("subnet.env");
    std::fs::write(&subnet_env, SUBNET_ENV).map_err(|e| format!("write subnet.env: {e}"))?;
    let config = json!({
        "cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
        "subnetFile": bench.side_path(&subnet_env),
        "dataDir": bench.side_path(&bench.state().join("flannel")),
        "ipam": {"type": "host-local", "dataDir": bench.side_path(&ipam)}
    });
    let call = |command: &str| {
        let mut env = vec![("CNI_COMMAND", command)];
        if !matches!(command, "STATUS") {
            env.extend([
                ("CNI_CONTAINERID", "flannel-pod"),
                ("CNI_IFNAME", "eth0"),
                ("CNI_NETNS", netns.as_str()),
            ]);
        }
        bench.plugin("win-bridge", &env, &config)
    };
    let result = parse("ADD result", &call("ADD")?.ok()?)?;
    let address = result["ips"][0]["address"].as_str().unwrap_or_default();
    ensure(address.starts_with("10.244.1."), || {
        format!("ADD took {address:?} from outside FLANNEL_SUBNET: {result}")
    })?;
    call("STATUS")?.ok()?;
    std::fs::remove_file(&subnet_env).map_err(|e| format!("remove subnet.env: {e}"))?;
    let ran = call("STATUS")?;
    let error = parse("STATUS error", &ran.stdout)?;
    ensure(
        !ran.succeeded()
            && error["code"] == 50
            && error["msg"]
                .as_str()
                .is_some_and(|msg| msg.contains("subnet.env")),
        || format!("STATUS without subnet.env answered {error}"),
    )?;
    call("DEL")?.ok()?;
    empty_for_linux(bench, "endpoint")?;
    Ok(format!(
        "ADD took {address} from subnet.env; STATUS ready, then 50 without it; DEL released"
    ))
}

/// ADD with the node's NetworkPolicy snapshot (`networkPolicySnapshot`): the side's
/// win-bridge reads the file as a root plugin reads one (never through a link: under Wine
/// `FILE_FLAG_OPEN_REPARSE_POINT`), checks it was rendered for this HNS network and stamped
/// (its modification time) within its bound, and creates the endpoint with the rules for the
/// pod `CNI_ARGS` names, whose verdicts Linux hnsctl checks on the same state; a damaged
/// snapshot, one with a key twice, and one past its bound fail ADD with 11 and leave nothing.
fn network_policy(bench: &Bench<'_>) -> Result<String, String> {
    let snapshot = bench.state().join("network-policy.json");
    let (netns, _, config) = cbr0_pod_setup(
        bench,
        "networkPolicySnapshot",
        json!(bench.side_path(&snapshot)),
    )?;
    let networks = parse(
        "network list",
        &bench.linux_hnsctl(&["--json", "network", "list"])?.ok()?,
    )?;
    let cbr0 = networks
        .as_array()
        .and_then(|networks| networks.iter().find(|n| n["Name"] == "cbr0"))
        .map(|network| network["ID"].clone())
        .ok_or_else(|| format!("no cbr0 in {networks}"))?;
    let rules = json!({
        "cni-win-netpol-admit": {"Id": "cni-win-netpol-admit", "Protocols": "6", "Action": "Allow",
            "Direction": "In", "RemoteAddresses": "10.244.9.9", "LocalPorts": "80",
            "RuleType": "Switch", "Priority": 4300},
        "cni-win-netpol-block": {"Id": "cni-win-netpol-block", "Protocols": "256",
            "Action": "Block", "Direction": "In", "RuleType": "Switch", "Priority": 65000}
    });
    let written = json!({
        "Version": 2, "Node": "node-1", "Networks": {"cbr0": cbr0}, "MaxAgeSeconds": 300,
        "Policy": {"Mode": "ip-sets", "Form": "full", "Rules": rules,
            "Pods": {"x/a": {"Add": ["cni-win-netpol-admit", "cni-win-netpol-block"],
                             "Policies": ["x/admit"], "Endpoint": null, "Expected": []}},
            "Namespaces": {}, "Default": [], "Refused": {}}
    });
    std::fs::write(&snapshot, written.to_string()).map_err(|e| format!("write snapshot: {e}"))?;
    let add = || {
        let env = [
            ("CNI_COMMAND", "ADD"),
            ("CNI_CONTAINERID", "netpol-pod"),
            ("CNI_IFNAME", "eth0"),
            ("CNI_NETNS", netns.as_str()),
            (
                "CNI_ARGS",
                "IgnoreUnknown=1;K8S_POD_NAMESPACE=x;K8S_POD_NAME=a",
            ),
        ];
        bench.plugin("win-bridge", &env, &config)
    };
    let result = parse("ADD result", &add()?.ok()?)?;
    let address = result["ips"][0]["address"].as_str().unwrap_or_default();
    let pod = address.split('/').next().unwrap_or_default();
    let verdict = |from: &str| -> Result<Option<i32>, String> {
        let check = [
            "acl",
            "check",
            "--from",
            from,
            "--to",
            pod,
            "--protocol",
            "tcp",
            "--port",
            "80",
        ];
        Ok(bench.linux_hnsctl(&check)?.status)
    };
    let (admitted, other) = (verdict("10.244.9.9")?, verdict("10.244.9.8")?);
    ensure((admitted, other) == (Some(0), Some(1)), || {
        format!(
            "the first packet from the admitted peer exited {admitted:?}, from another {other:?} (0 allowed, 1 denied)"
        )
    })?;
    let del = [
        ("CNI_COMMAND", "DEL"),
        ("CNI_CONTAINERID", "netpol-pod"),
        ("CNI_IFNAME", "eth0"),
        ("CNI_NETNS", netns.as_str()),
    ];
    bench.plugin("win-bridge", &del, &config)?.ok()?;
    let text = written.to_string();
    let opened = text.replacen(
        r#""Pods":{"#,
        r#""Pods":{"x/a":{"Add":[],"Policies":[],"Endpoint":null,"Expected":[]},"#,
        1,
    );
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let stale = || -> std::io::Result<()> {
        std::fs::write(&snapshot, &text)?;
        std::fs::File::options()
            .write(true)
            .open(&snapshot)?
            .set_modified(hour_ago)
    };
    /// What the snapshot is, how it is written, what ADD's error says of it.
    type Refusal<'a> = (&'a str, &'a dyn Fn() -> std::io::Result<()>, &'a str);
    let refusals: [Refusal<'_>; 3] = [
        (
            "damaged",
            &|| std::fs::write(&snapshot, "{"),
            "network-policy.json",
        ),
        (
            "with pod x/a twice",
            &|| std::fs::write(&snapshot, &opened),
            "appears twice",
        ),
        ("stamped an hour ago", &stale, "MaxAgeSeconds"),
    ];
    for (what, make, says) in refusals {
        make().map_err(|e| format!("write a snapshot {what}: {e}"))?;
        let ran = add()?;
        let error = parse("ADD error", &ran.stdout)?;
        ensure(
            !ran.succeeded()
                && error["code"] == 11
                && error["msg"]
                    .as_str()
                    .is_some_and(|msg| msg.contains("network-policy.json") && msg.contains(says)),
            || format!("ADD with a snapshot {what} answered {error}"),
        )?;
        empty_for_linux(bench, "endpoint")?;
    }
    Ok(format!(
        "ADD created {pod} with the snapshot's rules: TCP 80 from the admitted peer allowed, \
         from another denied; a damaged snapshot, one with a pod twice and one stamped an hour \
         ago: 11, nothing left"
    ))
}
