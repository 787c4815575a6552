//! `host.json`: per-host facts (HNS version, Windows build, the host adapter and its virtual
//! switch, namespace compartment counter) and the test controls, stored with the state so
//! they work across processes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::acl::PolicyWrites;
use super::adapter::{HostAdapter, VirtualSwitch};
use super::failure::HcnFailure;
use hns::Guid;
use hns::features::{HnsVersion, WindowsBuild};
use hns::hresult::HResult;
use hns::raw::Function;

/// Contents of `host.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HostState {
    /// The HNS version this emulated host reports.
    #[serde(default = "HnsVersion::default_emulated")]
    pub version: HnsVersion,
    /// The Windows build this emulated host runs (a Windows Server 2022 host's unless set).
    #[serde(default = "default_windows_build")]
    pub windows_build: WindowsBuild,
    /// The physical adapter networks that reach the outside are bound to.
    #[serde(default)]
    pub adapter: HostAdapter,
    /// The external switch HNS builds on the adapter for those networks.
    #[serde(default)]
    pub switch: VirtualSwitch,
    /// Next compartment number for a new namespace.
    #[serde(default = "first_namespace_id")]
    pub next_namespace_id: u32,
    /// Calls per function name since the last reset.
    #[serde(default)]
    pub counters: BTreeMap<String, u64>,
    /// Policy writes on live endpoints and networks since the last reset.
    #[serde(default)]
    pub policy_writes: PolicyWrites,
    /// Pending injected failures.
    #[serde(default)]
    pub faults: Vec<Fault>,
    /// Sleep this long inside every call (models real HNS cost).
    #[serde(default)]
    pub latency_micros: u64,
    /// Pending crash points.
    #[serde(default)]
    pub crashes: Vec<CrashPoint>,
    /// Objects whose every policy write fails, until the controls are cleared.
    #[serde(default)]
    pub refusals: Vec<Refusal>,
    /// The HNS service is stopped ([`crate::Outage::Stop`]): every call fails.
    #[serde(default)]
    pub stopped: bool,
}

fn default_windows_build() -> WindowsBuild {
    WindowsBuild::SERVER_2022
}

/// Compartment 1 is the host's default compartment.
pub(super) fn first_namespace_id() -> u32 {
    2
}

impl Default for HostState {
    fn default() -> HostState {
        HostState {
            version: HnsVersion::default_emulated(),
            windows_build: default_windows_build(),
            adapter: HostAdapter::default(),
            switch: VirtualSwitch::default(),
            next_namespace_id: first_namespace_id(),
            counters: BTreeMap::new(),
            policy_writes: PolicyWrites::default(),
            faults: Vec::new(),
            latency_micros: 0,
            crashes: Vec::new(),
            refusals: Vec::new(),
            stopped: false,
        }
    }
}

/// "Call number `call` of `function` fails with `hresult`", once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Fault {
    /// Function name, e.g. `HcnCreateEndpoint`.
    pub function: String,
    /// The counter value (1-based, since the last reset) of the call that fails.
    pub call: u64,
    /// The HRESULT returned.
    pub h_result: u32,
}

/// "Every policy write (`HcnModifyEndpoint`, `HcnModifyNetwork`) to `object` fails with
/// `hresult`": an endpoint or network HNS keeps refusing, until the controls are cleared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Refusal {
    /// The endpoint or network.
    pub object: Guid,
    /// The HRESULT returned.
    pub h_result: u32,
}

/// "Abort the process right after call number `call` of `function` completes", once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct CrashPoint {
    /// The raw function whose call aborts the process, to test crash recovery mid-operation.
    pub function: String,
    /// The counter value of the call after which the process aborts.
    pub call: u64,
}

/// What the controls decided for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallPlan {
    /// Fail with this HRESULT instead of running the call.
    pub fault: Option<HResult>,
    /// Abort after the call.
    pub crash: bool,
    /// Sleep this long first.
    pub latency_micros: u64,
}

impl HostState {
    /// Counts a call of `function` and consumes any fault or crash point due for it.
    pub fn begin_call(&mut self, function: Function) -> CallPlan {
        let name = function.name();
        let counter = self.counters.entry(name.to_owned()).or_insert(0);
        *counter += 1;
        let call = *counter;
        let fault = take(&mut self.faults, |fault| {
            fault.function == name && fault.call == call
        })
        .map(|fault| HResult(fault.h_result));
        let crash = take(&mut self.crashes, |crash| {
            crash.function == name && crash.call == call
        })
        .is_some();
        CallPlan {
            fault,
            crash,
            latency_micros: self.latency_micros,
        }
    }

    /// Schedules a failure of the `nth` next call of `function` (1 = the very next).
    pub fn inject_fault(&mut self, function: Function, nth: u64, code: HResult) {
        let call = self.calls(function) + nth.max(1);
        self.faults.push(Fault {
            function: function.name().to_owned(),
            call,
            h_result: code.0,
        });
    }

    /// Schedules an abort after the `nth` next call of `function`.
    pub fn crash_after(&mut self, function: Function, nth: u64) {
        let call = self.calls(function) + nth.max(1);
        self.crashes.push(CrashPoint {
            function: function.name().to_owned(),
            call,
        });
    }

    /// Calls of `function` since the last reset.
    pub fn calls(&self, function: Function) -> u64 {
        self.counters.get(function.name()).copied().unwrap_or(0)
    }

    /// Fails every policy write to `object` with the HRESULT it was given, if one was.
    pub fn check_refusal(&self, object: Guid) -> Result<(), HcnFailure> {
        match self
            .refusals
            .iter()
            .find(|refusal| refusal.object == object)
        {
            Some(refusal) => Err(HcnFailure::new(
                HResult(refusal.h_result),
                format!("(refusal injected for {object})"),
            )),
            None => Ok(()),
        }
    }

    /// Clears the counters. Pending faults and crash points keep their relative position.
    pub fn reset_counters(&mut self) {
        for fault in &mut self.faults {
            fault.call -= self.counters.get(&fault.function).copied().unwrap_or(0);
        }
        for crash in &mut self.crashes {
            crash.call -= self.counters.get(&crash.function).copied().unwrap_or(0);
        }
        self.counters.clear();
    }
}

fn take<T>(items: &mut Vec<T>, pick: impl Fn(&T) -> bool) -> Option<T> {
    let index = items.iter().position(pick)?;
    Some(items.remove(index))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_fires_once_on_the_nth_call() {
        let mut host = HostState::default();
        host.begin_call(Function::CreateEndpoint);
        host.inject_fault(Function::CreateEndpoint, 2, HResult::E_FAIL);
        assert_eq!(host.begin_call(Function::CreateEndpoint).fault, None);
        assert_eq!(host.begin_call(Function::OpenEndpoint).fault, None);
        assert_eq!(
            host.begin_call(Function::CreateEndpoint).fault,
            Some(HResult::E_FAIL)
        );
        assert_eq!(host.begin_call(Function::CreateEndpoint).fault, None);
        assert!(host.faults.is_empty());
    }

    #[test]
    fn reset_keeps_pending_controls_relative() {
        let mut host = HostState::default();
        host.begin_call(Function::DeleteEndpoint);
        host.crash_after(Function::DeleteEndpoint, 1);
        host.reset_counters();
        assert!(host.begin_call(Function::DeleteEndpoint).crash);
    }
}
