//! The emulated HNS service: one call = lock, count, apply test controls, run
//! the operation against the on-disk state, unlock.
//!
//! Nothing here is process-local (handles live in [`super::handles`]), so the
//! same engine can sit behind the in-process [`super::Emulator`] and behind a
//! `computenetwork.dll` built for Wine.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::adapter::{HostAdapter, VirtualSwitch};
use super::failure::HcnFailure;
use super::host::HostState;
use super::inject::Injection;
use super::outage::{Dropped, Outage};
use super::store::{self, Locked, Store};
use hns::Guid;
use hns::features::{HnsVersion, WindowsBuild, WindowsRelease};
use hns::hresult::HResult;
use hns::raw::Function;

/// The emulated HNS of one host, rooted at a state directory.
#[derive(Debug, Clone)]
pub struct Engine {
    store: Store,
}

/// The state while one call holds the lock: what the operations work on.
#[derive(Debug)]
pub struct State<'a> {
    pub(super) locked: &'a Locked<'a>,
    pub(super) host: &'a mut HostState,
}

impl Engine {
    /// Opens (creating if needed) the state under `root`.
    pub fn open(root: &Path) -> Result<Engine, HcnFailure> {
        Ok(Engine {
            store: Store::open(root)?,
        })
    }

    /// The state root: every process pointed at it sees the same HNS.
    pub fn root(&self) -> &Path {
        self.store.root()
    }

    /// Runs one HCN call of `function`: takes the lock, counts the call,
    /// applies an injected fault or latency, runs `operation`, persists the
    /// host state, and aborts the process if a crash point was due.
    pub fn call<T>(
        &self,
        function: Function,
        operation: impl FnOnce(&mut State<'_>) -> Result<T, HcnFailure>,
    ) -> Result<T, HcnFailure> {
        let locked = self.store.lock()?;
        let mut host = read_host(&locked)?;
        let plan = host.begin_call(function);
        if plan.latency_micros > 0 {
            std::thread::sleep(Duration::from_micros(plan.latency_micros));
        }
        let result = match plan.fault {
            Some(code) => Err(HcnFailure::new(
                code,
                format!("(fault injected into {})", function.name()),
            )),
            None if host.stopped => Err(super::outage::not_running(function)),
            None => operation(&mut State {
                locked: &locked,
                host: &mut host,
            }),
        };
        store::write_json(&locked.host_path(), &host)?;
        if plan.crash {
            log::warn!(
                "HCN emulator: crash point after {} reached, aborting",
                function.name()
            );
            std::process::abort();
        }
        result
    }

    /// Simulates an HNS service stop, restart or a host reboot (see [`Outage`]); not an HCN
    /// call.
    pub fn suffer(&self, outage: Outage) -> Result<Dropped, HcnFailure> {
        self.control(|state| state.suffer(outage))
    }

    /// Writes drift HNS's own checks would refuse (see [`Injection`]); returns the new
    /// object's ID. Not an HCN call.
    pub fn inject(&self, injection: &Injection) -> Result<Guid, HcnFailure> {
        self.control(|state| state.inject(injection))
    }

    /// Runs a test control that changes objects under the lock, outside of any counted call.
    fn control<T>(
        &self,
        operation: impl FnOnce(&mut State<'_>) -> Result<T, HcnFailure>,
    ) -> Result<T, HcnFailure> {
        let locked = self.store.lock()?;
        let mut host = read_host(&locked)?;
        let value = operation(&mut State {
            locked: &locked,
            host: &mut host,
        })?;
        store::write_json(&locked.host_path(), &host)?;
        Ok(value)
    }

    /// Reads or changes the host state outside of any counted call (test controls, version).
    pub fn with_host<T>(&self, change: impl FnOnce(&mut HostState) -> T) -> Result<T, HcnFailure> {
        let locked = self.store.lock()?;
        let mut host = read_host(&locked)?;
        let before = host.clone();
        let value = change(&mut host);
        if host != before {
            store::write_json(&locked.host_path(), &host)?;
        }
        Ok(value)
    }

    /// Calls per function since the last reset.
    pub fn stats(&self) -> Result<BTreeMap<String, u64>, HcnFailure> {
        self.with_host(|host| host.counters.clone())
    }

    /// Clears the call counters and returns what they were.
    pub fn reset_stats(&self) -> Result<BTreeMap<String, u64>, HcnFailure> {
        self.with_host(|host| {
            let counters = host.counters.clone();
            host.reset_counters();
            counters
        })
    }

    /// The HNS version this host reports.
    pub fn version(&self) -> Result<HnsVersion, HcnFailure> {
        self.with_host(|host| host.version)
    }

    /// Changes the HNS version this host reports.
    pub fn set_version(&self, version: HnsVersion) -> Result<(), HcnFailure> {
        self.with_host(|host| host.version = version)
    }

    /// Changes the Windows build this host reports and nothing else (a test that judges the
    /// same programmed rules under another build's semantics); a host of another release is
    /// [`Engine::set_release`].
    pub fn set_windows_build(&self, build: WindowsBuild) -> Result<(), HcnFailure> {
        self.with_host(|host| host.windows_build = build)
    }

    /// Makes this host one of `release`: its Windows build and the HNS version it reports.
    pub fn set_release(&self, release: WindowsRelease) -> Result<(), HcnFailure> {
        self.with_host(|host| {
            host.windows_build = release.build;
            host.version = release.hns;
        })
    }

    /// The host adapter networks that reach the outside are bound to.
    pub fn adapter(&self) -> Result<HostAdapter, HcnFailure> {
        self.with_host(|host| host.adapter.clone())
    }

    /// Changes the host adapter (its name, address or MAC), e.g. to a node's real ones.
    pub fn set_adapter(&self, adapter: HostAdapter) -> Result<(), HcnFailure> {
        self.with_host(|host| host.adapter = adapter)
    }

    /// The host's virtual switch: its settle time, and whether it has settled.
    pub fn switch(&self) -> Result<VirtualSwitch, HcnFailure> {
        self.with_host(|host| host.switch.clone())
    }

    /// Changes how long the management IP takes to appear on a switch created from now on
    /// (0 = at once).
    pub fn set_switch_settle(&self, settle: Duration) -> Result<(), HcnFailure> {
        let millis = u64::try_from(settle.as_millis()).unwrap_or(u64::MAX);
        self.with_host(|host| host.switch.settle_millis = millis)
    }

    /// Lets the current switch's management IP appear now instead of when it settles.
    pub fn settle_switch_now(&self) -> Result<(), HcnFailure> {
        self.with_host(|host| host.switch.settle_now())
    }

    /// Makes the `nth` next call of `function` fail with `code`, once.
    pub fn inject_fault(
        &self,
        function: Function,
        nth: u64,
        code: HResult,
    ) -> Result<(), HcnFailure> {
        self.with_host(|host| host.inject_fault(function, nth, code))
    }

    /// Makes the process abort right after the `nth` next call of `function` completes.
    pub fn crash_after(&self, function: Function, nth: u64) -> Result<(), HcnFailure> {
        self.with_host(|host| host.crash_after(function, nth))
    }

    /// Sleeps `micros` inside every call from now on (0 = off).
    pub fn set_latency(&self, micros: u64) -> Result<(), HcnFailure> {
        self.with_host(|host| host.latency_micros = micros)
    }

    /// Makes every policy write (`HcnModifyEndpoint`, `HcnModifyNetwork`) to `object` fail
    /// with `code` until the controls are cleared: an endpoint or network HNS keeps refusing.
    pub fn refuse_policy_writes(&self, object: Guid, code: HResult) -> Result<(), HcnFailure> {
        self.with_host(|host| {
            host.refusals.retain(|refusal| refusal.object != object);
            host.refusals.push(super::host::Refusal {
                object,
                h_result: code.0,
            });
        })
    }

    /// Removes pending faults, crash points, refusals and latency.
    pub fn clear_controls(&self) -> Result<(), HcnFailure> {
        self.with_host(|host| {
            host.faults.clear();
            host.crashes.clear();
            host.refusals.clear();
            host.latency_micros = 0;
        })
    }

    /// Reads the host under the lock outside of any counted call, writing nothing: the
    /// test-only queries (such as [`Engine::check_packet`]) that must see one consistent host.
    pub(crate) fn inspect<T>(
        &self,
        read: impl FnOnce(&State<'_>) -> Result<T, HcnFailure>,
    ) -> Result<T, HcnFailure> {
        let locked = self.store.lock()?;
        let mut host = read_host(&locked)?;
        read(&State {
            locked: &locked,
            host: &mut host,
        })
    }
}

fn read_host(locked: &Locked<'_>) -> Result<HostState, HcnFailure> {
    Ok(store::read_json(&locked.host_path())?.unwrap_or_default())
}
