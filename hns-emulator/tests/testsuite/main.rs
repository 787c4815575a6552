//! The emulator's integration tests, one binary: it behaves like HNS (validation, error codes and
//! records, enumerations, ACLs, load balancers), for the clients beside the plugins (flanneld,
//! kube-proxy), under the deadline layer, through outages, and with many processes on one state.

mod acl;
mod client;
mod common;
mod deadline;
mod emulator;
mod emulator_fidelity;
mod flanneld;
mod load_balancers;
mod outage;
mod processes;
mod v1_view;
