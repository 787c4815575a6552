//! flanneld's `subnet.env`, read with the rules of Flannel's own CNI plugin
//! (`loadFlannelSubnetEnv`): one `KEY=value` per line, split at the first `=`, unknown keys
//! ignored; `FLANNEL_NETWORK` a comma-separated CIDR list (duplicates dropped);
//! `FLANNEL_SUBNET` reduced to its network part (flanneld writes the lease's first address,
//! `10.244.1.1/24`); `FLANNEL_MTU` an unsigned number; `FLANNEL_IPMASQ` true only when it is the
//! literal `true`. The file is refused unless it has (`FLANNEL_NETWORK` or
//! `FLANNEL_IPV6_NETWORK`), (`FLANNEL_SUBNET` or `FLANNEL_IPV6_SUBNET`), `FLANNEL_MTU` and
//! `FLANNEL_IPMASQ`.
//!
//! flanneld on Windows writes the file in place (truncate, then write), so a reader can see it
//! empty or cut short. A read counts as torn when it is empty, when its last line has no
//! newline (flanneld ends every line it writes with one, so a cut inside the last line — e.g.
//! `FLANNEL_IPMASQ=tr`, which would read as false — is caught), or when a required key is
//! missing or does not parse. A torn read is retried every [`RETRY_EVERY`] up to
//! [`READ_ATTEMPTS`] reads (about half a second, hundreds of times longer than flanneld's
//! write of a few hundred bytes); what is still wrong after that is reported.

use std::fmt;
use std::io;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ipnetwork::IpNetwork;

use super::file;

/// How many times a torn read is attempted before the problem is reported.
pub const READ_ATTEMPTS: u32 = 10;
/// The pause between two reads of a torn file.
pub const RETRY_EVERY: Duration = Duration::from_millis(50);

/// A complete subnet.env.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubnetEnv {
    /// `FLANNEL_NETWORK`: the cluster's pod networks, in order, without duplicates.
    pub networks: Vec<IpNetwork>,
    /// `FLANNEL_SUBNET`'s network part: this node's pod subnet.
    pub subnet: Option<IpNetwork>,
    /// `FLANNEL_IPV6_NETWORK`.
    pub ipv6_networks: Vec<IpNetwork>,
    /// `FLANNEL_IPV6_SUBNET`'s network part.
    pub ipv6_subnet: Option<IpNetwork>,
    /// `FLANNEL_MTU`.
    pub mtu: u32,
    /// `FLANNEL_IPMASQ`.
    pub ip_masq: bool,
}

/// Why subnet.env cannot be used.
#[derive(Debug)]
pub enum Problem {
    /// The file does not exist: flanneld has not written it (yet).
    Absent(PathBuf),
    /// The file cannot be read, or is not a regular file.
    Unreadable(PathBuf, io::Error),
    /// Still torn or incomplete after every attempt.
    Incomplete(PathBuf, Defect),
}

/// What is wrong with the file's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Defect {
    Empty,
    /// The last line has no newline: the read stopped inside flanneld's write.
    Unterminated,
    /// A required key (or either of a pair) is missing.
    Missing(&'static str),
    /// A key's value does not parse.
    Invalid {
        key: &'static str,
        value: String,
    },
}

impl fmt::Display for Defect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Defect::Empty => f.write_str("it is empty"),
            Defect::Unterminated => f.write_str(
                "its last line has no newline (flanneld ends every line, so the file is cut \
                 short; a file written by hand must end with a newline too)",
            ),
            Defect::Missing(key) => write!(f, "{key} is missing"),
            Defect::Invalid { key, value } => write!(f, "{key}={value:?} does not parse"),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Absent(path) => write!(
                f,
                "flannel's subnet.env {} does not exist: flanneld has not started on this node \
                 yet or cannot reach the cluster; check the flannel pod log for this node",
                path.display()
            ),
            Problem::Unreadable(path, e) => write!(
                f,
                "flannel's subnet.env {} cannot be read: {e}",
                path.display()
            ),
            Problem::Incomplete(path, defect) => write!(
                f,
                "flannel's subnet.env {} is incomplete: {defect}; check the flannel pod log for \
                 this node",
                path.display()
            ),
        }
    }
}

/// Reads `path`, retrying torn reads (see the module's doc).
pub fn load(path: &Path) -> Result<SubnetEnv, Problem> {
    let mut attempt = 1;
    loop {
        let bytes = match file::read_regular(path) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Err(Problem::Absent(path.to_owned())),
            Err(e) => return Err(Problem::Unreadable(path.to_owned(), e)),
        };
        match parse(&bytes) {
            Ok(env) => return Ok(env),
            Err(defect) if attempt >= READ_ATTEMPTS => {
                return Err(Problem::Incomplete(path.to_owned(), defect));
            }
            Err(defect) => {
                log::info!(
                    "{}: {defect}; reading it again (attempt {attempt} of {READ_ATTEMPTS})",
                    path.display()
                );
                attempt += 1;
                std::thread::sleep(RETRY_EVERY);
            }
        }
    }
}

/// One read's content, checked as a whole.
pub fn parse(bytes: &[u8]) -> Result<SubnetEnv, Defect> {
    if bytes.is_empty() {
        return Err(Defect::Empty);
    }
    if !bytes.ends_with(b"\n") {
        return Err(Defect::Unterminated);
    }
    let text = String::from_utf8_lossy(bytes);
    let mut networks = None;
    let mut subnet = None;
    let mut ipv6_networks = None;
    let mut ipv6_subnet = None;
    let mut mtu = None;
    let mut ip_masq = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        match key {
            "FLANNEL_NETWORK" => networks = Some(cidr_list("FLANNEL_NETWORK", value)?),
            "FLANNEL_SUBNET" => subnet = Some(network_part("FLANNEL_SUBNET", value)?),
            "FLANNEL_IPV6_NETWORK" => {
                ipv6_networks = Some(cidr_list("FLANNEL_IPV6_NETWORK", value)?);
            }
            "FLANNEL_IPV6_SUBNET" => {
                ipv6_subnet = Some(network_part("FLANNEL_IPV6_SUBNET", value)?);
            }
            "FLANNEL_MTU" => {
                mtu = Some(
                    value
                        .parse::<u32>()
                        .map_err(|_| invalid("FLANNEL_MTU", value))?,
                );
            }
            "FLANNEL_IPMASQ" => ip_masq = Some(value == "true"),
            _ => {}
        }
    }
    if networks.is_none() && ipv6_networks.is_none() {
        return Err(Defect::Missing("FLANNEL_NETWORK (or FLANNEL_IPV6_NETWORK)"));
    }
    if subnet.is_none() && ipv6_subnet.is_none() {
        return Err(Defect::Missing("FLANNEL_SUBNET (or FLANNEL_IPV6_SUBNET)"));
    }
    Ok(SubnetEnv {
        networks: networks.unwrap_or_default(),
        subnet,
        ipv6_networks: ipv6_networks.unwrap_or_default(),
        ipv6_subnet,
        mtu: mtu.ok_or(Defect::Missing("FLANNEL_MTU"))?,
        ip_masq: ip_masq.ok_or(Defect::Missing("FLANNEL_IPMASQ"))?,
    })
}

fn invalid(key: &'static str, value: &str) -> Defect {
    Defect::Invalid {
        key,
        value: value.to_owned(),
    }
}

/// `10.244.1.1/24` → `10.244.1.0/24`, as Go's `net.ParseCIDR` keeps it.
fn network_part(key: &'static str, value: &str) -> Result<IpNetwork, Defect> {
    let cidr: IpNetwork = value.parse().map_err(|_| invalid(key, value))?;
    if !value.contains('/') {
        return Err(invalid(key, value));
    }
    IpNetwork::new(cidr.network(), cidr.prefix()).map_err(|_| invalid(key, value))
}

fn cidr_list(key: &'static str, value: &str) -> Result<Vec<IpNetwork>, Defect> {
    let mut list: Vec<IpNetwork> = Vec::new();
    for item in value.split(',') {
        let cidr = network_part(key, item)?;
        if !list.contains(&cidr) {
            list.push(cidr);
        }
    }
    Ok(list)
}

impl SubnetEnv {
    /// The node subnet holding `ip`, if any: a pod address outside both means the node's
    /// subnet changed since the pod was added.
    pub fn holds(&self, ip: IpAddr) -> bool {
        [self.subnet, self.ipv6_subnet]
            .into_iter()
            .flatten()
            .any(|subnet| subnet.contains(ip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLANNELD: &str = "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\n\
                            FLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n";

    #[test]
    fn reads_what_flanneld_writes() {
        let env = parse(FLANNELD.as_bytes()).unwrap();
        assert_eq!(env.networks, ["10.244.0.0/16".parse().unwrap()]);
        assert_eq!(env.subnet, Some("10.244.1.0/24".parse().unwrap()));
        assert_eq!(env.mtu, 1450);
        assert!(env.ip_masq);
        assert_eq!(env.ipv6_subnet, None);
    }

    #[test]
    fn only_literal_true_is_true_and_unknown_keys_are_ignored() {
        for value in ["True", "TRUE", "1", "yes", "true "] {
            let text = FLANNELD.replace("IPMASQ=true", &format!("IPMASQ={value}"));
            assert!(
                !parse(format!("X_OTHER=1\n{text}").as_bytes())
                    .unwrap()
                    .ip_masq
            );
        }
    }

    #[test]
    fn network_lists_drop_duplicates_and_keep_order() {
        let text = FLANNELD.replace(
            "NETWORK=10.244.0.0/16",
            "NETWORK=10.244.0.0/16,10.245.0.0/16,10.244.0.1/16",
        );
        let env = parse(text.as_bytes()).unwrap();
        let want: Vec<IpNetwork> = vec![
            "10.244.0.0/16".parse().unwrap(),
            "10.245.0.0/16".parse().unwrap(),
        ];
        assert_eq!(env.networks, want);
    }

    #[test]
    fn every_prefix_of_a_write_is_refused() {
        // Each read flanneld's in-place write can produce, short of the whole file.
        for end in 0..FLANNELD.len() {
            assert!(parse(&FLANNELD.as_bytes()[..end]).is_err(), "prefix {end}");
        }
    }

    #[test]
    fn names_the_missing_key() {
        let text = FLANNELD.replace("FLANNEL_MTU=1450\n", "");
        assert_eq!(parse(text.as_bytes()), Err(Defect::Missing("FLANNEL_MTU")));
        let text = FLANNELD.replace("FLANNEL_SUBNET=10.244.1.1/24\n", "");
        assert!(
            matches!(parse(text.as_bytes()), Err(Defect::Missing(k)) if k.starts_with("FLANNEL_SUBNET"))
        );
        let text = FLANNELD.replace("1450", "-1");
        assert!(matches!(
            parse(text.as_bytes()),
            Err(Defect::Invalid {
                key: "FLANNEL_MTU",
                ..
            })
        ));
        let text = FLANNELD.replace("10.244.1.1/24", "10.244.1.1");
        assert!(matches!(
            parse(text.as_bytes()),
            Err(Defect::Invalid {
                key: "FLANNEL_SUBNET",
                ..
            })
        ));
    }

    #[test]
    fn an_ipv6_only_file_is_complete() {
        let text = "FLANNEL_IPV6_NETWORK=fd00::/48\nFLANNEL_IPV6_SUBNET=fd00:0:0:1::1/64\n\
                    FLANNEL_MTU=1450\nFLANNEL_IPMASQ=false\n";
        let env = parse(text.as_bytes()).unwrap();
        assert_eq!(env.ipv6_subnet, Some("fd00:0:0:1::/64".parse().unwrap()));
        assert!(env.holds("fd00:0:0:1::5".parse().unwrap()));
        assert!(!env.holds("10.244.1.5".parse().unwrap()));
    }
}
