//! One change timed: from just before its API request to the emulator's verdict on a packet
//! showing the result, asked after each policy write (the write counters polled every 2 ms);
//! then, once the agent is quiet, the policy writes it cost.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use hns_emulator::Engine;
use hns_emulator::acl::{Packet, PolicyWrites, Verdict};

/// How often the emulator's state is asked while a change is in flight.
const POLL: Duration = Duration::from_millis(2);
/// The agent is quiet when no policy write has come for this long (its debounce is 20 ms).
const QUIET: Duration = Duration::from_millis(500);
/// A change that does not reach HNS within this long is a failure, not a figure.
const DEADLINE: Duration = Duration::from_secs(60);

/// What one change cost.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub latency: Duration,
    pub writes: PolicyWrites,
}

/// The emulator's verdict on a TCP connection's first packet from `from` to `to`:`port`.
pub fn verdict(
    engine: &Engine,
    from: Ipv4Addr,
    to: Ipv4Addr,
    port: u16,
) -> Result<Verdict, String> {
    engine
        .check_packet(&Packet::tcp(from.into(), to.into(), port))
        .map_err(|failure| failure.to_string())?
        .verdict()
        .map_err(|undocumented| undocumented.to_string())
}

/// Waits until the agent has made no policy write for [`QUIET`]; what it wrote since the
/// last reset.
pub fn quiet(engine: &Engine) -> Result<PolicyWrites, String> {
    let deadline = Instant::now() + DEADLINE;
    let mut last = engine.policy_writes().map_err(|f| f.to_string())?;
    let mut since = Instant::now();
    loop {
        std::thread::sleep(QUIET / 10);
        let now = engine.policy_writes().map_err(|f| f.to_string())?;
        if now != last {
            (last, since) = (now, Instant::now());
        } else if since.elapsed() >= QUIET {
            return Ok(now);
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the agent still writes after {} s",
                DEADLINE.as_secs()
            ));
        }
    }
}

/// Times `change` (the API request) until `holds` says HNS holds its result, on a quiet agent
/// with the write counters reset.
pub fn time(
    engine: &Engine,
    change: impl FnOnce() -> Result<(), String>,
    mut holds: impl FnMut() -> Result<bool, String>,
) -> Result<Sample, String> {
    quiet(engine)?;
    engine.reset_policy_writes().map_err(|f| f.to_string())?;
    let started = Instant::now();
    change()?;
    // HNS can hold the result only once a policy write has come: the packet is judged again
    // only after one, so the polling (a read of host.json) costs the agent next to nothing.
    let mut judged = None;
    loop {
        let writes = engine.policy_writes().map_err(|f| f.to_string())?;
        if judged != Some(writes) {
            if holds()? {
                break;
            }
            judged = Some(writes);
        }
        if started.elapsed() >= DEADLINE {
            return Err(format!(
                "HNS does not hold the change after {} s",
                DEADLINE.as_secs()
            ));
        }
        std::thread::sleep(POLL);
    }
    let latency = started.elapsed();
    Ok(Sample {
        latency,
        writes: quiet(engine)?,
    })
}

/// The nearest-rank `q` quantile of `sorted` (not empty).
pub fn quantile<T: Copy>(sorted: &[T], q: f64) -> T {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// A latency histogram: each bucket's bound (`le`) and its cumulative count.
pub type Histogram = Vec<(f64, f64)>;

/// The agent's own latency histogram, from its metrics.
pub fn histogram(metrics: &str) -> Histogram {
    const BUCKET: &str = "cniwin_netpol_programming_latency_seconds_bucket{le=\"";
    metrics
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(BUCKET)?;
            let (le, count) = rest.split_once("\"} ")?;
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((le, count.trim().parse().ok()?))
        })
        .collect()
}

/// The bucket bound holding the `q` quantile of what was observed between two scrapes of
/// the histogram; `None` when nothing was.
pub fn histogram_quantile(before: &Histogram, after: &Histogram, q: f64) -> Option<f64> {
    let observed: Vec<(f64, f64)> = after
        .iter()
        .map(|&(le, count)| {
            let earlier = before
                .iter()
                .find(|(b, _)| *b == le)
                .map_or(0.0, |(_, c)| *c);
            (le, count - earlier)
        })
        .collect();
    let total = observed.last()?.1;
    (total > 0.0)
        .then(|| observed.iter().find(|(_, count)| *count >= q * total))
        .flatten()
        .map(|(le, _)| *le)
}
