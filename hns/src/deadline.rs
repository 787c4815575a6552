//! A deadline on every HCN call.
//!
//! HNS is known to hang (endpoint delete, namespace modify under load), and a
//! computenetwork.dll call cannot be cancelled. [`Deadlined`] wraps any
//! [`RawHcn`] backend and runs each call on a thread of its own; the caller
//! waits at most the deadline, then gets `ERROR_TIMEOUT` naming the function,
//! the time waited and "HNS did not answer". The call is then *abandoned*: its
//! thread keeps running until HNS answers or the process exits.
//!
//! A call that answers in time returns only once its thread has exited,
//! thread-local destructors and DLL thread-detach code included, so no thread
//! of a finished call is still exiting when the command's process ends. Under
//! Wine a process that ended while one was crashed (exit 139 after a command
//! that had succeeded): ending a process signals every thread wineserver
//! still counts, and a thread already past its Windows exit crashes on the
//! signal. The wait cannot hang where ending the process would not: on
//! Windows an exiting thread waits only for the loader lock, which
//! `ExitProcess` takes as well. An abandoned call's thread is not waited for
//! (its handle is dropped); if the process exits first, the system ends it.
//!
//! What makes abandoning safe:
//! - The thread owns everything the call uses: the backend (an `Arc`, so
//!   dropping the client frees nothing the call needs; computenetwork.dll is
//!   an import and is never unloaded), copies of its strings and GUIDs, and a
//!   lent copy of the handle value.
//! - A handle with a call running is *busy*. Once that call is abandoned,
//!   later calls on the handle fail at once instead of racing it, and closing
//!   the handle is deferred to the thread, which closes it when the call
//!   returns: the handle is closed exactly once and never under a running call.
//! - A reply nobody waits for any more is disposed of by its thread: a handle
//!   that a late create or open returns is closed, not leaked. (The object it
//!   made stays, as after a crash: the next DEL or GC removes it.)
//! - While an abandoned call is outstanding, HNS is presumed hung and every
//!   other call waits a quarter of the deadline, so the caller's rollback and
//!   best-effort cleanup still fit in the time the runtime gives the command.
//!
//! [`crate::Client::with_deadline`] puts this layer under the typed client,
//! whose callers see no difference but the bounded wait.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::RawError;
use crate::guid::Guid;
use crate::hresult::HResult;
use crate::raw::{
    EndpointHandle, Function, Handle, LoadBalancerHandle, NamespaceHandle, NetworkHandle, RawHcn,
};

/// How much of the deadline a call gets while another call is abandoned (1/4).
const HUNG_SHARE: u32 = 4;

/// A [`RawHcn`] backend whose calls each wait at most a deadline.
pub struct Deadlined {
    backend: Arc<dyn RawHcn>,
    deadline: Duration,
    shared: Arc<Shared>,
}

/// What the waiting side and the call threads share.
#[derive(Default)]
struct Shared {
    /// Handles with calls running, by handle value (backends issue distinct
    /// values across object kinds).
    busy: Mutex<HashMap<usize, Busy>>,
    /// Calls abandoned and not yet returned.
    abandoned: AtomicUsize,
}

/// A handle with calls running.
#[derive(Default)]
struct Busy {
    running: usize,
    /// One of the running calls was abandoned: refuse new calls on the handle.
    abandoned: bool,
    /// The owner's close, to run once the last running call returns.
    close: Option<DeferredClose>,
}

type DeferredClose = Box<dyn FnOnce(&dyn RawHcn) + Send>;

/// One call's outcome, handed from its thread to the waiter exactly once.
enum Slot<T> {
    Waiting,
    Done(T),
    Abandoned,
}

/// What a call returns, and how its thread disposes of it when nobody waits any more.
trait Reply: Send + 'static {
    fn discard(self, backend: &dyn RawHcn);
}

impl Reply for () {
    fn discard(self, _: &dyn RawHcn) {}
}

impl Reply for String {
    fn discard(self, _: &dyn RawHcn) {}
}

impl Reply for u32 {
    fn discard(self, _: &dyn RawHcn) {}
}

macro_rules! handle_replies {
    ($($handle:ty => $close:ident;)*) => {$(
        impl Reply for $handle {
            fn discard(self, backend: &dyn RawHcn) {
                let raw = self.as_raw();
                if let Err(error) = backend.$close(self) {
                    log::warn!("closing handle {raw:#x} of an abandoned call: {error}");
                }
            }
        }
    )*};
}

handle_replies! {
    NetworkHandle => close_network;
    EndpointHandle => close_endpoint;
    NamespaceHandle => close_namespace;
    LoadBalancerHandle => close_load_balancer;
}

impl<T: Reply> Reply for Result<T, RawError> {
    fn discard(self, backend: &dyn RawHcn) {
        if let Ok(reply) = self {
            reply.discard(backend);
        }
    }
}

impl Deadlined {
    /// Wraps `backend`; every call waits at most `deadline`.
    pub fn new(backend: Arc<dyn RawHcn>, deadline: Duration) -> Deadlined {
        Deadlined {
            backend,
            deadline,
            shared: Arc::default(),
        }
    }

    /// The deadline each call gets while HNS answers.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Calls abandoned whose threads are still waiting for HNS.
    pub fn abandoned_calls(&self) -> usize {
        self.shared.abandoned.load(Ordering::SeqCst)
    }

    /// Runs a call that names no handle.
    fn call<T: Reply>(
        &self,
        function: Function,
        call: impl FnOnce(&dyn RawHcn) -> Result<T, RawError> + Send + 'static,
    ) -> Result<T, RawError> {
        self.run(function, None, call)
    }

    /// Runs a call on an open handle, lending the call thread a copy of it.
    #[allow(unsafe_code)] // the lent copy is made with `Handle::from_raw`
    fn on_handle<H: Handle + Send + 'static, T: Reply>(
        &self,
        function: Function,
        handle: &H,
        call: impl FnOnce(&dyn RawHcn, &H) -> Result<T, RawError> + Send + 'static,
    ) -> Result<T, RawError> {
        let raw = handle.as_raw();
        {
            let mut busy = lock(&self.shared.busy);
            let entry = busy.entry(raw).or_default();
            if entry.abandoned {
                return Err(RawError::new(
                    function,
                    HResult::ERROR_TIMEOUT,
                    format!(
                        "not sent: HNS did not answer an earlier call on handle {raw:#x}, which is still running"
                    ),
                ));
            }
            entry.running += 1;
        }
        // SAFETY: the copy is used for this one call only and is never closed or handed
        // out. The owner's handle cannot be closed while the call runs: the handle is
        // registered busy above until the call returns, and a close of a busy handle is
        // deferred until then (see `close`).
        let lent = unsafe { H::from_raw(raw) };
        self.run(function, Some(raw), move |backend| call(backend, &lent))
    }

    /// Closes a handle now, or after the calls running on it return.
    fn close<H: Handle + Send + 'static>(
        &self,
        function: Function,
        handle: H,
        close: fn(&dyn RawHcn, H) -> Result<(), RawError>,
    ) -> Result<(), RawError> {
        {
            let mut busy = lock(&self.shared.busy);
            if let Some(entry) = busy.get_mut(&handle.as_raw()) {
                log::warn!(
                    "{}: handle {:#x} still has a call running; it is closed when that call returns",
                    function,
                    handle.as_raw()
                );
                entry.close = Some(Box::new(move |backend| {
                    if let Err(error) = close(backend, handle) {
                        log::warn!("deferred {error}");
                    }
                }));
                return Ok(());
            }
        }
        self.call(function, move |backend| close(backend, handle))
    }

    /// Runs `call` on a thread of its own and waits for it at most the deadline.
    fn run<T: Reply>(
        &self,
        function: Function,
        handle: Option<usize>,
        call: impl FnOnce(&dyn RawHcn) -> Result<T, RawError> + Send + 'static,
    ) -> Result<T, RawError> {
        let started = Instant::now();
        let wait = if self.shared.abandoned.load(Ordering::SeqCst) > 0 {
            self.deadline / HUNG_SHARE
        } else {
            self.deadline
        };
        let slot = Arc::new((Mutex::new(Slot::Waiting), Condvar::new()));
        let spawned = {
            let backend = Arc::clone(&self.backend);
            let shared = Arc::clone(&self.shared);
            let slot = Arc::clone(&slot);
            std::thread::Builder::new()
                .name(function.name().to_owned())
                .spawn(move || {
                    let result = call(backend.as_ref());
                    shared.returned(backend.as_ref(), handle);
                    let (outcome, answered) = &*slot;
                    let mut outcome = lock(outcome);
                    match *outcome {
                        Slot::Abandoned => {
                            drop(outcome);
                            shared.abandoned.fetch_sub(1, Ordering::SeqCst);
                            log::warn!(
                                "{} answered after {:?}, too late",
                                function,
                                started.elapsed()
                            );
                            result.discard(backend.as_ref());
                        }
                        _ => {
                            *outcome = Slot::Done(result);
                            answered.notify_one();
                        }
                    }
                })
        };
        let thread = match spawned {
            Ok(thread) => thread,
            Err(error) => {
                self.shared.returned(self.backend.as_ref(), handle);
                return Err(RawError::new(
                    function,
                    HResult::E_FAIL,
                    format!("not sent: cannot start a thread to wait on it: {error}"),
                ));
            }
        };

        let (outcome, answered) = &*slot;
        let taken = {
            let (mut outcome, _) = answered
                .wait_timeout_while(lock(outcome), wait, |outcome| {
                    matches!(outcome, Slot::Waiting)
                })
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            std::mem::replace(&mut *outcome, Slot::Abandoned)
        };
        match taken {
            Slot::Done(result) => {
                // The reply is in hand and the thread only has to exit: wait for that as
                // well (see the module docs). Nothing it still does can change the reply.
                let _ = thread.join();
                result
            }
            Slot::Waiting | Slot::Abandoned => {
                self.shared.abandoned.fetch_add(1, Ordering::SeqCst);
                if let Some(raw) = handle
                    && let Some(entry) = lock(&self.shared.busy).get_mut(&raw)
                {
                    entry.abandoned = true;
                }
                let waited = started.elapsed();
                log::error!(
                    "{}: HNS did not answer in {waited:?}; abandoning the call",
                    function.name()
                );
                Err(RawError::new(
                    function,
                    HResult::ERROR_TIMEOUT,
                    format!(
                        "HNS did not answer in {:?} (deadline {wait:?}); the call was abandoned and may still complete",
                        Duration::from_millis(waited.as_millis() as u64),
                    ),
                ))
            }
        }
    }
}

impl Shared {
    /// Marks a call on `handle` as returned, running the owner's deferred close
    /// after the last one.
    fn returned(&self, backend: &dyn RawHcn, handle: Option<usize>) {
        let Some(raw) = handle else { return };
        let close = {
            let mut busy = lock(&self.busy);
            let Some(entry) = busy.get_mut(&raw) else {
                return;
            };
            entry.running -= 1;
            if entry.running > 0 {
                return;
            }
            busy.remove(&raw).and_then(|entry| entry.close)
        };
        if let Some(close) = close {
            close(backend);
        }
    }
}

/// Locks a mutex whose data stays consistent even if a holder panicked (every
/// update is a single assignment or map operation).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl fmt::Debug for Deadlined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deadlined")
            .field("backend", &self.backend)
            .field("deadline", &self.deadline)
            .field("abandoned_calls", &self.abandoned_calls())
            .finish()
    }
}

impl RawHcn for Deadlined {
    fn enumerate_networks(&self, query: &str) -> Result<String, RawError> {
        let query = query.to_owned();
        self.call(Function::EnumerateNetworks, move |b| {
            b.enumerate_networks(&query)
        })
    }

    fn create_network(&self, id: &Guid, settings: &str) -> Result<NetworkHandle, RawError> {
        let (id, settings) = (*id, settings.to_owned());
        self.call(Function::CreateNetwork, move |b| {
            b.create_network(&id, &settings)
        })
    }

    fn open_network(&self, id: &Guid) -> Result<NetworkHandle, RawError> {
        let id = *id;
        self.call(Function::OpenNetwork, move |b| b.open_network(&id))
    }

    fn modify_network(&self, network: &NetworkHandle, settings: &str) -> Result<(), RawError> {
        let settings = settings.to_owned();
        self.on_handle(Function::ModifyNetwork, network, move |b, h| {
            b.modify_network(h, &settings)
        })
    }

    fn query_network_properties(
        &self,
        network: &NetworkHandle,
        query: &str,
    ) -> Result<String, RawError> {
        let query = query.to_owned();
        self.on_handle(Function::QueryNetworkProperties, network, move |b, h| {
            b.query_network_properties(h, &query)
        })
    }

    fn delete_network(&self, id: &Guid) -> Result<(), RawError> {
        let id = *id;
        self.call(Function::DeleteNetwork, move |b| b.delete_network(&id))
    }

    fn close_network(&self, network: NetworkHandle) -> Result<(), RawError> {
        self.close(Function::CloseNetwork, network, |b, h| b.close_network(h))
    }

    fn enumerate_endpoints(&self, query: &str) -> Result<String, RawError> {
        let query = query.to_owned();
        self.call(Function::EnumerateEndpoints, move |b| {
            b.enumerate_endpoints(&query)
        })
    }

    fn create_endpoint(
        &self,
        network: &NetworkHandle,
        id: &Guid,
        settings: &str,
    ) -> Result<EndpointHandle, RawError> {
        let (id, settings) = (*id, settings.to_owned());
        self.on_handle(Function::CreateEndpoint, network, move |b, h| {
            b.create_endpoint(h, &id, &settings)
        })
    }

    fn open_endpoint(&self, id: &Guid) -> Result<EndpointHandle, RawError> {
        let id = *id;
        self.call(Function::OpenEndpoint, move |b| b.open_endpoint(&id))
    }

    fn modify_endpoint(&self, endpoint: &EndpointHandle, settings: &str) -> Result<(), RawError> {
        let settings = settings.to_owned();
        self.on_handle(Function::ModifyEndpoint, endpoint, move |b, h| {
            b.modify_endpoint(h, &settings)
        })
    }

    fn query_endpoint_properties(
        &self,
        endpoint: &EndpointHandle,
        query: &str,
    ) -> Result<String, RawError> {
        let query = query.to_owned();
        self.on_handle(Function::QueryEndpointProperties, endpoint, move |b, h| {
            b.query_endpoint_properties(h, &query)
        })
    }

    fn delete_endpoint(&self, id: &Guid) -> Result<(), RawError> {
        let id = *id;
        self.call(Function::DeleteEndpoint, move |b| b.delete_endpoint(&id))
    }

    fn close_endpoint(&self, endpoint: EndpointHandle) -> Result<(), RawError> {
        self.close(Function::CloseEndpoint, endpoint, |b, h| {
            b.close_endpoint(h)
        })
    }

    fn enumerate_namespaces(&self, query: &str) -> Result<String, RawError> {
        let query = query.to_owned();
        self.call(Function::EnumerateNamespaces, move |b| {
            b.enumerate_namespaces(&query)
        })
    }

    fn create_namespace(&self, id: &Guid, settings: &str) -> Result<NamespaceHandle, RawError> {
        let (id, settings) = (*id, settings.to_owned());
        self.call(Function::CreateNamespace, move |b| {
            b.create_namespace(&id, &settings)
        })
    }

    fn open_namespace(&self, id: &Guid) -> Result<NamespaceHandle, RawError> {
        let id = *id;
        self.call(Function::OpenNamespace, move |b| b.open_namespace(&id))
    }

    fn modify_namespace(
        &self,
        namespace: &NamespaceHandle,
        settings: &str,
    ) -> Result<(), RawError> {
        let settings = settings.to_owned();
        self.on_handle(Function::ModifyNamespace, namespace, move |b, h| {
            b.modify_namespace(h, &settings)
        })
    }

    fn query_namespace_properties(
        &self,
        namespace: &NamespaceHandle,
        query: &str,
    ) -> Result<String, RawError> {
        let query = query.to_owned();
        self.on_handle(
            Function::QueryNamespaceProperties,
            namespace,
            move |b, h| b.query_namespace_properties(h, &query),
        )
    }

    fn delete_namespace(&self, id: &Guid) -> Result<(), RawError> {
        let id = *id;
        self.call(Function::DeleteNamespace, move |b| b.delete_namespace(&id))
    }

    fn close_namespace(&self, namespace: NamespaceHandle) -> Result<(), RawError> {
        self.close(Function::CloseNamespace, namespace, |b, h| {
            b.close_namespace(h)
        })
    }

    fn enumerate_load_balancers(&self, query: &str) -> Result<String, RawError> {
        let query = query.to_owned();
        self.call(Function::EnumerateLoadBalancers, move |b| {
            b.enumerate_load_balancers(&query)
        })
    }

    fn create_load_balancer(
        &self,
        id: &Guid,
        settings: &str,
    ) -> Result<LoadBalancerHandle, RawError> {
        let (id, settings) = (*id, settings.to_owned());
        self.call(Function::CreateLoadBalancer, move |b| {
            b.create_load_balancer(&id, &settings)
        })
    }

    fn open_load_balancer(&self, id: &Guid) -> Result<LoadBalancerHandle, RawError> {
        let id = *id;
        self.call(Function::OpenLoadBalancer, move |b| {
            b.open_load_balancer(&id)
        })
    }

    fn modify_load_balancer(
        &self,
        load_balancer: &LoadBalancerHandle,
        settings: &str,
    ) -> Result<(), RawError> {
        let settings = settings.to_owned();
        self.on_handle(Function::ModifyLoadBalancer, load_balancer, move |b, h| {
            b.modify_load_balancer(h, &settings)
        })
    }

    fn query_load_balancer_properties(
        &self,
        load_balancer: &LoadBalancerHandle,
        query: &str,
    ) -> Result<String, RawError> {
        let query = query.to_owned();
        self.on_handle(
            Function::QueryLoadBalancerProperties,
            load_balancer,
            move |b, h| b.query_load_balancer_properties(h, &query),
        )
    }

    fn delete_load_balancer(&self, id: &Guid) -> Result<(), RawError> {
        let id = *id;
        self.call(Function::DeleteLoadBalancer, move |b| {
            b.delete_load_balancer(&id)
        })
    }

    fn close_load_balancer(&self, load_balancer: LoadBalancerHandle) -> Result<(), RawError> {
        self.close(Function::CloseLoadBalancer, load_balancer, |b, h| {
            b.close_load_balancer(h)
        })
    }

    fn hns_call(&self, method: &str, path: &str, request: &str) -> Result<String, RawError> {
        let (method, path, request) = (method.to_owned(), path.to_owned(), request.to_owned());
        self.call(Function::HnsCall, move |b| {
            b.hns_call(&method, &path, &request)
        })
    }

    fn windows_build(&self) -> Result<u32, RawError> {
        self.call(Function::RtlGetVersion, |b| b.windows_build())
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::sync::atomic::AtomicBool;

    use super::*;

    /// Set by a thread-local's destructor, which runs as the thread that made the call exits.
    struct ThreadExit(Arc<AtomicBool>);

    impl Drop for ThreadExit {
        fn drop(&mut self) {
            // Long enough that a caller who does not wait for the thread returns first.
            std::thread::sleep(Duration::from_millis(200));
            self.0.store(true, Ordering::SeqCst);
        }
    }

    thread_local! {
        static ON_EXIT: RefCell<Option<ThreadExit>> = const { RefCell::new(None) };
    }

    /// A backend whose `HcnEnumerateNetworks` answers `[]` at once and leaves a thread-local
    /// behind on the thread that ran it; no other call is made.
    #[derive(Debug, Default)]
    struct LeavesThreadLocal {
        exited: Arc<AtomicBool>,
    }

    macro_rules! not_called {
        ($($name:ident($($arg:ty),*) -> $reply:ty;)*) => {$(
            fn $name(&self, $(_: $arg),*) -> Result<$reply, RawError> {
                unreachable!(concat!(stringify!($name), " is not called"))
            }
        )*};
    }

    impl RawHcn for LeavesThreadLocal {
        fn enumerate_networks(&self, _: &str) -> Result<String, RawError> {
            let exit = ThreadExit(Arc::clone(&self.exited));
            ON_EXIT.with(|slot| *slot.borrow_mut() = Some(exit));
            Ok("[]".to_owned())
        }

        not_called! {
            create_network(&Guid, &str) -> NetworkHandle;
            open_network(&Guid) -> NetworkHandle;
            modify_network(&NetworkHandle, &str) -> ();
            query_network_properties(&NetworkHandle, &str) -> String;
            delete_network(&Guid) -> ();
            close_network(NetworkHandle) -> ();
            enumerate_endpoints(&str) -> String;
            create_endpoint(&NetworkHandle, &Guid, &str) -> EndpointHandle;
            open_endpoint(&Guid) -> EndpointHandle;
            modify_endpoint(&EndpointHandle, &str) -> ();
            query_endpoint_properties(&EndpointHandle, &str) -> String;
            delete_endpoint(&Guid) -> ();
            close_endpoint(EndpointHandle) -> ();
            enumerate_namespaces(&str) -> String;
            create_namespace(&Guid, &str) -> NamespaceHandle;
            open_namespace(&Guid) -> NamespaceHandle;
            modify_namespace(&NamespaceHandle, &str) -> ();
            query_namespace_properties(&NamespaceHandle, &str) -> String;
            delete_namespace(&Guid) -> ();
            close_namespace(NamespaceHandle) -> ();
            enumerate_load_balancers(&str) -> String;
            create_load_balancer(&Guid, &str) -> LoadBalancerHandle;
            open_load_balancer(&Guid) -> LoadBalancerHandle;
            modify_load_balancer(&LoadBalancerHandle, &str) -> ();
            query_load_balancer_properties(&LoadBalancerHandle, &str) -> String;
            delete_load_balancer(&Guid) -> ();
            close_load_balancer(LoadBalancerHandle) -> ();
            hns_call(&str, &str, &str) -> String;
            windows_build() -> u32;
        }
    }

    /// A process may exit as soon as its last call returns (a plugin's does): no thread of a
    /// call that answered may still be exiting then, running thread-local destructors or DLL
    /// detach code while the process ends its threads (under Wine, such a thread crashed the
    /// process: exit 139 after a command that succeeded).
    #[test]
    fn a_call_that_answered_returns_after_its_thread_has_exited() {
        let backend = Arc::new(LeavesThreadLocal::default());
        let exited = Arc::clone(&backend.exited);
        let layer = Deadlined::new(backend, Duration::from_secs(30));

        assert_eq!(layer.enumerate_networks("").unwrap(), "[]");

        assert!(
            exited.load(Ordering::SeqCst),
            "the call returned while its thread was still exiting"
        );
    }
}
