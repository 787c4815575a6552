//! The whole protocol catalogue against `cni-example-plugin`, and the fixture and report seams
//! that later lanes build on.

use conformance::{
    Case, Catalogue, Failure, Fixture, FixtureError, Harness, Scope, Setting, Verdict, cases,
    protocol,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const PLUGIN: &str = env!("CARGO_BIN_EXE_cni-example-plugin");

fn template() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/example-plugin.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn harness() -> Harness {
    Harness::new(PLUGIN)
        .with_config_template(template())
        .unwrap()
}

#[test]
fn the_example_plugin_passes_every_protocol_case() {
    let catalogue = cases::protocol();
    let report = harness().run(&catalogue, "");
    assert_eq!(report.cases.len(), catalogue.cases().len());
    let not_passed: Vec<_> = report
        .cases
        .iter()
        .filter(|c| c.verdict != Verdict::Pass)
        .collect();
    assert!(not_passed.is_empty(), "{}", report.table());
}

#[test]
fn case_ids_are_unique_and_filters_select_by_prefix() {
    let catalogue = cases::protocol();
    let mut ids: Vec<&str> = catalogue.cases().iter().map(|c| c.id()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), catalogue.cases().len());
    let env: Vec<&str> = catalogue.select("env.").map(|c| c.id()).collect();
    assert!(env.len() >= 5 && env.iter().all(|id| id.starts_with("env.")));
}

#[test]
fn without_a_config_the_life_cycle_is_skipped_and_the_rest_still_runs() {
    let catalogue = cases::protocol();
    let report = Harness::new(PLUGIN).run(&catalogue, "");
    let verdict = |id: &str| report.cases.iter().find(|c| c.id == id).unwrap().verdict;
    assert_eq!(verdict("del.twice"), Verdict::Skip);
    assert_eq!(verdict("add.result.1.1.0"), Verdict::Skip);
    assert_eq!(verdict("env.missing-netns"), Verdict::Pass);
    assert_eq!(verdict("config.bad-json"), Verdict::Pass);
    assert!(report.passed(), "{}", report.table());
}

#[test]
fn the_json_report_holds_every_case_with_its_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    let report = harness().run(&cases::protocol(), "version.");
    report.write_json(&path).unwrap();
    let json: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(json["plugin"], PLUGIN);
    assert_eq!(json["launcher"], "native");
    assert_eq!(json["fixture"], "plain");
    let cases = json["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2);
    assert_eq!(cases[0]["id"], "version.reports-all");
    assert_eq!(cases[0]["section"], "§2 VERSION");
    assert_eq!(cases[0]["verdict"], "pass");
    assert!(cases[0]["message"].as_str().unwrap().contains("1.1.0"));
    assert!(cases[0]["duration_ms"].is_u64());
}

/// A fixture that contributes every kind of setting and records its calls.
#[derive(Debug, Default)]
struct Recording {
    calls: Mutex<Vec<String>>,
    state_dirs: Mutex<Vec<PathBuf>>,
}

impl Fixture for Recording {
    fn name(&self) -> &str {
        "recording"
    }

    fn set_up(&self, scope: &Scope<'_>) -> Result<Setting, FixtureError> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("set_up {}", scope.case_id));
        let state = scope.dir.join("state");
        std::fs::create_dir(&state)?;
        self.state_dirs.lock().unwrap().push(state.clone());
        let mut setting = Setting {
            netns: "fixture-netns".into(),
            ..Setting::default()
        };
        setting.config.insert("name".into(), json!("fixture-net"));
        setting
            .config
            .insert("dataDir".into(), json!("{{stateDir}}"));
        setting
            .vars
            .insert("stateDir".into(), scope.launcher.plugin_path(&state));
        setting.env.insert("EXAMPLE_FIXTURE".into(), "1".into());
        Ok(setting)
    }

    fn tear_down(&self, scope: &Scope<'_>, setting: &Setting) -> Result<(), FixtureError> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("tear_down {} {}", scope.case_id, setting.netns));
        Ok(())
    }
}

#[derive(Debug)]
struct Broken;

impl Fixture for Broken {
    fn name(&self) -> &str {
        "broken"
    }

    fn set_up(&self, _: &Scope<'_>) -> Result<Setting, FixtureError> {
        Err(std::io::Error::other("no emulator here").into())
    }
}

#[test]
fn fixtures_contribute_netns_config_vars_and_env_and_are_torn_down() {
    let fixture = Arc::new(Recording::default());
    let mut catalogue = Catalogue::new();
    catalogue.push(Case::new("fixture.seen-by-plugin", "test", |ctx| {
        let config = ctx.valid_config("1.1.0")?;
        let invocation = ctx.invocation("ADD").config(&config);
        assert_eq!(
            invocation.env.get("EXAMPLE_FIXTURE").map(String::as_str),
            Some("1")
        );
        let result = protocol::expect_result(&ctx.call(&invocation)?, "1.1.0")?;
        let sandbox = &result["interfaces"][0]["sandbox"];
        if config["name"] != "fixture-net" || sandbox != "fixture-netns" {
            return Err(Failure::Fail(format!("config {config}, result {result}")));
        }
        Ok(config["dataDir"].as_str().unwrap_or_default().to_owned())
    }));
    catalogue.push(
        Case::new("fixture.own", "test", |_| Ok("unreachable".into()))
            .with_fixture(Arc::new(Broken)),
    );
    let report = harness()
        .with_fixture(fixture.clone())
        .run(&catalogue, "fixture.");

    let seen = &report.cases[0];
    assert_eq!(seen.verdict, Verdict::Pass, "{}", report.table());
    let state = fixture.state_dirs.lock().unwrap()[0].clone();
    assert_eq!(seen.message, state.to_string_lossy());
    assert_eq!(
        *fixture.calls.lock().unwrap(),
        [
            "set_up fixture.seen-by-plugin",
            "tear_down fixture.seen-by-plugin fixture-netns"
        ]
    );
    assert!(!state.exists(), "the case's directory outlived the case");

    assert_eq!(report.cases[1].verdict, Verdict::Fail);
    assert_eq!(
        report.cases[1].message,
        "fixture broken set-up failed: no emulator here"
    );
}

#[test]
fn the_example_plugin_gc_removes_only_attachments_not_listed_as_valid() {
    let mut catalogue = Catalogue::new();
    catalogue.push(Case::new("example.gc", "test", |ctx| {
        let config = ctx.valid_config("1.1.0")?;
        let add = |id: &str| -> Result<Value, Failure> {
            let invocation = ctx
                .invocation("ADD")
                .set("CNI_CONTAINERID", id)
                .config(&config);
            let mut checked = config.clone();
            checked["prevResult"] = protocol::expect_result(&ctx.call(&invocation)?, "1.1.0")?;
            Ok(checked)
        };
        let (kept, stale) = (add("kept")?, add("stale")?);
        let mut gc = config.clone();
        gc["cni.dev/valid-attachments"] = json!([{"containerID": "kept", "ifname": "eth0"}]);
        protocol::expect_silent_success(&ctx.call(&ctx.invocation("GC").config(&gc))?)?;
        let check = |id: &str, config: &Value| {
            ctx.call(
                &ctx.invocation("CHECK")
                    .set("CNI_CONTAINERID", id)
                    .config(config),
            )
        };
        protocol::expect_silent_success(&check("kept", &kept)?)?;
        let error = protocol::expect_error(&check("stale", &stale)?, 100)?;
        Ok(error.msg)
    }));
    let report = harness().run(&catalogue, "");
    assert_eq!(report.cases[0].verdict, Verdict::Pass, "{}", report.table());
    assert!(report.cases[0].message.contains("no attachment recorded"));
}
