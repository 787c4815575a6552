//! NetworkPolicy's truth tables through the real API server: every case of
//! `netpol-truth-tables` put into kube-apiserver as a cluster operator would (namespaces,
//! pods bound to this node with their addresses, the policies of each step), cni-win's agent
//! (`cni-win daemon --network-policy`, the Linux build: this is about what it
//! programs, the Wine story proves the `.exe` against the same server) watching it as
//! deploy/rbac.yaml's ServiceAccount, and every (from, to, port, protocol) verdict the
//! emulator computes from the rules it programmed compared with the case's matrix, under
//! Windows Server 2022's and 2025's semantics (a verdict resting on what HNS does not document
//! fails), with network IP sets (HNS 15.0, a Windows Server 2022 host's).
//!
//! Then two cases of our own that need a real API server (`restart_and_outage`): the agent
//! killed and started again (no verdict ever changes, nothing is written), and the API server
//! stopped (the rules stay, nothing is written, the agent says so).
//!
//! All nine pods are on the node, so every connection passes the sender's egress rules and
//! the receiver's ingress rules. Pods have no kubelet: the story writes their `status`, and
//! creates the HNS endpoints first, as ADD does before the kubelet reports an address (`bed`).
//! The cases' namespaces are the story's own; it deletes its pods and policies when it ends.

mod bed;
mod restart_and_outage;
mod tables;

use std::time::Duration;

use hns::{HnsVersion, WindowsBuild, WindowsRelease};
use netpol_truth_tables::Case;

use crate::lane::Lane;
use crate::report::Report;
use bed::Bed;

/// The story's directory under the lane's scratch, and its progress lines' prefix.
const NAME: &str = "netpol-tables";
/// How long a step's verdicts may take to become the case's (the agent reacts in tens of
/// milliseconds; kubectl and the watches add the rest).
const CONVERGE_DEADLINE: Duration = Duration::from_secs(30);
/// How long verdicts that match must stay so before the step counts: longer than the
/// agent's longest debounce (200 ms), so a match on the way to another state is not taken.
const STILL: Duration = Duration::from_millis(400);

/// The Windows builds whose semantics every step is judged under.
const BUILDS: [(&str, WindowsBuild); 2] = [
    ("Windows Server 2022", WindowsBuild::SERVER_2022),
    ("Windows Server 2025", WindowsBuild::SERVER_2025),
];

/// The modes the agent picks by the host's HNS version that run here: network IP sets, what
/// Windows Server 2022 and later hosts get. Rules listing their peers inline (HNS before
/// 13.0) pass the same tables below the API server (`cni-win-netpol`'s tests); through it they
/// would double this story's five minutes.
const MODES: [(&str, HnsVersion); 1] = [("IP sets (HNS 15.0)", WindowsRelease::SERVER_2022.hns)];

/// Runs the truth tables and the cases of our own, recording one row per mode and case, then
/// takes what it put into the API out again.
pub fn run(lane: &Lane, report: &mut Report) {
    let cases = match tables::load_cases() {
        Ok(cases) => cases,
        Err(why) => return report.record("the cases", Err(why)),
    };
    let mut bed = match Bed::set_up(lane) {
        Ok(bed) => bed,
        Err(why) => return report.record("set-up", Err(why)),
    };
    tell(&mut bed, &cases, report);
    if let Err(why) = bed.tear_down() {
        report.record("tear-down", Err(why));
    }
}

/// The tables under each mode's agent, then the cases of our own from the last one.
fn tell(bed: &mut Bed<'_>, cases: &[(String, Case)], report: &mut Report) {
    let mut agent = None;
    for (mode, version) in MODES {
        agent = None;
        let started = bed
            .set_hns_version(version)
            .and_then(|()| bed.start_agent());
        match started {
            Ok(started) => {
                let tally = tables::run(bed, &started, cases);
                report.record(&format!("truth tables, {mode}"), tally.outcome());
                agent = Some(started);
            }
            Err(why) => report.record(&format!("the agent starts, {mode}"), Err(why)),
        }
    }
    if let Some(agent) = agent {
        restart_and_outage::run(bed, agent, cases, report);
    }
}
