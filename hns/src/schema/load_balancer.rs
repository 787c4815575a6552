//! `HostComputeLoadBalancer`: what kube-proxy's winkernel proxier creates per Service port
//! (the `hcn/hcnloadbalancer.go` schema of hcsshim and hnslib). cni-win's plugins never make
//! one; the node tools list them and the emulator stores them.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::flags::{LoadBalancerFlags, LoadBalancerPortMappingFlags};
use super::{SchemaVersion, is_zero};
use crate::guid::Guid;

/// An HCN load balancer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct HostComputeLoadBalancer {
    /// Load balancer GUID.
    #[serde(rename = "ID", default, skip_serializing_if = "Guid::is_zero")]
    pub id: Guid,
    /// The backends; the VIP's traffic is spread over these endpoints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_compute_endpoints: Vec<Guid>,
    /// Source VIP: the address backends see traffic come from.
    #[serde(
        rename = "SourceVIP",
        default,
        with = "super::address::empty_as_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub source_vip: Option<IpAddr>,
    /// Frontend VIPs: the addresses clients connect to.
    #[serde(
        rename = "FrontendVIPs",
        default,
        skip_serializing_if = "Vec::is_empty"
    )]
    pub frontend_vips: Vec<IpAddr>,
    /// Which frontend ports map to which backend ports, per protocol.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub port_mappings: Vec<LoadBalancerPortMapping>,
    /// Always `{"Major":2,"Minor":0}`.
    #[serde(default)]
    pub schema_version: SchemaVersion,
    /// Load balancer flags (DSR, IPv6).
    #[serde(default, skip_serializing_if = "LoadBalancerFlags::is_empty")]
    pub flags: LoadBalancerFlags,
}

/// One port mapping of a load balancer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct LoadBalancerPortMapping {
    /// IP protocol number.
    #[serde(default)]
    pub protocol: u32,
    /// The port the backends listen on.
    #[serde(default)]
    pub internal_port: u16,
    /// The port clients connect to on the VIP.
    #[serde(default)]
    pub external_port: u16,
    /// 0 none, 1 SourceIPProtocol, 2 SourceIP.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub distribution_type: u32,
    /// Port mapping flags (ILB, LocalRoutedVIP, UseMux, PreserveDIP).
    #[serde(
        default,
        skip_serializing_if = "LoadBalancerPortMappingFlags::is_empty"
    )]
    pub flags: LoadBalancerPortMappingFlags,
}
