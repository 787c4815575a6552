//! host-local's integration tests, one binary: the library and the `host-local` binary against
//! the reference's store, hostile nodes and configs, crashes, a model of random operations, and
//! kube-proxy's source VIP.

mod about;
mod binary;
mod common;
mod hostile;
mod hostile_del;
mod library;
mod model;
mod reads;
mod recovery;
mod source_vip;
