//! Teardown never blocks on a config that changed after ADD: after an ADD with a valid config,
//! DEL with every hostile variant of it (each key at every depth removed, of the wrong kind, or
//! of the right kind and wrong) returns 0 and leaves nothing (endpoint, reservation), unless
//! the variant changes what identifies the attachment's state: `cniVersion`, the network's
//! `name`, which IPAM holds its addresses (`ipam`, `ipam.type`) and host-local's store
//! (`ipam.dataDir`). Those may fail, with a CNI error, never a crash.

use super::Plugin;
use crate::node::{HostileDel, Variant};

/// The keys whose change may make DEL fail: they identify the attachment's state.
pub const IDENTIFYING: &[&str] = &["cniVersion", "name", "ipam", "ipam.type", "ipam.dataDir"];

/// Prints what `report` counted for `what` and asserts no DEL was blocked.
pub fn assert_never_blocked(what: &str, report: &HostileDel) {
    eprintln!(
        "{what}: {} hostile DEL inputs, {} of them changing an identifying key; {} failed \
         or left something although DEL needs nothing they change",
        report.inputs,
        report.identifying,
        report.blocked.len()
    );
    assert!(report.blocked.is_empty(), "{}", report.blocked.join("\n"));
}

/// Every hostile variant of the plugin's config with every key ([`Plugin::every_key_config`]).
pub fn del_tears_down_whatever_else_the_config_gets_wrong(plugin: &Plugin) {
    let node = plugin.node("hostile-del");
    // An unset ipam.dataDir is the node's default store, which a test leaves alone.
    let every = |variant: &Variant| !variant.unsets("ipam.dataDir");
    let report = node.del_with_every_variant(
        &|pod| (plugin.every_key_config)(&node, pod),
        plugin.network,
        &every,
        IDENTIFYING,
        &|_| None,
    );
    assert_never_blocked(plugin.name, &report);
}
