//! No prefix of the agent's writes opens a window: from every step of every truth-table case
//! to the next, written one request at a time, traffic that both the rules before and the
//! rules after allow is allowed after each request, in both modes and on both builds.

#![cfg(not(windows))]

use cni_win_netpol::Mode;
use netpol_truth_tables::{case_files, read_case};

use crate::support::Probes;

#[test]
fn no_prefix_of_the_writes_refuses_what_before_and_after_both_allow() {
    let mut checked = 0;
    for path in case_files().unwrap() {
        let case = read_case(&path).unwrap();
        for mode in [Mode::Inline, Mode::IpSets] {
            let mut hns = crate::support::fresh_hns();
            for (index, step) in case.steps.iter().enumerate() {
                let changes = step.changes(&case);
                let (cluster, _) = crate::support::cluster(&changes, &step.policies);
                let (_, writes) = crate::support::round(&cluster, &changes, &hns, mode);
                let probes: Probes = step
                    .probes
                    .iter()
                    .flat_map(|probe| {
                        let cells = probe.expected().unwrap();
                        cells
                            .into_keys()
                            .map(|(from, to)| {
                                let packet = probe.packet(&from, &to).unwrap();
                                (from, to, packet)
                            })
                            .collect::<Vec<_>>()
                    })
                    .collect();
                let label = format!("{} step {index} {mode:?}", case.name);
                let (after, verdicts) =
                    crate::support::assert_no_window(&hns, &writes.in_order(), &probes, &label);
                checked += verdicts;
                hns = after;
            }
        }
    }
    assert!(checked > 10_000, "{checked} verdicts checked");
}
