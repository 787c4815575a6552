//! `resolvConf`: a resolv.conf-style file returned as the result's `dns`, as the reference does.

use cni::{Dns, Error, ErrorCode};
use std::fs::OpenOptions;
use std::path::Path;

use crate::fsutil::{io_error, read_capped};

/// The largest `resolvConf` read (resolv.conf files are a few hundred bytes).
const MAX_SIZE: u64 = 64 * 1024;

/// Reads `nameserver`, `domain`, `search` and `options` lines; comments and other keys are
/// skipped.
///
/// The file is opened without blocking (a FIFO cannot stall the ADD), must be a regular file
/// (a device such as `/dev/zero` is never read) and at most 64 KiB. Links are followed: the
/// path comes from the config, and `/etc/resolv.conf` is often one.
pub fn read(path: &Path) -> Result<Dns, Error> {
    const WHAT: &str = "ipam.resolvConf";
    let mut options = OpenOptions::new();
    options.read(true);
    rootsafe::file::non_blocking(&mut options);
    let mut file = options
        .open(path)
        .map_err(|e| io_error(&format!("read {WHAT}"), path, &e))?;
    let metadata = file
        .metadata()
        .map_err(|e| io_error(&format!("read {WHAT}"), path, &e))?;
    if !metadata.is_file() {
        return Err(Error::new(
            ErrorCode::InvalidConfig,
            format!(
                "{WHAT}: {} is not a regular file; name a resolv.conf-style file",
                path.display()
            ),
        ));
    }
    let bytes = read_capped(&mut file, MAX_SIZE, path, WHAT)?;
    Ok(parse(&String::from_utf8_lossy(&bytes)))
}

fn parse(text: &str) -> Dns {
    let mut dns = Dns::default();
    for line in text.lines() {
        let line = line.split(['#', ';']).next().unwrap_or_default();
        let mut words = line.split_whitespace();
        let Some(key) = words.next() else { continue };
        let mut values = words.map(str::to_owned);
        match key {
            "nameserver" => dns.nameservers.extend(values.take(1)),
            "domain" => dns.domain = values.next(),
            "search" => dns.search = values.collect(),
            "options" => dns.options.extend(values),
            _ => {}
        }
    }
    dns
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_four_keys() {
        let dns = parse(
            "# cluster DNS\nnameserver 10.96.0.10\nnameserver 8.8.8.8 # fallback\n\
             domain cluster.local\nsearch svc.cluster.local cluster.local\noptions ndots:5 edns0\n\
             sortlist 10.0.0.0\n",
        );
        assert_eq!(dns.nameservers, ["10.96.0.10", "8.8.8.8"]);
        assert_eq!(dns.domain.as_deref(), Some("cluster.local"));
        assert_eq!(dns.search, ["svc.cluster.local", "cluster.local"]);
        assert_eq!(dns.options, ["ndots:5", "edns0"]);
    }
}
