//! The truth tables: every case of `tests/cases/` (see its README) translated, written to an
//! HNS that starts empty and is carried from step to step (so each step is also a
//! convergence from the previous one), and every (from, to, port, protocol) verdict the
//! emulator computes from the programmed rules compared with the case's matrix, for both
//! renderings (inline addresses, IP sets) and both Windows Server 2022 (no match passes) and
//! 2025 (no match is dropped).

#![cfg(not(windows))]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use cni_win_netpol::Mode;
use hns::WindowsBuild;
use hns_emulator::acl::{Packet, Verdict};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use serde::Deserialize;

use crate::support::{Changes, ExtraPort};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Case {
    name: String,
    /// The upstream `It` the case is written from; `None` for our own.
    upstream: Option<String>,
    #[serde(default)]
    dual_stack: bool,
    steps: Vec<Step>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Step {
    policies: Vec<NetworkPolicy>,
    #[serde(default)]
    namespace_labels: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(default)]
    pod_labels: BTreeMap<String, BTreeMap<String, String>>,
    #[serde(default)]
    named_ports: BTreeMap<String, Vec<ExtraPort>>,
    probes: Vec<Probe>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Probe {
    port: u16,
    protocol: String,
    #[serde(default)]
    family: Option<String>,
    reachability: String,
}

const BUILDS: [(&str, WindowsBuild); 2] = [
    ("Windows Server 2022", WindowsBuild::SERVER_2022),
    ("Windows Server 2025", WindowsBuild::SERVER_2025),
];

const MODES: [Mode; 2] = [Mode::Inline, Mode::IpSets];

fn case_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    files
}

/// The matrix as the case writes it: rows from, columns to; `.` allowed, `X` denied, `-`
/// (a pod to itself) not probed, as upstream ignores loopback (kubernetes#95879).
fn expected(matrix: &str) -> BTreeMap<(String, String), Option<Verdict>> {
    let pods = crate::support::pods();
    let mut lines = matrix.lines().map(str::split_whitespace);
    let header: Vec<&str> = lines.next().unwrap().skip(1).collect();
    assert_eq!(header, pods, "matrix header");
    let mut cells = BTreeMap::new();
    for (row, mut line) in lines.enumerate() {
        let from = line.next().unwrap();
        assert_eq!(from, pods[row], "row {row}");
        let marks: Vec<&str> = line.collect();
        assert_eq!(marks.len(), pods.len(), "row {from}");
        for (to, mark) in pods.iter().zip(marks) {
            let verdict = match mark {
                "." => Some(Verdict::Allowed),
                "X" => Some(Verdict::Denied),
                "-" if from == to => None,
                other => panic!("row {from}: {other:?} is not ., X or - (the diagonal)"),
            };
            cells.insert((from.to_owned(), to.clone()), verdict);
        }
    }
    assert_eq!(cells.len(), pods.len() * pods.len(), "a full matrix");
    cells
}

/// Upstream's printout of a matrix, for a failure message.
fn print(cells: &BTreeMap<(String, String), Verdict>) -> String {
    let pods = crate::support::pods();
    let mut out = format!("-   {}\n", pods.join(" "));
    for from in &pods {
        out.push_str(from);
        for to in &pods {
            let mark = match cells.get(&(from.clone(), to.clone())) {
                None => "-",
                Some(Verdict::Allowed) => ".",
                Some(Verdict::Denied) => "X",
            };
            out.push_str(&format!(" {mark:<3}"));
        }
        out.push('\n');
    }
    out
}

struct Outcome {
    probes: usize,
    failures: Vec<String>,
}

fn run_case(path: &Path, mode: Mode, build: WindowsBuild) -> Outcome {
    let text = fs::read_to_string(path).unwrap();
    let case: Case =
        serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut programmed = crate::support::fresh_hns();
    let mut outcome = Outcome {
        probes: 0,
        failures: Vec::new(),
    };
    for (index, step) in case.steps.iter().enumerate() {
        let changes = Changes {
            dual_stack: case.dual_stack,
            namespace_labels: step.namespace_labels.clone(),
            pod_labels: step.pod_labels.clone(),
            named_ports: step.named_ports.clone(),
        };
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
            let v6 = probe.family.as_deref() == Some("IPv6");
            let protocol = match probe.protocol.as_str() {
                "TCP" => 6,
                "UDP" => 17,
                other => panic!("{}: protocol {other}", case.name),
            };
            let mut actual = BTreeMap::new();
            let mut wrong = 0;
            for ((from, to), want) in expected(&probe.reachability) {
                let Some(want) = want else { continue };
                let packet = Packet::with_ports(
                    crate::support::pod_ip(&from, v6),
                    crate::support::pod_ip(&to, v6),
                    protocol,
                    probe.port,
                );
                let got = crate::support::verdict(&programmed, &from, &to, &packet, build);
                if got != want {
                    wrong += 1;
                }
                actual.insert((from, to), got);
            }
            outcome.probes += 1;
            if wrong > 0 {
                outcome.failures.push(format!(
                    "{} ({}) step {index}, {} {} {}: {wrong} wrong; expected\n{}\nactual\n{}",
                    case.name,
                    path.file_name().unwrap().to_string_lossy(),
                    probe.protocol,
                    probe.port,
                    probe.family.as_deref().unwrap_or("IPv4"),
                    probe.reachability,
                    print(&actual)
                ));
            }
        }
    }
    outcome
}

#[test]
fn every_case_holds_in_every_rendering_on_every_build() {
    let files = case_files();
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
    for path in case_files() {
        let case: Case = serde_saphyr::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
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
