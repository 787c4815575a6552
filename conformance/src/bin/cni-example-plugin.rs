//! `cni-example-plugin`: a tiny but real CNI plugin, built on the `cni` crate, that the
//! conformance harness tests itself against. A demo and test fixture: it configures no network,
//! it only hands out and records addresses.
//!
//! Config keys besides the base ones:
//! - `subnet`: an IPv4 CIDR with a prefix of /30 or shorter. ADD assigns the address at a
//!   deterministic offset derived from the container ID and interface name (a 64-bit hash, so two
//!   attachments may collide: fine for a demo), the first host as gateway, a default route via it.
//! - `dataDir`: where the plugin records one small JSON file per attachment, so that a repeated
//!   ADD returns the same result, DEL is idempotent, CHECK compares `prevResult` with the record,
//!   GC removes records not in `cni.dev/valid-attachments`, and STATUS fails (code 50) when the
//!   directory cannot be created.
//!
//! Error code 100 (plugin-specific): CHECK found no record, or one that differs from `prevResult`.
#![forbid(unsafe_code)]

use cni::{
    About, DelRequest, Error, ErrorCode, GcAttachment, Interface, IpConfig, NetConf,
    NetworkRequest, Plugin, Request, Route, Success,
};
use ipnetwork::{IpNetwork, Ipv4Network};
use serde::{Deserialize, Serialize};
use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const ABOUT: About = About {
    name: "cni-example-plugin",
    version: env!("CARGO_PKG_VERSION"),
    commit: None,
};

/// CHECK found the attachment missing or different from `prevResult`.
const ATTACHMENT_DIFFERS: ErrorCode = ErrorCode::Plugin(100);

fn main() -> ExitCode {
    cni::run(&ExamplePlugin, ABOUT)
}

#[derive(Debug, Deserialize)]
struct Config {
    subnet: String,
    #[serde(rename = "dataDir")]
    data_dir: PathBuf,
}

/// What the plugin remembers about one attachment.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Record {
    #[serde(rename = "containerID")]
    container_id: String,
    ifname: String,
    address: Ipv4Addr,
}

struct ExamplePlugin;

impl Plugin for ExamplePlugin {
    fn add(&self, request: &Request) -> Result<Success, Error> {
        let (subnet, dir) = settings(&request.config)?;
        let path = record_path(&dir, &request.container_id, &request.ifname);
        let record = match read_record(&path)? {
            Some(existing) => existing,
            None => {
                let record = Record {
                    container_id: request.container_id.clone(),
                    ifname: request.ifname.clone(),
                    address: address_for(subnet, &request.container_id, &request.ifname)?,
                };
                write_atomically(&path, &serde_json::to_vec(&record).map_err(internal)?)?;
                record
            }
        };
        let gateway = first_host(subnet);
        Ok(Success {
            interfaces: vec![Interface {
                name: request.ifname.clone(),
                sandbox: Some(request.netns.clone()),
                ..Interface::default()
            }],
            ips: vec![IpConfig {
                address: IpNetwork::V4(
                    Ipv4Network::new(record.address, subnet.prefix()).map_err(internal)?,
                ),
                gateway: Some(gateway.into()),
                interface: Some(0),
            }],
            routes: vec![Route::new(
                IpNetwork::V4(Ipv4Network::new(Ipv4Addr::UNSPECIFIED, 0).map_err(internal)?),
                Some(gateway.into()),
            )],
            dns: request.config.dns()?,
        })
    }

    fn del(&self, request: &DelRequest) -> Result<(), Error> {
        let (_, dir) = settings(&request.config)?;
        match std::fs::remove_file(record_path(&dir, &request.container_id, &request.ifname)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }

    fn check(&self, request: &Request) -> Result<(), Error> {
        let (_, dir) = settings(&request.config)?;
        let prev = request
            .config
            .prev_result()?
            .ok_or_else(|| Error::invalid_config("CHECK needs prevResult (the ADD result)"))?;
        let path = record_path(&dir, &request.container_id, &request.ifname);
        let record = read_record(&path)?.ok_or_else(|| {
            Error::new(
                ATTACHMENT_DIFFERS,
                format!("no attachment recorded in {}", path.display()),
            )
        })?;
        if prev.ips.iter().any(|ip| ip.address.ip() == record.address) {
            Ok(())
        } else {
            Err(Error::new(
                ATTACHMENT_DIFFERS,
                format!("prevResult lacks the recorded address {}", record.address),
            ))
        }
    }

    fn gc(&self, request: &NetworkRequest) -> Result<(), Error> {
        let (_, dir) = settings(&request.config)?;
        // Without the list, nothing is known to be stale: keep everything.
        let cni::ValidAttachments::Listed(valid) = request.config.valid_attachments()? else {
            return Ok(());
        };
        let entries = match std::fs::read_dir(&dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            other => other?,
        };
        for entry in entries {
            let path = entry?.path();
            // Only records: a `.tmp` left by a crash mid-ADD is not an attachment.
            if path.extension().is_none_or(|ext| ext != "json") {
                continue;
            }
            let Some(record) = read_record(&path)? else {
                continue;
            };
            let attachment = GcAttachment {
                container_id: record.container_id,
                ifname: record.ifname,
            };
            if !valid.contains(&attachment) {
                std::fs::remove_file(&path)?;
            }
        }
        Ok(())
    }

    fn status(&self, request: &NetworkRequest) -> Result<(), Error> {
        let (_, dir) = settings(&request.config)?;
        std::fs::create_dir_all(&dir).map_err(|e| {
            Error::new(
                ErrorCode::NotAvailable,
                format!("cannot use {}: {e}", dir.display()),
            )
        })
    }
}

/// The subnet and this network's record directory (`<dataDir>/<name>`).
fn settings(config: &NetConf) -> Result<(Ipv4Network, PathBuf), Error> {
    let own: Config = config.plugin_config()?;
    let subnet: Ipv4Network = own.subnet.parse().map_err(|e| {
        Error::invalid_config(format!("subnet {:?} is not an IPv4 CIDR: {e}", own.subnet))
    })?;
    if subnet.prefix() > 30 {
        return Err(Error::invalid_config(format!(
            "subnet {subnet} is too small: use a prefix of /30 or shorter"
        )));
    }
    Ok((subnet, own.data_dir.join(&config.name)))
}

/// FNV-1a over the attachment: stable across runs and platforms, unlike `DefaultHasher`.
fn attachment_hash(container_id: &str, ifname: &str) -> u64 {
    let bytes = container_id.bytes().chain([0]).chain(ifname.bytes());
    bytes.fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn record_path(dir: &Path, container_id: &str, ifname: &str) -> PathBuf {
    dir.join(format!(
        "{:016x}.json",
        attachment_hash(container_id, ifname)
    ))
}

fn first_host(subnet: Ipv4Network) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(subnet.network()) + 1)
}

/// A host address past the gateway, before the broadcast address.
fn address_for(subnet: Ipv4Network, container_id: &str, ifname: &str) -> Result<Ipv4Addr, Error> {
    let hosts = (1u64 << (32 - subnet.prefix())) - 3;
    let offset = 2 + attachment_hash(container_id, ifname) % hosts;
    let host = u64::from(u32::from(subnet.network())) + offset;
    u32::try_from(host).map(Ipv4Addr::from).map_err(internal)
}

fn read_record(path: &Path) -> Result<Option<Record>, Error> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            Error::new(
                ErrorCode::Decode,
                format!("record {} is corrupt: {e}", path.display()),
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Temp file in the same directory, fsync, rename: a crash leaves the old record or the new one.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let temp = path.with_extension("tmp");
    let mut file = std::fs::File::create(&temp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temp, path)?;
    Ok(())
}

fn internal(e: impl std::fmt::Display) -> Error {
    Error::internal(e.to_string())
}
