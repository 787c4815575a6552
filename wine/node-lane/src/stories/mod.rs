//! The lane's stories and the table the runner tells them from. Each story is a module of its
//! own that speaks only the lane's vocabulary ([`crate::lane`]), makes its own nodes under the
//! scratch directory, and puts its objects into the API server in namespaces of its own. What
//! one story puts in, another could still see (kube-proxy balances Services in every
//! namespace; every agent on the node watches the pods bound to it and the policies over
//! them), so each story takes its objects out again before it ends: any subset of the stories
//! can be told, in the table's order, and none relies on or cleans up after another.
//!
//! A new story is a module here and a line in [`STORIES`].

mod network_policy;
mod services;
mod truth_tables;

use crate::lane::Lane;
use crate::report::Report;

/// One story: its name (for `--only` and the report), what it shows (for `--help`), and how
/// it is told.
#[derive(Debug)]
pub struct Story {
    pub name: &'static str,
    pub about: &'static str,
    pub tell: fn(&Lane, &mut Report),
}

/// The stories `only` names, in the table's order; every story when it names none.
pub fn chosen(only: &[String]) -> impl Iterator<Item = &'static Story> {
    STORIES
        .iter()
        .filter(move |story| only.is_empty() || only.iter().any(|name| name == story.name))
}

/// Every story, in the order the lane tells them.
pub const STORIES: &[Story] = &[
    Story {
        name: "overlay",
        about: "Flannel vxlan: Services through kube-proxy.exe into HNS load balancers, then \
                GC, sweep, doctor, a kube-proxy restart, an HNS stop and restart and injected \
                duplicates under the node daemon",
        tell: services::overlay,
    },
    Story {
        name: "l2bridge",
        about: "Flannel host-gw: the same story on an L2Bridge network",
        tell: services::l2bridge,
    },
    Story {
        name: "netpol",
        about: "cni-win.exe's NetworkPolicy agent under Wine: its sync as the RBAC \
                ServiceAccount, a refusal Event, ADD with the snapshot's rules",
        tell: network_policy::run,
    },
    Story {
        name: "netpol-tables",
        about: "the NetworkPolicy truth tables through the API server (the Linux agent), \
                then the agent restarted and the API server stopped",
        tell: truth_tables::run,
    },
];

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    fn names(only: &[&str]) -> Vec<&'static str> {
        let only: Vec<String> = only.iter().map(|name| name.to_string()).collect();
        chosen(&only).map(|story| story.name).collect()
    }

    #[test]
    fn each_story_has_a_name_of_its_own() {
        let names: BTreeSet<&str> = STORIES.iter().map(|story| story.name).collect();
        assert_eq!(names.len(), STORIES.len());
    }

    #[test]
    fn the_chosen_stories_are_told_in_the_tables_order_once_each() {
        assert_eq!(
            names(&["netpol-tables", "overlay", "netpol-tables"]),
            ["overlay", "netpol-tables"]
        );
        assert_eq!(names(&[]).len(), STORIES.len());
    }
}
