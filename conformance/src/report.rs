//! The outcome of a run: a table for people, JSON for CI.

use serde::Serialize;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// A case's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every check of the case held.
    Pass,
    /// A check failed; the message says which.
    Fail,
    /// The case does not apply to this plugin or fixture; the message says why.
    Skip,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "SKIP",
        }
    }
}

/// One case's line in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseReport {
    /// The case id, stable across runs so reports can be compared.
    pub id: String,
    /// The spec section the case proves.
    pub section: String,
    /// What the case concluded.
    pub verdict: Verdict,
    /// Why it failed or was skipped; empty when it passed.
    pub message: String,
    /// How long the case took, so slow plugins show up in the report.
    pub duration_ms: u64,
}

/// Every selected case's result, with what was run and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The plugin binary that was tested.
    pub plugin: String,
    /// How it was run (natively or under Wine).
    pub launcher: String,
    /// What the cases stood on (e.g. the HCN emulator).
    pub fixture: String,
    /// Every selected case, in run order.
    pub cases: Vec<CaseReport>,
}

impl Report {
    /// How many cases ended with `verdict`.
    pub fn count(&self, verdict: Verdict) -> usize {
        self.cases.iter().filter(|c| c.verdict == verdict).count()
    }

    /// True when no case failed (skips do not fail a run).
    pub fn passed(&self) -> bool {
        self.count(Verdict::Fail) == 0
    }

    /// The aligned table: case, spec section, result, message; then a summary line.
    pub fn table(&self) -> String {
        let headers = ["CASE", "SECTION", "RESULT"];
        let width = |column: fn(&CaseReport) -> &str, header: &str| {
            self.cases
                .iter()
                .map(|c| column(c).chars().count())
                .chain([header.len()])
                .max()
                .unwrap_or(0)
        };
        let id_width = width(|c| &c.id, headers[0]);
        let section_width = width(|c| &c.section, headers[1]);
        let mut out = String::new();
        let mut row = |id: &str, section: &str, result: &str, message: &str| {
            let line =
                format!("{id:<id_width$}  {section:<section_width$}  {result:<6}  {message}");
            let _ = writeln!(out, "{}", line.trim_end());
        };
        row(headers[0], headers[1], headers[2], "MESSAGE");
        for case in &self.cases {
            row(&case.id, &case.section, case.verdict.label(), &case.message);
        }
        let _ = writeln!(
            out,
            "\n{} cases against {} ({}, fixture {}): {} passed, {} failed, {} skipped",
            self.cases.len(),
            self.plugin,
            self.launcher,
            self.fixture,
            self.count(Verdict::Pass),
            self.count(Verdict::Fail),
            self.count(Verdict::Skip)
        );
        out
    }

    /// The report as JSON (`--json`), for CI to archive and compare.
    pub fn to_json(&self) -> String {
        // A struct of strings, numbers and a unit enum always serialises.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Writes [`Report::to_json`] to `path`.
    pub fn write_json(&self, path: &Path) -> io::Result<()> {
        std::fs::write(path, self.to_json() + "\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> Report {
        let case = |id: &str, verdict, message: &str| CaseReport {
            id: id.into(),
            section: "§2 VERSION".into(),
            verdict,
            message: message.into(),
            duration_ms: 3,
        };
        Report {
            plugin: "p".into(),
            launcher: "native".into(),
            fixture: "plain".into(),
            cases: vec![
                case("version.reports-all", Verdict::Pass, "7 versions"),
                case("a", Verdict::Fail, "exit status 1"),
                case("b", Verdict::Skip, ""),
            ],
        }
    }

    #[test]
    fn table_aligns_columns_and_summarises() {
        let table = report().table();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "CASE                 SECTION     RESULT  MESSAGE");
        assert_eq!(
            lines[1],
            "version.reports-all  §2 VERSION  PASS    7 versions"
        );
        assert_eq!(
            lines[2],
            "a                    §2 VERSION  FAIL    exit status 1"
        );
        assert_eq!(lines[3], "b                    §2 VERSION  SKIP");
        assert!(
            lines[5].ends_with("1 passed, 1 failed, 1 skipped"),
            "{}",
            lines[5]
        );
    }

    #[test]
    fn a_skip_does_not_fail_the_run_but_a_failure_does() {
        let mut report = report();
        assert!(!report.passed());
        report.cases.remove(1);
        assert!(report.passed());
    }
}
