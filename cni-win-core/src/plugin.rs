//! The CNI plugin a [`NetworkKind`] makes: the five operations over the platform's HNS.

use std::process::ExitCode;

use cni::{About, Error, ErrorCode, NetworkRequest, Request, Success};
use hns::Client;

use crate::hns_error::to_cni;
use crate::kind::NetworkKind;
use crate::{add, check, del, gc, status};

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
    /// exit status: a plugin's whole `main`. `build` is the binary's (`cni::build!()`).
    pub fn run(self, build: cni::Build) -> ExitCode {
        cni::run(&self, About::new(K::PLUGIN, build))
    }
}

/// The platform's HNS: computenetwork.dll on Windows, the emulator named by
/// `HCN_EMULATOR_STATE` elsewhere. Unreachable is code 11 (HNS may be restarting).
fn connect() -> Result<Client, Error> {
    Client::from_env().map_err(|e| to_cni(&e, "connect to HNS"))
}

impl<K: NetworkKind> cni::Plugin for HnsPlugin<K> {
    fn add(&self, request: &Request) -> Result<Success, Error> {
        add::add(&self.kind, &connect()?, request)
    }

    fn del(&self, request: &Request) -> Result<(), Error> {
        del::del(&connect()?, request)
    }

    fn check(&self, request: &Request) -> Result<(), Error> {
        check::check(&self.kind, &connect()?, request)
    }

    fn gc(&self, request: &NetworkRequest) -> Result<(), Error> {
        gc::gc(&self.kind, &connect()?, request)
    }

    fn status(&self, request: &NetworkRequest) -> Result<(), Error> {
        let client = connect().map_err(|e| {
            Error::new(ErrorCode::NotAvailable, e.msg().to_owned()).with_details(e.details())
        })?;
        status::status(&self.kind, &client, request)
    }
}
