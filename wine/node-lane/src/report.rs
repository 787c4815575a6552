//! The lane's report: one row per check with what it saw, printed as it happens and as one
//! table at the end.

use std::fmt::Write as _;

/// One check's result.
#[derive(Debug, Clone)]
pub struct Row {
    /// Which node the check ran on: `overlay` (Flannel vxlan) or `l2bridge` (Flannel host-gw).
    pub node: &'static str,
    pub check: String,
    pub passed: bool,
    /// What the check saw: the objects, addresses and counts it judged, or why it failed.
    pub saw: String,
}

/// Every row of a run.
#[derive(Debug, Default)]
pub struct Report {
    rows: Vec<Row>,
}

impl Report {
    /// Records a check's outcome and prints it at once, so a long run shows its progress.
    pub fn record(&mut self, node: &'static str, check: &str, outcome: Result<String, String>) {
        let (passed, saw) = match outcome {
            Ok(saw) => (true, saw),
            Err(why) => (false, why),
        };
        eprintln!(
            "node-lane: [{node}] {check}: {} — {saw}",
            if passed { "PASS" } else { "FAIL" }
        );
        self.rows.push(Row {
            node,
            check: check.to_owned(),
            passed,
            saw,
        });
    }

    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.rows.iter().all(|row| row.passed)
    }

    /// The table: node, check, verdict and what it saw (wrapped under the row when long).
    pub fn table(&self) -> String {
        let check_width = self
            .rows
            .iter()
            .map(|row| row.check.len())
            .max()
            .unwrap_or(5)
            .max(5);
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<9} {:<check_width$} {:<7} what it saw",
            "node", "check", "verdict"
        );
        for row in &self.rows {
            let _ = writeln!(
                out,
                "{:<9} {:<check_width$} {:<7} {}",
                row.node,
                row.check,
                if row.passed { "PASS" } else { "FAIL" },
                row.saw
            );
        }
        let failed = self.rows.iter().filter(|row| !row.passed).count();
        let _ = writeln!(
            out,
            "{} checks, {} passed, {failed} failed",
            self.rows.len(),
            self.rows.len() - failed
        );
        out
    }
}
