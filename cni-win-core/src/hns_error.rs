//! Turning HNS errors into CNI errors a runtime can act on.

use cni::{Error, ErrorCode};
use hns::{ErrorKind, HnsError};

use crate::codes::{ENDPOINT_CONFLICT, HNS_CALL_FAILED, HNS_FEATURE_MISSING};

/// The CNI error for a failed HNS operation; `doing` says what the plugin was doing
/// ("create endpoint abc_cbr0"). The HRESULT and the error record go into `details`.
///
/// | HNS error kind | CNI code |
/// | --- | --- |
/// | backend unreachable | 11: try again (HNS may be restarting) |
/// | invalid input (HNS rejected a document) | 7: the config produced settings HNS refuses |
/// | unsupported | 112 |
/// | already exists / already attached | 111 |
/// | not found, other | 110 |
pub fn to_cni(error: &HnsError, doing: &str) -> Error {
    let code = match error.kind() {
        ErrorKind::Backend => ErrorCode::TryAgainLater,
        ErrorKind::InvalidInput => ErrorCode::InvalidConfig,
        ErrorKind::Unsupported => HNS_FEATURE_MISSING,
        ErrorKind::AlreadyExists | ErrorKind::AlreadyAttached => ENDPOINT_CONFLICT,
        ErrorKind::NotFound | ErrorKind::Other => HNS_CALL_FAILED,
    };
    Error::new(code, format!("{doing}: {error}")).with_details(details(error))
}

/// `details` for an HNS error: the HRESULT and the error record, when a call failed.
pub fn details(error: &HnsError) -> String {
    match error.raw() {
        Some(raw) => format!(
            "{} returned HRESULT {}; error record: {}",
            raw.function,
            raw.hresult,
            if raw.record.is_empty() {
                "(none)"
            } else {
                raw.record.as_str()
            }
        ),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hns::{ErrorRecord, Function, HResult, RawError};

    fn raw(code: HResult) -> HnsError {
        let record = ErrorRecord::failure(code, "boom").to_json();
        HnsError::from_raw(
            RawError::new(Function::CreateEndpoint, code, record),
            "create",
        )
    }

    #[test]
    fn kinds_map_to_codes_with_the_record_in_details() {
        let cases = [
            (HResult::HCN_E_INVALID_POLICY, ErrorCode::InvalidConfig),
            (HResult::ERROR_OBJECT_ALREADY_EXISTS, ENDPOINT_CONFLICT),
            (HResult::HCN_E_ENDPOINT_ALREADY_ATTACHED, ENDPOINT_CONFLICT),
            (HResult::HCN_E_REQUEST_UNSUPPORTED, HNS_FEATURE_MISSING),
            (HResult::E_FAIL, HNS_CALL_FAILED),
        ];
        for (hresult, code) in cases {
            let error = to_cni(&raw(hresult), "create endpoint x");
            assert_eq!(error.code(), code, "{hresult}");
            assert!(error.msg().starts_with("create endpoint x: "));
            assert!(error.details().contains("HcnCreateEndpoint"));
            assert!(error.details().contains(&hresult.to_string()));
            assert!(error.details().contains("boom"));
        }
        let backend = HnsError::new(ErrorKind::Backend, "no emulator");
        let error = to_cni(&backend, "find network");
        assert_eq!(error.code(), ErrorCode::TryAgainLater);
        assert_eq!(error.details(), "");
    }
}
