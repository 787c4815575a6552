//! The truth tables: every case of `netpol_truth_tables` (see its `cases/README.md`) translated, written to an
//! HNS that starts empty and is carried from step to step (so each step is also a
//! convergence from the previous one), and every (from, to, port, protocol) verdict the
//! emulator computes from the programmed rules compared with the case's matrix, for both
//! renderings (inline addresses, IP sets), both Windows Server 2022 and 2025, on endpoints of
//! both network types Flannel makes (L2Bridge, Overlay). A verdict that rests on what HNS
//! does not document fails the case, but where a service probe expects the refusal (`?`).

#![cfg(not(windows))]

use std::collections::BTreeMap;
use std::path::Path;

use cni_win_netpol::Mode;
use hns::WindowsBuild;
use netpol_truth_tables::{Case, Outcomes, case_files, print, print_column, read_case};

const BUILDS: [(&str, WindowsBuild); 2] = [
    ("Windows Server 2022", WindowsBuild::SERVER_2022),
    ("Windows Server 2025", WindowsBuild::SERVER_2025),
];

const MODES: [Mode; 2] = [Mode::Inline, Mode::IpSets];

struct Outcome {
    probes: usize,
    failures: Vec<String>,
}

fn run_case(path: &Path, mode: Mode, build: WindowsBuild) -> Outcome {
    let case: Case = read_case(path).unwrap();
    let mut programmed = crate::support::fresh_hns();
    let mut outcome = Outcome {
        probes: 0,
        failures: Vec::new(),
    };
    for (index, step) in case.steps.iter().enumerate() {
        let changes = step.changes(&case);
        let (cluster, _refused) = crate::support::cluster(&changes, &step.policies);
        let (wanted, writes) = crate::support::round(&cluster, &changes, &programmed, mode);
        assert!(
            wanted.conflicts.is_empty(),
            "{}: {:?}",
            case.name,
            wanted.conflicts
        );
        crate::support::apply(&mut programmed, &writes);
        crate::support::assert_no_opposite_ties(&programmed);
        let (_, again) = crate::support::round(&cluster, &changes, &programmed, mode);
        assert!(
            again.is_empty(),
            "{} step {index}: converged HNS still gets writes: {again:?}",
            case.name
        );

        for probe in &step.probes {
            for network_type in &crate::support::NETWORK_TYPES {
                let mut actual = BTreeMap::new();
                let mut wrong = 0;
                for ((from, to), want) in probe.expected().unwrap() {
                    let packet = probe.packet(&from, &to).unwrap();
                    let got = crate::support::verdict(
                        &programmed,
                        &from,
                        &to,
                        &packet,
                        build,
                        network_type,
                    );
                    if got != want {
                        wrong += 1;
                    }
                    actual.insert((from, to), got);
                }
                outcome.probes += 1;
                if wrong > 0 {
                    outcome.failures.push(format!(
                        "{} ({}) step {index}, {}, {network_type}: {wrong} wrong; \
                         expected\n{}\nactual\n{}",
                        case.name,
                        path.file_name().unwrap().to_string_lossy(),
                        probe.label(),
                        print(&probe.expected().unwrap()),
                        print(&actual)
                    ));
                }
            }
        }
        for probe in &step.service_probes {
            let service = case.service(&probe.service).unwrap();
            let backends = service.backends(&changes);
            let target = service.target_port(probe.port, &probe.protocol).unwrap();
            let expected = probe.expected().unwrap();
            for network_type in &crate::support::NETWORK_TYPES {
                let actual: Outcomes = expected
                    .keys()
                    .map(|from| {
                        let packet = probe.packet(from, service).unwrap();
                        let got = crate::support::service_outcome(
                            &programmed,
                            from,
                            &backends,
                            &packet,
                            target,
                            build,
                            network_type,
                        );
                        (from.clone(), got)
                    })
                    .collect();
                outcome.probes += 1;
                if actual != expected {
                    outcome.failures.push(format!(
                        "{} ({}) step {index}, {}, {network_type}: expected\n{}\nactual\n{}",
                        case.name,
                        path.file_name().unwrap().to_string_lossy(),
                        probe.label(),
                        print_column(&probe.service, &expected),
                        print_column(&probe.service, &actual)
                    ));
                }
            }
        }
    }
    outcome
}

#[test]
fn every_case_holds_in_every_rendering_on_every_build() {
    let files = case_files().unwrap();
    assert!(files.len() >= 50, "the cases are there: {}", files.len());
    let mut failures = Vec::new();
    let mut summary = Vec::new();
    for (build_name, build) in BUILDS {
        for mode in MODES {
            let mut passed = 0;
            for path in &files {
                let outcome = run_case(path, mode, build);
                if outcome.failures.is_empty() {
                    passed += 1;
                }
                failures.extend(outcome.failures);
            }
            summary.push(format!(
                "{build_name}, {mode:?}: {passed}/{} cases",
                files.len()
            ));
        }
    }
    eprintln!("{}", summary.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn cases_say_where_they_come_from() {
    let mut upstream = 0;
    for path in case_files().unwrap() {
        let case = read_case(&path).unwrap();
        let own = path.file_name().unwrap().to_string_lossy().starts_with('o');
        assert_eq!(
            case.upstream.is_none(),
            own,
            "{}: u* files are upstream's, o* our own",
            path.display()
        );
        upstream += usize::from(case.upstream.is_some());
    }
    assert_eq!(upstream, 45);
}
