//! One command at a time per attachment (network, container ID, ifname).
//!
//! Runtimes retry, and a DEL can race a slow ADD of the same pod. Two commands of one
//! attachment interleaving lose state: a failed ADD's rollback deleted the endpoint a
//! concurrent ADD had just adopted, leaving a result the runtime believes in with neither
//! endpoint nor reservation behind it. ADD, DEL and CHECK therefore hold the attachment's lock
//! from before they look at anything until they are done.
//!
//! The lock is a **named kernel object**, not a file: nothing is written anywhere (a plugin
//! writes only inside the directories its config names, and with a delegated IPAM the config
//! names none), it works the same whatever the IPAM, and the kernel releases it when its
//! holder exits or crashes, so a killed plugin never leaves a stale lock for anyone to clean.
//!
//! | platform | object | name |
//! | --- | --- | --- |
//! | Windows | a mutex in the global namespace | `Global\cni-win-attachment-<GUID>` |
//! | Linux (the emulator) | a Unix socket bound in the abstract namespace | `@cni-win-attachment-<GUID>` |
//!
//! `<GUID>` is the attachment's deterministic endpoint GUID, so the lock, like the endpoint,
//! is found from the three names alone by every command and by operator tools
//! ([`try_lock`]: `cni-win sweep` takes it to know whether a command is in flight).
//!
//! Waiting is bounded: after the deadline (config key `attachmentLockTimeoutSeconds`, else
//! the variable `CNI_WIN_ATTACHMENT_LOCK_TIMEOUT_SECONDS`, else 60 s) the command fails with
//! code 11 ("try again later") naming the attachment and the lock. 60 s, as for host-local's
//! store lock: the holder is a command of the same pod, itself bounded by the HNS deadline
//! (30 s per hung call), and a waiter that gives up at 60 s answers well inside kubelet's
//! `--runtime-request-timeout` (2 min for DEL, twice that for ADD), so the runtime retries
//! on our answer rather than killing us.

use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

use cni::{Error, ErrorCode, NetConf};
use rootsafe::deadline::{self, Backoff};

use crate::identity::endpoint_guid;
use cni::seconds::Seconds;

/// The config key of the deadline.
pub const CONFIG_KEY: &str = "attachmentLockTimeoutSeconds";
/// The environment variable of the deadline.
pub const ENV_VAR: &str = "CNI_WIN_ATTACHMENT_LOCK_TIMEOUT_SECONDS";
/// The deadline when neither is set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

pub(crate) const SETTING: Seconds = Seconds {
    config_key: CONFIG_KEY,
    env_var: ENV_VAR,
    default: DEFAULT_TIMEOUT,
    max: 3600.0,
    what: "the attachment lock deadline",
};

/// The name of the lock of attachment (`network`, `container_id`, `ifname`), as the platform
/// knows it (see the module docs).
pub fn name(network: &str, container_id: &str, ifname: &str) -> String {
    platform::name(endpoint_guid(network, container_id, ifname))
}

/// Takes the lock of attachment (`network`, `container_id`, `ifname`) if no one holds it, without
/// waiting: `Ok(None)` means a command of that attachment is in flight. The lock is held
/// until the [`Guard`] drops, on the thread that took it.
pub fn try_lock(network: &str, container_id: &str, ifname: &str) -> io::Result<Option<Guard>> {
    let mut object = platform::Object::open(endpoint_guid(network, container_id, ifname))?;
    Ok(object.try_take()?.then(|| Guard::new(object)))
}

/// Takes the lock of the attachment a command acts on, waiting at most the config's deadline:
/// code 11 naming the attachment and the lock when a command of it is still running then.
///
/// `None` when this process runs as another cni-win plugin's delegate (its IPAM, or a loop
/// the delegation depth bound stops): the plugin that ran it holds the attachment's lock, and
/// waiting for it would wait for ourselves.
pub(crate) fn lock(
    conf: &NetConf,
    container_id: &str,
    ifname: &str,
) -> Result<Option<Guard>, Error> {
    if delegated() {
        return Ok(None);
    }
    lock_within(&conf.name, container_id, ifname, SETTING.read(conf)?).map(Some)
}

/// As [`lock`], waiting at most `timeout` (DEL reads its deadline leniently).
pub(crate) fn lock_waiting(
    network: &str,
    container_id: &str,
    ifname: &str,
    timeout: Duration,
) -> Result<Option<Guard>, Error> {
    if delegated() {
        return Ok(None);
    }
    lock_within(network, container_id, ifname, timeout).map(Some)
}

/// Whether this process runs as another cni-win plugin's delegate, which holds the lock.
fn delegated() -> bool {
    std::env::var_os(cni::delegate::CHAIN_VAR).is_some()
}

fn lock_within(
    network: &str,
    container_id: &str,
    ifname: &str,
    timeout: Duration,
) -> Result<Guard, Error> {
    let guid = endpoint_guid(network, container_id, ifname);
    let cannot = |e: io::Error| {
        Error::new(
            ErrorCode::TryAgainLater,
            format!(
                "cannot take the lock {} of attachment {container_id}/{ifname} on network {network:?}: {e}",
                platform::name(guid)
            ),
        )
    };
    let mut object = platform::Object::open(guid).map_err(cannot)?;
    let taken = deadline::poll(Instant::now() + timeout, Backoff::default(), || {
        object.try_take().map(|taken| taken.then_some(()))
    })
    .map_err(cannot)?;
    match taken {
        Some(()) => Ok(Guard::new(object)),
        None => Err(Error::new(
            ErrorCode::TryAgainLater,
            format!(
                "another command of attachment {container_id}/{ifname} on network {network:?} \
                 still holds its lock {} after {:.1} s; try again later",
                platform::name(guid),
                timeout.as_secs_f64()
            ),
        )
        .with_details(format!(
            "a runtime retry or a DEL racing a slow ADD of the same pod; if that command is \
             stuck (see the HNS deadline), stop it. The deadline is {CONFIG_KEY} or {ENV_VAR}"
        ))),
    }
}

/// A held attachment lock; dropping it releases the lock. It stays on the thread that took it
/// (a Windows mutex belongs to its thread).
pub struct Guard {
    object: platform::Object,
    _not_send: PhantomData<*const ()>,
}

impl Guard {
    fn new(object: platform::Object) -> Guard {
        Guard {
            object,
            _not_send: PhantomData,
        }
    }
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard")
            .field("lock", &platform::name(self.object.guid()))
            .finish()
    }
}

#[cfg(not(windows))]
mod platform {
    //! A Unix socket bound in Linux's abstract namespace: the bind is exclusive, needs no
    //! file, and the kernel unbinds it when the holder's last descriptor closes.

    use std::io;
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};

    use hns::Guid;

    pub fn name(guid: Guid) -> String {
        format!("@cni-win-attachment-{guid}")
    }

    pub struct Object {
        guid: Guid,
        address: SocketAddr,
        bound: Option<UnixListener>,
    }

    impl Object {
        pub fn open(guid: Guid) -> io::Result<Object> {
            let text = name(guid);
            let address = SocketAddr::from_abstract_name(&text.as_bytes()[1..])?;
            Ok(Object {
                guid,
                address,
                bound: None,
            })
        }

        pub fn guid(&self) -> Guid {
            self.guid
        }

        pub fn try_take(&mut self) -> io::Result<bool> {
            match UnixListener::bind_addr(&self.address) {
                Ok(listener) => {
                    self.bound = Some(listener);
                    Ok(true)
                }
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => Ok(false),
                Err(e) => Err(e),
            }
        }
    }
}

#[cfg(windows)]
#[allow(unsafe_code)]
mod platform {
    //! A named mutex in the global namespace: shared by every session (kubelet's, containerd's,
    //! an operator's), owned by the thread that waited on it, and abandoned (so free again)
    //! when its holder exits.

    use std::io;

    use hns::Guid;
    use windows::Win32::Foundation::{
        CloseHandle, HANDLE, WAIT_ABANDONED, WAIT_FAILED, WAIT_OBJECT_0, WAIT_TIMEOUT,
    };
    use windows::Win32::System::Threading::{CreateMutexW, ReleaseMutex, WaitForSingleObject};
    use windows::core::HSTRING;

    pub fn name(guid: Guid) -> String {
        format!("Global\\cni-win-attachment-{guid}")
    }

    pub struct Object {
        guid: Guid,
        handle: HANDLE,
        owned: bool,
    }

    impl Object {
        pub fn open(guid: Guid) -> io::Result<Object> {
            let name = HSTRING::from(name(guid));
            // SAFETY: default security, not initially owned, and a NUL-terminated name that
            // outlives the call; the returned handle is owned by `Object` and closed on drop.
            let handle = unsafe { CreateMutexW(None, false, &name) }.map_err(io::Error::from)?;
            Ok(Object {
                guid,
                handle,
                owned: false,
            })
        }

        pub fn guid(&self) -> Guid {
            self.guid
        }

        pub fn try_take(&mut self) -> io::Result<bool> {
            // SAFETY: `handle` is the open mutex handle this object owns.
            let event = unsafe { WaitForSingleObject(self.handle, 0) };
            if event == WAIT_OBJECT_0 || event == WAIT_ABANDONED {
                if event == WAIT_ABANDONED {
                    log::warn!(
                        "the attachment lock {} was abandoned by a command that exited \
                         holding it",
                        name(self.guid)
                    );
                }
                self.owned = true;
                Ok(true)
            } else if event == WAIT_TIMEOUT {
                Ok(false)
            } else if event == WAIT_FAILED {
                Err(io::Error::last_os_error())
            } else {
                Err(io::Error::other(format!(
                    "WaitForSingleObject returned {:#x}",
                    event.0
                )))
            }
        }
    }

    impl Drop for Object {
        fn drop(&mut self) {
            if self.owned {
                // SAFETY: this thread owns the mutex (the guard is not Send).
                if let Err(e) = unsafe { ReleaseMutex(self.handle) } {
                    log::warn!("releasing the attachment lock {}: {e}", name(self.guid));
                }
            }
            // SAFETY: the handle is open and closed exactly once, here.
            let _ = unsafe { CloseHandle(self.handle) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn try_lock_says_whether_a_command_of_the_attachment_is_in_flight() {
        let network = format!("lock-{}", std::process::id());
        let held = try_lock(&network, "pod", "eth0").unwrap().expect("free");
        assert!(try_lock(&network, "pod", "eth0").unwrap().is_none());
        // Another attachment of the same pod, or the same pod on another network, is free.
        assert!(try_lock(&network, "pod", "eth1").unwrap().is_some());
        assert!(try_lock("other", "pod", "eth0").unwrap().is_some());
        drop(held);
        assert!(try_lock(&network, "pod", "eth0").unwrap().is_some());
    }

    #[test]
    fn waiting_gives_up_at_the_deadline_with_code_11_naming_the_lock() {
        let network = format!("wait-{}", std::process::id());
        let _held = try_lock(&network, "pod", "eth0").unwrap().unwrap();
        let started = Instant::now();
        let error = lock_within(&network, "pod", "eth0", Duration::from_millis(100)).unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(100));
        assert_eq!(error.code(), ErrorCode::TryAgainLater);
        assert!(
            error.msg().contains(&name(&network, "pod", "eth0")),
            "{}",
            error.msg()
        );
        assert!(error.msg().contains("pod/eth0"), "{}", error.msg());
    }

    #[test]
    fn the_deadline_follows_the_store_locks_rules() {
        assert_eq!(SETTING.from(None, None).unwrap(), DEFAULT_TIMEOUT);
        assert_eq!(
            SETTING.from(None, Some("2.5")).unwrap(),
            Duration::from_millis(2500)
        );
        assert_eq!(
            SETTING
                .from(Some(&serde_json::json!(5)), Some("2.5"))
                .unwrap(),
            Duration::from_secs(5),
            "the config key wins over the variable"
        );
        let error = SETTING.from(Some(&serde_json::json!(0)), None).unwrap_err();
        assert_eq!(error.code(), ErrorCode::InvalidConfig);
        assert!(error.msg().starts_with(CONFIG_KEY), "{}", error.msg());
    }
}
