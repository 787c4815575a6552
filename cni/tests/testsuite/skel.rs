//! The skeleton end to end, in-process: environment, stdin, dispatch, stdout and exit status.

use cni::{
    About, DelRequest, Error, ErrorCode, IpConfig, NetworkRequest, Plugin, Request, Success,
};
use serde_json::{Value, json};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::OsString;

/// Records what it was asked; ADD answers with one address, `panic` as container ID panics.
#[derive(Default)]
struct Recorder {
    calls: RefCell<Vec<String>>,
}

impl Plugin for Recorder {
    fn add(&self, request: &Request) -> Result<Success, Error> {
        self.calls
            .borrow_mut()
            .push(format!("ADD {}", request.container_id));
        if request.container_id == "panic" {
            panic!("boom");
        }
        Ok(Success {
            ips: vec![IpConfig {
                address: "10.244.1.5/24".parse().unwrap(),
                gateway: None,
                interface: None,
            }],
            ..Success::default()
        })
    }
    fn del(&self, request: &DelRequest) -> Result<(), Error> {
        self.calls
            .borrow_mut()
            .push(format!("DEL {:?}", request.netns));
        Ok(())
    }
    fn check(&self, _: &Request) -> Result<(), Error> {
        self.calls.borrow_mut().push("CHECK".into());
        Err(Error::new(ErrorCode::Plugin(120), "endpoint missing"))
    }
    fn gc(&self, request: &NetworkRequest) -> Result<(), Error> {
        let valid = request.config.valid_attachments()?;
        self.calls
            .borrow_mut()
            .push(format!("GC {}", valid.as_slice().len()));
        Ok(())
    }
    fn status(&self, _: &NetworkRequest) -> Result<(), Error> {
        self.calls.borrow_mut().push("STATUS".into());
        Ok(())
    }
}

const ABOUT: About = About {
    name: "recorder",
    version: "test",
    commit: None,
};

struct Outcome {
    status: u8,
    stdout: String,
    calls: Vec<String>,
}

impl Outcome {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("{e}: {:?}", self.stdout))
    }
    fn error_code(&self) -> u64 {
        assert_eq!(self.status, 1, "stdout: {}", self.stdout);
        self.json()["code"].as_u64().unwrap()
    }
}

fn run(command: &str, extra_env: &[(&str, &str)], stdin: &str) -> Outcome {
    let mut vars: HashMap<String, OsString> = [
        ("CNI_COMMAND", command),
        ("CNI_CONTAINERID", "c1"),
        ("CNI_IFNAME", "eth0"),
        ("CNI_NETNS", "ns-guid"),
        ("CNI_PATH", "/opt/cni/bin"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), OsString::from(v)))
    .collect();
    for (k, v) in extra_env {
        if v.is_empty() {
            vars.remove(*k);
        } else {
            vars.insert(k.to_string(), v.into());
        }
    }
    let plugin = Recorder::default();
    let mut out = Vec::new();
    let _turn = crate::logger_turn();
    let status = cni::execute(
        &plugin,
        ABOUT,
        &|name| vars.get(name).cloned(),
        &mut stdin.as_bytes(),
        &mut out,
    );
    Outcome {
        status,
        stdout: String::from_utf8(out).unwrap(),
        calls: plugin.calls.into_inner(),
    }
}

fn conf(version: &str) -> String {
    json!({"cniVersion": version, "name": "cbr0", "type": "recorder"}).to_string()
}

#[test]
fn add_prints_the_result_in_the_configs_version() {
    for (version, key) in [("1.1.0", "ips"), ("0.3.1", "ips"), ("0.2.0", "ip4")] {
        let out = run("ADD", &[], &conf(version));
        assert_eq!(out.status, 0);
        assert_eq!(out.json()["cniVersion"], version);
        assert!(out.json().get(key).is_some(), "{}", out.stdout);
    }
}

#[test]
fn del_check_gc_status_print_nothing_on_success() {
    let del = run("DEL", &[("CNI_NETNS", "")], &conf("1.1.0"));
    assert_eq!((del.status, del.stdout.as_str()), (0, ""));
    assert_eq!(del.calls, ["DEL None"]);
    let gc_conf = json!({"cniVersion": "1.1.0", "name": "cbr0", "type": "recorder",
        "cni.dev/valid-attachments": [{"containerID": "a", "ifname": "eth0"}]});
    let gc = run("GC", &[], &gc_conf.to_string());
    assert_eq!((gc.status, gc.calls), (0, vec!["GC 1".to_owned()]));
    let status = run("STATUS", &[], &conf("1.1.0"));
    assert_eq!((status.status, status.stdout.as_str()), (0, ""));
}

#[test]
fn plugin_errors_keep_their_code_and_the_config_version() {
    let out = run("CHECK", &[], &conf("0.4.0"));
    assert_eq!(out.error_code(), 120);
    assert_eq!(out.json()["cniVersion"], "0.4.0");
    assert_eq!(out.json()["msg"], "endpoint missing");
}

#[test]
fn version_answers_without_a_config() {
    let out = run("VERSION", &[], r#"{"cniVersion":"0.4.0"}"#);
    assert_eq!(out.status, 0);
    assert_eq!(
        out.json(),
        json!({"cniVersion": "0.4.0",
            "supportedVersions": ["0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]})
    );
    assert_eq!(run("VERSION", &[], "").json()["cniVersion"], "1.1.0");
}

#[test]
fn commands_newer_than_the_config_version_are_refused() {
    let check = run("CHECK", &[], &conf("0.3.1"));
    assert_eq!(check.error_code(), 1);
    assert!(check.calls.is_empty());
    assert_eq!(run("GC", &[], &conf("1.0.0")).error_code(), 1);
    assert_eq!(run("STATUS", &[], &conf("0.4.0")).error_code(), 1);
}

#[test]
fn protocol_errors_get_spec_codes() {
    assert_eq!(run("ADD", &[], "{not json").error_code(), 6);
    assert_eq!(
        run("ADD", &[("CNI_CONTAINERID", "")], &conf("1.0.0")).error_code(),
        4
    );
    assert_eq!(
        run("ADD", &[("CNI_NETNS", "")], &conf("1.0.0")).error_code(),
        4
    );
    assert_eq!(
        run("ADD", &[("CNI_COMMAND", "")], &conf("1.0.0")).error_code(),
        4
    );
    assert_eq!(run("FROB", &[], &conf("1.0.0")).error_code(), 4);
    assert_eq!(run("ADD", &[], &conf("0.9.0")).error_code(), 1);
    let bad_name = json!({"cniVersion": "1.0.0", "name": "../x", "type": "recorder"});
    assert_eq!(run("ADD", &[], &bad_name.to_string()).error_code(), 7);
}

#[test]
fn a_panicking_plugin_still_answers_with_a_cni_error() {
    let out = run("ADD", &[("CNI_CONTAINERID", "panic")], &conf("1.0.0"));
    assert_eq!(out.error_code(), 999);
    assert!(out.json()["msg"].as_str().unwrap().contains("boom"));
}

/// A runtime reads a plugin's error in the version it asked for: whatever else in the config
/// is wrong, the error states the config's `cniVersion` (and the newest one only when the
/// config states none this crate speaks, or is not JSON at all).
#[test]
fn errors_about_the_config_state_its_version() {
    for version in ["0.1.0", "0.2.0", "0.3.1", "0.4.0", "1.0.0"] {
        for broken in [
            json!({"cniVersion": version, "name": "../x"}),
            json!({"cniVersion": version}),
            json!({"cniVersion": version, "name": 5}),
        ] {
            let out = run("ADD", &[], &broken.to_string());
            assert_eq!(out.error_code(), 7, "{broken}");
            assert_eq!(out.json()["cniVersion"], version, "{broken}");
            assert!(out.calls.is_empty());
        }
    }
    // Keys match as Go matches them, so does the version an error is printed in.
    let spelled = json!({"CNIVersion": "0.2.0", "name": "a b"});
    assert_eq!(
        run("ADD", &[], &spelled.to_string()).json()["cniVersion"],
        "0.2.0"
    );
    // A config without a version is a 0.1.0 config.
    let unversioned = json!({"name": "a b"});
    assert_eq!(
        run("ADD", &[], &unversioned.to_string()).json()["cniVersion"],
        "0.1.0"
    );
    for unreadable in [
        r#"{"cniVersion": "9.9.9", "name": "n"}"#,
        r#"{"cniVersion": 2}"#,
        "{not json",
    ] {
        let out = run("ADD", &[], unreadable);
        assert_eq!(out.json()["cniVersion"], "1.1.0", "{unreadable}");
    }
}
