//! HNS service stops, restarts and host reboots, as the field sees them.
//!
//! - **Stop** (the HNS service is stopped, or restarting and not back yet): every call fails
//!   with `ERROR_SERVICE_NOT_ACTIVE` (0x80070426, "The service has not been started.",
//!   docker/for-win#8226) until the service restarts, and nothing is lost yet. Callers that
//!   take those failures for objects being absent act on a wrong picture: kube-proxy reset its
//!   load balancers' state and later failed to re-create them (kubernetes#139519, fixed by
//!   kubernetes#139503).
//! - **Restart** (the HNS service stops and starts; Windows updates, crashes, `Restart-Service
//!   hns`): every endpoint is gone, so pods lose their network until something re-creates
//!   their endpoints; networks, namespaces and load balancers come back from HNS's store
//!   (kube-proxy then finds its load balancers still there, and re-creating one fails with
//!   `ERROR_ALREADY_EXISTS` 0xb7: calico#5164, k8s#139519, W-C#19). The load balancers keep
//!   naming the endpoints they had, which no longer exist.
//! - **Reboot**: as a restart, and also every namespace (compartments live only as long as
//!   the boot) and every network with the `EnableNonPersistent` flag (8), which flanneld
//!   and Antrea set so that a stale network does not outlive the node's configuration.
//!   Compartment numbers start again at 2.
//!
//! Each runs under the engine's lock like a call, but is not an HCN call: it is not counted
//! and ignores injected faults and latency. A restart or a reboot ends a stop.

use hns::hresult::HResult;
use hns::raw::Function;

use super::engine::State;
use super::failure::HcnFailure;
use super::host::first_namespace_id;
use super::state::NAMESPACE_ENDPOINTS;
use super::store::{self, ObjectDir};
use hns::schema::{HostComputeEndpoint, HostComputeNetwork, NetworkFlags};

/// Which outage to simulate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outage {
    /// The HNS service stops: every call fails until a restart (or a reboot).
    Stop,
    /// The HNS service restarts: endpoints are dropped.
    Restart,
    /// The host reboots: endpoints, namespaces and non-persistent networks are dropped.
    Reboot,
}

/// What an outage dropped, for the caller's log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Endpoints removed, which HNS loses on restart and reboot.
    pub endpoints: usize,
    /// Namespaces removed, which HNS loses on reboot only.
    pub namespaces: usize,
    /// Networks removed: `EnableNonPersistent` ones, lost on reboot.
    pub networks: usize,
}

/// `ERROR_SERVICE_NOT_ACTIVE` as HRESULT: what a call to a stopped HNS returns.
const SERVICE_NOT_ACTIVE: HResult = HResult(0x8007_0426);

/// The failure of a call of `function` while HNS is stopped.
pub(super) fn not_running(function: Function) -> HcnFailure {
    HcnFailure::new(
        SERVICE_NOT_ACTIVE,
        format!(
            "(the service has not been started: {} while HNS is stopped)",
            function.name()
        ),
    )
}

impl State<'_> {
    /// Applies `outage` to the host.
    pub(super) fn suffer(&mut self, outage: Outage) -> Result<Dropped, HcnFailure> {
        let mut dropped = Dropped::default();
        self.host.stopped = outage == Outage::Stop;
        if outage == Outage::Stop {
            return Ok(dropped);
        }
        for id in self.all_ids(ObjectDir::Endpoints)? {
            // Read directly: an endpoint whose network vanished mid-delete goes too.
            if let Some(endpoint) =
                self.read_object::<HostComputeEndpoint>(ObjectDir::Endpoints, id)?
            {
                self.remove_endpoint_files(&endpoint)?;
                dropped.endpoints += 1;
            }
        }
        if outage == Outage::Reboot {
            for id in self.all_ids(ObjectDir::Networks)? {
                let network: Option<HostComputeNetwork> = self.load_network(id)?;
                if network.is_some_and(|network| {
                    network.flags.contains(NetworkFlags::ENABLE_NON_PERSISTENT)
                }) {
                    self.delete_network(id)?;
                    dropped.networks += 1;
                }
            }
            for id in self.all_ids(ObjectDir::Namespaces)? {
                self.remove_object(ObjectDir::Namespaces, id)?;
                store::remove_dir(&self.index_path(&[NAMESPACE_ENDPOINTS, &id.to_upper_string()]))?;
                dropped.namespaces += 1;
            }
            self.host.next_namespace_id = first_namespace_id();
        }
        Ok(dropped)
    }
}
