//! The agent's part of each daemon round: the same pass the programmer makes after a change,
//! over a fresh read of HNS, so whatever drifted (a rule removed or changed behind the
//! agent's back, an endpoint HNS restored without its ACLs) is put back within one round;
//! and the networks of the round's read, so a conflist edited since (its snapshot path, its
//! own ACLs) is followed.

use std::sync::Arc;

use prometheus_client::registry::Registry;

use super::{NotProgrammed, Shared, network_config};
use crate::daemon::{Ran, Round, Task};

/// The agent's daemon task (see [`super::Agent::task`]).
#[derive(Debug)]
pub struct NetworkPolicyTask {
    shared: Arc<Shared>,
}

impl NetworkPolicyTask {
    pub(super) fn new(shared: Arc<Shared>) -> NetworkPolicyTask {
        NetworkPolicyTask { shared }
    }
}

impl Task for NetworkPolicyTask {
    fn register(&mut self, registry: &mut Registry) {
        self.shared.metrics.register(registry);
    }

    fn run(&mut self, round: &Round<'_>) -> Ran {
        let mut programmer = self.shared.lock_programmer();
        if round.node.config.is_ok() {
            programmer.networks = round.node.networks().iter().map(network_config).collect();
        }
        let changed_hns = match programmer.pass(&self.shared, true) {
            Ok(pass) => pass.endpoint_writes + pass.network_writes > 0,
            Err(NotProgrammed::NotSynced | NotProgrammed::Failed(_)) => false,
        };
        Ran { changed_hns }
    }

    fn publish(&mut self) {
        let state = self.shared.lock_state();
        self.shared
            .metrics
            .record_api(state.api_up(), state.synced());
    }
}
