//! `pod-bench`: what a pod's network costs when every HCN call costs L, as on a busy Windows
//! node (field reports: 4-5 s per pod, minutes under parallel load).
//!
//! For each per-call latency L (the emulator's latency control; the emulator serialises calls
//! on one host lock, so L is paid once per call in turn, as HNS processes its requests) and
//! each side (Linux build over the in-process emulator; with `--windows-bin`, the `.exe`
//! under Wine over the emulator DLLs), `win-bridge` is run against a fresh emulated host:
//! one pod's ADD and DEL, then 30 pods added at once and deleted at once. The HCN calls of
//! every phase are counted, and each time is compared with the bound those calls give
//! (calls x L: nothing faster is possible when HNS serialises). Writes a Markdown report.
//!
//! `scripts/bench` builds and stages everything and runs this. Test-only, never shipped.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use conformance::exec::execute_with_args;
use conformance::{Exec, Invocation, Launcher, Native, Wine};
use serde_json::Value;

const USAGE: &str = "\
usage: pod-bench --native-bin DIR [--windows-bin DIR] --scratch DIR --report FILE
                 [--latencies-ms 0,5,20,50] [--pods 30]";

const NETWORK_ARGS: [&str; 10] = [
    "--name",
    "cbr0",
    "--type",
    "L2Bridge",
    "--subnet",
    "10.244.0.0/16",
    "--gateway",
    "10.244.0.1",
    "--id",
    "be7c0000-0000-4000-8000-000000000001",
];
/// The reference win-bridge's HCN calls (closes included) for a new pod's ADD and a live pod's
/// DEL, measured by running its Go binary under Wine against the same emulator DLL
/// (docs/performance.md, "HCN calls per pod"): what its pod start costs on the same latency
/// model.
const REFERENCE_ADD_CALLS: u64 = 15;
const REFERENCE_DEL_CALLS: u64 = 13;
/// How often the one-pod ADD and DEL run; the report gives the median.
const SINGLE_RUNS: usize = 5;
/// A plugin call may wait behind 30 others, each paying L per call.
const CALL_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Debug)]
struct Options {
    native_bin: PathBuf,
    windows_bin: Option<PathBuf>,
    scratch: PathBuf,
    report: PathBuf,
    latencies_ms: Vec<u64>,
    pods: usize,
}

/// One side: how its plugin runs.
struct Side<'a> {
    name: &'static str,
    launcher: &'a dyn Launcher,
    plugin: PathBuf,
}

/// Timings and call counts of one phase.
#[derive(Debug, Clone, Default)]
struct Phase {
    /// Wall time of the whole phase.
    wall: Duration,
    /// Each pod's own call time, sorted.
    per_pod: Vec<Duration>,
    /// HCN calls the phase made (all functions, closes included).
    calls: u64,
}

impl Phase {
    fn percentile(&self, p: f64) -> Duration {
        if self.per_pod.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * self.per_pod.len() as f64).ceil() as usize;
        self.per_pod[rank.clamp(1, self.per_pod.len()) - 1]
    }
}

/// One (side, L) row.
struct Row {
    side: &'static str,
    latency_ms: u64,
    add: Phase,
    del: Phase,
    add_all: Phase,
    del_all: Phase,
}

fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("pod-bench: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&options) {
        Ok(report) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("pod-bench: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(options: &Options) -> Result<String, String> {
    let wine = Wine::from_env();
    let mut sides = vec![Side {
        name: "native",
        launcher: &Native,
        plugin: options.native_bin.join("win-bridge"),
    }];
    if let Some(windows_bin) = &options.windows_bin {
        sides.push(Side {
            name: "wine",
            launcher: &wine,
            plugin: windows_bin.join("win-bridge.exe"),
        });
    }
    let mut rows = Vec::new();
    for side in &sides {
        for &latency_ms in &options.latencies_ms {
            eprintln!("pod-bench: {} with L = {latency_ms} ms", side.name);
            rows.push(measure(options, side, latency_ms)?);
        }
    }
    let report = render(options, &rows);
    if let Some(parent) = options.report.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    std::fs::write(&options.report, &report)
        .map_err(|e| format!("cannot write {}: {e}", options.report.display()))?;
    Ok(report)
}

/// The emulated host of one measurement, driven by the Linux `hnsctl` between phases (never
/// while Windows processes run: Wine's file locks do not exclude Linux ones).
struct Host {
    hnsctl: PathBuf,
    state: PathBuf,
}

impl Host {
    fn hnsctl(&self, args: &[&str]) -> Result<String, String> {
        let state = self.state.to_string_lossy().into_owned();
        let mut all = vec!["--state", state.as_str()];
        all.extend_from_slice(args);
        let exec = execute_with_args(
            &Native,
            &self.hnsctl,
            &all,
            &Invocation::new(),
            Duration::from_secs(60),
        )
        .map_err(|e| format!("cannot run {}: {e}", self.hnsctl.display()))?;
        if !exec.exit.success() {
            return Err(format!(
                "hnsctl {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&exec.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&exec.stdout).trim().to_owned())
    }

    /// HCN calls since the last reading.
    fn calls(&self) -> Result<u64, String> {
        let stats: Value = serde_json::from_str(&self.hnsctl(&["--json", "stats", "--reset"])?)
            .map_err(|e| format!("hnsctl stats printed no JSON: {e}"))?;
        Ok(stats
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(_, count)| count.as_u64())
            .sum())
    }
}

fn measure(options: &Options, side: &Side<'_>, latency_ms: u64) -> Result<Row, String> {
    let dir = options
        .scratch
        .join(format!("{}-{latency_ms}ms", side.name));
    let _ = std::fs::remove_dir_all(&dir);
    let host = Host {
        hnsctl: options.native_bin.join("hnsctl"),
        state: dir.join("hns"),
    };
    host.hnsctl(&[&["network", "create"][..], &NETWORK_ARGS].concat())?;
    let namespaces: Vec<String> = (0..options.pods + SINGLE_RUNS)
        .map(|_| host.hnsctl(&["namespace", "create"]))
        .collect::<Result<_, _>>()?;
    host.hnsctl(&[
        "fault",
        "latency",
        "--micros",
        &(latency_ms * 1000).to_string(),
    ])?;
    let config = config(side, &dir.join("ipam"))?;
    let invocation = |command: &str, container: &str, netns: &str| {
        Invocation::new()
            .set("CNI_COMMAND", command)
            .set("CNI_CONTAINERID", container)
            .set("CNI_NETNS", netns)
            .set("CNI_IFNAME", "eth0")
            .set(
                "CNI_PATH",
                side.launcher
                    .plugin_path(side.plugin.parent().unwrap_or(Path::new("."))),
            )
            .set("HCN_EMULATOR_STATE", side.launcher.plugin_path(&host.state))
            .config(&config)
    };
    let run = |command: &str, pods: &[(String, &str)]| -> Result<Phase, String> {
        host.calls()?;
        let started = std::time::Instant::now();
        let execs: Vec<Result<Exec, String>> = std::thread::scope(|scope| {
            let calls: Vec<_> = pods
                .iter()
                .map(|(container, netns)| {
                    let invocation = invocation(command, container, netns);
                    scope.spawn(move || {
                        execute_with_args(
                            side.launcher,
                            &side.plugin,
                            &[],
                            &invocation,
                            CALL_TIMEOUT,
                        )
                        .map_err(|e| format!("cannot run {}: {e}", side.plugin.display()))
                    })
                })
                .collect();
            calls
                .into_iter()
                .map(|call| {
                    call.join()
                        .unwrap_or_else(|_| Err("a call thread panicked".to_owned()))
                })
                .collect()
        });
        let wall = started.elapsed();
        let mut per_pod = Vec::with_capacity(execs.len());
        for exec in execs {
            let exec = exec?;
            if !exec.exit.success() {
                return Err(format!(
                    "{command} on {} with L = {latency_ms} ms failed ({}): {}",
                    side.name,
                    exec.exit,
                    String::from_utf8_lossy(&exec.stdout).trim()
                ));
            }
            per_pod.push(exec.elapsed);
        }
        per_pod.sort();
        Ok(Phase {
            wall,
            per_pod,
            calls: host.calls()?,
        })
    };
    // One pod, SINGLE_RUNS times: the median run of each command (one sample is noise on
    // a shared machine).
    let (mut adds, mut dels) = (Vec::new(), Vec::new());
    for (round, netns) in namespaces[..SINGLE_RUNS].iter().enumerate() {
        let single = [(format!("bench-single-{round}"), netns.as_str())];
        adds.push(run("ADD", &single)?);
        dels.push(run("DEL", &single)?);
    }
    let (add, del) = (median(adds), median(dels));
    let many: Vec<(String, &str)> = namespaces[SINGLE_RUNS..]
        .iter()
        .enumerate()
        .map(|(i, netns)| (format!("bench-pod-{i}"), netns.as_str()))
        .collect();
    let add_all = run("ADD", &many)?;
    let del_all = run("DEL", &many)?;
    Ok(Row {
        side: side.name,
        latency_ms,
        add,
        del,
        add_all,
        del_all,
    })
}

/// win-bridge's conformance config on the bench network, host-local storing under `ipam`.
fn config(side: &Side<'_>, ipam: &Path) -> Result<Value, String> {
    let template = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../cni-win-bridge/testdata/conformance.json");
    let text = std::fs::read_to_string(&template)
        .map_err(|e| format!("cannot read {}: {e}", template.display()))?;
    let mut config: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", template.display()))?;
    config["cniVersion"] = "1.0.0".into();
    config["ipam"]["subnet"] = "10.244.0.0/16".into();
    config["ipam"]["dataDir"] = side.launcher.plugin_path(ipam).into();
    Ok(config)
}

/// The phase with the median wall time.
fn median(mut phases: Vec<Phase>) -> Phase {
    phases.sort_by_key(|phase| phase.wall);
    phases.swap_remove(phases.len() / 2)
}

fn ms(duration: Duration) -> String {
    format!("{:.0}", duration.as_secs_f64() * 1000.0)
}

fn secs(duration: Duration) -> String {
    format!("{:.2}", duration.as_secs_f64())
}

/// measured / (calls x L), or "-" when L is 0.
fn ratio(measured: Duration, calls: u64, latency_ms: u64) -> String {
    if latency_ms == 0 || calls == 0 {
        return "-".to_owned();
    }
    let bound = calls as f64 * latency_ms as f64 / 1000.0;
    format!("{:.2}", measured.as_secs_f64() / bound)
}

fn render(options: &Options, rows: &[Row]) -> String {
    let pods = options.pods;
    let mut out = String::new();
    let _ = writeln!(out, "# Pod start on a latency-modelled HNS\n");
    let _ = writeln!(
        out,
        "`scripts/bench`: win-bridge (host-local IPAM) against the HCN emulator with a latency of \
         L per HCN call. \"bound\" is the time the phase's HCN calls alone take when HNS handles \
         one call at a time (calls x L); \"ratio\" is the measured time over that bound (1.00 = \
         all the time is HNS's). Times in ms unless marked s.\n"
    );
    let _ = writeln!(out, "## One pod (median of {SINGLE_RUNS} runs)\n");
    let _ = writeln!(
        out,
        "| side | L ms | ADD ms | ADD calls | ADD ratio | DEL ms | DEL calls | DEL ratio |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            row.side,
            row.latency_ms,
            ms(row.add.wall),
            row.add.calls,
            ratio(row.add.wall, row.add.calls, row.latency_ms),
            ms(row.del.wall),
            row.del.calls,
            ratio(row.del.wall, row.del.calls, row.latency_ms),
        );
    }
    let _ = writeln!(out, "\n## {pods} pods at once\n");
    let _ = writeln!(
        out,
        "| side | L ms | all ready s | per pod p50 ms | p99 ms | calls | ratio | all deleted s | per pod p50 ms | p99 ms | calls | ratio |"
    );
    let _ = writeln!(
        out,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for row in rows {
        let (a, d) = (&row.add_all, &row.del_all);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.side,
            row.latency_ms,
            secs(a.wall),
            ms(a.percentile(50.0)),
            ms(a.percentile(99.0)),
            a.calls,
            ratio(a.wall, a.calls, row.latency_ms),
            secs(d.wall),
            ms(d.percentile(50.0)),
            ms(d.percentile(99.0)),
            d.calls,
            ratio(d.wall, d.calls, row.latency_ms),
        );
    }
    let _ = writeln!(out, "\n## Against the reference's calls\n");
    let _ = writeln!(
        out,
        "The reference win-bridge makes {REFERENCE_ADD_CALLS} HCN calls per new pod's ADD and \
         {REFERENCE_DEL_CALLS} per DEL (closes included). On the same model its phases cannot \
         take less than those calls x L; \"calls ratio\" is this side's calls over the reference's \
         (the first single ADD finds the network by name, the others by its cached ID).\n"
    );
    let _ = writeln!(
        out,
        "| side | L ms | ADD calls / reference | calls ratio | one pod ADD ms / reference bound ms | {pods} pods ready s / reference bound s |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
    for row in rows {
        let reference_all = pods as u64 * REFERENCE_ADD_CALLS;
        let _ = writeln!(
            out,
            "| {} | {} | {} / {REFERENCE_ADD_CALLS} | {:.2} | {} / {} | {} / {:.2} |",
            row.side,
            row.latency_ms,
            row.add.calls,
            row.add.calls as f64 / REFERENCE_ADD_CALLS as f64,
            ms(row.add.wall),
            REFERENCE_ADD_CALLS * row.latency_ms,
            secs(row.add_all.wall),
            (reference_all * row.latency_ms) as f64 / 1000.0,
        );
    }
    let _ = writeln!(out, "\n## Serialisation\n");
    let _ = writeln!(
        out,
        "The emulator holds one exclusive lock per host for the whole of every HCN call, latency \
         included, so calls from all processes are handled one at a time and {pods} concurrent \
         ADDs cost at least the sum of their calls x L. What is known of HNS points the same way \
         without proving it exact: hosts before RS5 do not support concurrent endpoint adds and \
         deletes (hcsshim#556 proposed a client-side mutex for them), and the field sees 4-5 s \
         per pod (antrea#4859) and endpoints stuck or sandboxes timing out when many pods start \
         at once (calico#12795, W-C#430). Where HNS overlaps work, real parallel times are below \
         these; the call counts per pod, which the plugins control, hold for both.\n\n\
         L = 0 measures the plugin's own cost plus the emulator's (debug builds; the emulator \
         writes its state files with fsync), not HNS's."
    );
    out
}

fn parse(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        native_bin: PathBuf::new(),
        windows_bin: None,
        scratch: PathBuf::new(),
        report: PathBuf::new(),
        latencies_ms: vec![0, 5, 20, 50],
        pods: 30,
    };
    let mut args = args;
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let absolute =
            |value: &str| std::path::absolute(value).map_err(|e| format!("{flag} {value}: {e}"));
        match flag.as_str() {
            "--native-bin" => options.native_bin = absolute(&value)?,
            "--windows-bin" => options.windows_bin = Some(absolute(&value)?),
            "--scratch" => options.scratch = absolute(&value)?,
            "--report" => options.report = absolute(&value)?,
            "--latencies-ms" => {
                options.latencies_ms = value
                    .split(',')
                    .map(|item| item.trim().parse::<u64>())
                    .collect::<Result<_, _>>()
                    .map_err(|_| format!("--latencies-ms {value:?}: a list such as 0,5,20,50"))?;
            }
            "--pods" => {
                options.pods = value
                    .parse()
                    .ok()
                    .filter(|pods| *pods > 0)
                    .ok_or_else(|| format!("--pods {value:?}: a positive number"))?;
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    for (path, flag) in [
        (&options.native_bin, "--native-bin"),
        (&options.scratch, "--scratch"),
        (&options.report, "--report"),
    ] {
        if path.as_os_str().is_empty() {
            return Err(format!("missing {flag}"));
        }
    }
    Ok(options)
}
