//! Process-local handle table: what an `HCN_*` handle stands for.
//!
//! HNS hands out RPC context handles; the emulator hands out small integers
//! mapping to (kind, GUID). Handles only name an object; whether the object
//! still exists is checked by each call, as with HNS.

use std::collections::HashMap;
use std::sync::Mutex;

use super::failure::HcnFailure;
use hns::guid::Guid;
use hns::hresult::HResult;

/// What a handle refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandleKind {
    /// `HCN_NETWORK`
    Network,
    /// `HCN_ENDPOINT`
    Endpoint,
    /// `HCN_NAMESPACE`
    Namespace,
    /// `HCN_LOADBALANCER`
    LoadBalancer,
}

/// The open handles of one process.
#[derive(Debug, Default)]
pub struct Handles {
    table: Mutex<HandleTable>,
}

#[derive(Debug, Default)]
struct HandleTable {
    next: usize,
    open: HashMap<usize, (HandleKind, Guid)>,
}

impl Handles {
    /// Issues a new handle for an object (never 0, which is the null handle).
    pub fn open(&self, kind: HandleKind, id: Guid) -> usize {
        let mut table = self
            .table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        table.next += 1;
        let handle = table.next;
        table.open.insert(handle, (kind, id));
        handle
    }

    /// The object behind a handle; `E_HANDLE` for unknown, closed or wrong-kind handles.
    pub fn resolve(&self, kind: HandleKind, handle: usize) -> Result<Guid, HcnFailure> {
        let table = self
            .table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match table.open.get(&handle) {
            Some((open_kind, id)) if *open_kind == kind => Ok(*id),
            _ => Err(HcnFailure::new(
                HResult::E_HANDLE,
                format!("({kind:?} handle {handle})"),
            )),
        }
    }

    /// Closes a handle; `E_HANDLE` if it is not open.
    pub fn close(&self, kind: HandleKind, handle: usize) -> Result<(), HcnFailure> {
        self.resolve(kind, handle)?;
        let mut table = self
            .table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        table.open.remove(&handle);
        Ok(())
    }

    /// Number of open handles (tests use it to prove RAII closes everything).
    pub fn open_count(&self) -> usize {
        self.table
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .open
            .len()
    }
}
