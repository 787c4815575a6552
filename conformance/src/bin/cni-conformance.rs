//! `cni-conformance`: runs the protocol catalogue (and, on an HCN emulator host, the HNS
//! catalogue) against a CNI plugin binary and prints a table.
//! Exit status: 0 when no case failed, 1 when one did, 2 for a usage error.
#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use conformance::hns::{HnsFixture, L2BRIDGE_NETWORK};
use conformance::{Harness, Launcher, Native, Wine, cases};

const USAGE: &str = "\
usage: cni-conformance --plugin PATH [--config FILE] [--cni-path DIR]... [--filter PREFIX]
                       [--json-report FILE] [--timeout-ms N] [--launcher native|wine]
                       [--hnsctl PATH [--hns-network ARGS]]
       cni-conformance --list

  --plugin PATH        the plugin binary to test
  --config FILE        a valid network config for this plugin (JSON); each case sets cniVersion
                       (and name when absent); \"{{caseDir}}\" in a string is a fresh dir per case.
                       Without it, cases that need the plugin to succeed are skipped.
  --cni-path DIR       a CNI_PATH directory (repeatable; default: the plugin's directory)
  --filter PREFIX      run only the cases whose id starts with PREFIX
  --json-report FILE   also write the report as JSON
  --timeout-ms N       kill a plugin call after N milliseconds (default 10000)
  --launcher L         native (default): run the plugin directly; wine: run a Windows .exe
                       with $WINE (default wine64) in $WINEPREFIX, paths given as Z:\\... with ;
  --hnsctl PATH        run every case on a fresh HCN emulator host made with this hnsctl:
                       a network (--hns-network) and a namespace (CNI_NETNS); the config's
                       name becomes the network's, HCN_EMULATOR_STATE is set. Adds the HNS
                       catalogue (hns.*), which needs host-local with dataDir {{caseDir}}/ipam
  --hns-network ARGS   `hnsctl network create` arguments (default: an L2Bridge network,
                       \"--name cbr0 --type L2Bridge --subnet 10.244.1.0/24 --gateway 10.244.1.1\";
                       win-overlay's: \"--name flannel.4096 --type Overlay --subnet 10.244.1.0/24
                       --gateway 10.244.1.1 --vni 4096 --vxlan-port 4789 --provider-address IP\")
  --list               print the case ids and their spec sections";

/// The parsed command line.
#[derive(Debug, Default, PartialEq)]
struct Options {
    plugin: Option<PathBuf>,
    config: Option<PathBuf>,
    cni_path: Vec<PathBuf>,
    filter: String,
    json_report: Option<PathBuf>,
    timeout: Option<Duration>,
    launcher: LauncherChoice,
    hnsctl: Option<PathBuf>,
    hns_network: Option<String>,
    list: bool,
    help: bool,
}

/// How the plugin is started (`--launcher`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum LauncherChoice {
    #[default]
    Native,
    Wine,
}

impl LauncherChoice {
    fn launcher(self) -> Arc<dyn Launcher> {
        match self {
            LauncherChoice::Native => Arc::new(Native),
            LauncherChoice::Wine => Arc::new(Wine::from_env()),
        }
    }
}

fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Options, String> {
    let mut options = Options::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy().into_owned();
        // `--flag=value` and `--flag value` are both accepted.
        let (flag, inline) = match text.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value.into())),
            _ => (text, None),
        };
        let mut value = |flag: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--plugin" => options.plugin = Some(value(&flag)?.into()),
            "--config" => options.config = Some(value(&flag)?.into()),
            "--cni-path" => options.cni_path.push(value(&flag)?.into()),
            "--filter" => options.filter = value(&flag)?.to_string_lossy().into_owned(),
            "--json-report" => options.json_report = Some(value(&flag)?.into()),
            "--timeout-ms" => {
                let raw = value(&flag)?;
                let ms = raw
                    .to_str()
                    .and_then(|s| s.parse::<u64>().ok())
                    .filter(|ms| *ms > 0)
                    .ok_or_else(|| format!("--timeout-ms needs a positive integer, got {raw:?}"))?;
                options.timeout = Some(Duration::from_millis(ms));
            }
            "--launcher" => {
                options.launcher = match value(&flag)?.to_str() {
                    Some("native") => LauncherChoice::Native,
                    Some("wine") => LauncherChoice::Wine,
                    other => {
                        return Err(format!(
                            "--launcher must be native or wine, got {:?}",
                            other.unwrap_or_default()
                        ));
                    }
                }
            }
            "--hnsctl" => options.hnsctl = Some(value(&flag)?.into()),
            "--hns-network" => {
                options.hns_network = Some(value(&flag)?.to_string_lossy().into_owned());
            }
            "--list" => options.list = true,
            "--help" | "-h" => options.help = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if options.plugin.is_none() && !options.list && !options.help {
        return Err("--plugin PATH is required".into());
    }
    Ok(options)
}

fn main() -> ExitCode {
    let outcome = parse(std::env::args_os().skip(1))
        .map_err(|usage| format!("{usage} (see --help)"))
        .and_then(run);
    match outcome {
        Ok(code) => code,
        Err(message) => {
            eprintln!("cni-conformance: {message}");
            ExitCode::from(2)
        }
    }
}

fn run(options: Options) -> Result<ExitCode, String> {
    if options.help {
        println!("{USAGE}");
        return Ok(ExitCode::SUCCESS);
    }
    let fixture = match (&options.hnsctl, &options.hns_network) {
        (Some(hnsctl), network) => Some(
            HnsFixture::new(hnsctl, network.as_deref().unwrap_or(L2BRIDGE_NETWORK))
                .map_err(|e| format!("--hns-network: {e}"))?,
        ),
        (None, Some(_)) => return Err("--hns-network needs --hnsctl".into()),
        (None, None) => None,
    };
    let mut catalogue = cases::protocol();
    if options.list {
        // The HNS cases' ids do not depend on the network, so they are listed without --hnsctl.
        let listing = HnsFixture::new("hnsctl", L2BRIDGE_NETWORK)?;
        catalogue.extend(cases::hns(fixture.as_ref().unwrap_or(&listing)));
        for case in catalogue.select(&options.filter) {
            println!("{:<36} {}", case.id(), case.section());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Some(plugin) = options.plugin else {
        return Err("--plugin PATH is required".into());
    };
    let mut harness = Harness::new(plugin)
        .with_launcher(options.launcher.launcher())
        .with_cni_path(options.cni_path);
    if let Some(timeout) = options.timeout {
        harness = harness.with_timeout(timeout);
    }
    if let Some(fixture) = fixture {
        catalogue.extend(cases::hns(&fixture));
        harness = harness.with_fixture(Arc::new(fixture));
    }
    if catalogue.select(&options.filter).next().is_none() {
        return Err(format!(
            "no case id starts with {:?} (see --list)",
            options.filter
        ));
    }
    if let Some(path) = options.config {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read --config {}: {e}", path.display()))?;
        let template = serde_json::from_str(&text)
            .map_err(|e| format!("--config {} is not JSON: {e}", path.display()))?;
        harness = harness
            .with_config_template(template)
            .map_err(|e| format!("--config {}: {e}", path.display()))?;
    }

    let report = harness.run(&catalogue, &options.filter);
    print!("{}", report.table());
    if let Some(path) = options.json_report {
        report
            .write_json(&path)
            .map_err(|e| format!("cannot write --json-report {}: {e}", path.display()))?;
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    #[test]
    fn parses_every_flag_in_both_spellings() {
        let options = parse(args(&[
            "--plugin",
            "p",
            "--config=c.json",
            "--cni-path",
            "a",
            "--cni-path=b",
            "--filter",
            "env.",
            "--json-report",
            "r.json",
            "--timeout-ms=250",
            "--launcher",
            "wine",
        ]))
        .unwrap();
        assert_eq!(
            options,
            Options {
                plugin: Some("p".into()),
                config: Some("c.json".into()),
                cni_path: vec!["a".into(), "b".into()],
                filter: "env.".into(),
                json_report: Some("r.json".into()),
                timeout: Some(Duration::from_millis(250)),
                launcher: LauncherChoice::Wine,
                hnsctl: None,
                hns_network: None,
                list: false,
                help: false,
            }
        );
    }

    #[test]
    fn refuses_bad_command_lines_with_one_clear_message() {
        let cases: [(&[&str], &str); 6] = [
            (
                &["--plugin", "p", "--frobnicate"],
                "unknown argument \"--frobnicate\"",
            ),
            (&["--plugin"], "--plugin needs a value"),
            (&["--plugin", "p", "--timeout-ms", "0"], "positive integer"),
            (
                &["--plugin", "p", "--timeout-ms", "soon"],
                "positive integer",
            ),
            (&["--filter", "env."], "--plugin PATH is required"),
            (
                &["--plugin", "p", "--launcher", "dosbox"],
                "--launcher must be native or wine",
            ),
        ];
        for (line, needle) in cases {
            let err = parse(args(line)).unwrap_err();
            assert!(err.contains(needle), "{line:?}: {err}");
        }
    }
}
