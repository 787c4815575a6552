//! What a plugin's reply must look like: the protocol rules every call is judged by.
//!
//! A reply is stdout plus the exit status, and they must agree: a result or nothing with exit 0,
//! an error object `{"cniVersion","code","msg","details"}` on stdout with a non-zero exit
//! (cni-spec §8). Each `expect_*` function checks one kind of reply and returns a message that
//! says what the plugin did instead, so a failing case explains itself.

use std::fmt;

use serde_json::{Map, Value};
use thiserror::Error;

use crate::exec::{Exec, Exit};
use crate::schema;

/// A well-formed CNI error object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorReply {
    /// `cniVersion`; optional because a plugin may fail before it has read the config.
    pub cni_version: Option<String>,
    /// `code`: what the runtime acts on (spec codes below 100, plugin codes above).
    pub code: u64,
    /// `msg`: the one-line reason an operator sees in kubelet's events.
    pub msg: String,
    /// `details`: the longer explanation, when the plugin gives one.
    pub details: Option<String>,
}

impl ErrorReply {
    /// Reads an error object; `Err` names each field that breaks the shape.
    fn parse(object: &Map<String, Value>) -> Result<ErrorReply, MalformedErrorObject> {
        let mut problems = Vec::new();
        let code = object
            .get("code")
            .and_then(Value::as_u64)
            .filter(|c| *c > 0);
        if code.is_none() {
            problems.push(ErrorField::Code);
        }
        let msg = object.get("msg").and_then(Value::as_str);
        if msg.is_none() {
            problems.push(ErrorField::Msg);
        }
        let optional_string =
            |field: ErrorField, problems: &mut Vec<ErrorField>| match object.get(field.key()) {
                None => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => {
                    problems.push(field);
                    None
                }
            };
        let cni_version = optional_string(ErrorField::CniVersion, &mut problems);
        let details = optional_string(ErrorField::Details, &mut problems);
        match (code, msg) {
            (Some(code), Some(msg)) if problems.is_empty() => Ok(ErrorReply {
                cni_version,
                code,
                msg: msg.to_owned(),
                details,
            }),
            _ => Err(MalformedErrorObject {
                object: Value::Object(object.clone()),
                problems,
            }),
        }
    }

    /// Whether the message or the details contain `needle`: what "the message names X" means.
    pub fn mentions(&self, needle: &str) -> bool {
        self.msg.contains(needle) || self.details.as_deref().is_some_and(|d| d.contains(needle))
    }

    /// `code N: msg (details)`, for failure messages.
    pub fn summary(&self) -> String {
        match self.details.as_deref().filter(|d| !d.is_empty()) {
            Some(details) => format!("code {}: {} ({details})", self.code, self.msg),
            None => format!("code {}: {}", self.code, self.msg),
        }
    }
}

/// A field of the error object whose value breaks the spec's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorField {
    /// `code` is missing, not an integer, or zero (zero is not an error).
    Code,
    /// `msg` is missing or not a string.
    Msg,
    /// `cniVersion` is present but not a string.
    CniVersion,
    /// `details` is present but not a string.
    Details,
}

impl ErrorField {
    /// The field's key in the error object.
    fn key(self) -> &'static str {
        match self {
            ErrorField::Code => "code",
            ErrorField::Msg => "msg",
            ErrorField::CniVersion => "cniVersion",
            ErrorField::Details => "details",
        }
    }
}

impl fmt::Display for ErrorField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorField::Code => f.write_str("\"code\" must be a positive integer"),
            other => write!(f, "{:?} must be a string", other.key()),
        }
    }
}

/// An object with `code` (so meant as an error) that is not a valid CNI error object.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("malformed error object {object}: {}", join(.problems, ", "))]
pub struct MalformedErrorObject {
    /// The object as the plugin printed it.
    pub object: Value,
    /// Every field that breaks the shape (`code` and `msg` first: the fields a runtime reads).
    pub problems: Vec<ErrorField>,
}

/// The reply a check expected, as a violation's message names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// An error object with this code and a non-zero exit status.
    ErrorCode(u64),
    /// An ADD result.
    Result,
    /// A VERSION reply.
    VersionReply,
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expected::ErrorCode(code) => write!(f, "error code {code}"),
            Expected::Result => f.write_str("a result"),
            Expected::VersionReply => f.write_str("a VERSION reply"),
        }
    }
}

/// stdout that cannot be read as any reply: neither empty nor a JSON object.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UnreadableStdout {
    /// Not JSON at all (a panic message, a log line); the text shortened to one line.
    #[error("stdout is not JSON: {0}")]
    NotJson(String),
    /// JSON, but an array, a string or a number; shortened to one line.
    #[error("stdout is JSON but not an object: {0}")]
    NotAnObject(String),
}

/// The end of a plugin's stderr, where a failing plugin says why: shown after a message as
/// ` [stderr: ...]`, and as nothing when the plugin printed nothing there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StderrNote(String);

impl StderrNote {
    /// Stderr's last 200 characters, on one line.
    fn of(exec: &Exec) -> StderrNote {
        let stderr = String::from_utf8_lossy(&exec.stderr);
        let tail: Vec<char> = stderr.trim().chars().rev().take(200).collect();
        StderrNote(
            tail.into_iter()
                .rev()
                .collect::<String>()
                .replace('\n', " | "),
        )
    }
}

impl fmt::Display for StderrNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, " [stderr: {}]", self.0)
        }
    }
}

/// How a reply breaks the protocol: what the plugin did instead of what the check expected.
/// The message is the case's failure message, so it says what was expected and what came.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Violation {
    /// The call did not end by itself: it hung past the deadline or was killed by a signal.
    #[error("plugin {exit}{stderr}")]
    Unfinished {
        /// How it ended instead.
        exit: Exit,
        /// What it said on stderr.
        stderr: StderrNote,
    },
    /// An error was expected and stdout is empty (perhaps the error went to stderr).
    #[error(
        "expected error code {code} on stdout, got nothing (exit status {status}); \
         the error object belongs on stdout{stderr}"
    )]
    NoErrorOnStdout {
        /// The expected error code.
        code: u64,
        /// The exit status.
        status: i32,
        /// What it said on stderr.
        stderr: StderrNote,
    },
    /// A reply was expected and stdout is something no reply looks like.
    #[error("expected {expected}: {stdout}")]
    Unreadable {
        /// The reply the check wanted.
        expected: Expected,
        /// What stdout held instead.
        stdout: UnreadableStdout,
    },
    /// An error was expected and the plugin printed a result.
    #[error("expected error code {code}, got a result (exit status {status}): {reply}")]
    ResultInsteadOfError {
        /// The expected error code.
        code: u64,
        /// The exit status.
        status: i32,
        /// The result, shortened to one line.
        reply: String,
    },
    /// An error object that breaks the shape.
    #[error(transparent)]
    MalformedError(#[from] MalformedErrorObject),
    /// A well-formed error object with exit status 0, which a runtime reads as success.
    #[error(
        "printed an error ({}) but exited 0: an error needs a non-zero exit status",
        .error.summary()
    )]
    ErrorExitedZero {
        /// The error printed.
        error: ErrorReply,
    },
    /// An error with another code than the one the fault under test calls for.
    #[error("expected error code {expected}, got {}", .got.summary())]
    WrongCode {
        /// The code the spec asks for.
        expected: u64,
        /// The error printed.
        got: ErrorReply,
    },
    /// A result whose `cniVersion` is not the one the config asked for.
    #[error(
        "result cniVersion is {}, but the config asked for {asked:?}",
        shown(.stated.as_ref(), "missing")
    )]
    ResultVersion {
        /// The result's `cniVersion`, if it has one.
        stated: Option<Value>,
        /// The config's `cniVersion`.
        asked: String,
    },
    /// A result that breaks the layout of its version.
    #[error("result breaks the {version} layout: {}", join(.problems, "; "))]
    ResultLayout {
        /// The version whose layout applies.
        version: String,
        /// Every rule the result breaks, by JSON path.
        problems: Vec<String>,
    },
    /// A silent command failed without saying why on stdout.
    #[error("exit status {status} with nothing on stdout{stderr}")]
    FailedSilently {
        /// The exit status.
        status: i32,
        /// What it said on stderr.
        stderr: StderrNote,
    },
    /// The call failed with a well-formed error where success was expected.
    #[error("failed with {} (exit status {status})", .error.summary())]
    Failed {
        /// The exit status.
        status: i32,
        /// The error printed.
        error: ErrorReply,
    },
    /// The call failed with a malformed error where success was expected.
    #[error("failed (exit status {status}) with a {malformed}")]
    FailedMalformed {
        /// The exit status.
        status: i32,
        /// The error object and what is wrong with it.
        malformed: MalformedErrorObject,
    },
    /// A silent command failed and printed something that is not an error object.
    #[error("exit status {status}, stdout: {stdout}")]
    FailedWithOutput {
        /// The exit status.
        status: i32,
        /// stdout, shortened to one line.
        stdout: String,
    },
    /// A silent command (DEL, CHECK, GC, STATUS) succeeded but printed something.
    #[error("succeeded but printed on stdout (this command prints nothing on success): {stdout}")]
    PrintedOnSuccess {
        /// stdout, shortened to one line.
        stdout: String,
    },
    /// A VERSION reply whose `cniVersion` is not the one asked for.
    #[error(
        "VERSION reply's cniVersion is {}, expected the asked {asked:?}",
        shown(.stated.as_ref(), "missing")
    )]
    VersionNotEchoed {
        /// The reply's `cniVersion`, if it has one.
        stated: Option<Value>,
        /// The version asked for.
        asked: String,
    },
    /// A VERSION reply without a list of version strings.
    #[error(
        "VERSION reply needs \"supportedVersions\" as an array of strings, found {}",
        shown(.found.as_ref(), "nothing")
    )]
    NoSupportedVersions {
        /// `supportedVersions` as printed, if present.
        found: Option<Value>,
    },
    /// Exit 0 with an error object where a result or reply was expected.
    #[error("exited 0 but printed an error object instead of {expected}: {reply}")]
    ErrorObjectExitedZero {
        /// The reply the check wanted.
        expected: Expected,
        /// The error object, shortened to one line.
        reply: String,
    },
    /// A result or reply with a non-zero exit status, which a runtime reads as failure.
    #[error("printed {expected} but exit status {status}: success needs exit 0 ({reply})")]
    SuccessWithFailureStatus {
        /// The reply printed.
        expected: Expected,
        /// The exit status.
        status: i32,
        /// The reply, shortened to one line.
        reply: String,
    },
    /// A result or reply was expected and stdout is empty.
    #[error("expected {expected}, got nothing on stdout (exit status {status}){stderr}")]
    NothingOnStdout {
        /// The reply the check wanted.
        expected: Expected,
        /// The exit status.
        status: i32,
        /// What it said on stderr.
        stderr: StderrNote,
    },
}

/// A JSON value as printed, or `absent` when there is none.
fn shown(value: Option<&Value>, absent: &str) -> String {
    value.map_or(absent.to_owned(), Value::to_string)
}

fn join<T: fmt::Display>(items: &[T], separator: &str) -> String {
    items
        .iter()
        .map(T::to_string)
        .collect::<Vec<_>>()
        .join(separator)
}

/// stdout, classified.
enum Stdout {
    Empty,
    Object(Map<String, Value>),
    Unreadable(UnreadableStdout),
}

fn classify(stdout: &[u8]) -> Stdout {
    let text = String::from_utf8_lossy(stdout);
    if text.trim().is_empty() {
        return Stdout::Empty;
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(object)) => Stdout::Object(object),
        Ok(other) => Stdout::Unreadable(UnreadableStdout::NotAnObject(brief(&other.to_string()))),
        Err(_) => Stdout::Unreadable(UnreadableStdout::NotJson(brief(&text))),
    }
}

/// An object is an error reply when it has `code`: results never do.
fn is_error_object(object: &Map<String, Value>) -> bool {
    object.contains_key("code")
}

/// The call must have ended by itself, not by the deadline or a signal.
fn finished(exec: &Exec) -> Result<i32, Violation> {
    match exec.exit {
        Exit::Status(code) => Ok(code),
        exit => Err(Violation::Unfinished {
            exit,
            stderr: StderrNote::of(exec),
        }),
    }
}

/// The call must fail with error `code`; returns the error for further checks.
pub fn expect_error(exec: &Exec, code: u64) -> Result<ErrorReply, Violation> {
    let status = finished(exec)?;
    let object = match classify(&exec.stdout) {
        Stdout::Object(object) => object,
        Stdout::Empty => {
            return Err(Violation::NoErrorOnStdout {
                code,
                status,
                stderr: StderrNote::of(exec),
            });
        }
        Stdout::Unreadable(stdout) => {
            return Err(Violation::Unreadable {
                expected: Expected::ErrorCode(code),
                stdout,
            });
        }
    };
    if !is_error_object(&object) {
        return Err(Violation::ResultInsteadOfError {
            code,
            status,
            reply: brief(&Value::Object(object).to_string()),
        });
    }
    let error = ErrorReply::parse(&object)?;
    if status == 0 {
        return Err(Violation::ErrorExitedZero { error });
    }
    if error.code != code {
        return Err(Violation::WrongCode {
            expected: code,
            got: error,
        });
    }
    Ok(error)
}

/// The call must succeed with an ADD result laid out for `version`; returns the result.
pub fn expect_result(exec: &Exec, version: &str) -> Result<Value, Violation> {
    let object = expect_success_object(exec, Expected::Result)?;
    let stated = object.get("cniVersion");
    if stated.and_then(Value::as_str) != Some(version) {
        return Err(Violation::ResultVersion {
            stated: stated.cloned(),
            asked: version.to_owned(),
        });
    }
    let result = Value::Object(object);
    let problems = schema::result_violations(&result, version);
    if problems.is_empty() {
        Ok(result)
    } else {
        Err(Violation::ResultLayout {
            version: version.to_owned(),
            problems,
        })
    }
}

/// The call must succeed and print nothing, as DEL, CHECK, GC and STATUS do (cni-spec §6).
pub fn expect_silent_success(exec: &Exec) -> Result<(), Violation> {
    let status = finished(exec)?;
    match classify(&exec.stdout) {
        Stdout::Empty if status == 0 => Ok(()),
        Stdout::Empty => Err(Violation::FailedSilently {
            status,
            stderr: StderrNote::of(exec),
        }),
        Stdout::Object(object) if is_error_object(&object) => Err(failed_with(&object, status)),
        _ if status != 0 => Err(Violation::FailedWithOutput {
            status,
            stdout: brief(&String::from_utf8_lossy(&exec.stdout)),
        }),
        _ => Err(Violation::PrintedOnSuccess {
            stdout: brief(&String::from_utf8_lossy(&exec.stdout)),
        }),
    }
}

/// The call must answer VERSION: echo `asked` and list versions; returns the list.
pub fn expect_version_reply(exec: &Exec, asked: &str) -> Result<Vec<String>, Violation> {
    let object = expect_success_object(exec, Expected::VersionReply)?;
    if object.get("cniVersion").and_then(Value::as_str) != Some(asked) {
        return Err(Violation::VersionNotEchoed {
            stated: object.get("cniVersion").cloned(),
            asked: asked.to_owned(),
        });
    }
    let versions = object.get("supportedVersions").and_then(Value::as_array);
    match versions.map(|list| list.iter().map(Value::as_str).collect::<Option<Vec<_>>>()) {
        Some(Some(list)) => Ok(list.into_iter().map(str::to_owned).collect()),
        _ => Err(Violation::NoSupportedVersions {
            found: object.get("supportedVersions").cloned(),
        }),
    }
}

/// Exit 0 with a JSON object that is not an error object on stdout.
fn expect_success_object(exec: &Exec, expected: Expected) -> Result<Map<String, Value>, Violation> {
    let status = finished(exec)?;
    match classify(&exec.stdout) {
        Stdout::Object(object) if is_error_object(&object) => {
            if status == 0 {
                Err(Violation::ErrorObjectExitedZero {
                    expected,
                    reply: brief(&Value::Object(object).to_string()),
                })
            } else {
                Err(failed_with(&object, status))
            }
        }
        Stdout::Object(object) if status == 0 => Ok(object),
        Stdout::Object(object) => Err(Violation::SuccessWithFailureStatus {
            expected,
            status,
            reply: brief(&Value::Object(object).to_string()),
        }),
        Stdout::Empty => Err(Violation::NothingOnStdout {
            expected,
            status,
            stderr: StderrNote::of(exec),
        }),
        Stdout::Unreadable(stdout) => Err(Violation::Unreadable { expected, stdout }),
    }
}

fn failed_with(object: &Map<String, Value>, status: i32) -> Violation {
    match ErrorReply::parse(object) {
        Ok(error) => Violation::Failed { status, error },
        Err(malformed) => Violation::FailedMalformed { status, malformed },
    }
}

/// Long output shortened for a one-line message.
fn brief(text: &str) -> String {
    const LIMIT: usize = 200;
    let text = text.trim();
    if text.chars().count() <= LIMIT {
        text.replace('\n', " ")
    } else {
        format!(
            "{}...",
            text.chars()
                .take(LIMIT)
                .collect::<String>()
                .replace('\n', " ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn exec(status: i32, stdout: &str) -> Exec {
        Exec {
            exit: Exit::Status(status),
            stdout: stdout.as_bytes().to_vec(),
            stderr: b"log line\nwhy it failed".to_vec(),
            elapsed: Duration::ZERO,
        }
    }

    fn fails_with(result: Result<impl std::fmt::Debug, Violation>, needle: &str) {
        match result {
            Ok(v) => panic!("expected a failure mentioning {needle:?}, got {v:?}"),
            Err(violation) => {
                let msg = violation.to_string();
                assert!(msg.contains(needle), "{msg:?} lacks {needle:?}");
            }
        }
    }

    const ERROR_6: &str = r#"{"cniVersion":"1.1.0","code":6,"msg":"bad json","details":"line 1"}"#;

    #[test]
    fn error_replies_need_the_shape_the_code_and_a_non_zero_exit() {
        let error = expect_error(&exec(1, ERROR_6), 6).unwrap();
        assert_eq!(error.code, 6);
        assert!(error.mentions("line 1"));
        fails_with(expect_error(&exec(0, ERROR_6), 6), "exited 0");
        fails_with(
            expect_error(&exec(1, ERROR_6), 4),
            "expected error code 4, got code 6",
        );
        fails_with(expect_error(&exec(1, ""), 6), "why it failed");
        fails_with(expect_error(&exec(1, "panic!"), 6), "not JSON");
        fails_with(
            expect_error(&exec(1, r#"{"code":"6","msg":1}"#), 6),
            "\"code\" must be a positive integer, \"msg\" must be a string",
        );
        fails_with(
            expect_error(&exec(0, r#"{"cniVersion":"1.0.0"}"#), 6),
            "got a result",
        );
    }

    #[test]
    fn each_way_of_breaking_the_protocol_is_its_own_variant() {
        assert!(matches!(
            expect_error(&exec(1, ERROR_6), 4),
            Err(Violation::WrongCode { expected: 4, got }) if got.code == 6
        ));
        assert!(matches!(
            expect_error(&exec(0, ERROR_6), 6),
            Err(Violation::ErrorExitedZero { .. })
        ));
        assert!(matches!(
            expect_error(&exec(1, "panic!"), 6),
            Err(Violation::Unreadable {
                expected: Expected::ErrorCode(6),
                stdout: UnreadableStdout::NotJson(_),
            })
        ));
        assert!(matches!(
            expect_result(&exec(0, "[1]"), "1.0.0"),
            Err(Violation::Unreadable {
                expected: Expected::Result,
                stdout: UnreadableStdout::NotAnObject(_),
            })
        ));
        let malformed = expect_error(&exec(1, r#"{"code":"6","msg":1,"details":2}"#), 6);
        let Err(Violation::MalformedError(malformed)) = malformed else {
            panic!("expected a malformed error object, got {malformed:?}");
        };
        assert_eq!(
            malformed.problems,
            [ErrorField::Code, ErrorField::Msg, ErrorField::Details]
        );
        assert_eq!(
            malformed.to_string(),
            r#"malformed error object {"code":"6","details":2,"msg":1}: "code" must be a positive integer, "msg" must be a string, "details" must be a string"#
        );
        assert!(matches!(
            expect_silent_success(&exec(1, r#"{"code":0}"#)),
            Err(Violation::FailedMalformed { status: 1, .. })
        ));
    }

    #[test]
    fn stderr_is_quoted_only_when_the_plugin_wrote_some() {
        assert_eq!(
            expect_silent_success(&exec(2, "")).unwrap_err().to_string(),
            "exit status 2 with nothing on stdout [stderr: log line | why it failed]"
        );
        let mut quiet = exec(2, "");
        quiet.stderr = b" \n".to_vec();
        assert_eq!(
            expect_silent_success(&quiet).unwrap_err().to_string(),
            "exit status 2 with nothing on stdout"
        );
    }

    #[test]
    fn results_need_exit_0_the_asked_version_and_the_layout() {
        let good = r#"{"cniVersion":"1.0.0","ips":[{"address":"10.0.0.2/24"}]}"#;
        assert!(expect_result(&exec(0, good), "1.0.0").is_ok());
        fails_with(
            expect_result(&exec(0, good), "1.1.0"),
            "cniVersion is \"1.0.0\"",
        );
        fails_with(expect_result(&exec(1, good), "1.0.0"), "exit status 1");
        fails_with(
            expect_result(&exec(1, ERROR_6), "1.0.0"),
            "failed with code 6",
        );
        fails_with(
            expect_result(&exec(0, ERROR_6), "1.0.0"),
            "exited 0 but printed an error",
        );
        fails_with(
            expect_result(
                &exec(
                    0,
                    r#"{"cniVersion":"1.0.0","ips":[{"version":"4","address":"10.0.0.2/24"}]}"#,
                ),
                "1.0.0",
            ),
            "ips[0].version",
        );
    }

    #[test]
    fn silent_success_means_exit_0_and_no_output() {
        assert!(expect_silent_success(&exec(0, "")).is_ok());
        assert!(expect_silent_success(&exec(0, "\n")).is_ok());
        fails_with(expect_silent_success(&exec(0, "{}")), "printed on stdout");
        fails_with(
            expect_silent_success(&exec(1, ERROR_6)),
            "failed with code 6: bad json (line 1)",
        );
        fails_with(expect_silent_success(&exec(2, "")), "exit status 2");
    }

    #[test]
    fn deadlines_and_signals_are_failures_of_every_kind_of_reply() {
        let mut hung = exec(0, "");
        hung.exit = Exit::TimedOut(Duration::from_millis(300));
        fails_with(expect_silent_success(&hung), "still running after 300 ms");
        hung.exit = Exit::Signalled;
        fails_with(expect_error(&hung, 4), "killed by a signal");
    }

    #[test]
    fn version_replies_echo_the_asked_version() {
        let reply = r#"{"cniVersion":"0.4.0","supportedVersions":["0.4.0","1.0.0"]}"#;
        assert_eq!(
            expect_version_reply(&exec(0, reply), "0.4.0").unwrap(),
            ["0.4.0", "1.0.0"]
        );
        fails_with(
            expect_version_reply(&exec(0, reply), "1.0.0"),
            "expected the asked \"1.0.0\"",
        );
        fails_with(
            expect_version_reply(
                &exec(0, r#"{"cniVersion":"1.0.0","supportedVersions":"1.0.0"}"#),
                "1.0.0",
            ),
            "array of strings",
        );
    }
}
