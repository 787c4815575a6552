//! The HNS catalogue: what every cni-win HNS plugin must do to the emulated host, whatever
//! kind of network it attaches to. Run with an [`HnsFixture`] (one per plugin: win-bridge on
//! an L2Bridge network, win-overlay on an Overlay one); each case inspects the host with the
//! fixture's `hnsctl` (endpoints, call counters, injected faults and crashes), so under Wine
//! it drives `hnsctl.exe` against the same emulator DLLs as the plugin.
//!
//! The config template must use host-local with `"dataDir": "{{caseDir}}/ipam"`: the cases read
//! its reservations there (an ADD whose address is not found there fails the case, so a
//! template that stores them elsewhere cannot pass vacuously).
//!
//! Error codes are cni-win's (cni-win-core's `codes`): 111 endpoint conflict, 113 CHECK mismatch.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::Arc;

use serde_json::{Value, json};

use conformance::case::{Case, Context, Failure, IFNAME, Outcome};
use conformance::cases::{newest, silently, versions_where, with_prev_result};
use conformance::catalogue::Catalogue;
use conformance::protocol::{expect_error, expect_result, expect_silent_success};

use crate::hns::HnsFixture;

const LIFE_CYCLE: &str = "cni-win HNS life cycle";
const ERRORS: &str = "cni-win HNS errors";
const FAULTS: &str = "cni-win HNS faults";
const BUDGET: &str = "cni-win HCN call budget";

/// Every HCN call of a new pod's ADD, in order (closes included): where faults and crashes go.
const ADD_CALLS: [&str; 10] = [
    "HcnEnumerateNetworks",
    "HcnOpenNetwork",
    "HcnQueryNetworkProperties",
    "HcnCreateEndpoint",
    "HcnQueryEndpointProperties",
    "HcnCloseEndpoint",
    "HcnOpenNamespace",
    "HcnModifyNamespace",
    "HcnCloseNamespace",
    "HcnCloseNetwork",
];

/// An HRESULT HNS returns for an unspecified failure (`E_FAIL`).
const E_FAIL: &str = "0x80004005";

/// Raw HCN calls (closes not counted, and counted) a new pod's ADD, a live pod's CHECK and its
/// DEL may make on a warm network cache, whatever else is on the node: win-bridge opens the
/// network by its cached ID; win-overlay, which reads the network's policies, queries it too.
const ADD_BUDGET: (u64, u64) = (5, 8);
const CHECK_BUDGET: (u64, u64) = (3, 5);
const OVERLAY_ADD_BUDGET: (u64, u64) = (6, 9);
const OVERLAY_CHECK_BUDGET: (u64, u64) = (4, 6);
const DEL_BUDGET: (u64, u64) = (3, 4);

/// How many pods the concurrency case starts at once.
const PARALLEL_PODS: usize = 50;

/// The HNS catalogue for the plugin `fixture`'s network suits.
pub fn hns(fixture: &HnsFixture) -> Catalogue {
    let host = Arc::new(fixture.clone());
    let mut catalogue = Catalogue::new();
    let mut push = |id: &str, section: &str, check: fn(&Host, &Context<'_>) -> Outcome| {
        let host = Arc::clone(&host);
        catalogue.push(Case::new(id, section, move |ctx| check(&Host(&host), ctx)));
    };
    push("hns.add.repeated", LIFE_CYCLE, repeated_add);
    push("hns.add.other-namespace", ERRORS, add_in_other_namespace);
    push("hns.add.host-port-taken", ERRORS, add_with_taken_host_port);
    push(
        "hns.del.endpoint-removed",
        LIFE_CYCLE,
        del_after_endpoint_removed,
    );
    push("hns.del.empty-netns", LIFE_CYCLE, del_with_empty_netns);
    push(
        "hns.del.reference-v1-endpoint",
        LIFE_CYCLE,
        del_of_reference_v1_endpoint,
    );
    push(
        "hns.del.namespace-removed",
        LIFE_CYCLE,
        del_after_namespace_removed,
    );
    push(
        "hns.check.endpoint-removed",
        LIFE_CYCLE,
        check_endpoint_removed,
    );
    push("hns.check.ip-changed", LIFE_CYCLE, check_ip_changed);
    push("hns.gc.stale", LIFE_CYCLE, gc_removes_stale);
    push("hns.upgrade.reference-pod", LIFE_CYCLE, reference_pod);
    push("hns.restart.check-del-add", LIFE_CYCLE, after_hns_restart);
    push("hns.reboot.del", LIFE_CYCLE, after_reboot);
    push("hns.budget", BUDGET, call_budget);
    push("hns.parallel", LIFE_CYCLE, parallel_pods);
    for call in ADD_CALLS
        .iter()
        .filter(|call| !call.starts_with("HcnClose"))
    {
        let host = Arc::clone(&host);
        catalogue.push(Case::new(
            format!("hns.rollback.{call}"),
            FAULTS,
            move |ctx| rollback(&Host(&host), ctx, call),
        ));
    }
    for call in ADD_CALLS {
        let host = Arc::clone(&host);
        catalogue.push(Case::new(format!("hns.crash.{call}"), FAULTS, move |ctx| {
            crash_then_del(&Host(&host), ctx, call)
        }));
    }

    let missing = Arc::new(fixture.without_network());
    let foreign = Arc::new(fixture.with_foreign_network_type());
    let foreign_type = fixture.foreign_type();
    catalogue.push(
        Case::new("hns.add.no-network", ERRORS, add_without_network).with_fixture(missing.clone()),
    );
    catalogue.push(
        Case::new("hns.add.wrong-type", ERRORS, move |ctx| {
            add_on_wrong_type(ctx, foreign_type)
        })
        .with_fixture(foreign.clone()),
    );
    catalogue.push(
        Case::new("hns.status.no-network", ERRORS, |ctx| {
            status_not_available(ctx, "does not exist")
        })
        .with_fixture(missing),
    );
    catalogue.push(
        Case::new("hns.status.wrong-type", ERRORS, move |ctx| {
            status_not_available(ctx, foreign_type)
        })
        .with_fixture(foreign),
    );
    catalogue
}

/// The case's emulated host, seen through `hnsctl` and host-local's store.
struct Host<'a>(&'a HnsFixture);

impl Host<'_> {
    fn network(&self) -> &str {
        self.0.network_name()
    }

    /// The endpoints of the case's network.
    fn endpoints(&self, ctx: &Context<'_>) -> Result<Vec<Value>, Failure> {
        let listing = self.0.hnsctl(
            ctx,
            &["--json", "endpoint", "list", "--network", self.network()],
        )?;
        serde_json::from_str(&listing)
            .map_err(|e| Failure::Fail(format!("hnsctl endpoint list printed no JSON: {e}")))
    }

    /// The addresses host-local holds for the network (its reservation files).
    fn reservations(&self, ctx: &Context<'_>) -> BTreeSet<IpAddr> {
        let dir = ctx.case_dir().join("ipam").join(self.network());
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
            .collect()
    }

    /// Raw HCN calls since the last reading: (without closes, with closes).
    fn calls(&self, ctx: &Context<'_>) -> Result<(u64, u64), Failure> {
        let stats = self.0.control(ctx, &["--json", "stats", "--reset"])?;
        let stats: Value = serde_json::from_str(&stats)
            .map_err(|e| Failure::Fail(format!("hnsctl stats printed no JSON: {e}")))?;
        let counts = stats.as_object().into_iter().flatten();
        let (mut all, mut closes) = (0, 0);
        for (function, count) in counts {
            let count = count.as_u64().unwrap_or_default();
            all += count;
            if function.starts_with("HcnClose") {
                closes += count;
            }
        }
        Ok((all - closes, all))
    }

    /// A new namespace, as containerd makes one per pod.
    fn namespace(&self, ctx: &Context<'_>) -> Result<String, Failure> {
        self.0.hnsctl(ctx, &["namespace", "create"])
    }

    /// Fails unless the network has no endpoint and host-local holds no address.
    fn expect_clean(&self, ctx: &Context<'_>, after: &str) -> Result<(), Failure> {
        let endpoints = self.endpoints(ctx)?;
        let reservations = self.reservations(ctx);
        if endpoints.is_empty() && reservations.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = endpoints
            .iter()
            .filter_map(|e| e["Name"].as_str())
            .collect();
        Err(Failure::Fail(format!(
            "{after} left endpoints {names:?} and reservations {reservations:?}"
        )))
    }

    /// ADDs `container` in `netns` with `config`; the result, whose address host-local must hold.
    fn add(
        &self,
        ctx: &Context<'_>,
        container: &str,
        netns: &str,
        config: &Value,
        version: &str,
    ) -> Result<Value, Failure> {
        let invocation = ctx
            .invocation("ADD")
            .set("CNI_CONTAINERID", container)
            .set("CNI_NETNS", netns)
            .config(config);
        let result = expect_result(&ctx.call(&invocation)?, version)
            .map_err(|e| format!("ADD {container}: {e}"))?;
        let address = first_address(&result)?;
        if !self.reservations(ctx).contains(&address) {
            return Err(Failure::Fail(format!(
                "ADD returned {address}, but host-local holds no such reservation under \
                 {{{{caseDir}}}}/ipam/{}: the HNS catalogue needs ipam.dataDir = {{{{caseDir}}}}/ipam",
                self.network()
            )));
        }
        Ok(result)
    }

    /// ADDs this case's own attachment with the newest version; (config, result, version).
    fn add_own(&self, ctx: &Context<'_>) -> Result<(Value, Value, String), Failure> {
        let version = newest(ctx)?;
        let config = ctx.valid_config(&version)?;
        let result = self.add(ctx, ctx.container_id(), ctx.netns(), &config, &version)?;
        Ok((config, result, version))
    }

    /// Deletes the case's only endpoint behind the plugin's back.
    fn remove_endpoint(&self, ctx: &Context<'_>) -> Result<(), Failure> {
        let endpoints = self.endpoints(ctx)?;
        let [endpoint] = endpoints.as_slice() else {
            return Err(Failure::Fail(format!(
                "expected one endpoint after ADD, found {}",
                endpoints.len()
            )));
        };
        let id = endpoint["ID"].as_str().unwrap_or_default();
        self.0.hnsctl(ctx, &["endpoint", "delete", id]).map(drop)
    }
}

/// The address of a result of any version (`ips[0]` or 0.2.0's `ip4`).
fn first_address(result: &Value) -> Result<IpAddr, Failure> {
    let text = result["ips"][0]["address"]
        .as_str()
        .or_else(|| result["ip4"]["ip"].as_str())
        .ok_or_else(|| Failure::Fail(format!("the result has no address: {result}")))?;
    text.split('/')
        .next()
        .and_then(|ip| ip.parse().ok())
        .ok_or_else(|| Failure::Fail(format!("the result's address {text:?} is not an IP")))
}

fn repeated_add(host: &Host, ctx: &Context<'_>) -> Outcome {
    let (config, first, version) = host.add_own(ctx)?;
    let reservations = host.reservations(ctx);
    for attempt in 2..=3 {
        let again = host.add(ctx, ctx.container_id(), ctx.netns(), &config, &version)?;
        if again != first {
            return Err(
                format!("ADD #{attempt} returned {again}, the first returned {first}").into(),
            );
        }
    }
    let endpoints = host.endpoints(ctx)?.len();
    if endpoints != 1 || host.reservations(ctx) != reservations {
        return Err(format!(
            "three ADDs of one attachment left {endpoints} endpoints and reservations {:?} (first: {reservations:?})",
            host.reservations(ctx)
        )
        .into());
    }
    Ok("three ADDs: one result, one endpoint, one address".into())
}

fn add_in_other_namespace(host: &Host, ctx: &Context<'_>) -> Outcome {
    let (config, _, version) = host.add_own(ctx)?;
    let reservations = host.reservations(ctx);
    let other = host.namespace(ctx)?;
    let invocation = ctx
        .invocation("ADD")
        .set("CNI_NETNS", other)
        .config(&config);
    let error = expect_error(&ctx.call(&invocation)?, 111)
        .map_err(|e| format!("ADD {version} of an attached endpoint in another namespace: {e}"))?;
    let endpoints = host.endpoints(ctx)?;
    let attached = endpoints
        .first()
        .and_then(|e| e["HostComputeNamespace"].as_str())
        .unwrap_or_default();
    if !attached.eq_ignore_ascii_case(ctx.netns()) || host.reservations(ctx) != reservations {
        return Err(format!(
            "the refused ADD moved the endpoint to {attached:?} or changed the reservations"
        )
        .into());
    }
    Ok(format!("code 111, first attachment kept: {}", error.msg))
}

/// A second pod mapping the first pod's hostPort: HNS refuses it (HCN_E_PORT_ALREADY_EXISTS);
/// the error names the port and the pod holding it, and the refused ADD leaves nothing.
fn add_with_taken_host_port(host: &Host, ctx: &Context<'_>) -> Outcome {
    let version = newest(ctx)?;
    let mut config = ctx.valid_config(&version)?;
    config["runtimeConfig"] = json!({"portMappings": [
        {"hostPort": 18080, "containerPort": 80, "protocol": "tcp"}
    ]});
    let first = host.add(ctx, ctx.container_id(), ctx.netns(), &config, &version)?;
    let reservations = host.reservations(ctx);
    let second = format!("{}-second", ctx.container_id());
    let invocation = ctx
        .invocation("ADD")
        .set("CNI_CONTAINERID", second.clone())
        .set("CNI_NETNS", host.namespace(ctx)?)
        .config(&config);
    let error = expect_error(&ctx.call(&invocation)?, 111)
        .map_err(|e| format!("ADD of a second pod mapping host port 18080: {e}"))?;
    for needle in ["18080", ctx.container_id()] {
        if !error.msg.contains(needle) {
            return Err(format!(
                "the port conflict error does not name {needle:?}: {}",
                error.summary()
            )
            .into());
        }
    }
    let left: Vec<String> = host
        .endpoints(ctx)?
        .iter()
        .filter_map(|e| e["Name"].as_str().map(str::to_owned))
        .collect();
    if left.len() != 1 || left[0].starts_with(&second) || host.reservations(ctx) != reservations {
        return Err(format!(
            "the refused ADD left endpoints {left:?} and reservations {:?} (before: {reservations:?})",
            host.reservations(ctx)
        )
        .into());
    }
    let config = with_prev_result(config, &first, &version);
    silently(ctx, "DEL", &config, "DEL of the pod holding the port")?;
    host.expect_clean(ctx, "DEL of the pod holding the port")?;
    Ok(format!("code 111, nothing left: {}", error.msg))
}

fn del_after_endpoint_removed(host: &Host, ctx: &Context<'_>) -> Outcome {
    let (config, result, version) = host.add_own(ctx)?;
    host.remove_endpoint(ctx)?;
    let config = with_prev_result(config, &result, &version);
    silently(ctx, "DEL", &config, "DEL after the endpoint was removed")?;
    host.expect_clean(ctx, "DEL after the endpoint was removed")?;
    silently(ctx, "DEL", &config, "second DEL")?;
    Ok("DEL succeeded and released the address; a second DEL too".into())
}

fn del_with_empty_netns(host: &Host, ctx: &Context<'_>) -> Outcome {
    let (config, _, _) = host.add_own(ctx)?;
    let exec = ctx.call(&ctx.invocation("DEL").set("CNI_NETNS", "").config(&config))?;
    expect_silent_success(&exec).map_err(|e| format!("DEL with CNI_NETNS=\"\": {e}"))?;
    host.expect_clean(ctx, "DEL with an empty CNI_NETNS")?;
    Ok("DEL with CNI_NETNS=\"\" removed the endpoint and the address".into())
}

/// A node that ran the reference plugin's default (V1) path has endpoints it created with
/// `POST /endpoints/`, named `<containerID>_<network>`, under IDs HNS chose: DEL of such a
/// pod finds the endpoint by name and removes it.
fn del_of_reference_v1_endpoint(host: &Host, ctx: &Context<'_>) -> Outcome {
    let version = newest(ctx)?;
    let config = ctx.valid_config(&version)?;
    let name = format!("{}_{}", ctx.container_id(), host.network());
    let body = json!({
        "Name": name,
        "VirtualNetworkName": host.network(),
        "IPAddress": "10.244.1.200",
        "GatewayAddress": "10.244.1.2",
        "DNSServerList": "10.96.0.10",
    });
    let reply = host.0.hnsctl(
        ctx,
        &[
            "host",
            "call",
            "POST",
            "/endpoints/",
            "--body",
            &body.to_string(),
        ],
    )?;
    let reply: Value = serde_json::from_str(&reply)
        .map_err(|e| Failure::Fail(format!("HNSCall POST /endpoints/ printed no JSON: {e}")))?;
    if reply["Success"] != true {
        return Err(format!("the V1 create failed: {reply}").into());
    }
    let listed = host.endpoints(ctx)?;
    if listed.len() != 1 || listed[0]["Name"] != name.as_str() {
        return Err(format!("the V1 endpoint is not seen through V2: {listed:?}").into());
    }
    silently(
        ctx,
        "DEL",
        &config,
        "DEL of a pod the reference plugin attached with V1",
    )?;
    host.expect_clean(ctx, "DEL of a pod the reference plugin attached with V1")?;
    Ok(format!("DEL removed the V1 endpoint {name} found by name"))
}

fn del_after_namespace_removed(host: &Host, ctx: &Context<'_>) -> Outcome {
    let (config, _, _) = host.add_own(ctx)?;
    host.0.hnsctl(ctx, &["namespace", "delete", ctx.netns()])?;
    silently(ctx, "DEL", &config, "DEL after the namespace was removed")?;
    host.expect_clean(ctx, "DEL after the namespace was removed")?;
    Ok("DEL tolerated the missing namespace and cleaned up".into())
}

/// CHECK with `config` must fail with 113 naming `needle`.
fn check_mismatch(ctx: &Context<'_>, config: &Value, needle: &str) -> Outcome {
    expect_named_error(ctx, "CHECK", config, 113, needle)
}

fn check_endpoint_removed(host: &Host, ctx: &Context<'_>) -> Outcome {
    let version = versions_where(ctx, "0.4.0", false)?
        .pop()
        .unwrap_or_default();
    let config = ctx.valid_config(&version)?;
    let result = host.add(ctx, ctx.container_id(), ctx.netns(), &config, &version)?;
    let config = with_prev_result(config, &result, &version);
    silently(ctx, "CHECK", &config, "CHECK after ADD")?;
    host.remove_endpoint(ctx)?;
    check_mismatch(ctx, &config, "does not exist")
}

fn check_ip_changed(host: &Host, ctx: &Context<'_>) -> Outcome {
    let version = versions_where(ctx, "0.4.0", false)?
        .pop()
        .unwrap_or_default();
    let config = ctx.valid_config(&version)?;
    let result = host.add(ctx, ctx.container_id(), ctx.netns(), &config, &version)?;
    let mut changed = result.clone();
    let address = first_address(&result)?;
    let IpAddr::V4(v4) = address else {
        return Err(Failure::Skip("the first address is not IPv4".into()));
    };
    let moved = std::net::Ipv4Addr::from(u32::from(v4) ^ 0x40);
    let prefix = result["ips"][0]["address"]
        .as_str()
        .and_then(|a| a.split_once('/'))
        .map_or("32", |(_, prefix)| prefix);
    changed["ips"][0]["address"] = json!(format!("{moved}/{prefix}"));
    check_mismatch(
        ctx,
        &with_prev_result(config, &changed, &version),
        &moved.to_string(),
    )
}

fn gc_removes_stale(host: &Host, ctx: &Context<'_>) -> Outcome {
    let version = versions_where(ctx, "1.1.0", false)?.remove(0);
    let config = ctx.valid_config(&version)?;
    let kept = host.add(ctx, ctx.container_id(), ctx.netns(), &config, &version)?;
    let stale = format!("{}-stale", ctx.container_id());
    let stale_netns = host.namespace(ctx)?;
    host.add(ctx, &stale, &stale_netns, &config, &version)?;
    let mut gc = config.clone();
    let valid = json!([{"containerID": ctx.container_id(), "ifname": IFNAME}]);
    gc["cni.dev/valid-attachments"] = valid.clone();
    gc["cni.dev/attachments"] = valid;
    silently(ctx, "GC", &gc, "GC")?;
    let left: Vec<String> = host
        .endpoints(ctx)?
        .iter()
        .filter_map(|e| e["Name"].as_str().map(str::to_owned))
        .collect();
    let reservations = host.reservations(ctx);
    let kept_address = first_address(&kept)?;
    if left.len() != 1 || left[0].starts_with(&stale) || reservations != [kept_address].into() {
        return Err(format!("GC left endpoints {left:?} and reservations {reservations:?}").into());
    }
    let config = with_prev_result(config, &kept, &version);
    silently(ctx, "CHECK", &config, "CHECK of the attachment GC kept")?;
    Ok(format!(
        "GC removed {stale} and its address, kept {}",
        left[0]
    ))
}

/// A pod the reference plugin attached before the node was switched to this plugin: its
/// endpoint is named `<containerID>_<network>` under an ID HNS chose, and the reference's
/// host-local holds its address (`<containerID>\r\neth0`, the same file this plugin's store
/// writes). Made here from the plugin's own endpoint for the attachment, re-created under an
/// HNS-chosen ID without prefix lengths (the reference sends none) and attached to the pod's
/// namespace. CHECK, a repeated ADD, GC and DEL must all treat it as the attachment's.
fn reference_pod(host: &Host, ctx: &Context<'_>) -> Outcome {
    let version = versions_where(ctx, "1.1.0", false)?
        .pop()
        .unwrap_or_default();
    let config = ctx.valid_config(&version)?;
    let result = host.add(ctx, ctx.container_id(), ctx.netns(), &config, &version)?;
    let reservations = host.reservations(ctx);
    let [own] = host
        .endpoints(ctx)?
        .try_into()
        .map_err(|left: Vec<Value>| {
            Failure::Fail(format!(
                "expected one endpoint after ADD, found {}",
                left.len()
            ))
        })?;
    let name = format!("{}_{}", ctx.container_id(), host.network());
    if own["Name"] != name.as_str() {
        return Err(format!("the endpoint is named {}, not {name}", own["Name"]).into());
    }
    let own_id = own["ID"].as_str().unwrap_or_default().to_owned();
    host.0.hnsctl(ctx, &["endpoint", "delete", &own_id])?;
    let reference_id = create_as_reference(host, ctx, &own)?;
    host.0
        .hnsctl(ctx, &["namespace", "attach", ctx.netns(), &reference_id])?;

    let checked = with_prev_result(config.clone(), &result, &version);
    silently(ctx, "CHECK", &checked, "CHECK of the reference's pod")?;
    let again = host.add(ctx, ctx.container_id(), ctx.netns(), &config, &version)?;
    if again != result {
        return Err(
            format!("repeated ADD returned {again}, the reference's pod has {result}").into(),
        );
    }
    let ids: Vec<String> = host
        .endpoints(ctx)?
        .iter()
        .filter_map(|e| e["ID"].as_str().map(str::to_owned))
        .collect();
    if ids != [reference_id.clone()] || host.reservations(ctx) != reservations {
        return Err(format!(
            "repeated ADD left endpoints {ids:?} (the reference's is {reference_id}) and \
             reservations {:?} (were {reservations:?})",
            host.reservations(ctx)
        )
        .into());
    }
    let mut gc = config.clone();
    let valid = json!([{"containerID": ctx.container_id(), "ifname": IFNAME}]);
    gc["cni.dev/valid-attachments"] = valid.clone();
    gc["cni.dev/attachments"] = valid;
    silently(ctx, "GC", &gc, "GC listing the reference's pod")?;
    if host.endpoints(ctx)?.len() != 1 || host.reservations(ctx) != reservations {
        return Err(Failure::Fail(
            "GC collected the reference's pod although it is valid".into(),
        ));
    }
    silently(ctx, "DEL", &checked, "DEL of the reference's pod")?;
    host.expect_clean(ctx, "DEL of the reference's pod")?;
    Ok(format!(
        "endpoint {name} ({reference_id}): CHECK passed, repeated ADD adopted it, GC kept it, DEL removed it"
    ))
}

/// Creates `endpoint` again as the reference plugin would have: same document, no ID (HNS
/// chooses), no prefix lengths, not attached. hnsctl cannot create endpoints, so this goes
/// through the emulator's HCN API on the case's state, as Linux `hnsctl` reads it.
fn create_as_reference(
    host: &Host,
    ctx: &Context<'_>,
    endpoint: &Value,
) -> Result<String, Failure> {
    let mut document = endpoint.clone();
    if let Some(fields) = document.as_object_mut() {
        for field in ["ID", "HostComputeNamespace", "Health"] {
            fields.remove(field);
        }
    }
    for config in document["IpConfigurations"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        if let Some(config) = config.as_object_mut() {
            config.remove("PrefixLength");
        }
    }
    let fail =
        |e: &dyn std::fmt::Display| Failure::Fail(format!("create the reference's endpoint: {e}"));
    let emulator =
        hns_emulator::Emulator::open(&ctx.case_dir().join("hcn")).map_err(|e| fail(&e))?;
    let client = hns::Client::new(emulator);
    let network = client
        .find_network_by_name(host.network())
        .map_err(|e| fail(&e))?;
    let settings: hns::schema::HostComputeEndpoint =
        serde_json::from_value(document).map_err(|e| fail(&e))?;
    let created = network
        .create_endpoint(hns::Guid::ZERO, &settings)
        .map_err(|e| fail(&e))?;
    Ok(created.id().to_string())
}

/// HNS restarts losing its endpoints, as older builds do (the namespace stays): CHECK reports
/// the endpoint missing, DEL cleans up, and the pod can be added again.
fn after_hns_restart(host: &Host, ctx: &Context<'_>) -> Outcome {
    let version = versions_where(ctx, "0.4.0", false)?
        .pop()
        .unwrap_or_default();
    let config = ctx.valid_config(&version)?;
    let result = host.add(ctx, ctx.container_id(), ctx.netns(), &config, &version)?;
    host.0
        .control(ctx, &["host", "restart", "--losing-endpoints"])?;
    let config = with_prev_result(config, &result, &version);
    check_mismatch(ctx, &config, "does not exist")?;
    silently(ctx, "DEL", &config, "DEL after an HNS restart")?;
    host.expect_clean(ctx, "DEL after an HNS restart")?;
    host.add(ctx, ctx.container_id(), ctx.netns(), &config, &version)?;
    Ok("after a restart: CHECK 113, DEL cleaned up, ADD again succeeded".into())
}

/// The node reboots (endpoints and namespaces gone): DEL, as the runtime sends it for the
/// pods it knew, succeeds and gives the addresses back.
fn after_reboot(host: &Host, ctx: &Context<'_>) -> Outcome {
    let (config, result, version) = host.add_own(ctx)?;
    host.0.control(ctx, &["host", "reboot"])?;
    let config = with_prev_result(config, &result, &version);
    silently(ctx, "DEL", &config, "DEL after a reboot")?;
    host.expect_clean(ctx, "DEL after a reboot")?;
    Ok("after a reboot: DEL succeeded and released the address".into())
}

fn call_budget(host: &Host, ctx: &Context<'_>) -> Outcome {
    let version = newest(ctx)?;
    let config = ctx.valid_config(&version)?;
    let (add_budget, check_budget) = match host.0.network_type().as_deref() {
        Some("Overlay") => (OVERLAY_ADD_BUDGET, OVERLAY_CHECK_BUDGET),
        _ => (ADD_BUDGET, CHECK_BUDGET),
    };
    // A first pod warms the network cache, as every pod after a node's first finds it.
    let first = (
        format!("{}-first", ctx.container_id()),
        host.namespace(ctx)?,
    );
    host.add(ctx, &first.0, &first.1, &config, &version)?;
    host.calls(ctx)?;
    let result = host.add(ctx, ctx.container_id(), ctx.netns(), &config, &version)?;
    let add = host.calls(ctx)?;
    host.add(ctx, ctx.container_id(), ctx.netns(), &config, &version)?;
    let repeated = host.calls(ctx)?;
    let checked = with_prev_result(config.clone(), &result, &version);
    silently(ctx, "CHECK", &checked, "CHECK")?;
    let check = host.calls(ctx)?;
    silently(ctx, "DEL", &config, "DEL")?;
    let del = host.calls(ctx)?;
    let invocation = ctx
        .invocation("DEL")
        .set("CNI_CONTAINERID", first.0.clone())
        .set("CNI_NETNS", first.1.clone())
        .config(&config);
    expect_silent_success(&ctx.call(&invocation)?).map_err(|e| format!("DEL {}: {e}", first.0))?;
    let within =
        |(calls, all): (u64, u64), (max, max_all): (u64, u64)| calls <= max && all <= max_all;
    let figures = format!(
        "ADD {}/{}, repeated ADD {}/{}, CHECK {}/{}, DEL {}/{} raw HCN calls (without/with closes)",
        add.0, add.1, repeated.0, repeated.1, check.0, check.1, del.0, del.1
    );
    if within(add, add_budget)
        && within(check, check_budget)
        && within(del, DEL_BUDGET)
        && within(repeated, add)
    {
        Ok(figures)
    } else {
        Err(format!(
            "{figures}: over budget (ADD {add_budget:?}, CHECK {check_budget:?}, DEL {DEL_BUDGET:?}, a repeated ADD no more than a new one)"
        )
        .into())
    }
}

fn parallel_pods(host: &Host, ctx: &Context<'_>) -> Outcome {
    let version = newest(ctx)?;
    let config = ctx.valid_config(&version)?;
    let pods: Vec<(String, String)> = (0..PARALLEL_PODS)
        .map(|i| Ok((format!("{}-{i}", ctx.container_id()), host.namespace(ctx)?)))
        .collect::<Result<_, Failure>>()?;
    let run_all = |command: &str| -> Vec<Result<conformance::exec::Exec, Failure>> {
        std::thread::scope(|scope| {
            let calls: Vec<_> = pods
                .iter()
                .map(|(container, netns)| {
                    let invocation = ctx
                        .invocation(command)
                        .set("CNI_CONTAINERID", container.clone())
                        .set("CNI_NETNS", netns.clone())
                        .config(&config);
                    scope.spawn(move || ctx.call(&invocation))
                })
                .collect();
            calls
                .into_iter()
                .map(|call| {
                    call.join()
                        .unwrap_or_else(|_| Err(Failure::Fail("a call thread panicked".into())))
                })
                .collect()
        })
    };
    let mut addresses = BTreeSet::new();
    for exec in run_all("ADD") {
        let result = expect_result(&exec?, &version).map_err(|e| format!("parallel ADD: {e}"))?;
        addresses.insert(first_address(&result)?);
    }
    let endpoints = host.endpoints(ctx)?.len();
    if addresses.len() != PARALLEL_PODS
        || endpoints != PARALLEL_PODS
        || host.reservations(ctx) != addresses
    {
        return Err(format!(
            "{PARALLEL_PODS} parallel ADDs gave {} distinct addresses, {endpoints} endpoints, {} reservations",
            addresses.len(),
            host.reservations(ctx).len()
        )
        .into());
    }
    for exec in run_all("DEL") {
        expect_silent_success(&exec?).map_err(|e| format!("parallel DEL: {e}"))?;
    }
    host.expect_clean(ctx, "the parallel DELs")?;
    Ok(format!(
        "{PARALLEL_PODS} parallel ADDs: distinct addresses; {PARALLEL_PODS} parallel DELs: nothing left"
    ))
}

fn rollback(host: &Host, ctx: &Context<'_>, call: &str) -> Outcome {
    let version = newest(ctx)?;
    let config = ctx.valid_config(&version)?;
    host.0.control(
        ctx,
        &["fault", "inject", "--function", call, "--hresult", E_FAIL],
    )?;
    let exec = ctx.call(&ctx.invocation("ADD").config(&config))?;
    host.0.control(ctx, &["fault", "clear"])?;
    if exec.exit.success() {
        return Err(format!("ADD succeeded although {call} failed").into());
    }
    host.expect_clean(ctx, &format!("an ADD whose {call} failed"))?;
    Ok(format!(
        "{call} failed: ADD failed ({}) and left nothing",
        exec.exit
    ))
}

fn crash_then_del(host: &Host, ctx: &Context<'_>, call: &str) -> Outcome {
    let version = newest(ctx)?;
    let config = ctx.valid_config(&version)?;
    host.0
        .control(ctx, &["fault", "crash", "--function", call])?;
    let exec = ctx.call(&ctx.invocation("ADD").config(&config))?;
    host.0.control(ctx, &["fault", "clear"])?;
    if exec.exit.success() {
        return Err(format!("ADD succeeded although it crashed after {call}").into());
    }
    silently(
        ctx,
        "DEL",
        &config,
        &format!("DEL after a crash after {call}"),
    )?;
    host.expect_clean(ctx, &format!("DEL after a crash after {call}"))?;
    Ok(format!(
        "crash after {call} ({}); DEL left nothing",
        exec.exit
    ))
}

/// `command` with `config` must fail with `code`, naming `needle`.
fn expect_named_error(
    ctx: &Context<'_>,
    command: &str,
    config: &Value,
    code: u64,
    needle: &str,
) -> Outcome {
    let error = expect_error(&ctx.call(&ctx.invocation(command).config(config))?, code)?;
    if !error.mentions(needle) {
        return Err(format!(
            "{command}'s error does not name {needle:?}: {}",
            error.summary()
        )
        .into());
    }
    Ok(format!("code {code}: {}", error.msg))
}

/// `command` with the valid config for `version` must fail with `code`, naming `needle`.
fn named_error(
    ctx: &Context<'_>,
    command: &str,
    version: &str,
    code: u64,
    needle: &str,
) -> Outcome {
    expect_named_error(ctx, command, &ctx.valid_config(version)?, code, needle)
}

fn add_without_network(ctx: &Context<'_>) -> Outcome {
    let version = newest(ctx)?;
    let name = ctx.valid_config(&version)?["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    named_error(ctx, "ADD", &version, 11, &name)
}

fn add_on_wrong_type(ctx: &Context<'_>, network_type: &str) -> Outcome {
    named_error(ctx, "ADD", &newest(ctx)?, 7, network_type)
}

fn status_not_available(ctx: &Context<'_>, needle: &str) -> Outcome {
    let version = versions_where(ctx, "1.1.0", false)?.remove(0);
    named_error(ctx, "STATUS", &version, 50, needle)
}
