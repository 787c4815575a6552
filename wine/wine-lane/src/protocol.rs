//! The CNI protocol catalogue on both sides: `cni-conformance` (the Linux build; for the HNS
//! plugins `cni-win-conformance`, which adds the HNS catalogue) runs each plugin natively and,
//! with `--launcher wine`, its `.exe` under Wine; the two JSON reports are paired case by case.

use std::collections::BTreeMap;
use std::path::Path;

use cni_win_conformance::hns;
use conformance::Verdict;
use serde_json::{Value, json};

use crate::lane::{Lane, Side};
use crate::process;
use crate::table::{Outcome, Row};

/// How long one plugin exec may take, on either side, before the case fails.
const PLUGIN_TIMEOUT_MS: u64 = 60_000;

/// A plugin and how to run its catalogue.
#[derive(Debug)]
pub struct Plugin {
    pub name: &'static str,
    config: Config,
    /// `hnsctl network create` arguments when every case runs on a fresh HCN emulator host
    /// made with the side's own `hnsctl` (`cni-win-conformance --hnsctl --hns-network`); the
    /// plugin then reaches HNS through `hns::native` and `computenetwork.dll` under Wine.
    hns_network: Option<&'static str>,
}

/// A valid config for the plugin; `{{caseDir}}` is a fresh directory per case, spelled as the
/// plugin sees it (`Z:\...` under Wine).
#[derive(Debug)]
enum Config {
    Inline(Value),
    /// A file of the workspace, shared with the plugin's own conformance test.
    File(&'static str),
}

impl Config {
    fn load(&self) -> Result<Value, String> {
        match self {
            Config::Inline(config) => Ok(config.clone()),
            Config::File(relative) => {
                let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../..")
                    .join(relative);
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
            }
        }
    }
}

/// The plugins whose catalogue the lane runs.
pub fn plugins() -> Vec<Plugin> {
    vec![
        Plugin {
            name: "cni-example-plugin",
            hns_network: None,
            config: Config::Inline(json!({
                "name": "lane-demo",
                "type": "cni-example-plugin",
                "subnet": "10.22.0.0/16",
                "dataDir": "{{caseDir}}",
                "dns": {"nameservers": ["10.96.0.10"], "search": ["svc.cluster.local"]}
            })),
        },
        Plugin {
            name: "host-local",
            hns_network: None,
            config: Config::Inline(json!({
                "name": "lane-net",
                "type": "win-bridge",
                "ipam": {"type": "host-local", "subnet": "10.42.0.0/24", "dataDir": "{{caseDir}}"}
            })),
        },
        Plugin {
            name: "win-bridge",
            hns_network: Some(hns::L2BRIDGE_NETWORK),
            config: Config::File("cni-win-bridge/testdata/conformance.json"),
        },
        Plugin {
            name: "win-overlay",
            hns_network: Some(hns::OVERLAY_NETWORK),
            config: Config::File("cni-win-overlay/testdata/conformance.json"),
        },
    ]
}

impl Plugin {
    /// The catalogue natively and under Wine, one row per case.
    pub fn rows(&self, lane: &Lane) -> Vec<Row> {
        let [native, wine] = Side::BOTH.map(|side| self.report(lane, side));
        let row = |case: &str, native: Outcome, wine: Outcome| Row {
            suite: self.name.to_owned(),
            case: case.to_owned(),
            native,
            wine,
        };
        match (native, wine) {
            (Ok(native), Ok(wine)) => {
                let mut wine: BTreeMap<String, Outcome> = wine.into_iter().collect();
                let mut rows: Vec<Row> = native
                    .into_iter()
                    .map(|(case, native)| {
                        let wine = wine
                            .remove(&case)
                            .unwrap_or_else(|| Outcome::fail("not run under Wine"));
                        row(&case, native, wine)
                    })
                    .collect();
                rows.extend(
                    wine.into_iter()
                        .map(|(case, wine)| row(&case, Outcome::fail("not run natively"), wine)),
                );
                rows
            }
            (native, wine) => {
                let summary = |report: Result<Vec<(String, Outcome)>, String>| match report {
                    Ok(cases) => Outcome::pass(format!("{} cases ran", cases.len())),
                    Err(why) => Outcome::fail(why),
                };
                vec![row("(catalogue)", summary(native), summary(wine))]
            }
        }
    }

    /// Runs `cni-conformance` (`cni-win-conformance` on an HNS host) for one side and reads its
    /// JSON report.
    fn report(&self, lane: &Lane, side: Side) -> Result<Vec<(String, Outcome)>, String> {
        let dir = lane
            .scratch()
            .join("protocol")
            .join(self.name)
            .join(side.name());
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let config = dir.join("config.json");
        let report = dir.join("report.json");
        std::fs::write(&config, self.config.load()?.to_string())
            .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
        let runner = if self.hns_network.is_some() {
            "cni-win-conformance"
        } else {
            "cni-conformance"
        };
        let mut command = lane.command(Side::Native, runner);
        command
            .arg("--launcher")
            .arg(side.name())
            .arg("--plugin")
            .arg(lane.program(side, self.name))
            .arg("--config")
            .arg(&config)
            .arg("--json-report")
            .arg(&report)
            // Every Wine process starts a Windows process model on 2 cores; the 50-pod case
            // runs 50 of them at once, so one exec may wait far longer than natively.
            .arg("--timeout-ms")
            .arg(PLUGIN_TIMEOUT_MS.to_string());
        if let Some(network) = self.hns_network {
            command
                .arg("--hnsctl")
                .arg(lane.program(side, "hnsctl"))
                .arg("--hns-network")
                .arg(network)
                // A Windows hnsctl.exe has no emulator: the test controls use the Linux one.
                .arg("--hns-controls")
                .arg(lane.program(Side::Native, "hnsctl"));
        }
        let ran = process::run(command, process::CATALOGUE_DEADLINE)?;
        // Exit 1 means a case failed, which the report says; anything else is a broken run.
        if !matches!(ran.status, Some(0 | 1)) {
            return Err(ran.failure());
        }
        read_report(&report)
    }
}

/// The report's cases in catalogue order.
fn read_report(path: &Path) -> Result<Vec<(String, Outcome)>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the report {}: {e}", path.display()))?;
    let report: Value = serde_json::from_str(&text)
        .map_err(|e| format!("report {} is not JSON: {e}", path.display()))?;
    let cases = report["cases"]
        .as_array()
        .ok_or_else(|| format!("report {} has no cases", path.display()))?;
    cases
        .iter()
        .map(|case| {
            let verdict = match case["verdict"].as_str() {
                Some("pass") => Verdict::Pass,
                Some("fail") => Verdict::Fail,
                Some("skip") => Verdict::Skip,
                other => return Err(format!("unknown verdict {other:?} in {case}")),
            };
            let outcome = Outcome {
                verdict,
                message: case["message"].as_str().unwrap_or_default().to_owned(),
            };
            Ok((case["id"].as_str().unwrap_or_default().to_owned(), outcome))
        })
        .collect()
}
