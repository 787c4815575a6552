//! How the emulated service reports a failed call: an HRESULT plus the
//! message that goes into the error record.

use std::fmt;

use hns::error::{ErrorRecord, RawError};
use hns::hresult::HResult;
use hns::raw::Function;

/// A failed emulated HCN call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HcnFailure {
    /// The HRESULT the call returns.
    pub code: HResult,
    /// Details after the standard message, e.g. which object or field.
    pub detail: String,
}

impl HcnFailure {
    /// A failure with `code` and a detail message.
    pub fn new(code: HResult, detail: impl Into<String>) -> HcnFailure {
        HcnFailure {
            code,
            detail: detail.into(),
        }
    }

    /// The error record HNS would return: `{"Success":false,"Error":"...","ErrorCode":<decimal>}`.
    pub fn record(&self) -> ErrorRecord {
        ErrorRecord::failure(
            self.code,
            format!("{} {}", self.code.message(), self.detail),
        )
    }

    /// Converts to the raw-layer error of `function`.
    pub fn into_raw(self, function: Function) -> RawError {
        RawError::new(function, self.code, self.record().to_json())
    }

    pub(crate) fn io(context: impl fmt::Display, error: impl fmt::Display) -> HcnFailure {
        HcnFailure::new(
            HResult::E_FAIL,
            format!("emulator state {context}: {error}"),
        )
    }

    pub(crate) fn invalid_json(what: &str, error: impl fmt::Display) -> HcnFailure {
        HcnFailure::new(HResult::HCN_E_INVALID_JSON, format!("({what}: {error})"))
    }
}

impl fmt::Display for HcnFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} {}", self.code, self.code.message(), self.detail)
    }
}

impl std::error::Error for HcnFailure {}
