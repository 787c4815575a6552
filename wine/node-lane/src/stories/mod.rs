//! The lane's stories and the table the runner tells them from. Each story is a module of its
//! own that speaks only the lane's vocabulary ([`crate::lane`]) and makes its own nodes under
//! the scratch directory.
//!
//! A new story is a module here and a line in [`STORIES`].

mod network_policy;
mod services;
mod truth_tables;

use crate::lane::Lane;
use crate::report::Report;

/// One story: its name (for `--only` and the report), and how it is told.
#[derive(Debug)]
pub struct Story {
    pub name: &'static str,
    pub tell: fn(&Lane, &mut Report),
}

/// Every story, in the order the lane tells them.
pub const STORIES: &[Story] = &[
    Story {
        name: "overlay",
        tell: services::overlay,
    },
    Story {
        name: "l2bridge",
        tell: services::l2bridge,
    },
    Story {
        name: "netpol",
        tell: network_policy::run,
    },
    Story {
        name: "netpol-tables",
        tell: truth_tables::run,
    },
];
