//! The cases of our own that need a real API server, told after the tables over the bed they
//! left: the agent killed and started again (no verdict changes meanwhile, nothing is
//! written), and the API server stopped (the rules stay, nothing is written, the agent says
//! so) and started again (the watches resume, a new policy is enforced).

use std::time::{Duration, Instant};

use netpol_truth_tables::{Case, Step, pods};
use node_lane::agent_process::AgentProcess;

use super::bed::Bed;
use super::{BUILDS, CONVERGE_DEADLINE, STILL};
use crate::report::Report;

/// The case the restart and the outage start from: ingress and egress rules, pod and
/// namespace selectors.
const STANDING_CASE: &str = "u27-ingress-and-egress.yaml";
/// The case put into the API once it is back from the outage: the agent must program it.
const AFTER_OUTAGE_CASE: &str = "u01-default-deny-ingress.yaml";
/// How long the agent's watches may take to resume once the API server answers again: its
/// watches back off up to 30 s between tries, and a restarted API server refuses requests
/// for a few seconds until its authoriser has loaded RBAC.
const RESUME_DEADLINE: Duration = Duration::from_secs(90);

/// The agent's metrics the cases read: whether its watches reach the API server, whether it
/// has synced, and how many endpoints it has programmed.
const METRICS_API_UP: &str = "cniwin_netpol_api_up";
const METRICS_SYNCED: &str = "cniwin_netpol_synced";
const METRICS_PROGRAMMED: &str = "cniwin_netpol_endpoints{state=\"programmed\"}";

/// Tells the cases over `bed`, starting from `agent`, the tables' agent; one row each.
pub fn run(bed: &mut Bed<'_>, agent: AgentProcess, cases: &[(String, Case)], report: &mut Report) {
    let Some((_, standing)) = cases.iter().find(|(file, _)| file == STANDING_CASE) else {
        return report.record("own cases", Err(format!("{STANDING_CASE} is missing")));
    };
    let Some(standing_step) = standing.steps.last() else {
        return;
    };
    let restarted = restart_without_window(bed, agent, standing, standing_step);
    let agent = match restarted {
        Ok((agent, outcome)) => {
            report.record("agent restarted: no window, no write", Ok(outcome));
            agent
        }
        Err(why) => {
            return report.record("agent restarted: no window, no write", Err(why));
        }
    };
    report.record(
        "API server down: rules kept, no write, api_up 0",
        api_server_down(bed, &agent, standing, standing_step),
    );
    let Some((_, after)) = cases.iter().find(|(file, _)| file == AFTER_OUTAGE_CASE) else {
        return report.record(
            "upstream cases",
            Err(format!("{AFTER_OUTAGE_CASE} is missing")),
        );
    };
    report.record(
        "API server back: watches resume, a new policy enforced",
        api_server_back(bed, &agent, after),
    );
}

/// The agent killed and started again over a node it programmed: every verdict stays the
/// case's while no agent runs and while the new one starts, and the new one writes nothing.
fn restart_without_window(
    bed: &mut Bed<'_>,
    agent: AgentProcess,
    case: &Case,
    step: &Step,
) -> Result<(AgentProcess, String), String> {
    bed.standing(&agent, case, step)?;
    drop(agent);
    let stopped = Instant::now();
    let mut samples = bed.sample(case, step)?;
    let agent = bed.start_agent()?;
    agent.poll(
        CONVERGE_DEADLINE,
        Duration::from_millis(20),
        "sync of the new agent",
        || {
            samples += bed.sample(case, step)?;
            let synced = agent.metric(METRICS_SYNCED) == Some(1.0)
                && agent.metric(METRICS_PROGRAMMED) == Some(pods().len() as f64);
            Ok(synced.then_some(()))
        },
    )?;
    let synced_after = stopped.elapsed();
    std::thread::sleep(STILL);
    samples += bed.sample(case, step)?;
    bed.unwritten("the restarted agent", &agent)?;
    Ok((
        agent,
        format!(
            "synced {} ms after the kill; {samples} matrices sampled meanwhile, all the case's; \
             0 HNS writes",
            synced_after.as_millis()
        ),
    ))
}

/// The API server stopped: the agent reports it (`cniwin_netpol_api_up` 0), every verdict
/// stays and nothing is written.
fn api_server_down(
    bed: &mut Bed<'_>,
    agent: &AgentProcess,
    case: &Case,
    step: &Step,
) -> Result<String, String> {
    bed.standing(agent, case, step)?;
    let lane = bed.lane();
    let during = lane.control_plane.api_server_down(|| {
        let took = Instant::now();
        let mut samples = 0;
        agent.poll(
            CONVERGE_DEADLINE,
            Duration::from_millis(100),
            "cniwin_netpol_api_up 0 after the API server stopped",
            || {
                samples += bed.sample(case, step)?;
                Ok((agent.metric(METRICS_API_UP) == Some(0.0)).then_some(()))
            },
        )?;
        let noticed = took.elapsed();
        // The agent's watches retry meanwhile; HNS keeps what it holds.
        std::thread::sleep(Duration::from_secs(3));
        samples += bed.sample(case, step)?;
        Ok::<_, String>((noticed, samples))
    })?;
    let (noticed, samples) = during?;
    bed.unwritten("while the API server was down, the agent", agent)?;
    Ok(format!(
        "api_up 0 {} ms after the stop, {samples} matrices sampled while down, all the case's, \
         0 HNS writes",
        noticed.as_millis(),
    ))
}

/// After the outage: the agent's watches resume (`cniwin_netpol_api_up` 1 again) and what is
/// put into the API then is programmed.
fn api_server_back(bed: &mut Bed<'_>, agent: &AgentProcess, case: &Case) -> Result<String, String> {
    let (_, build) = BUILDS[1];
    let back = Instant::now();
    agent.poll(
        RESUME_DEADLINE,
        Duration::from_millis(250),
        "cniwin_netpol_api_up 1 after the API server came back",
        || Ok((agent.metric(METRICS_API_UP) == Some(1.0)).then_some(())),
    )?;
    let resumed = back.elapsed();
    for step in &case.steps {
        bed.put(case, step)?;
        bed.converged(agent, case, step, build, true)?;
    }
    Ok(format!(
        "api_up 1 {} ms after the API server was ready; {} enforced after it",
        resumed.as_millis(),
        case.name
    ))
}
