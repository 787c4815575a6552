//! `win-bridge.exit-status`: a command that succeeded exits 0, every time. A runtime reads any
//! other ending of a successful ADD, CHECK or DEL as a failure, and one crash in a few hundred
//! runs is enough to retry pods or mark them broken, so the case runs one pod through many
//! cycles of ADD, CHECK and DEL and counts how every process ended.
//!
//! Under Wine the commands run with Wine's `thread` debug channel on, and a run that did not
//! exit 0 is quoted with the end of its stderr: the channel names each thread after the HCN
//! function it ran and traces each thread's exit and the process's own, so the report shows
//! which threads were still exiting when the process ended. (A call thread still running when
//! the process ends kills it under Wine: without `hns::deadline` waiting for its call threads,
//! a few CHECKs in a thousand die with SIGSEGV after every call has answered; see that module.)

use std::collections::BTreeMap;
use std::time::Instant;

use serde_json::{Value, json};

use crate::cbr0::cbr0_pod_setup;
use crate::lane::{Bench, Side};
use crate::process::Ran;

/// Cycles the lane runs by default: 300 processes a side, one to two minutes under Wine on a
/// loaded 2-core machine. `wine-lane --cycles N` runs more by hand.
pub const DEFAULT_CYCLES: usize = 100;

/// Wine's diagnostics for the runs: its thread trace alone.
const WINE_DEBUG: &str = "-all,+thread";
/// How many runs that did not exit 0 the report quotes.
const QUOTED_RUNS: usize = 3;
/// How much of a quoted run's stderr the report shows.
const QUOTED_LINES: usize = 16;

/// The case: `bench.cycles()` cycles of ADD, CHECK (with the ADD's result) and DEL of one pod,
/// then a check that nothing is left. Fails when any process did not exit 0.
pub fn exit_status(bench: &Bench<'_>) -> Result<String, String> {
    // CHECK needs cniVersion 0.4.0 or later.
    let (netns, _, config) = cbr0_pod_setup(bench, "cniVersion", json!("1.0.0"))?;
    let mut env = vec![
        ("CNI_CONTAINERID", "exit-status-pod"),
        ("CNI_NETNS", netns.as_str()),
        ("CNI_IFNAME", "eth0"),
    ];
    if bench.side() == Side::Wine {
        env.push(("WINEDEBUG", WINE_DEBUG));
    }
    let run = |command: &str, config: &Value| {
        let mut env = env.clone();
        env.push(("CNI_COMMAND", command));
        bench.plugin("win-bridge", &env, config)
    };

    let started = Instant::now();
    let mut tally = Tally::default();
    for cycle in 1..=bench.cycles() {
        let add = run("ADD", &config)?;
        let result = if add.succeeded() {
            let result = serde_json::from_str::<Value>(&add.stdout).map_err(|e| {
                format!("cycle {cycle}: ADD exited 0 without a result ({e}): {add:?}")
            })?;
            Some(result)
        } else {
            None
        };
        tally.count(cycle, "ADD", add);
        if let Some(result) = result {
            let mut check = config.clone();
            check["prevResult"] = result;
            tally.count(cycle, "CHECK", run("CHECK", &check)?);
        }
        tally.count(cycle, "DEL", run("DEL", &config)?);
    }
    let took = started.elapsed().as_secs_f64();
    if !tally.failed.is_empty() {
        return Err(tally.report());
    }
    let endpoints = bench.linux_hnsctl(&["--json", "endpoint", "list"])?.ok()?;
    if endpoints.trim() != "[]" {
        return Err(format!("{}; endpoints left: {endpoints}", tally.summary()));
    }
    Ok(format!("{} in {took:.0} s", tally.summary()))
}

/// How the runs ended, per command, and the runs that did not exit 0.
#[derive(Debug, Default)]
struct Tally {
    /// (command, ending) → runs.
    endings: BTreeMap<(&'static str, String), usize>,
    /// (cycle, command, run) of every run that did not exit 0.
    failed: Vec<(usize, &'static str, Ran)>,
}

impl Tally {
    fn count(&mut self, cycle: usize, command: &'static str, ran: Ran) {
        *self.endings.entry((command, ran.ending())).or_default() += 1;
        if !ran.succeeded() {
            self.failed.push((cycle, command, ran));
        }
    }

    /// `ADD: 100 × exit status 0; CHECK: 99 × exit status 0, 1 × killed by signal 11; ...`
    fn summary(&self) -> String {
        let mut by_command: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for ((command, ending), runs) in &self.endings {
            by_command
                .entry(command)
                .or_default()
                .push(format!("{runs} × {ending}"));
        }
        by_command
            .iter()
            .map(|(command, lines)| format!("{command}: {}", lines.join(", ")))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The summary, then the first runs that did not exit 0 with the end of their stderr.
    fn report(&self) -> String {
        let mut report = format!(
            "{} run(s) did not exit 0 ({})",
            self.failed.len(),
            self.summary()
        );
        for (cycle, command, ran) in self.failed.iter().take(QUOTED_RUNS) {
            report.push_str(&format!(
                "\n    cycle {cycle}, {command}: {}; stdout {:?}; stderr ends:",
                ran.ending(),
                ran.stdout.trim()
            ));
            let lines: Vec<&str> = ran.stderr.lines().collect();
            for line in &lines[lines.len().saturating_sub(QUOTED_LINES)..] {
                report.push_str("\n      ");
                report.push_str(line);
            }
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ran(status: Option<i32>, signal: Option<i32>, stderr: &str) -> Ran {
        Ran {
            command_line: "win-bridge".to_owned(),
            status,
            signal,
            stdout: String::new(),
            stderr: stderr.to_owned(),
        }
    }

    #[test]
    fn the_summary_counts_each_ending_per_command() {
        let mut tally = Tally::default();
        tally.count(1, "ADD", ran(Some(0), None, ""));
        tally.count(1, "CHECK", ran(Some(0), None, ""));
        tally.count(2, "ADD", ran(Some(0), None, ""));
        tally.count(2, "CHECK", ran(None, Some(11), ""));
        assert_eq!(
            tally.summary(),
            "ADD: 2 × exit status 0; CHECK: 1 × exit status 0, 1 × killed by signal 11"
        );
        assert_eq!(tally.failed.len(), 1);
    }

    #[test]
    fn the_report_quotes_the_end_of_a_failed_run() {
        let mut tally = Tally::default();
        let stderr: String = (1..=20).map(|n| format!("line {n}\n")).collect();
        tally.count(7, "DEL", ran(Some(1), None, &stderr));
        let report = tally.report();
        let lines: Vec<&str> = report.lines().collect();
        assert_eq!(lines[0], "1 run(s) did not exit 0 (DEL: 1 × exit status 1)");
        assert_eq!(
            lines[1],
            "    cycle 7, DEL: exit status 1; stdout \"\"; stderr ends:"
        );
        assert_eq!(lines[2], "      line 5");
        assert_eq!(lines.last(), Some(&"      line 20"));
    }
}
