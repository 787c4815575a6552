//! The CNI plugin a [`NetworkKind`] makes: the five operations over the platform's HNS.

use std::process::ExitCode;

use cni::{About, Error, ErrorCode, NetworkRequest, Request, Success};
use hns::Client;

use crate::hns_error::to_cni;
use crate::kind::NetworkKind;
use crate::{add, check, del, flannel, gc, status};

/// A CNI plugin for HNS networks of one kind.
#[derive(Debug)]
pub struct HnsPlugin<K> {
    kind: K,
}

impl<K: NetworkKind> HnsPlugin<K> {
    pub fn new(kind: K) -> HnsPlugin<K> {
        HnsPlugin { kind }
    }

    /// Runs the plugin as a runtime executes it (environment, stdin, stdout) and returns the
    /// exit status: a plugin's whole `main`.
    pub fn run(self, version: &'static str) -> ExitCode {
        cni::run(
            &self,
            About {
                name: K::PLUGIN,
                version,
            },
        )
    }
}

/// The platform's HNS: computenetwork.dll on Windows, the emulator named by
/// `HCN_EMULATOR_STATE` elsewhere. Unreachable is code 11 (HNS may be restarting).
fn connect() -> Result<Client, Error> {
    Client::from_env().map_err(|e| to_cni(&e, "connect to HNS"))
}

impl<K: NetworkKind> cni::Plugin for HnsPlugin<K> {
    fn add(&self, request: &Request) -> Result<Success, Error> {
        let client = connect()?;
        flannel::add(request, &client, |request| {
            add::add(&self.kind, &client, request)
        })
    }

    fn del(&self, request: &Request) -> Result<(), Error> {
        flannel::del(&request.config, &request.container_id, || {
            del::del(&connect()?, request)
        })
    }

    fn check(&self, request: &Request) -> Result<(), Error> {
        let client = connect()?;
        flannel::check(request, &client, |request| {
            check::check(&self.kind, &client, request)
        })
    }

    fn gc(&self, request: &NetworkRequest) -> Result<(), Error> {
        gc::gc(&self.kind, &connect()?, request)
    }

    fn status(&self, request: &NetworkRequest) -> Result<(), Error> {
        let client = connect().map_err(|e| {
            Error::new(ErrorCode::NotAvailable, e.msg().to_owned()).with_details(e.details())
        })?;
        flannel::status(request, &client, |request| {
            status::status(&self.kind, &client, request)
        })
    }
}
