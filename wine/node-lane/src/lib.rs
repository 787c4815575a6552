//! What the node lane (`src/main.rs`) and the NetworkPolicy benchmark (`bench/netpol`) share:
//! the flags that say where they run, the control plane (the real kube-apiserver and etcd they
//! both put their objects through), and the NetworkPolicy agent as a process of theirs.
#![forbid(unsafe_code)]

pub mod agent_process;
pub mod cli;
pub mod control_plane;

/// The node the agent (and, in the lane, kube-proxy) runs on, by its name in the API: the
/// Node object the harness registers and every pod it binds to the node name it.
pub const NODE_NAME: &str = "node1";
