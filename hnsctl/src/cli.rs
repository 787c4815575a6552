//! The command line, declared with clap: operators get `--help` on every level, errors that
//! name the argument and suggest the closest spelling, and shell completions
//! (`hnsctl completions bash`).

use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use hns::Guid;
use hns::schema::{IpPrefix, MacAddress, NetworkType};

/// Inspect and drive HNS from the command line: the same typed client the plugins use.
///
/// On Windows it talks to the host's HNS (computenetwork.dll). Elsewhere there is no HNS, so it
/// drives the HCN emulator whose state lives in $HCN_EMULATOR_STATE (or --state DIR), and has
/// the emulator's test controls (stats, fault, acl, host version --set, host stop, restart, reboot,
/// adapter and switch).
#[derive(Debug, Parser)]
#[command(name = "hnsctl", version, max_term_width = 100)]
pub struct Cli {
    /// Print machine-readable JSON.
    #[arg(long, global = true)]
    pub json: bool,
    /// The HCN emulator's state directory (created if missing); default $HCN_EMULATOR_STATE.
    #[cfg(not(windows))]
    #[arg(long, global = true, value_name = "DIR", value_parser = non_empty_path)]
    pub state: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

/// What to do.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Networks: create, list, show, delete; add, remove or update their policies (IP sets).
    #[command(subcommand)]
    Network(NetworkCommand),
    /// Endpoints: create, list, show, delete; add, remove or update their policies (ACLs).
    #[command(subcommand)]
    Endpoint(EndpointCommand),
    /// Namespaces: create, list, show, delete, attach, detach.
    #[command(subcommand)]
    Namespace(NamespaceCommand),
    /// Load balancers (kube-proxy's Services): list with their backends, show, delete; create
    /// and modify from a JSON document.
    #[command(subcommand, name = "loadbalancer", visible_alias = "lb")]
    LoadBalancer(LoadBalancerCommand),
    /// The host's HNS: version and supported features.
    #[command(subcommand)]
    Host(HostCommand),
    /// Calls per HCN function and policy writes (emulator test control).
    ///
    /// With --json, the calls alone (a map of function to count); with --writes, the policy
    /// writes alone: policy requests on live endpoints and networks and the ACL rules and IP
    /// sets they wrote or removed.
    #[cfg(not(windows))]
    Stats {
        /// Print the counters, then reset them (calls and writes) to zero.
        #[arg(long)]
        reset: bool,
        /// Print the policy writes only.
        #[arg(long)]
        writes: bool,
    },
    /// Injected faults, crashes and latency (emulator test controls).
    #[cfg(not(windows))]
    #[command(subcommand)]
    Fault(FaultCommand),
    /// What the host's ACLs let through (emulator test control).
    #[cfg(not(windows))]
    #[command(subcommand)]
    Acl(crate::acl::AclCommand),
    /// Drift HNS's own checks would refuse, as the field finds it: an endpoint on an address
    /// another endpoint holds, a half-created load balancer (emulator test control); prints
    /// the new object's GUID.
    #[cfg(not(windows))]
    #[command(subcommand)]
    Inject(InjectCommand),
    /// Prints a completion script for a shell (e.g. `hnsctl completions bash > /etc/bash_completion.d/hnsctl`).
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
}

/// `hnsctl network ...`
#[derive(Debug, Subcommand)]
pub enum NetworkCommand {
    /// Creates a network the way flanneld and operators do; prints its GUID.
    Create(NetworkCreate),
    /// Lists every network.
    List,
    /// Prints one network's document.
    Show {
        /// The network's GUID or name.
        #[arg(value_name = "ID|NAME")]
        network: String,
        /// Print the document exactly as HNS returned it (one line), not as hnsctl reads it.
        #[arg(long)]
        raw: bool,
    },
    /// Deletes a network.
    Delete {
        /// The network's GUID or name.
        #[arg(value_name = "ID|NAME")]
        network: String,
    },
    /// Sends one policy request (HcnModifyNetwork), such as an IP set (`SetPolicy`).
    #[command(subcommand)]
    Policy(PolicyCommand),
}

/// `hnsctl network policy ...` and `hnsctl endpoint policy ...`: one modify request of
/// `ResourceType` `Policy` whose policies are a file's, sent to HNS as written.
#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Adds the file's policies (RequestType Add).
    Add(PolicyRequest),
    /// Removes the policies the file lists (RequestType Remove).
    Remove(PolicyRequest),
    /// Replaces policies with the file's (RequestType Update). Which of an endpoint's policies
    /// HNS replaces is not documented; Azure NPM updates a network's IP set so, by its Id.
    Update(PolicyRequest),
}

/// The object and the policies of a policy request.
#[derive(Debug, Args)]
pub struct PolicyRequest {
    /// The network's or endpoint's GUID or name.
    #[arg(value_name = "ID|NAME")]
    pub target: String,
    /// A JSON array of policy objects, e.g. `[{"Type":"ACL","Settings":{...}}]`, sent without
    /// reinterpretation: a file, or `-` for stdin.
    #[arg(long, value_name = "FILE")]
    pub file: PathBuf,
}

/// `hnsctl network create` options.
#[derive(Debug, Args)]
pub struct NetworkCreate {
    /// The network's name (e.g. cbr0).
    #[arg(long)]
    pub name: String,
    /// The network type.
    #[arg(long = "type", value_enum, ignore_case = true)]
    pub network_type: TypeArg,
    /// The subnet (e.g. 10.244.1.0/24).
    #[arg(long, value_name = "CIDR")]
    pub subnet: IpPrefix,
    /// The subnet's gateway, inside --subnet (e.g. 10.244.1.1).
    #[arg(long, value_name = "IP")]
    pub gateway: IpAddr,
    /// The host adapter to bind (NetAdapterName policy).
    #[arg(long, value_name = "NAME")]
    pub adapter: Option<String>,
    /// The VXLAN network identifier (the subnet's VSID policy, e.g. 4096).
    #[arg(long, value_name = "N")]
    pub vni: Option<u32>,
    /// The VXLAN UDP port (e.g. 4789).
    #[arg(long, value_name = "PORT")]
    pub vxlan_port: Option<u16>,
    /// The host's provider address (ProviderAddress policy of an overlay network).
    #[arg(long, value_name = "IP")]
    pub provider_address: Option<IpAddr>,
    /// The distributed router's MAC (DrMacAddress policy).
    #[arg(long, value_name = "MAC")]
    pub dr_mac: Option<MacAddress>,
    /// The GUID to create the network with (default: HNS chooses).
    #[arg(long, value_name = "GUID")]
    pub id: Option<Guid>,
}

/// `--type` values, spelled as HNS spells them.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TypeArg {
    #[value(name = "L2Bridge")]
    L2Bridge,
    #[value(name = "L2Tunnel")]
    L2Tunnel,
    #[value(name = "Overlay")]
    Overlay,
    #[value(name = "NAT")]
    Nat,
}

impl From<TypeArg> for NetworkType {
    fn from(arg: TypeArg) -> NetworkType {
        match arg {
            TypeArg::L2Bridge => NetworkType::L2Bridge,
            TypeArg::L2Tunnel => NetworkType::L2Tunnel,
            TypeArg::Overlay => NetworkType::Overlay,
            TypeArg::Nat => NetworkType::Nat,
        }
    }
}

/// `hnsctl endpoint ...`
#[derive(Debug, Subcommand)]
pub enum EndpointCommand {
    /// Creates an endpoint (HcnCreateEndpoint) attached to nothing; prints its GUID.
    Create(EndpointCreate),
    /// Lists endpoints, all or one network's.
    List {
        /// Only the endpoints of this network (GUID or name).
        #[arg(long, value_name = "ID|NAME")]
        network: Option<String>,
    },
    /// Prints one endpoint's document.
    Show {
        /// The endpoint's GUID or name.
        #[arg(value_name = "ID|NAME")]
        endpoint: String,
        /// Print the document exactly as HNS returned it (one line), not as hnsctl reads it.
        #[arg(long)]
        raw: bool,
    },
    /// Deletes an endpoint.
    Delete {
        /// The endpoint's GUID or name.
        #[arg(value_name = "ID|NAME")]
        endpoint: String,
    },
    /// Sends one policy request (HcnModifyEndpoint), such as ACLs.
    #[command(subcommand)]
    Policy(PolicyCommand),
}

/// `hnsctl endpoint create` options.
#[derive(Debug, Args)]
pub struct EndpointCreate {
    /// The network's GUID or name.
    #[arg(long, value_name = "ID|NAME")]
    pub network: String,
    /// The endpoint's name.
    #[arg(long)]
    pub name: String,
    /// The endpoint's address, inside one of the network's subnets.
    #[arg(long, value_name = "IP")]
    pub ip: IpAddr,
    /// Policies to create it with: a JSON array of policy objects, sent without
    /// reinterpretation (a file, or `-` for stdin).
    #[arg(long, value_name = "FILE")]
    pub policies: Option<PathBuf>,
    /// The GUID to create the endpoint with (default: HNS chooses).
    #[arg(long, value_name = "GUID")]
    pub id: Option<Guid>,
}

/// `hnsctl namespace ...`
#[derive(Debug, Subcommand)]
pub enum NamespaceCommand {
    /// Creates a namespace; prints its GUID.
    Create {
        /// The GUID to create the namespace with (default: HNS chooses).
        #[arg(long, value_name = "GUID")]
        id: Option<Guid>,
    },
    /// Lists every namespace.
    List,
    /// Prints one namespace's document.
    Show {
        /// The namespace's GUID.
        id: Guid,
    },
    /// Deletes a namespace.
    Delete {
        /// The namespace's GUID.
        id: Guid,
    },
    /// Attaches an endpoint to a namespace.
    Attach(Attachment),
    /// Detaches an endpoint from a namespace.
    Detach(Attachment),
}

/// A namespace and an endpoint.
#[derive(Debug, Args)]
pub struct Attachment {
    /// The namespace's GUID.
    pub namespace: Guid,
    /// The endpoint's GUID or name.
    #[arg(value_name = "ENDPOINT")]
    pub endpoint: String,
}

/// `hnsctl loadbalancer ...`
#[derive(Debug, Subcommand)]
pub enum LoadBalancerCommand {
    /// Lists every load balancer: frontend, ports, source VIP and each backend's address
    /// (`gone` for a backend endpoint that no longer exists).
    List,
    /// Prints one load balancer's document.
    Show {
        /// The load balancer's GUID.
        id: Guid,
    },
    /// Deletes a load balancer.
    Delete {
        /// The load balancer's GUID.
        id: Guid,
    },
    /// Creates a load balancer from an HCN document (kube-proxy's shape); prints its GUID.
    Create {
        /// The document: a file, or `-` for stdin.
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
        /// The GUID to create it with (default: HNS chooses).
        #[arg(long, value_name = "GUID")]
        id: Option<Guid>,
    },
    /// Replaces a load balancer's settings with an HCN document (HNS 15.4 and later).
    Modify {
        /// The load balancer's GUID.
        id: Guid,
        /// The document: a file, or `-` for stdin.
        #[arg(long, value_name = "FILE")]
        file: PathBuf,
    },
}

/// `hnsctl host ...`
#[derive(Debug, Subcommand)]
pub enum HostCommand {
    /// Prints the HNS version.
    Version {
        /// Sets the emulated host's version instead (e.g. 13.2).
        #[cfg(not(windows))]
        #[arg(long, value_name = "MAJOR.MINOR")]
        set: Option<hns::HnsVersion>,
    },
    /// Prints which HNS features the host supports.
    Features,
    /// Sends one V1 `HNSCall` and prints the reply envelope (works against real HNS too).
    Call {
        /// The HTTP-style method: GET, POST or DELETE.
        #[arg(value_name = "METHOD")]
        method: String,
        /// The V1 resource path, e.g. /endpoints/.
        #[arg(value_name = "PATH")]
        path: String,
        /// The request body (JSON).
        #[arg(long, value_name = "JSON", default_value = "")]
        body: String,
    },
    /// Emulator: the HNS service stops; every call fails until `host restart` (or `reboot`).
    #[cfg(not(windows))]
    Stop,
    /// Emulator: HNS restarts and restores every object under its ID, as current builds do;
    /// with --losing-endpoints, every endpoint is dropped (older builds; networks, namespaces
    /// and load balancers stay).
    #[cfg(not(windows))]
    Restart {
        /// Drop every endpoint, as older HNS builds do on a restart.
        #[arg(long)]
        losing_endpoints: bool,
    },
    /// Emulator: the host reboots (endpoints, namespaces and networks with
    /// EnableNonPersistent are dropped).
    #[cfg(not(windows))]
    Reboot,
    /// Emulator: the host adapter (name, address, MAC) networks that reach the outside are
    /// bound to; prints it, after setting what is given.
    #[cfg(not(windows))]
    Adapter {
        /// The adapter's name (what a NetAdapterName policy names).
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        /// The host's address on it with its prefix, the node IP (e.g. 10.0.0.4/24).
        #[arg(long, value_name = "CIDR")]
        address: Option<IpPrefix>,
        /// The adapter's MAC.
        #[arg(long, value_name = "MAC")]
        mac: Option<MacAddress>,
    },
    /// Emulator: the virtual switch the first network on the adapter creates, whose
    /// management IP appears once it settles; prints it, after changing what is given.
    #[cfg(not(windows))]
    Switch {
        /// How long a switch created from now on takes to settle, in milliseconds.
        #[arg(long, value_name = "MS")]
        settle_ms: Option<u64>,
        /// Settles the current switch now.
        #[arg(long)]
        settle_now: bool,
    },
}

/// `hnsctl fault ...`
#[cfg(not(windows))]
#[derive(Debug, Subcommand)]
pub enum FaultCommand {
    /// Makes the Nth next call of a function fail with an HRESULT.
    Inject {
        #[command(flatten)]
        call: NthCall,
        /// The HRESULT (0x803B0002, a decimal value or a symbolic name).
        #[arg(long, value_name = "H")]
        hresult: hns::HResult,
    },
    /// Aborts the process right after the Nth next call of a function.
    Crash {
        #[command(flatten)]
        call: NthCall,
    },
    /// Sleeps in every call.
    Latency {
        /// Microseconds per call.
        #[arg(long, value_name = "N")]
        micros: u64,
    },
    /// Removes every fault, crash point and latency.
    Clear,
    /// Prints the faults, crash points and latency as JSON.
    List,
}

/// `hnsctl inject ...`
#[cfg(not(windows))]
#[derive(Debug, Subcommand)]
pub enum InjectCommand {
    /// An endpoint holding an address, whoever else on the network holds it: a duplicate of
    /// a pod's address, or (--remote) kube-proxy's remote endpoint from a stale lease.
    Endpoint {
        /// The network's GUID or name.
        #[arg(long, value_name = "ID|NAME")]
        network: String,
        /// The address it holds.
        #[arg(long, value_name = "IP")]
        ip: IpAddr,
        /// A remote endpoint (the `RemoteEndpoint` flag), as kube-proxy makes for a pod of
        /// another node.
        #[arg(long)]
        remote: bool,
        /// The endpoint's name.
        #[arg(long, default_value = "injected")]
        name: String,
        /// The GUID to give it (default: a new one).
        #[arg(long, value_name = "GUID")]
        id: Option<Guid>,
    },
    /// A load balancer with no port mapping, sending to the given backends (none, or
    /// endpoints that need not exist), as a kube-proxy that died between calls leaves one.
    #[command(name = "loadbalancer", visible_alias = "lb")]
    LoadBalancer {
        /// Its frontend VIP.
        #[arg(long, value_name = "IP")]
        frontend: IpAddr,
        /// A backend endpoint's GUID (repeatable).
        #[arg(long, value_name = "GUID")]
        backend: Vec<Guid>,
    },
}

/// Which call a fault or crash hits.
#[cfg(not(windows))]
#[derive(Debug, Args)]
pub struct NthCall {
    /// The HCN function (e.g. HcnCreateEndpoint).
    #[arg(long, value_name = "F", value_parser = function)]
    pub function: hns::Function,
    /// Which call: 1 = the next one.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub nth: u64,
}

#[cfg(not(windows))]
fn function(name: &str) -> Result<hns::Function, String> {
    hns::Function::from_name(name)
        .ok_or_else(|| format!("not an HCN function name such as HcnCreateEndpoint: {name:?}"))
}

#[cfg(not(windows))]
fn non_empty_path(value: &str) -> Result<PathBuf, String> {
    if value.is_empty() {
        return Err("needs a directory (it is created if missing)".to_owned());
    }
    Ok(PathBuf::from(value))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn types_are_case_insensitive_and_options_take_equals() {
        let cli = Cli::try_parse_from([
            "hnsctl",
            "network",
            "create",
            "--name=cbr0",
            "--type",
            "l2bridge",
            "--subnet",
            "10.244.1.0/24",
            "--gateway",
            "10.244.1.1",
            "--json",
        ])
        .unwrap();
        assert!(cli.json);
        let Command::Network(NetworkCommand::Create(create)) = cli.command else {
            panic!("{cli:?}");
        };
        assert_eq!(create.name, "cbr0");
        assert!(matches!(create.network_type, TypeArg::L2Bridge));
    }

    #[test]
    fn policy_requests_name_their_request_type_object_and_file() {
        let cli = Cli::try_parse_from([
            "hnsctl", "endpoint", "policy", "update", "pod-a", "--file", "-",
        ])
        .unwrap();
        let Command::Endpoint(EndpointCommand::Policy(PolicyCommand::Update(request))) =
            cli.command
        else {
            panic!("{cli:?}");
        };
        assert_eq!(
            (request.target.as_str(), request.file.to_str()),
            ("pod-a", Some("-"))
        );
        let err = Cli::try_parse_from(["hnsctl", "network", "policy", "add", "cbr0"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--file"), "{err}");
    }

    /// The `hnsctl` command lines of docs/real-host-checks.md's PowerShell blocks and of
    /// scripts/real-host-checks.ps1, with their PowerShell variables given sample values (an
    /// address where the option takes one).
    fn real_host_command_lines() -> Vec<Vec<String>> {
        let page = include_str!("../../docs/real-host-checks.md");
        let script = include_str!("../../scripts/real-host-checks.ps1");
        let mut code = String::new();
        let mut fenced = false;
        for line in page.lines() {
            if line.starts_with("```") {
                fenced = line == "```powershell";
            } else if fenced {
                code.push_str(line);
                code.push('\n');
            }
        }
        code.push_str(script);
        let sample = |token: &str| -> String {
            let token = token.trim_matches(|c| c == '\'' || c == '"');
            match token {
                "FREE-IP" => "10.244.1.254".to_owned(),
                "$S" | "$A" | "$B" => "10.244.1.10".to_owned(),
                _ if token.contains('$') => "sample".to_owned(),
                _ => token.to_owned(),
            }
        };
        let mut lines = Vec::new();
        for line in code
            .lines()
            .filter(|line| !line.trim_start().starts_with('#'))
        {
            for (at, _) in line.match_indices("hnsctl ") {
                let before = line[..at].chars().next_back();
                let defines = ["Set-Alias", "function"]
                    .iter()
                    .any(|w| line[..at].trim_end().ends_with(w));
                if defines || before.is_some_and(|c| c.is_alphanumeric() || "$\\-".contains(c)) {
                    continue;
                }
                let command = &line[at + "hnsctl ".len()..];
                let end = command
                    .find(['|', ';', '#', ')', '{'])
                    .unwrap_or(command.len());
                let args: Vec<String> = command[..end]
                    .split_whitespace()
                    .filter(|token| !token.starts_with("2>"))
                    .map(sample)
                    .collect();
                if !args.is_empty() && !args[0].starts_with('"') {
                    lines.push(args);
                }
            }
        }
        lines
    }

    #[test]
    fn every_command_line_of_the_real_host_checks_parses() {
        let lines = real_host_command_lines();
        assert!(
            lines.len() > 100,
            "only {} command lines found",
            lines.len()
        );
        for args in &lines {
            let parsed =
                Cli::try_parse_from(std::iter::once("hnsctl".to_owned()).chain(args.clone()));
            assert!(
                parsed.is_ok(),
                "hnsctl {}: {}",
                args.join(" "),
                parsed.unwrap_err()
            );
        }
        for needed in [
            "policy add",
            "policy remove",
            "policy update",
            "endpoint create",
            "--raw",
        ] {
            assert!(
                lines.iter().any(|args| args.join(" ").contains(needed)),
                "no command line uses {needed}"
            );
        }
    }

    #[test]
    fn bad_values_name_the_option() {
        let err = Cli::try_parse_from(["hnsctl", "network", "create", "--subnet", "nope"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--subnet"), "{err}");
        let err = Cli::try_parse_from(["hnsctl", "namespace", "show", "not-a-guid"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("invalid GUID"), "{err}");
    }
}
