//! `resolvConf`: a resolv.conf-style file returned as the result's `dns`, as the reference does.

use cni::{Dns, Error};
use std::path::Path;

use crate::fsutil::io_error;

/// Reads `nameserver`, `domain`, `search` and `options` lines; comments and other keys are
/// skipped.
pub fn read(path: &Path) -> Result<Dns, Error> {
    let text =
        std::fs::read_to_string(path).map_err(|e| io_error("read ipam.resolvConf", path, &e))?;
    Ok(parse(&text))
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
