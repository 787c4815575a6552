//! A named collection of cases; a run selects from it by id prefix.

use crate::case::Case;

/// Cases in the order they run.
#[derive(Debug, Default)]
pub struct Catalogue {
    cases: Vec<Case>,
}

impl Catalogue {
    /// An empty catalogue; suites fill it with [`Catalogue::push`].
    pub fn new() -> Catalogue {
        Catalogue::default()
    }

    /// Adds a case. Ids must be unique: reports and filters rely on them.
    pub fn push(&mut self, case: Case) {
        debug_assert!(
            self.cases.iter().all(|c| c.id() != case.id()),
            "duplicate case id {}",
            case.id()
        );
        self.cases.push(case);
    }

    /// Appends another catalogue's cases (e.g. the protocol cases plus a plugin's HNS cases).
    pub fn extend(&mut self, other: Catalogue) {
        for case in other.cases {
            self.push(case);
        }
    }

    /// The cases in the order they run, for listing and selection.
    pub fn cases(&self) -> &[Case] {
        &self.cases
    }

    /// The cases whose id starts with `prefix` (all of them for `""`).
    pub fn select<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a Case> {
        self.cases
            .iter()
            .filter(move |c| c.id().starts_with(prefix))
    }
}
