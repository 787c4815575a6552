//! The truth tables: every case of `netpol-truth-tables` that Debian's 1.20 API server takes,
//! step by step, judged under each Windows build's semantics.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::networking::v1::NetworkPolicyPort;
use netpol_truth_tables::Case;
use node_lane::agent_process::AgentProcess;

use super::bed::Bed;
use super::{BUILDS, NAME};

/// Every case file with its case.
pub fn load_cases() -> Result<Vec<(String, Case)>, String> {
    let files = netpol_truth_tables::case_files()?;
    let mut cases = Vec::new();
    for path in files {
        let name = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        cases.push((name, netpol_truth_tables::read_case(&path)?));
    }
    Ok(cases)
}

/// Why a case cannot go through Debian's 1.20 API server, if it cannot.
fn skip_reason(case: &Case) -> Option<&'static str> {
    let has_end_port = |ports: Option<&Vec<NetworkPolicyPort>>| {
        ports
            .into_iter()
            .flatten()
            .any(|port| port.end_port.is_some())
    };
    let uses_end_port = case
        .steps
        .iter()
        .flat_map(|step| &step.policies)
        .any(|policy| {
            let spec = policy.spec.as_ref();
            let ingress = spec.and_then(|spec| spec.ingress.as_ref());
            let egress = spec.and_then(|spec| spec.egress.as_ref());
            ingress
                .into_iter()
                .flatten()
                .any(|rule| has_end_port(rule.ports.as_ref()))
                || egress
                    .into_iter()
                    .flatten()
                    .any(|rule| has_end_port(rule.ports.as_ref()))
        });
    uses_end_port.then_some("endPort (1.21+), which the 1.20 API server does not know")
}

/// How the cases went, per build.
#[derive(Default)]
pub struct Tally {
    run: usize,
    passed: BTreeMap<&'static str, usize>,
    skipped: Vec<String>,
    failures: Vec<String>,
}

impl Tally {
    pub fn outcome(&self) -> Result<String, String> {
        let per_build: Vec<String> = BUILDS
            .iter()
            .map(|(build, _)| {
                let passed = self.passed.get(build).copied().unwrap_or(0);
                format!("{build} {passed}/{}", self.run)
            })
            .collect();
        let summary = format!(
            "{} ({} skipped: {})",
            per_build.join(", "),
            self.skipped.len(),
            self.skipped.join("; ")
        );
        if self.failures.is_empty() && self.run > 0 {
            Ok(summary)
        } else {
            let shown: Vec<&String> = self.failures.iter().take(3).collect();
            Err(format!(
                "{summary}; {} failure(s), the first:\n{}",
                self.failures.len(),
                shown
                    .iter()
                    .map(|failure| failure.as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            ))
        }
    }
}

/// Every case, step by step, judged on both builds.
pub fn run(bed: &mut Bed<'_>, agent: &AgentProcess, cases: &[(String, Case)]) -> Tally {
    let mut tally = Tally::default();
    'cases: for (file, case) in cases {
        if let Some(reason) = skip_reason(case) {
            tally.skipped.push(format!("{file}, {reason}"));
            continue;
        }
        let mut failed: BTreeSet<&str> = BTreeSet::new();
        for (index, step) in case.steps.iter().enumerate() {
            if let Err(why) = bed.put(case, step) {
                // The API server's validation (kubectl quotes it): the agent's refusal of
                // what it refuses is tested below the API server.
                if index == 0 && why.contains("The NetworkPolicy ") && why.contains(" is invalid: ")
                {
                    let refused = why
                        .split(" ended with exit status 1: ")
                        .last()
                        .unwrap_or(&why);
                    tally
                        .skipped
                        .push(format!("{file}, the API server refuses it: {refused}"));
                    continue 'cases;
                }
                eprintln!("node-lane: {NAME}: {file} step {index}: {why}");
                tally.failures.push(format!("{file} step {index}: {why}"));
                failed.extend(BUILDS.map(|(build, _)| build));
                continue;
            }
            for (at, (build, windows_build)) in BUILDS.into_iter().enumerate() {
                // The second build judges the rules the first saw settle.
                let settle = at == 0;
                if let Err(why) = bed.converged(agent, case, step, windows_build, settle) {
                    eprintln!("node-lane: {NAME}: {file} step {index}, {build}: {why}");
                    tally
                        .failures
                        .push(format!("{file} step {index}, {build}: {why}"));
                    failed.insert(build);
                }
            }
        }
        tally.run += 1;
        for (build, _) in BUILDS {
            if !failed.contains(build) {
                *tally.passed.entry(build).or_default() += 1;
            }
        }
    }
    tally
}
