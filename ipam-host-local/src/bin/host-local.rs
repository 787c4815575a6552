//! The `host-local` CNI plugin: a thin [`cni::Plugin`] over [`ipam_host_local::HostLocal`].
#![forbid(unsafe_code)]

use cni::{About, CniArgs, DelRequest, Error, NetworkRequest, Plugin, Request, Success};
use ipam_host_local::{HostLocal, Retention, Teardown};
use std::process::ExitCode;

struct HostLocalPlugin;

impl Plugin for HostLocalPlugin {
    fn add(&self, request: &Request) -> Result<Success, Error> {
        let ipam = HostLocal::from_conf(&request.config, &request.args)?;
        Ok(ipam
            .allocate(&request.container_id, &request.ifname)?
            .into_result())
    }

    /// With whatever config the runtime has at teardown: only the store must be found.
    fn del(&self, request: &DelRequest) -> Result<(), Error> {
        Teardown::from_conf(&request.config, &request.args)?
            .release(&request.container_id, &request.ifname)
    }

    /// With `prevResult` (as runtimes send it), the reservations must be exactly its
    /// addresses; without, as the reference checks, the attachment must hold one.
    fn check(&self, request: &Request) -> Result<(), Error> {
        let ipam = HostLocal::from_conf(&request.config, &request.args)?;
        let (id, ifname) = (&request.container_id, &request.ifname);
        match request.config.prev_result()? {
            Some(expected) => ipam.check(id, ifname, &expected),
            None => ipam.check_held(id, ifname),
        }
    }

    fn gc(&self, request: &NetworkRequest) -> Result<(), Error> {
        // No list releases every reservation but the node components' (kube-proxy's source
        // VIP), as an empty one does.
        let valid = request.config.valid_attachments()?;
        log::info!("GC releases what is {}", valid.reason());
        HostLocal::from_conf(&request.config, &CniArgs::default())?
            .gc(&Retention::attachments(valid.as_slice()))
    }

    fn status(&self, request: &NetworkRequest) -> Result<(), Error> {
        // A full range is logged, not failed (see `HostLocal::status`).
        HostLocal::from_conf(&request.config, &CniArgs::default())?
            .status()
            .map(drop)
    }
}

fn main() -> ExitCode {
    cni::run(&HostLocalPlugin, About::new("host-local", cni::build!()))
}
