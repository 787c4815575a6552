//! The plugin error codes of cni-win's HNS plugins (110-119).
//!
//! The spec reserves 0-99; host-local uses 100-102 (`ipam_host_local::POOL_EXHAUSTED` and
//! friends), which reach the runtime unchanged. Every error also carries, in `details`, the
//! HRESULT and HNS error record of the call that failed when there was one.
//!
//! | code | constant | meaning |
//! | --- | --- | --- |
//! | 110 | [`HNS_CALL_FAILED`] | an HNS call failed for a reason that is neither the config's fault nor transient; or the pod's address is held by an endpoint that must stay (see `stale`: remote, foreign, alive; the message names it) |
//! | 111 | [`ENDPOINT_CONFLICT`] | the endpoint with this attachment's ID (or the reference plugin's endpoint of this attachment, holding its address) exists but is not this attachment's (another network or other IPs) or is attached to another namespace; or a hostPort of the pod is held by another pod (the message names the port and the holder) |
//! | 112 | [`HNS_FEATURE_MISSING`] | the config asks for something this host's HNS version cannot do (loopbackDSR, IPv6); the message names the key and the version needed |
//! | 113 | [`CHECK_MISMATCH`] | CHECK: the endpoint differs from what the config and prevResult say; the message lists each difference |
//! | 114 | [`GC_INCOMPLETE`] | GC removed what it could but some endpoints or reservations could not be removed; the message lists them |
//!
//! Spec codes used: 4 (a `CNI_NETNS` that is neither an HCN namespace GUID nor a path ending in
//! one), 7 (invalid config, naming the key; an HNS network of the wrong type; settings HNS
//! rejects; an `ipam.type` that delegates back into a plugin, naming the chain), 11 (the HNS
//! network does not exist yet, or HNS cannot be reached, or another command of the attachment
//! still holds its lock after the deadline), 50 (STATUS: not ready, with the reason).

use cni::ErrorCode;

/// 110: an HNS call failed for another reason.
pub const HNS_CALL_FAILED: ErrorCode = ErrorCode::Plugin(110);
/// 111: an endpoint with this attachment's ID belongs to something else, or a host port is taken.
pub const ENDPOINT_CONFLICT: ErrorCode = ErrorCode::Plugin(111);
/// 112: this host's HNS version lacks a feature the config needs.
pub const HNS_FEATURE_MISSING: ErrorCode = ErrorCode::Plugin(112);
/// 113: CHECK found the attachment different from what it should be.
pub const CHECK_MISMATCH: ErrorCode = ErrorCode::Plugin(113);
/// 114: GC could not remove everything it should have.
pub const GC_INCOMPLETE: ErrorCode = ErrorCode::Plugin(114);
