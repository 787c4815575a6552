//! What DEL reads of a config: only what identifies the attachment's state. An operator may
//! edit a config into one ADD refuses while pods run; the runtime then calls DEL with it for
//! every pod it tears down and retries a failed DEL for ever, so a DEL that refused would
//! leave the pods stuck terminating.
//!
//! | key | DEL |
//! | --- | --- |
//! | `cniVersion`, `name` | the version to answer in; the HNS network and the endpoint's identity (the skeleton validates both) |
//! | `ipam`, `ipam.type` | which IPAM holds the addresses: code 7 when not an object or missing a type (without `ipam` there is nothing to release) |
//! | host-local's `ipam.dataDir` | where its reservations are: code 7 when not an absolute path ([`cni::path`]: a relative one cannot locate them); the rest of `ipam` is read only when ADD would accept it (see `ipam_host_local::Teardown`) |
//! | `dataDir`, with `subnetFile` (Flannel-native) | where Flannel's record is: code 7 when not an absolute path; `subnetFile` is not read (a warning when it is not a path) |
//! | `hnsTimeoutSeconds`, `attachmentLockTimeoutSeconds` | bound waits: a value ADD would refuse is the default here, with a warning |
//! | every other key | not read; when ADD would refuse one, a warning says so |
//!
//! DEL still fails when the state cannot be found or touched: HNS or the store unreachable,
//! the endpoint not deletable, a reservation file unreadable.

use std::time::Duration;

use cni::{DelRequest, Error, NetConf};

use crate::config::Conf;
use crate::flannel::{self, Record};
use crate::ipam::Release;
use crate::kind::NetworkKind;
use crate::{attachment_lock, hns_deadline};

/// DEL's view of a config (see the module docs).
#[derive(Debug)]
pub(crate) struct Teardown {
    /// How long one HCN call may take.
    pub hns_deadline: Duration,
    /// How long to wait for a command of the same attachment to finish.
    pub lock_deadline: Duration,
    /// The IPAM holding the attachment's addresses, if the config has one.
    pub ipam: Option<Release>,
    /// Flannel's record of the attachment, in Flannel-native mode.
    pub record: Option<Record>,
}

impl Teardown {
    /// The view of `request`'s config; code 7 naming the key when what identifies the
    /// attachment's state is wrong.
    pub fn of(request: &DelRequest) -> Result<Teardown, Error> {
        let config = &request.config;
        let native = flannel::Native::of(config);
        Ok(Teardown {
            hns_deadline: hns_deadline::SETTING.read_leniently(config),
            lock_deadline: attachment_lock::SETTING.read_leniently(config),
            ipam: flannel::release(native.as_ref(), config, &request.args)?,
            record: flannel::record(native.as_ref(), &request.container_id)?,
        })
    }
}

/// Says, as a warning, when ADD would refuse the plugin's own keys of `config` (policies,
/// DNS, port mappings, the kind's keys): DEL does not read them.
pub(crate) fn note_what_add_would_refuse<K: NetworkKind>(config: &NetConf) {
    if let Err(refused) = Conf::<K>::load(config) {
        log::warn!(
            "DEL ignores what ADD would refuse in this config ({}): it tears down by attachment",
            refused.msg()
        );
    }
}
