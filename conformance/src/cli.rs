//! The `cni-conformance` command line as a library, so a program that brings its own
//! fixture and cases (cni-win's `cni-win-conformance` adds an HCN emulator host and the HNS
//! catalogue) extends it with a [`Suite`] instead of copying it.
//! Exit status: 0 when no case failed, 1 when one did, 2 for a usage error.

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

use crate::{Catalogue, Fixture, Harness, Launcher, Native, TemplateNotAnObject, Wine, cases};

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
    /// Why the suite's options cannot make a run (e.g. an option given without the one it
    /// needs); printed after the program's name, exit status 2.
    type Error: std::error::Error + Send + Sync + 'static;

    /// Appended to the usage's first line, e.g. `"\n        [--hnsctl PATH]"`.
    fn synopsis(&self) -> &'static str;

    /// The options' help lines, each ending in a newline.
    fn options_help(&self) -> &'static str;

    /// Takes `flag` if it is this suite's, reading its value with `value`; `Ok(false)` if not.
    fn option(
        &mut self,
        flag: &str,
        value: &mut dyn FnMut() -> Result<OsString, UsageError>,
    ) -> Result<bool, UsageError>;

    /// The suite's cases for `--list` (ids and sections only; nothing runs).
    fn listing(&self) -> Result<Catalogue, Self::Error>;

    /// The suite's cases and the run's fixture, or `None` when its options were not given.
    fn prepare(&self) -> Result<Option<SuiteRun>, Self::Error>;
}

/// The plain harness: the protocol catalogue, no fixture.
#[derive(Debug, Default)]
pub struct ProtocolOnly;

impl Suite for ProtocolOnly {
    type Error = std::convert::Infallible;

    fn synopsis(&self) -> &'static str {
        ""
    }

    fn options_help(&self) -> &'static str {
        ""
    }

    fn option(
        &mut self,
        _flag: &str,
        _value: &mut dyn FnMut() -> Result<OsString, UsageError>,
    ) -> Result<bool, UsageError> {
        Ok(false)
    }

    fn listing(&self) -> Result<Catalogue, Self::Error> {
        Ok(Catalogue::new())
    }

    fn prepare(&self) -> Result<Option<SuiteRun>, Self::Error> {
        Ok(None)
    }
}

/// Parses the process's arguments, runs, and maps the outcome to the exit status.
pub fn main(program: &str, mut suite: impl Suite) -> ExitCode {
    let outcome = parse(std::env::args_os().skip(1), &mut suite)
        .map_err(RunError::Usage)
        .and_then(|options| run(program, options, &suite));
    match outcome {
        Ok(code) => code,
        Err(message) => {
            eprintln!("{program}: {message}");
            ExitCode::from(2)
        }
    }
}

fn usage(program: &str, suite: &impl Suite) -> String {
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

/// A command line that does not say what to run; printed with "(see --help)", exit status 2.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UsageError {
    /// An option that takes a value came last.
    #[error("{flag} needs a value")]
    MissingValue {
        /// The option, as given.
        flag: String,
    },
    /// `--timeout-ms` is zero or not a number: a deadline must allow the call to run.
    #[error("--timeout-ms needs a positive integer, got {got:?}")]
    BadTimeout {
        /// The value given.
        got: OsString,
    },
    /// `--launcher` names no launcher this harness has.
    #[error("--launcher must be native or wine, got {got:?}")]
    UnknownLauncher {
        /// The value given (empty when it is not UTF-8).
        got: String,
    },
    /// Neither the harness nor the suite knows this argument.
    #[error("unknown argument {0:?}")]
    UnknownArgument(String),
    /// A run without `--plugin`: there is nothing to test.
    #[error("--plugin PATH is required")]
    NoPlugin,
}

/// Why a command line could not run (as opposed to a case failing, which is exit status 1).
#[derive(Debug, Error)]
enum RunError<E> {
    #[error("{0} (see --help)")]
    Usage(#[from] UsageError),
    #[error(transparent)]
    Suite(E),
    #[error("no case id starts with {filter:?} (see --list)")]
    NoCaseSelected { filter: String },
    #[error("cannot read --config {}: {source}", .path.display())]
    ReadConfig { path: PathBuf, source: io::Error },
    #[error("--config {} is not JSON: {source}", .path.display())]
    ConfigNotJson {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("--config {}: {source}", .path.display())]
    ConfigNotAnObject {
        path: PathBuf,
        source: TemplateNotAnObject,
    },
    #[error("cannot write --json-report {}: {source}", .path.display())]
    WriteReport { path: PathBuf, source: io::Error },
}

fn parse(
    args: impl IntoIterator<Item = OsString>,
    suite: &mut impl Suite,
) -> Result<Options, UsageError> {
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
                .ok_or_else(|| UsageError::MissingValue {
                    flag: flag.to_owned(),
                })
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
                    .ok_or(UsageError::BadTimeout { got: raw })?;
                options.timeout = Some(Duration::from_millis(ms));
            }
            "--launcher" => {
                options.launcher = match value(&flag)?.to_str() {
                    Some("native") => LauncherChoice::Native,
                    Some("wine") => LauncherChoice::Wine,
                    other => {
                        return Err(UsageError::UnknownLauncher {
                            got: other.unwrap_or_default().to_owned(),
                        });
                    }
                }
            }
            "--list" => options.list = true,
            "--help" | "-h" => options.help = true,
            other => {
                if !suite.option(other, &mut || value(other))? {
                    return Err(UsageError::UnknownArgument(other.to_owned()));
                }
            }
        }
    }
    if options.plugin.is_none() && !options.list && !options.help {
        return Err(UsageError::NoPlugin);
    }
    Ok(options)
}

fn run<S: Suite>(
    program: &str,
    options: Options,
    suite: &S,
) -> Result<ExitCode, RunError<S::Error>> {
    if options.help {
        println!("{}", usage(program, suite));
        return Ok(ExitCode::SUCCESS);
    }
    let suite_run = suite.prepare().map_err(RunError::Suite)?;
    let mut catalogue = cases::protocol();
    if options.list {
        catalogue.extend(suite.listing().map_err(RunError::Suite)?);
        for case in catalogue.select(&options.filter) {
            println!("{:<36} {}", case.id(), case.section());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Some(plugin) = options.plugin else {
        return Err(UsageError::NoPlugin.into());
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
        return Err(RunError::NoCaseSelected {
            filter: options.filter,
        });
    }
    if let Some(path) = options.config {
        let text = std::fs::read_to_string(&path).map_err(|source| RunError::ReadConfig {
            path: path.clone(),
            source,
        })?;
        let template = serde_json::from_str(&text).map_err(|source| RunError::ConfigNotJson {
            path: path.clone(),
            source,
        })?;
        harness = harness
            .with_config_template(template)
            .map_err(|source| RunError::ConfigNotAnObject { path, source })?;
    }

    let report = harness.run(&catalogue, &options.filter);
    print!("{}", report.table());
    if let Some(path) = options.json_report {
        report
            .write_json(&path)
            .map_err(|source| RunError::WriteReport { path, source })?;
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
        let cases: [(&[&str], UsageError, &str); 6] = [
            (
                &["--plugin", "p", "--frobnicate"],
                UsageError::UnknownArgument("--frobnicate".into()),
                "unknown argument \"--frobnicate\"",
            ),
            (
                &["--plugin"],
                UsageError::MissingValue {
                    flag: "--plugin".into(),
                },
                "--plugin needs a value",
            ),
            (
                &["--plugin", "p", "--timeout-ms", "0"],
                UsageError::BadTimeout { got: "0".into() },
                "--timeout-ms needs a positive integer, got \"0\"",
            ),
            (
                &["--plugin", "p", "--timeout-ms", "soon"],
                UsageError::BadTimeout { got: "soon".into() },
                "--timeout-ms needs a positive integer, got \"soon\"",
            ),
            (
                &["--filter", "env."],
                UsageError::NoPlugin,
                "--plugin PATH is required",
            ),
            (
                &["--plugin", "p", "--launcher", "dosbox"],
                UsageError::UnknownLauncher {
                    got: "dosbox".into(),
                },
                "--launcher must be native or wine, got \"dosbox\"",
            ),
        ];
        for (line, expected, message) in cases {
            let err = parse(args(line), &mut ProtocolOnly).unwrap_err();
            assert_eq!(err, expected, "{line:?}");
            assert_eq!(err.to_string(), message, "{line:?}");
        }
    }
}
