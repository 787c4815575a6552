//! `cni-win source-vip`: its arguments and what it prints or writes; the work is
//! [`cni_win::source_vip`].

use std::path::PathBuf;

use cni_win::source_vip::{self, Settings, SourceVip};
use cni_win::{Error, fsutil};
use cni_win_core::platform::{self, Deadline};

use super::NodePathArgs;
use hns::schema::MacAddress;

/// Reserves kube-proxy's source VIP on an overlay network (idempotent) and prints it.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    paths: NodePathArgs,
    /// The network's config `name` (the HNS network's); default: the one win-overlay network.
    #[arg(long, value_name = "NAME")]
    network: Option<String>,
    /// What to print: the VIP, kube-proxy's flags (one a line: with --enable-dsr where HNS
    /// supports DSR) or JSON.
    #[arg(long, value_enum, default_value_t = Format::Ip)]
    format: Format,
    /// kube-proxy's version (e.g. 1.32 or v1.32.4): below 1.33 the flags add
    /// --feature-gates=WinOverlay=true (and WinDSR=true with --enable-dsr). Default: 1.33 or
    /// later.
    #[arg(long, value_name = "VERSION", value_parser = parse_minor)]
    kube_proxy_version: Option<u32>,
    /// Write the output to FILE (atomically, never through a link) instead of stdout.
    #[arg(long, value_name = "FILE")]
    write: Option<PathBuf>,
    /// Also create kube-proxy's source-VIP endpoint (local, nameless, with this MAC: the
    /// host adapter that holds the node IP), unless an endpoint already holds the VIP.
    #[arg(
        long = "create-endpoint",
        value_name = "HOST_MAC",
        conflicts_with = "release"
    )]
    host_mac: Option<MacAddress>,
    /// Give the VIP back: delete kube-proxy's source-VIP endpoint and release the reservation.
    #[arg(long)]
    release: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Format {
    Ip,
    Flags,
    Json,
}

pub fn run(args: Args) -> Result<(), Error> {
    let settings = Settings {
        paths: args.paths.paths()?,
        network: args.network,
    };
    let client = platform::connect(Deadline::Node)?;
    if args.release {
        let released = source_vip::release(&client, &settings)?;
        eprintln!(
            "cni-win source-vip: network {:?}: released {:?}, deleted endpoint(s) {:?}",
            released.network, released.ips, released.endpoints
        );
        return Ok(());
    }
    let vip = source_vip::reserve(&client, &settings, args.host_mac)?;
    eprintln!(
        "cni-win source-vip: network {:?}: {} {} as {}{}",
        vip.network,
        vip.ip,
        if vip.reserved_now {
            "reserved"
        } else {
            "already reserved"
        },
        vip.owner,
        if vip.endpoint_created {
            "; endpoint created"
        } else {
            ""
        }
    );
    let text = output(&vip, args.format, args.kube_proxy_version)?;
    match args.write {
        Some(path) => fsutil::write_atomically(&path, text.as_bytes()),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

fn output(vip: &SourceVip, format: Format, minor: Option<u32>) -> Result<String, Error> {
    Ok(match format {
        Format::Ip => format!("{}\n", vip.ip),
        Format::Flags => source_vip::kube_proxy_flags(vip, minor)
            .into_iter()
            .map(|flag| flag + "\n")
            .collect(),
        Format::Json => serde_json::to_string(vip).map_err(|e| Error::new(e.to_string()))? + "\n",
    })
}

/// kube-proxy's 1.x minor version from `1.32`, `v1.32.4` or `1.32.4-eks`.
fn parse_minor(text: &str) -> Result<u32, String> {
    let bad = || format!("{text:?} is not a Kubernetes version (e.g. 1.32 or v1.32.4)");
    let mut parts = text
        .strip_prefix('v')
        .unwrap_or(text)
        .split(['.', '-', '+']);
    if parts.next() != Some("1") {
        return Err(bad());
    }
    parts.next().and_then(|m| m.parse().ok()).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_as_kubernetes_prints_them() {
        assert_eq!(parse_minor("1.32"), Ok(32));
        assert_eq!(parse_minor("v1.33.1"), Ok(33));
        assert_eq!(parse_minor("v1.29.3-eks-1"), Ok(29));
        for bad in ["", "2.0", "1", "1.x", "v1."] {
            assert!(parse_minor(bad).is_err(), "{bad}");
        }
    }
}
