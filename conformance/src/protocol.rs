//! What a plugin's reply must look like: the protocol rules every call is judged by.
//!
//! A reply is stdout plus the exit status, and they must agree: a result or nothing with exit 0,
//! an error object `{"cniVersion","code","msg","details"}` on stdout with a non-zero exit
//! (cni-spec §8). Each `expect_*` function checks one kind of reply and returns a message that
//! says what the plugin did instead, so a failing case explains itself.

use serde_json::{Map, Value};

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
    fn parse(object: &Map<String, Value>) -> Result<ErrorReply, String> {
        let mut problems = Vec::new();
        let code = object
            .get("code")
            .and_then(Value::as_u64)
            .filter(|c| *c > 0);
        if code.is_none() {
            problems.push("\"code\" must be a positive integer");
        }
        let msg = object.get("msg").and_then(Value::as_str);
        if msg.is_none() {
            problems.push("\"msg\" must be a string");
        }
        let optional_string = |key: &str, problems: &mut Vec<&str>, problem| match object.get(key) {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                problems.push(problem);
                None
            }
        };
        let cni_version = optional_string(
            "cniVersion",
            &mut problems,
            "\"cniVersion\" must be a string",
        );
        let details = optional_string("details", &mut problems, "\"details\" must be a string");
        match (code, msg) {
            (Some(code), Some(msg)) if problems.is_empty() => Ok(ErrorReply {
                cni_version,
                code,
                msg: msg.to_owned(),
                details,
            }),
            _ => Err(format!(
                "malformed error object {}: {}",
                Value::Object(object.clone()),
                problems.join(", ")
            )),
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

/// stdout, classified.
enum Stdout {
    Empty,
    Object(Map<String, Value>),
    OtherJson(Value),
    NotJson(String),
}

fn classify(stdout: &[u8]) -> Stdout {
    let text = String::from_utf8_lossy(stdout);
    if text.trim().is_empty() {
        return Stdout::Empty;
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(object)) => Stdout::Object(object),
        Ok(other) => Stdout::OtherJson(other),
        Err(_) => Stdout::NotJson(text.into_owned()),
    }
}

/// An object is an error reply when it has `code`: results never do.
fn is_error_object(object: &Map<String, Value>) -> bool {
    object.contains_key("code")
}

/// The call must have ended by itself, not by the deadline or a signal.
fn finished(exec: &Exec) -> Result<i32, String> {
    match exec.exit {
        Exit::Status(code) => Ok(code),
        other => Err(format!("plugin {other}{}", stderr_note(exec))),
    }
}

/// The call must fail with error `code`; returns the error for further checks.
pub fn expect_error(exec: &Exec, code: u64) -> Result<ErrorReply, String> {
    let status = finished(exec)?;
    let object = match classify(&exec.stdout) {
        Stdout::Object(object) => object,
        Stdout::Empty => {
            return Err(format!(
                "expected error code {code} on stdout, got nothing (exit status {status}); \
                 the error object belongs on stdout{}",
                stderr_note(exec)
            ));
        }
        other => {
            return Err(format!(
                "expected error code {code}: {}",
                not_an_object(other)
            ));
        }
    };
    if !is_error_object(&object) {
        return Err(format!(
            "expected error code {code}, got a result (exit status {status}): {}",
            brief(&Value::Object(object).to_string())
        ));
    }
    let error = ErrorReply::parse(&object)?;
    if status == 0 {
        return Err(format!(
            "printed an error ({}) but exited 0: an error needs a non-zero exit status",
            error.summary()
        ));
    }
    if error.code != code {
        return Err(format!(
            "expected error code {code}, got {}",
            error.summary()
        ));
    }
    Ok(error)
}

/// The call must succeed with an ADD result laid out for `version`; returns the result.
pub fn expect_result(exec: &Exec, version: &str) -> Result<Value, String> {
    let object = expect_success_object(exec, "a result")?;
    let stated = object.get("cniVersion");
    if stated.and_then(Value::as_str) != Some(version) {
        return Err(format!(
            "result cniVersion is {}, but the config asked for {version:?}",
            stated.map_or("missing".to_owned(), Value::to_string)
        ));
    }
    let result = Value::Object(object);
    let problems = schema::result_violations(&result, version);
    if problems.is_empty() {
        Ok(result)
    } else {
        Err(format!(
            "result breaks the {version} layout: {}",
            problems.join("; ")
        ))
    }
}

/// The call must succeed and print nothing, as DEL, CHECK, GC and STATUS do (cni-spec §6).
pub fn expect_silent_success(exec: &Exec) -> Result<(), String> {
    let status = finished(exec)?;
    match classify(&exec.stdout) {
        Stdout::Empty if status == 0 => Ok(()),
        Stdout::Empty => Err(format!(
            "exit status {status} with nothing on stdout{}",
            stderr_note(exec)
        )),
        Stdout::Object(object) if is_error_object(&object) => Err(failed_with(&object, status)),
        _ if status != 0 => Err(format!(
            "exit status {status}, stdout: {}",
            brief(&String::from_utf8_lossy(&exec.stdout))
        )),
        _ => Err(format!(
            "succeeded but printed on stdout (this command prints nothing on success): {}",
            brief(&String::from_utf8_lossy(&exec.stdout))
        )),
    }
}

/// The call must answer VERSION: echo `asked` and list versions; returns the list.
pub fn expect_version_reply(exec: &Exec, asked: &str) -> Result<Vec<String>, String> {
    let object = expect_success_object(exec, "a VERSION reply")?;
    if object.get("cniVersion").and_then(Value::as_str) != Some(asked) {
        return Err(format!(
            "VERSION reply's cniVersion is {}, expected the asked {asked:?}",
            object
                .get("cniVersion")
                .map_or("missing".to_owned(), Value::to_string)
        ));
    }
    let versions = object.get("supportedVersions").and_then(Value::as_array);
    match versions.map(|list| list.iter().map(Value::as_str).collect::<Option<Vec<_>>>()) {
        Some(Some(list)) => Ok(list.into_iter().map(str::to_owned).collect()),
        _ => Err(format!(
            "VERSION reply needs \"supportedVersions\" as an array of strings, found {}",
            object
                .get("supportedVersions")
                .map_or("nothing".to_owned(), Value::to_string)
        )),
    }
}

/// Exit 0 with a JSON object that is not an error object on stdout.
fn expect_success_object(exec: &Exec, what: &str) -> Result<Map<String, Value>, String> {
    let status = finished(exec)?;
    match classify(&exec.stdout) {
        Stdout::Object(object) if is_error_object(&object) => {
            if status == 0 {
                Err(format!(
                    "exited 0 but printed an error object instead of {what}: {}",
                    brief(&Value::Object(object).to_string())
                ))
            } else {
                Err(failed_with(&object, status))
            }
        }
        Stdout::Object(object) if status == 0 => Ok(object),
        Stdout::Object(object) => Err(format!(
            "printed {what} but exit status {status}: success needs exit 0 ({})",
            brief(&Value::Object(object).to_string())
        )),
        Stdout::Empty => Err(format!(
            "expected {what}, got nothing on stdout (exit status {status}){}",
            stderr_note(exec)
        )),
        other => Err(format!("expected {what}: {}", not_an_object(other))),
    }
}

fn failed_with(object: &Map<String, Value>, status: i32) -> String {
    match ErrorReply::parse(object) {
        Ok(error) => format!("failed with {} (exit status {status})", error.summary()),
        Err(malformed) => format!("failed (exit status {status}) with a {malformed}"),
    }
}

fn not_an_object(stdout: Stdout) -> String {
    match stdout {
        Stdout::NotJson(text) => format!("stdout is not JSON: {}", brief(&text)),
        Stdout::OtherJson(value) => format!(
            "stdout is JSON but not an object: {}",
            brief(&value.to_string())
        ),
        Stdout::Empty | Stdout::Object(_) => "stdout is an object".to_owned(),
    }
}

fn stderr_note(exec: &Exec) -> String {
    let stderr = String::from_utf8_lossy(&exec.stderr);
    let stderr = stderr.trim();
    if stderr.is_empty() {
        String::new()
    } else {
        // The end of stderr is where a failing plugin says why.
        let tail: String = stderr
            .chars()
            .rev()
            .take(200)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        format!(" [stderr: {}]", tail.replace('\n', " | "))
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

    fn fails_with(result: Result<impl std::fmt::Debug, String>, needle: &str) {
        match result {
            Ok(v) => panic!("expected a failure mentioning {needle:?}, got {v:?}"),
            Err(msg) => assert!(msg.contains(needle), "{msg:?} lacks {needle:?}"),
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
