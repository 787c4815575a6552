//! `wine-lane`: the Windows lane. Runs every case twice, natively (Linux binaries, in-process
//! HCN emulator) and under Wine (the cross-compiled `.exe` files, whose HNS backend
//! `hns::native` calls the emulator built as `computenetwork.dll` and `vmcompute.dll`), and
//! prints one table. Exit status 1 when a case failed on either side, or passed natively but
//! not under Wine; 2 for a usage error.
//!
//! `scripts/wine-lane` builds and stages everything and sets up Wine (`WINE`, `WINEPREFIX`,
//! `WINEDLLOVERRIDES`) before running this.
#![forbid(unsafe_code)]

mod cbr0;
mod exit_status;
mod hns_cases;
mod lane;
mod log_lines;
mod log_rotation;
mod process;
mod protocol;
mod table;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use lane::{Lane, Side};
use table::Row;

const USAGE: &str = "\
usage: wine-lane --native-bin DIR --windows-bin DIR --scratch DIR [--only NAME] [--cycles N]

  --native-bin DIR    the Linux builds (hnsctl, hns-probe, cni-conformance, cni-win-conformance, the plugins)
  --windows-bin DIR   the .exe builds with computenetwork.dll, vmcompute.dll and
                      bcryptprimitives.dll staged beside them
  --scratch DIR       emptied, then used for every case's state
  --only NAME         runs one plugin's catalogue (its name), the HNS cases (hns) or one HNS case
  --cycles N          ADD, CHECK, DEL cycles of win-bridge.exit-status per side (default 100)";

/// What cannot run under Wine, and why; printed under the table so the gap stays visible.
const NOT_UNDER_WINE: &[(&str, &str)] = &[
    (
        "native and Wine processes on one state at the same time",
        "Wine implements LockFileEx inside wineserver, invisible to Linux flock: the emulator's \
         lock would not exclude them, so the lane never overlaps them",
    ),
    (
        "hns multi-process and crash-point tests (hns-emulator/tests/testsuite/processes.rs)",
        "Linux test binaries that fork the Linux hnsctl; the same engine code runs under Wine \
         in every case above",
    ),
];

/// What to run, from the command line.
struct Options {
    lane: Lane,
    /// `--only`: a plugin's name, `hns`, or an HNS case's id.
    only: Option<String>,
}

impl Options {
    /// Whether to run the catalogue `suite`, or the HNS case `case` (suite `hns`).
    fn runs(&self, suite: &str, case: Option<&str>) -> bool {
        self.only
            .as_deref()
            .is_none_or(|only| only == suite || Some(only) == case)
    }
}

fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("wine-lane: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let plugins: Vec<_> = protocol::plugins()
        .into_iter()
        .filter(|plugin| options.runs(plugin.name, None))
        .collect();
    let cases: Vec<_> = hns_cases::all()
        .into_iter()
        .filter(|case| options.runs("hns", Some(case.id)))
        .collect();
    if plugins.is_empty() && cases.is_empty() {
        eprintln!("wine-lane: --only names no plugin, `hns` or HNS case\n{USAGE}");
        return ExitCode::from(2);
    }
    let lane = &options.lane;
    let started = Instant::now();
    let mut rows: Vec<Row> = Vec::new();
    for plugin in plugins {
        rows.extend(plugin.rows(lane));
    }
    for case in cases {
        let [native, wine] = Side::BOTH.map(|side| case.run(lane, side));
        rows.push(Row {
            suite: "hns".to_owned(),
            case: case.id.to_owned(),
            native,
            wine,
        });
    }
    print!("{}", table::render(&rows));
    println!("\nNot run under Wine:");
    for (what, why) in NOT_UNDER_WINE {
        println!("  - {what}: {why}");
    }
    println!("\nlane took {:.1} s", started.elapsed().as_secs_f64());
    if rows.iter().any(Row::failed) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn parse(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let (mut native, mut windows, mut scratch) = (None, None, None);
    let (mut only, mut cycles) = (None, exit_status::DEFAULT_CYCLES);
    let mut args = args;
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--native-bin" => native = Some(PathBuf::from(value()?)),
            "--windows-bin" => windows = Some(PathBuf::from(value()?)),
            "--scratch" => scratch = Some(PathBuf::from(value()?)),
            "--only" => only = Some(value()?),
            "--cycles" => {
                let value = value()?;
                cycles = value
                    .parse()
                    .ok()
                    .filter(|cycles| *cycles > 0)
                    .ok_or_else(|| format!("--cycles {value:?}: a positive number"))?;
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    // Absolute, because Wine resolves paths from its own working directory.
    let required = |value: Option<PathBuf>, flag: &str| {
        let value = value.ok_or(format!("missing {flag}"))?;
        std::path::absolute(&value).map_err(|e| format!("{flag} {}: {e}", value.display()))
    };
    let native = required(native, "--native-bin")?;
    let windows = required(windows, "--windows-bin")?;
    let scratch = required(scratch, "--scratch")?;
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch)
        .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    Ok(Options {
        lane: Lane::new(native, windows, scratch, cycles),
        only,
    })
}
