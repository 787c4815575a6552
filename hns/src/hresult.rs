//! HRESULT values that HCN returns, with their names and standard messages.
//!
//! The emulator returns exactly these codes, and the typed error layer maps them
//! to [`crate::ErrorKind`]s, so both sides agree on one table.

use std::fmt;

/// An HRESULT, kept as the unsigned 32-bit pattern Windows error records print in decimal.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HResult(pub u32);

macro_rules! hresults {
    ($($(#[$doc:meta])* $name:ident = $value:literal, $message:literal;)*) => {
        impl HResult {
            $($(#[$doc])* pub const $name: HResult = HResult($value);)*

            /// Every code in the table.
            pub const ALL: &'static [HResult] = &[$(HResult::$name),*];

            /// The symbolic name (`HCN_E_ENDPOINT_NOT_FOUND`), when the code is one HCN is known to use.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some(stringify!($name)),)*
                    _ => None,
                }
            }

            /// The system message text for the code (what HNS puts in `Error`).
            pub fn message(self) -> &'static str {
                match self.0 {
                    $($value => $message,)*
                    _ => "Unspecified error",
                }
            }
        }
    };
}

hresults! {
    /// Success.
    S_OK = 0x0000_0000, "The operation completed successfully.";
    /// `E_NOTIMPL` (hcsshim's `HCN_E_NOTIMPL`).
    E_NOTIMPL = 0x8000_4001, "Not implemented";
    /// Unspecified failure.
    E_FAIL = 0x8000_4005, "Unspecified error";
    /// `E_HANDLE`: a handle that was never opened or is already closed.
    E_HANDLE = 0x8007_0006, "The handle is invalid.";
    /// `E_INVALIDARG` / `ERROR_INVALID_PARAMETER`.
    E_INVALIDARG = 0x8007_0057, "The parameter is incorrect.";
    /// `ERROR_ALREADY_EXISTS`.
    ERROR_ALREADY_EXISTS = 0x8007_00B7, "Cannot create a file when that file already exists.";
    /// `ERROR_SERVICE_NOT_ACTIVE`: what every call answers while the HNS service is stopped
    /// or restarting (docker/for-win#8226); says nothing of the object the call names.
    ERROR_SERVICE_NOT_ACTIVE = 0x8007_0426, "The service has not been started.";
    /// `ERROR_NOT_FOUND` (hcsshim's `ErrElementNotFound`).
    ERROR_NOT_FOUND = 0x8007_0490, "Element not found.";
    /// `ERROR_TIMEOUT`: what a call reports when HNS did not answer before its
    /// deadline (set by this crate's [`crate::deadline`] layer, not by HNS).
    ERROR_TIMEOUT = 0x8007_05B4, "This operation returned because the timeout period expired.";
    /// `ERROR_OBJECT_ALREADY_EXISTS` (0x1392 as seen from V1 endpoint create).
    ERROR_OBJECT_ALREADY_EXISTS = 0x8007_1392, "The object already exists.";
    /// The network does not exist.
    HCN_E_NETWORK_NOT_FOUND = 0x803B_0001, "The network was not found.";
    /// The endpoint does not exist.
    HCN_E_ENDPOINT_NOT_FOUND = 0x803B_0002, "The endpoint was not found.";
    /// The network's layer was not found.
    HCN_E_LAYER_NOT_FOUND = 0x803B_0003, "The network's underlying layer was not found.";
    /// The virtual switch was not found.
    HCN_E_SWITCH_NOT_FOUND = 0x803B_0004, "The virtual switch was not found.";
    /// The subnet was not found.
    HCN_E_SUBNET_NOT_FOUND = 0x803B_0005, "The network does not have a subnet for this endpoint.";
    /// The network adapter was not found.
    HCN_E_ADAPTER_NOT_FOUND = 0x803B_0006, "An adapter was not found.";
    /// The switch port was not found.
    HCN_E_PORT_NOT_FOUND = 0x803B_0007, "The switch-port was not found.";
    /// The policy was not found.
    HCN_E_POLICY_NOT_FOUND = 0x803B_0008, "An expected policy was not found.";
    /// A VFP port setting was not found.
    HCN_E_VFP_PORTSETTING_NOT_FOUND = 0x803B_0009, "A required VFP port setting was not found.";
    /// The network object is invalid.
    HCN_E_INVALID_NETWORK = 0x803B_000A, "The provided network configuration is invalid or missing parameters.";
    /// The network type is invalid.
    HCN_E_INVALID_NETWORK_TYPE = 0x803B_000B, "Invalid network type.";
    /// The endpoint object is invalid.
    HCN_E_INVALID_ENDPOINT = 0x803B_000C, "The provided endpoint configuration is invalid or missing parameters.";
    /// A policy is invalid.
    HCN_E_INVALID_POLICY = 0x803B_000D, "The provided policy configuration is invalid or missing parameters.";
    /// A policy type is invalid.
    HCN_E_INVALID_POLICY_TYPE = 0x803B_000E, "Invalid policy type.";
    /// The network already exists.
    HCN_E_NETWORK_ALREADY_EXISTS = 0x803B_0010, "A network with this name already exists.";
    /// The policy already exists.
    HCN_E_POLICY_ALREADY_EXISTS = 0x803B_0012, "Policy information already exists on this object.";
    /// The port already exists.
    HCN_E_PORT_ALREADY_EXISTS = 0x803B_0013, "The specified port already exists.";
    /// The endpoint is already attached.
    HCN_E_ENDPOINT_ALREADY_ATTACHED = 0x803B_0014, "This requested operation is invalid as this endpoint is already part of a network namespace.";
    /// The request is not supported.
    HCN_E_REQUEST_UNSUPPORTED = 0x803B_0015, "The specified request is unsupported.";
    /// A GUID could not be converted.
    HCN_E_GUID_CONVERSION_FAILURE = 0x803B_0019, "Failed to convert the GUID.";
    /// The JSON document is invalid.
    HCN_E_INVALID_JSON = 0x803B_001B, "The JSON document is invalid.";
    /// A JSON reference is invalid.
    HCN_E_INVALID_JSON_REFERENCE = 0x803B_001C, "The reference is invalid in the JSON document.";
    /// An IP address is invalid.
    HCN_E_INVALID_IP = 0x803B_001E, "The specified IP address is invalid.";
    /// An endpoint is already in the namespace.
    HCN_E_ENDPOINT_NAMESPACE_ALREADY_EXISTS = 0x803B_002B, "The namespace already contains this endpoint.";
    /// The object is still referenced.
    HCN_E_ENTITY_HAS_REFERENCES = 0x803B_002C, "The object is still referenced by other objects.";
    /// The namespace attach failed.
    HCN_E_NAMESPACE_ATTACH_FAILED = 0x803B_002E, "Failed to attach to the namespace.";
    /// The address is invalid or reserved.
    HCN_E_ADDR_INVALID_OR_RESERVED = 0x803B_002F, "An address provided is invalid or reserved.";
}

impl HResult {
    /// True when the code is a failure (severity bit set).
    pub fn is_failure(self) -> bool {
        self.0 & 0x8000_0000 != 0
    }

    /// Reinterprets a signed `HRESULT` as returned by the C API.
    pub fn from_i32(value: i32) -> HResult {
        HResult(value as u32)
    }
}

impl fmt::Display for HResult {
    /// `0x803B0002 (HCN_E_ENDPOINT_NOT_FOUND)`, or just the hex when the code is not in the table.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#010X}", self.0)?;
        if let Some(name) = self.name() {
            write!(f, " ({name})")?;
        }
        Ok(())
    }
}

impl fmt::Debug for HResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Text that is not an HRESULT, e.g. a fault an operator asked `hnsctl` to inject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid HRESULT {0:?}: give 0x803B0002, a decimal value, or a name such as HCN_E_ENDPOINT_NOT_FOUND"
)]
pub struct HResultParseError(String);

impl std::str::FromStr for HResult {
    type Err = HResultParseError;

    /// Accepts `0x803B0002`, a decimal value, or a symbolic name from the table.
    fn from_str(text: &str) -> Result<HResult, HResultParseError> {
        let text = text.trim();
        let parsed = if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"))
        {
            u32::from_str_radix(hex, 16).ok()
        } else if text.bytes().all(|b| b.is_ascii_digit()) {
            text.parse().ok()
        } else {
            HResult::ALL
                .iter()
                .copied()
                .find(|code| code.name() == Some(text))
                .map(|code| code.0)
        };
        parsed
            .map(HResult)
            .ok_or_else(|| HResultParseError(text.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_match_the_reference() {
        assert_eq!(HResult::E_INVALIDARG.0, 2_147_942_487);
        assert_eq!(HResult::HCN_E_INVALID_NETWORK.0, 2_151_350_282);
        assert_eq!(HResult::ERROR_NOT_FOUND.0, 0x8007_0490);
        assert_eq!(HResult::HCN_E_ENDPOINT_ALREADY_ATTACHED.0, 0x803B_0014);
    }

    #[test]
    fn display_is_hex_with_name() {
        assert_eq!(
            HResult::HCN_E_ENDPOINT_NOT_FOUND.to_string(),
            "0x803B0002 (HCN_E_ENDPOINT_NOT_FOUND)"
        );
        assert_eq!(HResult(0x8000_FFFF).to_string(), "0x8000FFFF");
    }

    #[test]
    fn parses_hex_decimal_and_names() {
        assert_eq!(
            "0x803b0014".parse::<HResult>().unwrap(),
            HResult::HCN_E_ENDPOINT_ALREADY_ATTACHED
        );
        assert_eq!(
            "2147942487".parse::<HResult>().unwrap(),
            HResult::E_INVALIDARG
        );
        assert_eq!(
            "ERROR_NOT_FOUND".parse::<HResult>().unwrap(),
            HResult::ERROR_NOT_FOUND
        );
        assert!("HCN_E_NOPE".parse::<HResult>().is_err());
    }

    #[test]
    fn every_known_failure_has_a_name() {
        for code in HResult::ALL.iter().filter(|code| **code != HResult::S_OK) {
            assert!(code.is_failure() && code.name().is_some(), "{code:?}");
        }
    }
}
