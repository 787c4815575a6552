//! The CNI plugin a [`NetworkKind`] makes: the five operations over the platform's HNS.

use std::marker::PhantomData;
use std::process::ExitCode;

use cni::{About, DelRequest, Error, ErrorCode, NetConf, NetworkRequest, Request, Success};
use hns::Client;

use crate::attachment_lock;
use crate::delegation::admit;
use crate::kind::NetworkKind;
use crate::platform::{self, Deadline};
use crate::teardown::{self, Teardown};
use crate::{add, check, del, flannel, gc, status};

/// Runs the plugin of kind `K` as a runtime executes it (environment, stdin, stdout) and
/// returns the exit status: a plugin's whole `main`, so the two plugins share every line of
/// the protocol and the HNS life cycle. `build` is the binary's (`cni::build!()`).
pub fn run<K: NetworkKind>(build: cni::Build) -> ExitCode {
    cni::run(&HnsPlugin::<K>(PhantomData), About::new(K::PLUGIN, build))
}

/// A CNI plugin for HNS networks of one kind. The kind itself is built per command from the
/// config, so the plugin holds nothing.
struct HnsPlugin<K>(PhantomData<K>);

/// The platform's HNS, each call bounded by the config's HNS deadline. Unreachable is code
/// 11 (HNS may be restarting).
fn connect(conf: &NetConf) -> Result<Client, Error> {
    Ok(platform::connect(Deadline::Config(conf))?)
}

impl<K: NetworkKind> cni::Plugin for HnsPlugin<K> {
    // Every command first refuses a delegation loop (see `delegation`); ADD, DEL and CHECK
    // hold their attachment's lock throughout (see `attachment_lock`).
    fn add(&self, request: &Request) -> Result<Success, Error> {
        admit(&request.config)?;
        let _lock = attachment_lock::lock(&request.config, &request.container_id, &request.ifname)?;
        let client = connect(&request.config)?;
        flannel::add(request, &client, |request| add::add::<K>(&client, request))
    }

    // DEL reads only what identifies the attachment's state (see `teardown`).
    fn del(&self, request: &DelRequest) -> Result<(), Error> {
        admit(&request.config)?;
        let teardown = Teardown::of(request)?;
        teardown::note_what_add_would_refuse::<K>(&request.config);
        let (id, ifname) = (&request.container_id, &request.ifname);
        let _lock = attachment_lock::lock_waiting(
            &request.config.name,
            id,
            ifname,
            teardown.lock_deadline,
        )?;
        let client = platform::connect(Deadline::Exactly(teardown.hns_deadline))?;
        del::del(&client, request, &teardown)
    }

    fn check(&self, request: &Request) -> Result<(), Error> {
        admit(&request.config)?;
        let _lock = attachment_lock::lock(&request.config, &request.container_id, &request.ifname)?;
        let client = connect(&request.config)?;
        flannel::check(request, &client, |request| {
            check::check::<K>(&client, request)
        })
    }

    fn gc(&self, request: &NetworkRequest) -> Result<(), Error> {
        admit(&request.config)?;
        gc::gc::<K>(&connect(&request.config)?, request)
    }

    fn status(&self, request: &NetworkRequest) -> Result<(), Error> {
        admit(&request.config)?;
        let client = connect(&request.config).map_err(|e| {
            Error::new(ErrorCode::NotAvailable, e.msg().to_owned()).with_details(e.details())
        })?;
        flannel::status(
            request,
            || client.supported_features(),
            |request| status::status::<K>(&client, request),
        )
        .map(drop)
    }
}
