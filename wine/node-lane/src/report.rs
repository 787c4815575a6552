//! The lane's report: one row per check with the story it belongs to and what it saw, printed
//! as it happens and as one table at the end.

use std::fmt::Write as _;

/// One check's result.
#[derive(Debug, Clone)]
pub struct Row {
    /// The story the check belongs to (`-` for the lane's own set-up).
    pub story: &'static str,
    pub check: String,
    pub passed: bool,
    /// What the check saw: the objects, addresses and counts it judged, or why it failed.
    pub saw: String,
}

/// Every row of a run.
#[derive(Debug)]
pub struct Report {
    rows: Vec<Row>,
    /// The story whose checks are recorded now.
    story: &'static str,
}

impl Default for Report {
    fn default() -> Report {
        Report {
            rows: Vec::new(),
            story: "-",
        }
    }
}

impl Report {
    /// Files the checks recorded from now on under `story`: the runner's, so a story never
    /// names itself.
    pub fn begin(&mut self, story: &'static str) {
        self.story = story;
    }

    /// Records a check's outcome and prints it at once, so a long run shows its progress.
    pub fn record(&mut self, check: &str, outcome: Result<String, String>) {
        let (passed, saw) = match outcome {
            Ok(saw) => (true, saw),
            Err(why) => (false, why),
        };
        eprintln!(
            "node-lane: [{}] {check}: {} — {saw}",
            self.story,
            if passed { "PASS" } else { "FAIL" }
        );
        self.rows.push(Row {
            story: self.story,
            check: check.to_owned(),
            passed,
            saw,
        });
    }

    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.rows.iter().all(|row| row.passed)
    }

    /// The table: story, check, verdict and what it saw.
    pub fn table(&self) -> String {
        let width = |of: fn(&Row) -> usize, header: &str| {
            self.rows
                .iter()
                .map(of)
                .max()
                .unwrap_or(0)
                .max(header.len())
        };
        let story_width = width(|row| row.story.len(), "story");
        let check_width = width(|row| row.check.len(), "check");
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<story_width$} {:<check_width$} {:<7} what it saw",
            "story", "check", "verdict"
        );
        for row in &self.rows {
            let _ = writeln!(
                out,
                "{:<story_width$} {:<check_width$} {:<7} {}",
                row.story,
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
