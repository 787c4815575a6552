//! Errors at both layers: [`RawError`] is what one computenetwork.dll call
//! returned; [`HnsError`] is what a typed operation reports, classified so
//! callers can react (e.g. treat "not found" on delete as success).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::hresult::HResult;
use crate::raw::Function;

/// The JSON error record HNS fills on failure:
/// `{"Success":false,"Error":"The parameter is incorrect. ","ErrorCode":2147942487}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct ErrorRecord {
    /// Always false in a failure record.
    #[serde(default)]
    pub success: bool,
    /// Message text.
    #[serde(default)]
    pub error: String,
    /// The HRESULT as an unsigned decimal.
    #[serde(default)]
    pub error_code: u32,
}

impl ErrorRecord {
    /// A failure record for `code` with the given message.
    pub fn failure(code: HResult, message: impl Into<String>) -> ErrorRecord {
        ErrorRecord {
            success: false,
            error: message.into(),
            error_code: code.0,
        }
    }

    /// The record as HNS writes it.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }
}

/// Failure of one raw HCN call: the function, its HRESULT and the error record text.
///
/// Following hcsshim, a call has failed when the HRESULT is a failure **or**
/// the error record is non-empty; in the second case the HRESULT may be
/// `S_OK` and the code is taken from the record when it carries one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawError {
    /// The computenetwork.dll function that failed, e.g. [`Function::CreateEndpoint`].
    pub function: Function,
    /// The HRESULT the call returned (or the record's `ErrorCode` when the call returned success).
    pub hresult: HResult,
    /// The error record exactly as returned (empty when there was none).
    pub record: String,
}

impl RawError {
    /// Builds an error from a call's HRESULT and error-record text.
    pub fn new(function: Function, hresult: HResult, record: String) -> RawError {
        let hresult = if hresult.is_failure() {
            hresult
        } else {
            parse_record(&record)
                .map(|parsed| HResult(parsed.error_code))
                .filter(|code| code.is_failure())
                .unwrap_or(HResult::E_FAIL)
        };
        RawError {
            function,
            hresult,
            record,
        }
    }

    /// The endpoint the record names as holding what the call wanted, if it names one.
    pub fn holder(&self) -> Option<Holder> {
        Holder::parse(&parse_record(&self.record)?.error)
    }

    /// The record's `Error` text if the record is JSON, else the record itself.
    pub fn message(&self) -> String {
        match parse_record(&self.record) {
            Some(parsed) if !parsed.error.is_empty() => parsed.error.trim_end().to_owned(),
            _ if self.record.trim().is_empty() => self.hresult.message().to_owned(),
            _ => self.record.trim().to_owned(),
        }
    }
}

fn parse_record(record: &str) -> Option<ErrorRecord> {
    serde_json::from_str(record).ok()
}

impl fmt::Display for RawError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} failed with HRESULT {}: {}",
            self.function,
            self.hresult,
            self.message()
        )
    }
}

impl std::error::Error for RawError {}

/// The endpoint an error record names as holding a contested resource: an IP address or a
/// MAC on a network, or a host port.
///
/// HNS's own records carry only the system message (HNS says *that* an address or port is
/// taken, not by whom), so on a real host [`RawError::holder`] is `None` and a caller must
/// look the holder up itself. The HCN emulator appends a clause naming the holder, so that
/// stale-holder handling can be proven against it; the clause is this crate's format:
///
/// ```text
/// Error: "<system message> (<resource> is already used by endpoint <GUID>)"
/// <resource>: "IP <address>" | "MacAddress <AA-BB-CC-DD-EE-FF>"
///           | "PortMapping <TCP|UDP|protocol N>[ IPv6] [<VIP>:]<port>"
/// <GUID>: the holding endpoint's ID (any case)
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// What is held, e.g. `IP 10.244.1.5` or `PortMapping TCP 8080`.
    pub resource: String,
    /// The endpoint holding it.
    pub endpoint: crate::guid::Guid,
}

impl Holder {
    const CLAUSE: &'static str = " is already used by endpoint ";

    /// Parses the holder clause out of an error record's `Error` text.
    pub fn parse(message: &str) -> Option<Holder> {
        let (before, after) = message.rsplit_once(Holder::CLAUSE)?;
        let resource = before.rsplit_once('(')?.1.trim();
        let endpoint = after.trim_end().strip_suffix(')')?.trim().parse().ok()?;
        (!resource.is_empty()).then(|| Holder {
            resource: resource.to_owned(),
            endpoint,
        })
    }
}

/// What kind of failure an [`HnsError`] is; decides how a caller reacts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The object does not exist (`ERROR_NOT_FOUND` 0x80070490, any `HCN_E_*_NOT_FOUND`,
    /// or a filtered enumeration that matched nothing).
    NotFound,
    /// An object with this ID (or network name) already exists.
    AlreadyExists,
    /// The endpoint is already attached to a namespace (`HCN_E_ENDPOINT_ALREADY_ATTACHED`).
    AlreadyAttached,
    /// HNS rejected the JSON or a parameter (invalid JSON, invalid address, invalid policy, ...).
    InvalidInput,
    /// The request or a feature is not supported by this HNS.
    Unsupported,
    /// The backend itself is unusable (emulator state root not set or unreadable, DLL missing).
    Backend,
    /// Anything else, including replies this crate could not decode.
    Other,
}

impl ErrorKind {
    /// Classifies an HRESULT.
    pub fn of(code: HResult) -> ErrorKind {
        match code {
            HResult::ERROR_NOT_FOUND
            | HResult::HCN_E_NETWORK_NOT_FOUND
            | HResult::HCN_E_ENDPOINT_NOT_FOUND
            | HResult::HCN_E_LAYER_NOT_FOUND
            | HResult::HCN_E_SWITCH_NOT_FOUND
            | HResult::HCN_E_SUBNET_NOT_FOUND
            | HResult::HCN_E_ADAPTER_NOT_FOUND
            | HResult::HCN_E_PORT_NOT_FOUND
            | HResult::HCN_E_POLICY_NOT_FOUND
            | HResult::HCN_E_VFP_PORTSETTING_NOT_FOUND => ErrorKind::NotFound,
            HResult::ERROR_ALREADY_EXISTS
            | HResult::ERROR_OBJECT_ALREADY_EXISTS
            | HResult::HCN_E_NETWORK_ALREADY_EXISTS
            | HResult::HCN_E_POLICY_ALREADY_EXISTS
            | HResult::HCN_E_PORT_ALREADY_EXISTS
            | HResult::HCN_E_ENDPOINT_NAMESPACE_ALREADY_EXISTS => ErrorKind::AlreadyExists,
            HResult::HCN_E_ENDPOINT_ALREADY_ATTACHED => ErrorKind::AlreadyAttached,
            HResult::E_INVALIDARG
            | HResult::HCN_E_INVALID_NETWORK
            | HResult::HCN_E_INVALID_NETWORK_TYPE
            | HResult::HCN_E_INVALID_ENDPOINT
            | HResult::HCN_E_INVALID_POLICY
            | HResult::HCN_E_INVALID_POLICY_TYPE
            | HResult::HCN_E_GUID_CONVERSION_FAILURE
            | HResult::HCN_E_INVALID_JSON
            | HResult::HCN_E_INVALID_JSON_REFERENCE
            | HResult::HCN_E_INVALID_IP
            | HResult::HCN_E_ADDR_INVALID_OR_RESERVED => ErrorKind::InvalidInput,
            HResult::E_NOTIMPL | HResult::HCN_E_REQUEST_UNSUPPORTED => ErrorKind::Unsupported,
            _ => ErrorKind::Other,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::NotFound => "not found",
            ErrorKind::AlreadyExists => "already exists",
            ErrorKind::AlreadyAttached => "already attached",
            ErrorKind::InvalidInput => "invalid input",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Backend => "backend unavailable",
            ErrorKind::Other => "error",
        })
    }
}

/// Error of a typed HNS operation.
///
/// Keeps the HRESULT and error record of the raw call that failed, when there
/// was one; errors detected on the client side (an enumeration that matched
/// nothing, a reply that does not decode) carry a message only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HnsError {
    kind: ErrorKind,
    context: String,
    raw: Option<RawError>,
}

impl HnsError {
    /// An error detected without a failing raw call.
    pub fn new(kind: ErrorKind, context: impl Into<String>) -> HnsError {
        HnsError {
            kind,
            context: context.into(),
            raw: None,
        }
    }

    /// Wraps a failed raw call; `context` says what the typed operation was doing.
    pub fn from_raw(raw: RawError, context: impl Into<String>) -> HnsError {
        HnsError {
            kind: ErrorKind::of(raw.hresult),
            context: context.into(),
            raw: Some(raw),
        }
    }

    /// What callers branch on (not found, already exists, ...) instead of matching HRESULTs.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// True for every flavour of "does not exist", whichever HRESULT HNS used.
    pub fn is_not_found(&self) -> bool {
        self.kind == ErrorKind::NotFound
    }

    /// The HRESULT of the failing call, if a call failed.
    pub fn hresult(&self) -> Option<HResult> {
        self.raw.as_ref().map(|raw| raw.hresult)
    }

    /// The error-record text of the failing call (empty when none).
    pub fn record(&self) -> &str {
        self.raw.as_ref().map_or("", |raw| raw.record.as_str())
    }

    /// The failing raw call, if any.
    pub fn raw(&self) -> Option<&RawError> {
        self.raw.as_ref()
    }
}

impl fmt::Display for HnsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.raw {
            Some(raw) => write!(f, "{} ({}): {raw}", self.context, self.kind),
            None => write!(f, "{} ({})", self.context, self.kind),
        }
    }
}

impl std::error::Error for HnsError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.raw
            .as_ref()
            .map(|raw| raw as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_alone_makes_a_failure() {
        let record =
            r#"{"Success":false,"Error":"The parameter is incorrect. ","ErrorCode":2147942487}"#;
        let raw = RawError::new(Function::CreateEndpoint, HResult::S_OK, record.to_owned());
        assert_eq!(raw.hresult, HResult::E_INVALIDARG);
        assert_eq!(raw.message(), "The parameter is incorrect.");
    }

    #[test]
    fn display_names_function_hresult_and_text() {
        let raw = RawError::new(
            Function::OpenEndpoint,
            HResult::HCN_E_ENDPOINT_NOT_FOUND,
            ErrorRecord::failure(
                HResult::HCN_E_ENDPOINT_NOT_FOUND,
                "The endpoint was not found. ",
            )
            .to_json(),
        );
        let error = HnsError::from_raw(raw, "open endpoint 1");
        assert!(error.is_not_found());
        assert_eq!(
            error.to_string(),
            "open endpoint 1 (not found): HcnOpenEndpoint failed with HRESULT 0x803B0002 (HCN_E_ENDPOINT_NOT_FOUND): The endpoint was not found."
        );
    }

    #[test]
    fn holder_clause_parses_and_plain_records_have_none() {
        let record = |text: &str| {
            RawError::new(
                Function::CreateEndpoint,
                HResult::HCN_E_PORT_ALREADY_EXISTS,
                ErrorRecord::failure(HResult::HCN_E_PORT_ALREADY_EXISTS, text).to_json(),
            )
        };
        let taken = record(
            "The specified port already exists. (PortMapping TCP 10.0.0.4:8080 is already used by endpoint 5eed0002-0000-4000-8000-000000000002)",
        );
        assert_eq!(
            taken.holder(),
            Some(Holder {
                resource: "PortMapping TCP 10.0.0.4:8080".to_owned(),
                endpoint: "5eed0002-0000-4000-8000-000000000002".parse().unwrap(),
            })
        );
        assert_eq!(record("The specified port already exists. ").holder(), None);
        assert_eq!(
            record("x (IP 10.0.0.5 is already used by endpoint not-a-guid)").holder(),
            None
        );
    }

    #[test]
    fn both_not_found_families_are_not_found() {
        for code in [
            HResult::ERROR_NOT_FOUND,
            HResult::HCN_E_NETWORK_NOT_FOUND,
            HResult::HCN_E_ENDPOINT_NOT_FOUND,
        ] {
            assert_eq!(ErrorKind::of(code), ErrorKind::NotFound);
        }
        assert_eq!(
            ErrorKind::of(HResult::HCN_E_ENDPOINT_ALREADY_ATTACHED),
            ErrorKind::AlreadyAttached
        );
        assert_eq!(
            ErrorKind::of(HResult::HCN_E_INVALID_JSON),
            ErrorKind::InvalidInput
        );
        assert_eq!(
            ErrorKind::of(HResult::HCN_E_REQUEST_UNSUPPORTED),
            ErrorKind::Unsupported
        );
        assert_eq!(ErrorKind::of(HResult(0x8000_FFFF)), ErrorKind::Other);
    }
}
