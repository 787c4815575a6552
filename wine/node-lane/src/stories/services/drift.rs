//! HNS drift under a running kube-proxy.exe, with cni-win's node daemon (`cni-win.exe daemon
//! --apply`, a round every 2 s) beside it: judged, as the story's other steps are, by what HNS
//! holds, and by the daemon's metrics. The drift is made by `hns-drift.exe` under the node's
//! Wine, which takes the emulator's lock as kube-proxy's calls do.
//!
//! - **HNS stops, then restarts as current builds do**, every object kept under its ID. HNS
//!   stays stopped until kube-proxy has synced against it (its periodic sync, 30 s apart).
//!   What kube-proxy 1.20.2 then does is asserted as observed: it takes the failed lookup of
//!   its network for the network being gone ("The HNS network … is not present or has changed
//!   since the last sync"), tries to delete every load balancer and remote endpoint it made
//!   (each delete fails, HNS being stopped), forgets them and clears every endpoint's reference
//!   count; on its first sync after HNS is back it dereferences one of those cleared counts
//!   and panics (`syncProxyRules`, `pkg/proxy/winkernel/proxier.go:1124` in 1.20.2; later
//!   releases count references for remote endpoints only). HNS meanwhile holds every load
//!   balancer as it was, each Service still balanced to its pods, and kube-proxy restarted (as
//!   a node's service manager restarts it) programs them all again. The daemon reads nothing
//!   while HNS is stopped and removes nothing across the outage. Newer kube-proxy (1.37 expects
//!   HNS to restore its load balancers: kubernetes#139519) is not what this lane runs.
//! - **Duplicates are injected**: a remote endpoint on a live pod's address in the node's pod
//!   subnet (what a stale lease of another node leaves), and a local endpoint of no one's on
//!   another pod's address (another plugin's, an operator script's). doctor reports both with
//!   the remedy; the daemon with `--apply` removes the remote one and never the foreign one;
//!   kube-proxy keeps running and its load balancers, which name the pods' own endpoints, stay
//!   as they were.
//!
//! The two steps add about a minute and a half to each telling, most of it kube-proxy's
//! periodic syncs (one during the stop, one after the restart) and its restart.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use hns::Guid;
use node_lane::agent_process::AgentProcess;
use serde_json::Value;

use super::balancers::KubeProxyObjects;
use super::kube_proxy::KubeProxy;
use super::{POLL, SYNC_DEADLINE, ServicesNode};
use crate::report::Report;

/// How often the daemon runs a round here: the steps wait for its rounds, not for minutes.
const DAEMON_EVERY: &str = "2s";
/// How long the daemon may take to show a round (its first asks each plugin `--version`, under
/// Wine on a loaded machine).
const DAEMON_DEADLINE: Duration = Duration::from_secs(60);
const DAEMON_POLL: Duration = Duration::from_millis(500);
/// What kube-proxy 1.20 logs at verbosity 3 when a sync ends, whatever it came to (its
/// bounded-frequency runner's line).
const SYNC_ENDED: &str = "sync-runner: ran";
/// What it logs when a sync found its network and goes on to program its Services.
const SYNC_REACHED_SERVICES: &str = "Syncing Policies";
/// What it logs for each Service it programs (not for one whose load balancer it already
/// holds).
const SERVICE_PROGRAMMED: &str = "Policy Successfully applied";

/// The endpoints a step injected: a remote one on a live pod's address, and a foreign local one
/// on another pod's.
struct Injected {
    remote: Guid,
    remote_ip: IpAddr,
    foreign: Guid,
    foreign_ip: IpAddr,
}

impl ServicesNode<'_> {
    /// HNS stops under kube-proxy and the daemon, and restarts with everything it held.
    pub(super) fn hns_outage(&mut self, report: &mut Report) {
        let before = self.kube_proxy_objects();
        let daemon = match self.start_daemon() {
            Ok(daemon) => daemon,
            Err(why) => return report.record("cni-win daemon --apply starts", Err(why)),
        };
        report.record(
            "HNS stopped: kube-proxy syncs against it, the daemon reads nothing",
            self.hns_stop(&daemon),
        );
        let offset = self.proxy_log_len();
        report.record(
            "HNS restarted with every object: its load balancers still reach the pods",
            self.hns_restart(&before),
        );
        report.record(
            "kube-proxy 1.20 panics on its first sync after the restart, HNS keeps its objects",
            self.first_sync_after_restart(offset, &before),
        );
        report.record(
            "kube-proxy restarted after its panic programs its load balancers again",
            self.restart_proxy(&before),
        );
        report.record(
            "cni-win daemon --apply removed nothing across the outage",
            removed_nothing(&daemon),
        );
    }

    /// A stale remote endpoint and a foreign one injected on live pods' addresses: reported,
    /// the remote one repaired, kube-proxy's load balancers left as they were.
    pub(super) fn injected_duplicates(&mut self, report: &mut Report) {
        let before = self.kube_proxy_objects();
        let injected = match self.inject_duplicates() {
            Ok(injected) => injected,
            Err(why) => return report.record("duplicates injected", Err(why)),
        };
        report.record(
            "cni-win doctor reports each duplicate with its remedy",
            self.doctor_reports(&injected),
        );
        report.record(
            "cni-win daemon --apply removes the stale remote endpoint, not the foreign one",
            self.daemon_repairs(&injected),
        );
        report.record(
            "after the repair kube-proxy's Services still reach the pods",
            self.still_reached(&before),
        );
    }

    /// kube-proxy still runs, and HNS holds the load balancers it held before the injection,
    /// each Service still balanced to its pods' own endpoints.
    fn still_reached(
        &mut self,
        before: &Result<KubeProxyObjects, String>,
    ) -> Result<String, String> {
        let proxy = self.proxy.as_mut().ok_or("kube-proxy is not running")?;
        if !proxy.running() {
            return Err(format!("kube-proxy exited: {}", proxy.log_tail()));
        }
        let reached = self.all_reached()?;
        Ok(format!("{reached}; {}", self.unchanged(before, "it")?))
    }

    /// The daemon as a node runs it, after its first round that read HNS.
    fn start_daemon(&self) -> Result<AgentProcess, String> {
        let flags = ["--apply", "--every", DAEMON_EVERY].map(str::to_owned);
        let daemon = AgentProcess::daemon(self.node.daemon_launch(), "daemon.log", &flags)?;
        wait_for_hns_up(&daemon, 1.0)?;
        Ok(daemon)
    }

    fn hns_stop(&mut self, daemon: &AgentProcess) -> Result<String, String> {
        let offset = self.proxy_log_len();
        self.node.tool("hns-drift", &["stop"])?;
        let stopped = Instant::now();
        // The first sync to end may have begun before the stop; the next one cannot have.
        let sync = self
            .wait_for_sync(offset, "sync against the stopped HNS", |syncs| {
                syncs
                    .iter()
                    .find(|lines| lines.iter().any(|line| tells_of_failure(line)))
                    .or(syncs.get(1))
                    .cloned()
            })?
            .ok_or_else(|| self.proxy_ended(offset))?;
        let took = stopped.elapsed().as_secs();
        wait_for_hns_up(daemon, 0.0)?;
        let said: Vec<&str> = sync
            .iter()
            .filter(|line| tells_of_failure(line))
            .map(|line| message(line))
            .take(2)
            .collect();
        Ok(format!(
            "kube-proxy synced {took} s into the stop and logged: \"{}\"; the daemon's round: \
             cniwin_hns_up 0",
            said.join("\", \"")
        ))
    }

    /// Restarts HNS first, whatever the stop step came to (nothing after it must find HNS
    /// stopped); then HNS must hold what it held before the stop, nothing removed by
    /// kube-proxy's failed deletes or by the daemon.
    fn hns_restart(&mut self, before: &Result<KubeProxyObjects, String>) -> Result<String, String> {
        self.node.tool("hns-drift", &["restart"])?;
        let before = before.as_ref().map_err(Clone::clone)?;
        let reached = self.all_reached()?;
        let after = self.kube_proxy_objects()?;
        if after != *before {
            return Err(format!("before the outage {before:?}, after {after:?}"));
        }
        Ok(format!(
            "the same load balancers under the same IDs and kube-proxy's {} endpoints: {reached}",
            after.endpoints.len()
        ))
    }

    /// kube-proxy 1.20, having forgotten its load balancers during the stop, panics on its
    /// first sync that reaches its Services; until a newer lane's kube-proxy comes through it,
    /// that is what is asserted, and HNS, meanwhile, still balancing every Service to its
    /// pods.
    fn first_sync_after_restart(
        &mut self,
        offset: usize,
        before: &Result<KubeProxyObjects, String>,
    ) -> Result<String, String> {
        let synced = self.wait_for_sync(offset, "sync reaching its Services", |syncs| {
            syncs
                .iter()
                .find(|lines| {
                    lines
                        .iter()
                        .any(|line| line.contains(SYNC_REACHED_SERVICES))
                })
                .cloned()
        })?;
        if let Some(sync) = synced {
            let programmed = sync
                .iter()
                .filter(|line| line.contains(SERVICE_PROGRAMMED))
                .count();
            return Err(format!(
                "kube-proxy came through its first sync after the restart, programming {programmed} \
                 Service(s) ({}): 1.20 panicked here, and the story and docs/services.md say so",
                self.all_reached().unwrap_or_else(|why| why)
            ));
        }
        let panic = self.proxy_ended(offset);
        if !panic.starts_with("panic: ") {
            return Err(panic);
        }
        let before = before.as_ref().map_err(Clone::clone)?;
        let reached = self.all_reached()?;
        if self.kube_proxy_objects()? != *before {
            return Err(format!(
                "{panic}; HNS no longer holds what it held before the stop"
            ));
        }
        Ok(format!(
            "{panic}; HNS still holds the same load balancers: {reached}"
        ))
    }

    fn inject_duplicates(&self) -> Result<Injected, String> {
        let pod_ip = |name: &str| {
            self.pods
                .iter()
                .find(|pod| pod.name == name)
                .map(|pod| pod.ip)
                .ok_or_else(|| format!("no pod {name} on the node"))
        };
        let (remote_ip, foreign_ip) = (pod_ip("web-1")?, pod_ip("dns-1")?);
        let inject = |ip: IpAddr, name: &str, remote: bool| -> Result<Guid, String> {
            let ip = ip.to_string();
            let mut args = vec!["endpoint", self.backend.network(), &ip, name];
            if remote {
                args.push("--remote");
            }
            let out = self.node.tool("hns-drift", &args)?;
            out.trim()
                .parse()
                .map_err(|error| format!("hns-drift printed no endpoint ID ({error}): {out}"))
        };
        Ok(Injected {
            remote: inject(remote_ip, "stale-remote", true)?,
            remote_ip,
            foreign: inject(foreign_ip, "foreign-duplicate", false)?,
            foreign_ip,
        })
    }

    /// doctor fails the node, with one drift line for each duplicate naming the injected
    /// endpoint, and nothing else out of place.
    fn doctor_reports(&self, injected: &Injected) -> Result<String, String> {
        let (healthy, report) = self.run_doctor()?;
        if healthy {
            return Err(format!("doctor found the node healthy: {report}"));
        }
        let findings = report["findings"].as_array().cloned().unwrap_or_default();
        let network = self.backend.network();
        let line = |reason: &str, id: Guid, does: &str| -> Result<String, String> {
            let check = format!("network {network:?}: drift {reason}");
            let finding = findings
                .iter()
                .find(|f| {
                    f["check"] == check.as_str()
                        && f["evidence"]
                            .as_str()
                            .is_some_and(|evidence| evidence.contains(&id.to_string()))
                })
                .ok_or_else(|| format!("no {check:?} line naming {id}: {report}"))?;
            let fix = finding["fix"].as_str().unwrap_or_default();
            if finding["severity"] != "fail" || !fix.contains(does) {
                return Err(format!("{check}: {finding}"));
            }
            Ok(format!("{check}: {} — {fix}", finding["evidence"]))
        };
        let remote = line(
            "duplicate-address-remote",
            injected.remote,
            "--apply removes the remote endpoint",
        )?;
        let foreign = line(
            "duplicate-address-foreign",
            injected.foreign,
            "cni-win never removes it",
        )?;
        let others: Vec<&Value> = findings
            .iter()
            .filter(|f| f["severity"] != "pass")
            .filter(|f| {
                !f["check"]
                    .as_str()
                    .is_some_and(|check| check.ends_with("drift duplicate-address-remote"))
                    && !f["check"]
                        .as_str()
                        .is_some_and(|check| check.ends_with("drift duplicate-address-foreign"))
            })
            .collect();
        if !others.is_empty() {
            return Err(format!("doctor found more out of place: {others:?}"));
        }
        Ok(format!("{remote}; {foreign}"))
    }

    fn daemon_repairs(&self, injected: &Injected) -> Result<String, String> {
        let daemon = self.start_daemon()?;
        let network = self.backend.network();
        let drift = |reason: &str| {
            daemon.metric(&format!(
                "cniwin_hns_drift{{reason=\"{reason}\",network=\"{network}\"}}"
            ))
        };
        let repaired = "cniwin_hns_drift_repairs_total{reason=\"duplicate-address-remote\",result=\"removed\"}";
        // A round after the one that repaired: its read no longer holds the remote endpoint.
        daemon.poll(
            DAEMON_DEADLINE,
            DAEMON_POLL,
            "round after the repair",
            || {
                Ok((daemon.metric(repaired) == Some(1.0)
                    && drift("duplicate-address-remote") == Some(0.0)
                    && drift("duplicate-address-foreign") == Some(1.0))
                .then_some(()))
            },
        )?;
        let total = |family: &str| {
            daemon
                .total(family)
                .ok_or_else(|| format!("the daemon serves no metrics: {}", daemon.log_tail()))
        };
        let (repairs, removed) = (
            total("cniwin_hns_drift_repairs_total")?,
            total("cniwin_stale_objects_removed_total")?,
        );
        if repairs != 1.0 || removed != 0.0 {
            return Err(format!(
                "the daemon made {repairs} repair(s) and removed {removed} stale object(s), \
                 where one repair was due"
            ));
        }
        let endpoints = self.node.endpoints()?;
        let holds = |id: Guid| endpoints.iter().any(|endpoint| endpoint.id == id);
        if holds(injected.remote) || !holds(injected.foreign) {
            return Err(format!(
                "HNS holds the remote endpoint {}: {}, the foreign one {}: {}",
                injected.remote,
                holds(injected.remote),
                injected.foreign,
                holds(injected.foreign)
            ));
        }
        Ok(format!(
            "remote endpoint {} on {} removed ({repaired} 1); foreign endpoint {} on {} still \
             there, still reported (duplicate-address-foreign 1); nothing else removed",
            injected.remote, injected.remote_ip, injected.foreign, injected.foreign_ip
        ))
    }

    /// How long kube-proxy's log is now (0 when it is not running: a wait on it then fails).
    fn proxy_log_len(&self) -> usize {
        self.proxy.as_ref().map_or(0, KubeProxy::log_len)
    }

    /// How kube-proxy ended after `offset`: the panic Go reported, or the end of its log.
    fn proxy_ended(&self, offset: usize) -> String {
        self.proxy.as_ref().map_or_else(
            || "kube-proxy is not running".to_owned(),
            |proxy| {
                proxy
                    .panic_since(offset)
                    .unwrap_or_else(|| format!("kube-proxy exited: {}", proxy.log_tail()))
            },
        )
    }

    /// Reads kube-proxy's log from `offset` until `found` picks what it waits for among the
    /// syncs that ended since (`Some`), or kube-proxy exits (`None`); fails at the deadline.
    /// Never reads HNS, which may be stopped.
    fn wait_for_sync<T>(
        &mut self,
        offset: usize,
        what: &str,
        mut found: impl FnMut(&[Vec<String>]) -> Option<T>,
    ) -> Result<Option<T>, String> {
        let deadline = Instant::now() + SYNC_DEADLINE;
        loop {
            let proxy = self.proxy.as_mut().ok_or("kube-proxy is not running")?;
            let syncs = syncs(proxy.log_since(offset));
            if let Some(value) = found(&syncs) {
                return Ok(Some(value));
            }
            if !proxy.running() {
                return Ok(None);
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "no {what} of kube-proxy's within {} s: {}",
                    SYNC_DEADLINE.as_secs(),
                    proxy.log_tail()
                ));
            }
            std::thread::sleep(POLL);
        }
    }
}

/// Waits for a round of the daemon that found HNS up (1) or could not read it (0).
fn wait_for_hns_up(daemon: &AgentProcess, up: f64) -> Result<(), String> {
    let what = if up == 1.0 {
        "round that read HNS"
    } else {
        "round that could not read HNS"
    };
    daemon.poll(DAEMON_DEADLINE, DAEMON_POLL, what, || {
        Ok((daemon.metric("cniwin_hns_up") == Some(up)).then_some(()))
    })
}

/// The daemon, once HNS is back, has removed nothing in any of its rounds, repaired nothing,
/// and doctor's checks in its round all pass.
fn removed_nothing(daemon: &AgentProcess) -> Result<String, String> {
    wait_for_hns_up(daemon, 1.0)?;
    let total = |family: &str| {
        daemon
            .total(family)
            .ok_or_else(|| format!("the daemon serves no metrics: {}", daemon.log_tail()))
    };
    let removed = total("cniwin_stale_objects_removed_total")?;
    let repaired = total("cniwin_hns_drift_repairs_total")?;
    let failing = total("cniwin_doctor_check_failing")?;
    if removed != 0.0 || repaired != 0.0 || failing != 0.0 {
        return Err(format!(
            "{removed} stale object(s) removed, {repaired} drift repair(s), {failing} of \
             doctor's checks failing"
        ));
    }
    Ok(
        "HNS read again (cniwin_hns_up 1): 0 stale objects removed, 0 drift repairs, \
        every one of doctor's checks passing"
            .to_owned(),
    )
}

/// `lines` split after each line that ends a sync: each sync that ended, with what was logged
/// before it (the first with whatever came before it after the offset).
fn syncs(lines: Vec<String>) -> Vec<Vec<String>> {
    let mut syncs = Vec::new();
    let mut current = Vec::new();
    for line in lines {
        let ended = line.contains(SYNC_ENDED);
        current.push(line);
        if ended {
            syncs.push(std::mem::take(&mut current));
        }
    }
    syncs
}

/// Whether kube-proxy's `line` tells of a call that failed: an error line, or 1.20's word for
/// its network's lookup failing.
fn tells_of_failure(line: &str) -> bool {
    line.starts_with('E') || line.contains("is not present or has changed")
}

/// A klog line without its header (severity, time, thread, source).
fn message(line: &str) -> &str {
    line.split_once("] ").map_or(line, |(_, message)| message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|line| (*line).to_owned()).collect()
    }

    #[test]
    fn the_log_is_cut_into_syncs_after_each_end() {
        let ended = "I1128 21:20:11.856409    1384 bounded_frequency_runner.go:296] sync-runner: ran, next possible in 1s, periodic in 30s";
        let failed = "E1128 21:20:11.841793    1384 hnsV2.go:41] hcnEnumerateNetworks failed";
        let syncing = "I1128 21:20:41.933941    1384 proxier.go:967] Syncing Policies";
        let cut = syncs(lines(&[failed, ended, syncing, ended, syncing]));
        assert_eq!(cut, [lines(&[failed, ended]), lines(&[syncing, ended])]);
        assert!(tells_of_failure(failed) && !tells_of_failure(syncing));
        assert_eq!(message(failed), "hcnEnumerateNetworks failed");
    }
}
