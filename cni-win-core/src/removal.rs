//! How every collector removes a dead attachment: as the runtime's DEL of that attachment
//! would (the teardown view of the network's config, then DEL: detach, delete the endpoint by
//! its GUID or the reference plugin's by name, release the addresses, drop Flannel's record).
//!
//! The plugins' GC and `cni-win sweep` differ only in what tells them an attachment is dead
//! (the runtime's list, or the namespaces HNS still has: [`crate::ownership::Liveness`]) and
//! in how they know no command of it is in flight (the attachment's lock, which the caller
//! holds while this runs); removal itself is this one function, so a fix to it reaches both.

use cni::{CniArgs, DelRequest, Error, GcAttachment, NetworkRequest};
use hns::{Client, Guid};

use crate::teardown::Teardown;

/// Removes everything of `attachment` on the network `request` configures, as its DEL would;
/// `namespace` is the one its endpoint is attached to (it is detached first). Succeeds only
/// when nothing of the attachment is left; an endpoint that could not be deleted keeps its
/// addresses reserved. The caller holds the attachment's lock.
pub fn remove_attachment(
    client: &Client,
    request: &NetworkRequest,
    attachment: &GcAttachment,
    namespace: Option<Guid>,
) -> Result<(), Error> {
    let del = DelRequest {
        container_id: attachment.container_id.clone(),
        ifname: attachment.ifname.clone(),
        netns: namespace.map(|guid| guid.to_string()),
        args: CniArgs::default(),
        config: request.config.clone(),
        stdin: request.stdin.clone(),
        cni_path: request.cni_path.clone(),
    };
    let teardown = Teardown::of(&del)?;
    crate::del::del(client, &del, &teardown)
}
