//! The agent's part of each daemon round: the programmer's pass over the round's read, so
//! whatever drifted (a rule removed or changed behind the agent's back, an endpoint HNS
//! restored without its ACLs) is put back within one round, at no HCN call beyond the writes;
//! and the round's networks, so a conflist edited since (its snapshot path, its own ACLs) is
//! followed.

use std::sync::Arc;

use prometheus_client::registry::Registry;

use super::Shared;
use super::programmer::{self, NotProgrammed, Pass, RoundRead};
use crate::daemon::{Ran, Round, Task};
use crate::metrics::Metrics;

/// The agent's daemon task (see [`super::Agent::task`]).
#[derive(Debug)]
pub struct NetworkPolicyTask {
    shared: Arc<Shared>,
    /// The pass over the last round's read, until it is published.
    last: Option<Result<Pass, NotProgrammed>>,
}

impl NetworkPolicyTask {
    pub(super) fn new(shared: Arc<Shared>) -> NetworkPolicyTask {
        NetworkPolicyTask { shared, last: None }
    }
}

impl Task for NetworkPolicyTask {
    fn register(&mut self, registry: &mut Registry) {
        self.shared.metrics.register(registry);
    }

    fn publish_between_rounds(&mut self, metrics: &Arc<Metrics>) {
        // Only the first daemon's: an agent has one task in one daemon.
        let _ = self.shared.daemon_metrics.set(Arc::clone(metrics));
    }

    fn run(&mut self, round: &Round<'_>) -> Ran {
        // "Cannot read" is not "nothing there": without HNS's read the programmer keeps what it
        // knows, and repairs nothing this round.
        let (Some(client), Ok(hns)) = (round.client, &round.node.hns) else {
            return Ran::default();
        };
        let networks = round.node.config.is_ok().then(|| {
            round
                .node
                .networks()
                .iter()
                .map(|network| network.config.policy().clone())
                .collect()
        });
        let outcome = self.shared.repair(RoundRead {
            client: Arc::clone(client),
            hns: hns.clone(),
            networks,
        });
        let changed_hns = match &outcome {
            Some(Ok(pass)) => pass.wrote(),
            None => true,
            Some(Err(_)) => false,
        };
        if let Some(outcome) = &outcome {
            programmer::log_outcome(outcome);
        }
        self.last = outcome;
        Ran { changed_hns }
    }

    fn publish(&mut self) {
        let api = self.shared.lock_state().feed.api();
        match self.last.take() {
            Some(outcome) => programmer::record(&self.shared.metrics, api, &outcome),
            None => self.shared.metrics.record_api(api),
        }
    }
}
