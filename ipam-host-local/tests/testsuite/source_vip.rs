//! kube-proxy's source VIP, reserved as every known node setup reserves it: by running the
//! `host-local` binary by hand with the configs and attachment names in
//! `testdata/source-vip/` (no top-level `type`), and with `"type": "host-local"` at the top
//! (with and without `ipam.type`). Each shape must work through every command the reference
//! host-local accepts: ADD, a repeated ADD (the same address), CHECK, DEL.

use crate::common::{Scratch, reservations, spawn, wait};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// One node setup's invocation: the attachment's variables and the config.
struct Shape {
    file: String,
    env: Vec<(String, String)>,
    config: Value,
}

fn shapes() -> Vec<Shape> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/source-vip");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 5, "{files:?}");
    files
        .iter()
        .map(|path| {
            let shape: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
            let env = shape["env"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                .collect();
            Shape {
                file: path.file_name().unwrap().to_string_lossy().into_owned(),
                env,
                config: shape["config"].clone(),
            }
        })
        .collect()
}

/// The shape as written, with `"type": "host-local"` added, and with that but no `ipam.type`.
fn spellings(config: &Value) -> [(&'static str, Value); 3] {
    let mut typed = config.clone();
    typed["type"] = json!("host-local");
    let mut untyped_ipam = typed.clone();
    untyped_ipam["ipam"].as_object_mut().unwrap().remove("type");
    [
        ("as written", config.clone()),
        ("with type host-local", typed),
        ("with type host-local, no ipam.type", untyped_ipam),
    ]
}

/// The address a result gives, in whichever layout its version has.
fn address(result: &Value) -> &str {
    result["ip4"]["ip"]
        .as_str()
        .or_else(|| result["ips"][0]["address"].as_str())
        .unwrap_or_else(|| panic!("no address in {result}"))
}

#[test]
fn every_source_vip_shape_works_through_every_command() {
    for shape in shapes() {
        for (spelling, mut config) in spellings(&shape.config) {
            let what = format!("{} {spelling}", shape.file);
            let scratch = Scratch::new("source-vip");
            config["ipam"]["dataDir"] = json!(scratch.path());
            let network = config["name"].as_str().unwrap().to_owned();
            let store = scratch.path().join(&network);
            let env: Vec<(&str, &str)> = shape
                .env
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let id = shape
                .env
                .iter()
                .find(|(k, _)| k == "CNI_CONTAINERID")
                .unwrap();
            let ifname = shape.env.iter().find(|(k, _)| k == "CNI_IFNAME").unwrap();
            let version = config["cniVersion"].as_str().unwrap().to_owned();
            let run = |command: &str, config: &Value| wait(spawn(command, "", config, &env));

            let added = run("ADD", &config);
            assert!(added.success, "{what}: {added:?}");
            // RKE2 reads stdout and stderr as one JSON document: a successful ADD says
            // nothing on stderr.
            assert_eq!(added.stderr, "", "{what}");
            let result = added.json();
            assert_eq!(result["cniVersion"], version.as_str(), "{what}");
            assert_eq!(address(&result), "10.244.1.2/24", "{what}: {result}");
            // The reservation as the reference writes it (RKE2 reads the store with the Go
            // host-local's own code).
            assert_eq!(
                reservations(&store),
                [("10.244.1.2".to_owned(), format!("{}\r\n{}", id.1, ifname.1))].into(),
                "{what}"
            );

            let again = run("ADD", &config);
            assert!(again.success, "{what}: {again:?}");
            assert_eq!(again.json(), result, "{what}: a repeated ADD");

            let mut with_result = config.clone();
            with_result["prevResult"] = result.clone();
            for check in [&with_result, &config] {
                let checked = run("CHECK", check);
                if version.as_str() < "0.4.0" {
                    // As the reference's skeleton: CHECK needs cniVersion 0.4.0.
                    assert!(!checked.success, "{what}");
                    assert_eq!(checked.json()["code"], 1, "{what}: {checked:?}");
                    assert_eq!(checked.json()["cniVersion"], version.as_str(), "{what}");
                } else {
                    assert!(checked.success, "{what}: {checked:?}");
                    assert_eq!(checked.stdout, "", "{what}");
                }
            }

            for _ in 0..2 {
                let deleted = run("DEL", &config);
                assert!(deleted.success, "{what}: {deleted:?}");
                assert_eq!(deleted.stdout, "", "{what}");
                assert!(reservations(&store).is_empty(), "{what}");
            }
        }
    }
}
