//! The lane's results: one row per case with its native and its Wine outcome.

use std::fmt::Write as _;

use conformance::Verdict;

/// How one case ended on one side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub verdict: Verdict,
    pub message: String,
}

impl Outcome {
    pub fn pass(message: impl Into<String>) -> Outcome {
        Outcome {
            verdict: Verdict::Pass,
            message: message.into(),
        }
    }

    pub fn fail(message: impl Into<String>) -> Outcome {
        Outcome {
            verdict: Verdict::Fail,
            message: message.into(),
        }
    }

    pub fn skip(message: impl Into<String>) -> Outcome {
        Outcome {
            verdict: Verdict::Skip,
            message: message.into(),
        }
    }
}

/// One case, both sides.
#[derive(Debug, Clone)]
pub struct Row {
    /// What ran: `hns`, or the plugin whose protocol catalogue ran.
    pub suite: String,
    pub case: String,
    pub native: Outcome,
    pub wine: Outcome,
}

impl Row {
    /// A row fails when either side failed, or when Wine skipped what passed natively (every
    /// case that passes natively must pass under Wine, or be listed as unable to run there).
    pub fn failed(&self) -> bool {
        self.native.verdict == Verdict::Fail
            || self.wine.verdict == Verdict::Fail
            || (self.native.verdict == Verdict::Pass && self.wine.verdict != Verdict::Pass)
    }

    /// The message worth reading: the first failing side's, else Wine's.
    fn message(&self) -> &str {
        if self.native.verdict == Verdict::Fail {
            &self.native.message
        } else {
            &self.wine.message
        }
    }
}

fn label(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "PASS",
        Verdict::Fail => "FAIL",
        Verdict::Skip => "SKIP",
    }
}

/// The aligned table and a summary line.
pub fn render(rows: &[Row]) -> String {
    let width = |column: fn(&Row) -> &str, header: &str| {
        rows.iter()
            .map(|row| column(row).chars().count())
            .chain([header.len()])
            .max()
            .unwrap_or(0)
    };
    let suite_width = width(|row| &row.suite, "SUITE");
    let case_width = width(|row| &row.case, "CASE");
    let mut out = String::new();
    let mut line = |suite: &str, case: &str, native: &str, wine: &str, message: &str| {
        let text = format!(
            "{suite:<suite_width$}  {case:<case_width$}  {native:<6}  {wine:<6}  {message}"
        );
        let _ = writeln!(out, "{}", text.trim_end());
    };
    line("SUITE", "CASE", "NATIVE", "WINE", "MESSAGE");
    for row in rows {
        line(
            &row.suite,
            &row.case,
            label(row.native.verdict),
            label(row.wine.verdict),
            row.message(),
        );
    }
    let count = |keep: fn(&Row) -> bool| rows.iter().filter(|row| keep(row)).count();
    let _ = writeln!(
        out,
        "\n{} cases: {} passed on both sides, {} passed under Wine with no native run, {} skipped on both, {} failed",
        rows.len(),
        count(|row| row.native.verdict == Verdict::Pass && row.wine.verdict == Verdict::Pass),
        count(|row| !row.failed()
            && row.native.verdict != Verdict::Pass
            && row.wine.verdict == Verdict::Pass),
        count(|row| row.native.verdict == Verdict::Skip && row.wine.verdict == Verdict::Skip),
        count(Row::failed),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(native: Verdict, wine: Verdict) -> Row {
        let outcome = |verdict, message: &str| Outcome {
            verdict,
            message: message.to_owned(),
        };
        Row {
            suite: "hns".to_owned(),
            case: "c".to_owned(),
            native: outcome(native, "native says"),
            wine: outcome(wine, "wine says"),
        }
    }

    #[test]
    fn a_case_passing_natively_must_pass_under_wine() {
        assert!(!row(Verdict::Pass, Verdict::Pass).failed());
        assert!(!row(Verdict::Skip, Verdict::Skip).failed());
        assert!(row(Verdict::Pass, Verdict::Skip).failed());
        assert!(row(Verdict::Pass, Verdict::Fail).failed());
        assert!(row(Verdict::Fail, Verdict::Pass).failed());
    }

    #[test]
    fn the_table_shows_both_verdicts_and_the_failing_message() {
        let table = render(&[
            row(Verdict::Pass, Verdict::Pass),
            row(Verdict::Fail, Verdict::Pass),
            row(Verdict::Skip, Verdict::Pass),
        ]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "SUITE  CASE  NATIVE  WINE    MESSAGE");
        assert_eq!(lines[1], "hns    c     PASS    PASS    wine says");
        assert_eq!(lines[2], "hns    c     FAIL    PASS    native says");
        assert_eq!(lines[3], "hns    c     SKIP    PASS    wine says");
        assert_eq!(
            lines[5],
            "3 cases: 1 passed on both sides, 1 passed under Wine with no native run, 0 skipped on both, 1 failed"
        );
    }
}
