//! The `cni-conformance` command line as a library, so a program that brings its own
//! fixture and cases (cni-win's `cni-win-conformance` adds an HCN emulator host and the HNS
//! catalogue) extends it with a [`Suite`] instead of copying it.
//! Exit status: 0 when no case failed, 1 when one did, 2 for a usage error.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use crate::{Catalogue, Fixture, Harness, Launcher, Native, Wine, cases};

const USAGE: &str = "\
usage: {program} --plugin PATH [--config FILE] [--cni-path DIR]... [--filter PREFIX]
                       [--json-report FILE] [--timeout-ms N] [--launcher native|wine]{suite_synopsis}
       {program} --list

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
{suite_options}  --list               print the case ids and their spec sections";

/// A suite's contribution to one run: its cases and the fixture every case runs on.
#[derive(Debug)]
pub struct SuiteRun {
    /// The cases the suite adds to the generic protocol catalogue.
    pub cases: Catalogue,
    /// What every case of the run stands on unless it brings its own.
    pub fixture: Arc<dyn Fixture>,
}

/// What a program adds to the protocol catalogue: options, cases and the fixture they run on.
pub trait Suite {
    /// Appended to the usage's first line, e.g. `"\n        [--hnsctl PATH]"`.
    fn synopsis(&self) -> &'static str;

    /// The options' help lines, each ending in a newline.
    fn options_help(&self) -> &'static str;

    /// Takes `flag` if it is this suite's, reading its value with `value`; `Ok(false)` if not.
    fn option(
        &mut self,
        flag: &str,
        value: &mut dyn FnMut() -> Result<OsString, String>,
    ) -> Result<bool, String>;

    /// The suite's cases for `--list` (ids and sections only; nothing runs).
    fn listing(&self) -> Result<Catalogue, String>;

    /// The suite's cases and the run's fixture, or `None` when its options were not given.
    fn prepare(&self) -> Result<Option<SuiteRun>, String>;
}

/// The plain harness: the protocol catalogue, no fixture.
#[derive(Debug, Default)]
pub struct ProtocolOnly;

impl Suite for ProtocolOnly {
    fn synopsis(&self) -> &'static str {
        ""
    }

    fn options_help(&self) -> &'static str {
        ""
    }

    fn option(
        &mut self,
        _flag: &str,
        _value: &mut dyn FnMut() -> Result<OsString, String>,
    ) -> Result<bool, String> {
        Ok(false)
    }

    fn listing(&self) -> Result<Catalogue, String> {
        Ok(Catalogue::new())
    }

    fn prepare(&self) -> Result<Option<SuiteRun>, String> {
        Ok(None)
    }
}

/// Parses the process's arguments, runs, and maps the outcome to the exit status.
pub fn main(program: &str, mut suite: impl Suite) -> ExitCode {
    let outcome = parse(std::env::args_os().skip(1), &mut suite)
        .map_err(|usage| format!("{usage} (see --help)"))
        .and_then(|options| run(program, options, &suite));
    match outcome {
        Ok(code) => code,
        Err(message) => {
            eprintln!("{program}: {message}");
            ExitCode::from(2)
        }
    }
}

fn usage(program: &str, suite: &dyn Suite) -> String {
    USAGE
        .replace("{program}", program)
        .replace("{suite_synopsis}", suite.synopsis())
        .replace("{suite_options}", suite.options_help())
}

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

fn parse(
    args: impl IntoIterator<Item = OsString>,
    suite: &mut dyn Suite,
) -> Result<Options, String> {
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
            "--list" => options.list = true,
            "--help" | "-h" => options.help = true,
            other => {
                if !suite.option(other, &mut || value(other))? {
                    return Err(format!("unknown argument {other:?}"));
                }
            }
        }
    }
    if options.plugin.is_none() && !options.list && !options.help {
        return Err("--plugin PATH is required".into());
    }
    Ok(options)
}

fn run(program: &str, options: Options, suite: &dyn Suite) -> Result<ExitCode, String> {
    if options.help {
        println!("{}", usage(program, suite));
        return Ok(ExitCode::SUCCESS);
    }
    let suite_run = suite.prepare()?;
    let mut catalogue = cases::protocol();
    if options.list {
        catalogue.extend(suite.listing()?);
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
    if let Some(SuiteRun { cases, fixture }) = suite_run {
        catalogue.extend(cases);
        harness = harness.with_fixture(fixture);
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
        let options = parse(
            args(&[
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
            ]),
            &mut ProtocolOnly,
        )
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
            let err = parse(args(line), &mut ProtocolOnly).unwrap_err();
            assert!(err.contains(needle), "{line:?}: {err}");
        }
    }
}
