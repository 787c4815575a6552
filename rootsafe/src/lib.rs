//! What a process running as root/SYSTEM may do with files and child processes.
//!
//! cni-win's plugins run as root (Linux builds) or SYSTEM (Windows), its operator command as an
//! administrator, in places others can write: a data directory, Flannel's run directory, a log
//! file, a node's CNI directories, `CNI_PATH`. Three rules follow, and each is kept here once:
//!
//! - [`file`](mod@file): a file found there is used only when it is a regular file. Nothing is opened
//!   through a link (a symlink or junction would make the process read or write where it was
//!   never told to), and nothing blocks on a special file (a FIFO without a writer blocks an
//!   ordinary open forever; a device may never end, or act when opened).
//! - [`deadline`]: nothing waits for another process without a deadline. A lock's holder may be
//!   wedged; a waiter gives up in time to answer its caller rather than be killed by it.
//! - [`child`]: a child process runs with a deadline too: fed and drained on their own threads so
//!   neither side blocks the other, killed and reaped when its time is up.
//! - [`writers`]: a file whose content decides what the node enforces is trusted only when the
//!   node's administrators alone may write it (and its directory).
//!
//! Errors are [`std::io::Error`]s or small enums of them: every caller words its own message,
//! naming its path, its action and the fix.

// `unsafe` is denied but where [`writers`] asks the platform who may write a path: Windows'
// security descriptors and Unix's effective user have no safe std API.
#![deny(unsafe_code)]
#![warn(missing_docs)]

pub mod child;
pub mod deadline;
pub mod file;
pub mod writers;
