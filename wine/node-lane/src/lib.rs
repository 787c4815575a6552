//! What the node lane (`src/main.rs`) and the NetworkPolicy benchmark (`bench/netpol`) share:
//! the control plane, the real kube-apiserver and etcd they both put their objects through.
#![forbid(unsafe_code)]

pub mod control_plane;
