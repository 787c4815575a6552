//! How many times this thread decoded a network's config with the plugins' own code: the
//! plugin's keys (the whole config validated as ADD validates it) and the `ipam` section (the
//! IPAM ADD allocates from, or the store DEL releases from).
//!
//! A plugin decodes its config once per command; the node daemon serves every network of the
//! node in each round and is held to the same, one decode of each per network, however many
//! questions are asked of it (a decode per question would be about five of `ipam` per
//! network). The count is per thread because a round runs on one thread and tests of several
//! rounds run in parallel.

use std::cell::Cell;
use std::ops::Sub;

/// Decodes counted on one thread since it started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Decodes {
    /// Decodes of the whole config into the plugin's keys.
    pub config: u64,
    /// Decodes of the `ipam` section.
    pub ipam: u64,
}

thread_local! {
    static COUNTED: Cell<Decodes> = const { Cell::new(Decodes { config: 0, ipam: 0 }) };
}

impl Decodes {
    /// What this thread has decoded so far; subtract an earlier reading for a span of work.
    pub fn on_this_thread() -> Decodes {
        COUNTED.get()
    }

    pub(crate) fn count_config() {
        COUNTED.set(Decodes {
            config: COUNTED.get().config + 1,
            ..COUNTED.get()
        });
    }

    pub(crate) fn count_ipam() {
        COUNTED.set(Decodes {
            ipam: COUNTED.get().ipam + 1,
            ..COUNTED.get()
        });
    }
}

impl Sub for Decodes {
    type Output = Decodes;

    fn sub(self, earlier: Decodes) -> Decodes {
        Decodes {
            config: self.config - earlier.config,
            ipam: self.ipam - earlier.ipam,
        }
    }
}
