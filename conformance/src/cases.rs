//! The protocol cases every CNI plugin must pass, whatever it does to the network.
//!
//! Sections refer to the upstream SPEC.md (1.1.0): §1 network configuration, §2 execution
//! protocol (parameters, errors, operations), §5 result types. Error cases send a config that is
//! valid apart from the one fault under test, so the code proves the plugin found that fault.

use serde_json::{Value, json};

use crate::case::{Case, Context, Failure, IFNAME, Outcome};
use crate::catalogue::Catalogue;
use crate::protocol::{
    ErrorReply, expect_error, expect_result, expect_silent_success, expect_version_reply,
};
use crate::schema::{SPEC_VERSIONS, is_at_least};

const VERSION: &str = "§2 VERSION";
const PARAMETERS: &str = "§2 Parameters";
const NAME: &str = "§1 name";
const ERRORS: &str = "§2 Errors";
const ADD: &str = "§5 ADD Success";
const DEL: &str = "§2 DEL";
const CHECK: &str = "§2 CHECK";
const GC: &str = "§2 GC";
const STATUS: &str = "§2 STATUS";

/// Names the spec's rule refuses: a path separator, a leading non-alphanumeric, a space, empty.
const INVALID_NAMES: [&str; 5] = ["bad/name", "..", "-dash-first", "has space", ""];

/// The protocol catalogue: VERSION, environment and config validation with their error codes,
/// version gates for CHECK/GC/STATUS, and the ADD/CHECK/DEL/GC/STATUS life cycle (the life-cycle
/// cases need a valid config from the caller and are skipped without one).
pub fn protocol() -> Catalogue {
    let mut catalogue = Catalogue::new();
    catalogue.push(Case::new(
        "version.reports-all",
        VERSION,
        version_reports_all,
    ));
    catalogue.push(Case::new(
        "version.echoes-asked",
        VERSION,
        version_echoes_asked,
    ));

    catalogue.push(Case::new("env.missing-command", PARAMETERS, |ctx| {
        missing_variable(ctx, "CNI_COMMAND", &["ADD"])
    }));
    catalogue.push(Case::new(
        "env.unknown-command",
        PARAMETERS,
        unknown_command,
    ));
    catalogue.push(Case::new("env.missing-containerid", PARAMETERS, |ctx| {
        missing_variable(ctx, "CNI_CONTAINERID", &["ADD", "DEL"])
    }));
    catalogue.push(Case::new("env.missing-ifname", PARAMETERS, |ctx| {
        missing_variable(ctx, "CNI_IFNAME", &["ADD", "DEL"])
    }));
    catalogue.push(Case::new("env.missing-netns", PARAMETERS, |ctx| {
        missing_variable(ctx, "CNI_NETNS", &["ADD", "CHECK"])
    }));
    catalogue.push(Case::new("env.missing-path", PARAMETERS, |ctx| {
        missing_variable(ctx, "CNI_PATH", &["GC"])
    }));
    catalogue.push(Case::new(
        "env.invalid-containerid",
        PARAMETERS,
        invalid_container_id,
    ));

    catalogue.push(Case::new("config.bad-json", ERRORS, bad_json));
    catalogue.push(Case::new(
        "config.unsupported-version",
        ERRORS,
        unsupported_version,
    ));
    catalogue.push(Case::new("config.invalid-name", NAME, invalid_name));

    catalogue.push(Case::new("check.needs-0.4.0", CHECK, |ctx| {
        refused_below(ctx, "CHECK", "0.4.0")
    }));
    catalogue.push(Case::new("gc.needs-1.1.0", GC, |ctx| {
        refused_below(ctx, "GC", "1.1.0")
    }));
    catalogue.push(Case::new("status.needs-1.1.0", STATUS, |ctx| {
        refused_below(ctx, "STATUS", "1.1.0")
    }));

    for version in SPEC_VERSIONS {
        catalogue.push(Case::new(
            format!("add.result.{version}"),
            ADD,
            move |ctx| add_result(ctx, version),
        ));
    }
    catalogue.push(Case::new("check.after-add", CHECK, check_after_add));
    catalogue.push(Case::new("del.twice", DEL, del_twice));
    catalogue.push(Case::new(
        "del.without-netns-or-prevresult",
        DEL,
        del_without_netns_or_prev_result,
    ));
    catalogue.push(Case::new("del.never-added", DEL, del_never_added));
    catalogue.push(Case::new("gc.keeps-valid", GC, gc_keeps_valid));
    catalogue.push(Case::new("status.ready", STATUS, status_ready));
    catalogue
}

/// The newest spec version the plugin is expected to support; skips when none.
pub fn newest(ctx: &Context<'_>) -> Result<String, Failure> {
    ctx.versions()
        .iter()
        .max_by_key(|v| SPEC_VERSIONS.iter().position(|known| known == v))
        .cloned()
        .ok_or_else(|| Failure::Skip("no spec version is expected of this plugin".into()))
}

/// The expected versions from `minimum` on (or, with `below`, before it); skips when none.
pub fn versions_where(
    ctx: &Context<'_>,
    minimum: &str,
    below: bool,
) -> Result<Vec<String>, Failure> {
    let chosen: Vec<String> = ctx
        .versions()
        .iter()
        .filter(|v| is_at_least(v, minimum) != below)
        .cloned()
        .collect();
    if chosen.is_empty() {
        let relation = if below { "below" } else { "at or above" };
        return Err(Failure::Skip(format!(
            "no expected version is {relation} {minimum}"
        )));
    }
    Ok(chosen)
}

fn version_reports_all(ctx: &Context<'_>) -> Outcome {
    let asked = newest(ctx)?;
    let exec = ctx.call(
        &ctx.invocation("VERSION")
            .config(&json!({"cniVersion": asked})),
    )?;
    let listed = expect_version_reply(&exec, &asked)?;
    let missing: Vec<&str> = ctx
        .versions()
        .iter()
        .filter(|v| !listed.contains(v))
        .map(String::as_str)
        .collect();
    if missing.is_empty() {
        Ok(format!("supportedVersions: {}", listed.join(", ")))
    } else {
        Err(format!("supportedVersions {listed:?} lacks {}", missing.join(", ")).into())
    }
}

fn version_echoes_asked(ctx: &Context<'_>) -> Outcome {
    for version in ctx.versions() {
        let exec = ctx.call(
            &ctx.invocation("VERSION")
                .config(&json!({"cniVersion": version})),
        )?;
        expect_version_reply(&exec, version).map_err(|e| format!("asked {version}: {e}"))?;
    }
    Ok(format!("echoed each of {} versions", ctx.versions().len()))
}

/// The error must name `needle` in its message or details, as §2 Errors asks for code 4.
fn names(error: &ErrorReply, needle: &str) -> Result<(), Failure> {
    if error.mentions(needle) {
        Ok(())
    } else {
        Err(format!("the error does not name {needle}: {}", error.summary()).into())
    }
}

fn missing_variable(ctx: &Context<'_>, variable: &str, commands: &[&str]) -> Outcome {
    let config = ctx.config(&newest(ctx)?)?;
    for command in commands {
        let invocation = ctx.invocation(command).unset(variable).config(&config);
        let error = expect_error(&ctx.call(&invocation)?, 4)
            .map_err(|e| format!("{command} without {variable}: {e}"))?;
        names(&error, variable)?;
    }
    Ok(format!(
        "{variable} unset for {}: code 4 naming it",
        commands.join(", ")
    ))
}

fn unknown_command(ctx: &Context<'_>) -> Outcome {
    let config = ctx.config(&newest(ctx)?)?;
    let error = expect_error(&ctx.call(&ctx.invocation("FROB").config(&config))?, 4)?;
    if error.mentions("CNI_COMMAND") || error.mentions("FROB") {
        Ok(format!("CNI_COMMAND=FROB: {}", error.summary()))
    } else {
        Err(format!(
            "the error names neither CNI_COMMAND nor FROB: {}",
            error.summary()
        )
        .into())
    }
}

fn invalid_container_id(ctx: &Context<'_>) -> Outcome {
    let config = ctx.config(&newest(ctx)?)?;
    let invocation = ctx
        .invocation("ADD")
        .set("CNI_CONTAINERID", "bad/id")
        .config(&config);
    let error = expect_error(&ctx.call(&invocation)?, 4)?;
    names(&error, "CNI_CONTAINERID")?;
    Ok("CNI_CONTAINERID=bad/id: code 4 naming it".into())
}

fn bad_json(ctx: &Context<'_>) -> Outcome {
    for command in ["ADD", "DEL", "CHECK"] {
        let invocation = ctx
            .invocation(command)
            .stdin(r#"{"cniVersion": "1.0.0", "name": "#);
        expect_error(&ctx.call(&invocation)?, 6).map_err(|e| format!("{command}: {e}"))?;
    }
    Ok("truncated JSON: code 6 for ADD, DEL and CHECK".into())
}

fn unsupported_version(ctx: &Context<'_>) -> Outcome {
    let config = ctx.config("99.0.0")?;
    let error = expect_error(&ctx.call(&ctx.invocation("ADD").config(&config))?, 1)?;
    let unlisted: Vec<&str> = ctx
        .versions()
        .iter()
        .filter(|v| !error.mentions(v))
        .map(String::as_str)
        .collect();
    if unlisted.is_empty() {
        Ok("cniVersion 99.0.0: code 1 listing the supported versions".into())
    } else {
        Err(format!(
            "the error does not list the supported versions ({} missing): {}",
            unlisted.join(", "),
            error.summary()
        )
        .into())
    }
}

fn invalid_name(ctx: &Context<'_>) -> Outcome {
    let mut config = ctx.config(&newest(ctx)?)?;
    for name in INVALID_NAMES {
        config["name"] = json!(name);
        expect_error(&ctx.call(&ctx.invocation("ADD").config(&config))?, 7)
            .map_err(|e| format!("name {name:?}: {e}"))?;
    }
    Ok(format!("code 7 for each of {INVALID_NAMES:?}"))
}

fn refused_below(ctx: &Context<'_>, command: &str, minimum: &str) -> Outcome {
    let old = versions_where(ctx, minimum, true)?;
    for version in &old {
        let invocation = ctx.invocation(command).config(&ctx.config(version)?);
        expect_error(&ctx.call(&invocation)?, 1)
            .map_err(|e| format!("{command} with cniVersion {version}: {e}"))?;
    }
    Ok(format!("code 1 for {}", old.join(", ")))
}

/// ADDs this case's attachment; returns the config sent and the validated result.
fn add(ctx: &Context<'_>, version: &str) -> Result<(Value, Value), Failure> {
    let config = ctx.valid_config(version)?;
    let exec = ctx.call(&ctx.invocation("ADD").config(&config))?;
    let result = expect_result(&exec, version).map_err(|e| format!("ADD {version}: {e}"))?;
    Ok((config, result))
}

/// The config with the ADD result as `prevResult`, as a runtime sends it for DEL (from 0.4.0 on,
/// as libcni does) and CHECK.
pub fn with_prev_result(mut config: Value, result: &Value, version: &str) -> Value {
    if is_at_least(version, "0.4.0") {
        config["prevResult"] = result.clone();
    }
    config
}

/// Runs a command that must succeed silently; `what` labels a failure.
pub fn silently(
    ctx: &Context<'_>,
    command: &str,
    config: &Value,
    what: &str,
) -> Result<(), Failure> {
    let exec = ctx.call(&ctx.invocation(command).config(config))?;
    expect_silent_success(&exec).map_err(|e| Failure::Fail(format!("{what}: {e}")))
}

fn add_result(ctx: &Context<'_>, version: &str) -> Outcome {
    if !ctx.versions().iter().any(|v| v == version) {
        return Err(Failure::Skip(format!(
            "{version} is not expected of this plugin"
        )));
    }
    let (config, result) = add(ctx, version)?;
    silently(
        ctx,
        "DEL",
        &with_prev_result(config, &result, version),
        "DEL after ADD",
    )?;
    Ok(format!("valid {version} result; DEL ok"))
}

fn check_after_add(ctx: &Context<'_>) -> Outcome {
    let versions = versions_where(ctx, "0.4.0", false)?;
    for version in &versions {
        let (config, result) = add(ctx, version)?;
        let config = with_prev_result(config, &result, version);
        silently(ctx, "CHECK", &config, &format!("CHECK {version} after ADD"))?;
        silently(ctx, "DEL", &config, &format!("DEL {version}"))?;
    }
    Ok(format!("ADD, CHECK, DEL for {}", versions.join(", ")))
}

fn del_twice(ctx: &Context<'_>) -> Outcome {
    let version = newest(ctx)?;
    let (config, result) = add(ctx, &version)?;
    let config = with_prev_result(config, &result, &version);
    silently(ctx, "DEL", &config, "first DEL")?;
    silently(ctx, "DEL", &config, "second DEL")?;
    Ok("both DELs succeeded".into())
}

fn del_without_netns_or_prev_result(ctx: &Context<'_>) -> Outcome {
    let version = newest(ctx)?;
    let (config, _) = add(ctx, &version)?;
    let exec = ctx.call(&ctx.invocation("DEL").unset("CNI_NETNS").config(&config))?;
    expect_silent_success(&exec)?;
    Ok("DEL without CNI_NETNS and prevResult succeeded".into())
}

fn del_never_added(ctx: &Context<'_>) -> Outcome {
    let config = ctx.valid_config(&newest(ctx)?)?;
    silently(ctx, "DEL", &config, "DEL of an attachment never added")?;
    Ok("DEL of an unknown attachment succeeded".into())
}

fn gc_keeps_valid(ctx: &Context<'_>) -> Outcome {
    let version = versions_where(ctx, "1.1.0", false)?.remove(0);
    let (config, result) = add(ctx, &version)?;
    let mut gc_config = config.clone();
    let valid = json!([{"containerID": ctx.container_id(), "ifname": IFNAME}]);
    // libcni sends both spellings: the 1.1.0 tag's key and the corrected one.
    gc_config["cni.dev/valid-attachments"] = valid.clone();
    gc_config["cni.dev/attachments"] = valid;
    silently(ctx, "GC", &gc_config, "GC")?;
    let config = with_prev_result(config, &result, &version);
    silently(
        ctx,
        "CHECK",
        &config,
        "CHECK after GC listed the attachment as valid",
    )?;
    silently(ctx, "DEL", &config, "DEL")?;
    Ok("GC kept the valid attachment (CHECK passes after it)".into())
}

fn status_ready(ctx: &Context<'_>) -> Outcome {
    let version = versions_where(ctx, "1.1.0", false)?.remove(0);
    silently(ctx, "STATUS", &ctx.valid_config(&version)?, "STATUS")?;
    Ok("STATUS succeeded".into())
}
