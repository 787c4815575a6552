//! The `Flags` bit sets of HCN documents, typed so a network flag cannot be tested against an
//! endpoint's. Each serialises as the bare number HNS writes, and keeps bits this crate does not
//! name, so a document read from HNS is written back exactly as it was.

use std::ops::{BitOr, BitOrAssign};

use serde::{Deserialize, Serialize};

macro_rules! flag_set {
    ($(#[$doc:meta])* $name:ident { $($(#[$flag_doc:meta])* $flag:ident = $bits:expr;)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(u32);

        impl $name {
            /// No flags.
            pub const NONE: $name = $name(0);
            $($(#[$flag_doc])* pub const $flag: $name = $name($bits);)*

            /// The flags as HNS wrote them, unknown bits included.
            pub const fn from_bits_retain(bits: u32) -> $name {
                $name(bits)
            }

            /// The number HNS reads.
            pub const fn bits(self) -> u32 {
                self.0
            }

            /// Whether every flag of `other` is set.
            pub const fn contains(self, other: $name) -> bool {
                self.0 & other.0 == other.0
            }

            /// Whether no flag is set (the field is then left out of the document).
            pub const fn is_empty(&self) -> bool {
                self.0 == 0
            }
        }

        impl BitOr for $name {
            type Output = $name;

            fn bitor(self, other: $name) -> $name {
                $name(self.0 | other.0)
            }
        }

        impl BitOrAssign for $name {
            fn bitor_assign(&mut self, other: $name) {
                self.0 |= other.0;
            }
        }
    };
}

flag_set! {
    /// `HostComputeNetwork.Flags` (hcsshim's `NetworkFlags`).
    NetworkFlags {
        /// `EnableNonPersistent`: the network does not survive an HNS restart (flannel sets it).
        ENABLE_NON_PERSISTENT = 8;
        /// `DisableHostPort`.
        DISABLE_HOST_PORT = 1024;
        /// `EnableIov`.
        ENABLE_IOV = 8192;
    }
}

flag_set! {
    /// `Subnet.Flags`: how HNS treats a subnet's addresses.
    SubnetFlags {
        /// `DoNotReserveGatewayAddress`: the gateway IP may be given to an endpoint.
        DO_NOT_RESERVE_GATEWAY_ADDRESS = 1;
    }
}

flag_set! {
    /// `HostComputeEndpoint.Flags`.
    EndpointFlags {
        /// `RemoteEndpoint`: an endpoint standing for a container on another host.
        REMOTE_ENDPOINT = 1;
    }
}

flag_set! {
    /// `Flags` of a `PortMapping` or `OutBoundNAT` endpoint policy (hcsshim's `NatFlags`).
    NatFlags {
        /// `LocalRoutedVip`: also answer NodeIP:HostPort from the node itself.
        LOCAL_ROUTED_VIP = 1;
        /// `IPv6`: the mapping is for the pod's IPv6 address.
        IPV6 = 2;
    }
}

flag_set! {
    /// `HostComputeLoadBalancer.Flags`.
    LoadBalancerFlags {
        /// `EnableDirectServerReturn`: replies bypass the load balancer.
        DSR = 1;
        /// `IPv6`: the load balancer serves IPv6 (IPv4 when unset).
        IPV6 = 2;
    }
}

flag_set! {
    /// `Flags` of a load balancer's port mapping (hcsshim's `LoadBalancerPortMappingFlags`).
    LoadBalancerPortMappingFlags {
        /// `ILB`: an internal load balancer.
        ILB = 1;
        /// `LocalRoutedVIP`: the VIP is reachable from the node itself.
        LOCAL_ROUTED_VIP = 2;
        /// `UseMux`.
        USE_MUX = 4;
        /// `PreserveDIP`: backends see the original destination.
        PRESERVE_DIP = 8;
    }
}

flag_set! {
    /// `Flags` of a query document: how much a properties call returns.
    QueryFlags {
        /// `Detailed`: adds health data.
        DETAILED = 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_the_bare_number_and_keep_unknown_bits() {
        let flags = NetworkFlags::ENABLE_NON_PERSISTENT | NetworkFlags::from_bits_retain(1 << 20);
        let json = serde_json::to_string(&flags).unwrap();
        assert_eq!(json, (8 | (1 << 20)).to_string());
        let back: NetworkFlags = serde_json::from_str(&json).unwrap();
        assert_eq!(back, flags);
        assert!(back.contains(NetworkFlags::ENABLE_NON_PERSISTENT));
        assert!(!back.contains(NetworkFlags::ENABLE_IOV));
        assert!(NetworkFlags::NONE.is_empty() && !back.is_empty());
    }
}
