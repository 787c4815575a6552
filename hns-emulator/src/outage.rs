//! HNS service stops, restarts and host reboots, as the field sees them.
//!
//! - **Stop** (the HNS service is stopped, or restarting and not back yet): every call fails
//!   with `ERROR_SERVICE_NOT_ACTIVE` (0x80070426, "The service has not been started.",
//!   docker/for-win#8226) until the service restarts, and nothing is lost yet. Callers that
//!   take those failures for objects being absent act on a wrong picture: kube-proxy reset its
//!   load balancers' state and later failed to re-create them (kubernetes#139519, fixed by
//!   kubernetes#139503).
//! - **Restart** (the HNS service stops and starts; Windows updates, crashes, `Restart-Service
//!   hns`, or Microsoft's own mitigation scripts): HNS restores what it held from its store
//!   ("rehydration"), under the same IDs: networks with their policies, endpoints with theirs,
//!   namespaces, load balancers. kubernetes#139519 (2026) names the rehydration of load
//!   balancers; Azure CNI's CI restarts HNS under running pods and then expects HNS's
//!   endpoints to match its own records unchanged
//!   (`.pipelines/cni/load-test-templates/restart-hns-template.yaml`); microsoft/SDN's
//!   `ConditionalHnsRestart` scripts restart HNS *to restore* the VFP rules missing on pods'
//!   ports, which only works if the endpoints survive; AKS's Windows image sets the
//!   `HNSFixExtensionUponRehydration` key. This is what kube-proxy 1.37, Azure CNI and
//!   Microsoft's tooling rely on, so it is the restart the emulator makes by default.
//! - **Restart losing endpoints** (older builds, and endpoints made through HNS V1 by Docker):
//!   every endpoint is gone, so pods lose their network until something re-creates their
//!   endpoints (calico#5164, Windows Server 2022 in 2021: "hnsendpoints has been removed and
//!   is not automatically re-create"; AKS's `hnsremediator` restarted kube-proxy after every
//!   HNS restart because "HNS policies will be purged"). Networks and namespaces stay, and
//!   the load balancers come back naming the endpoints they had, which no longer exist
//!   (re-creating one fails with `ERROR_ALREADY_EXISTS` 0xb7: kubernetes#139519).
//! - **Reboot**: every endpoint and namespace goes (compartments live only as long as the
//!   boot; "HNS does not persist networks and endpoints across reboots", hcsshim#922), and
//!   every network with the `EnableNonPersistent` flag (8), which flanneld and Antrea set so
//!   that a stale network does not outlive the node's configuration (flannel `5c7091b4`,
//!   ACN#283). Other networks and the load balancers stay (Transparent networks persist since
//!   KB4482887, moby#38358; AKS's node-reset script removes the "persisted HNS policy lists"
//!   at boot). Compartment numbers start again at 2. Whether a network keeps its ID across a
//!   reboot is not settled by the evidence (Docker's `nat` network comes back under a new
//!   one, docker/for-win#14268); the emulator keeps it, and callers that cache a network's ID
//!   must find it again by name anyway, since flanneld re-creates its own.
//!
//! `GuestNetworkServiceState` says nothing of this: it is the state a guest network service
//! (WSL's mirrored networking) reports of itself, not HNS's. A client learns of a restart
//! only by its calls failing meanwhile (or `HcnNotificationServiceDisconnect`, which the
//! emulator does not deliver).
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
    /// The HNS service restarts and restores everything it held (current builds).
    Restart,
    /// The HNS service restarts and loses every endpoint (older builds).
    RestartLosingEndpoints,
    /// The host reboots: endpoints, namespaces and non-persistent networks are dropped.
    Reboot,
}

/// What an outage dropped, for the caller's log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dropped {
    /// Endpoints removed, which HNS loses on a reboot and on a restart that loses them.
    pub endpoints: usize,
    /// Namespaces removed, which HNS loses on reboot only.
    pub namespaces: usize,
    /// Networks removed: `EnableNonPersistent` ones, lost on reboot.
    pub networks: usize,
}

/// The failure of a call of `function` while HNS is stopped.
pub(super) fn not_running(function: Function) -> HcnFailure {
    HcnFailure::new(
        HResult::ERROR_SERVICE_NOT_ACTIVE,
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
        if matches!(outage, Outage::Stop | Outage::Restart) {
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
