//! `hnsctl acl check|list`: asks the emulated host what its ACLs let through, so any harness
//! (a shell script, another language's test) can judge a NetworkPolicy agent by verdicts.
//!
//! An emulator test control, as `stats` and `fault` are: the verdict is the emulator's model
//! of HNS (`hns_emulator::acl`), which a Windows host has no query for.

use std::net::IpAddr;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use hns::schema::policy::protocol;
use hns_emulator::acl::{EndpointRules, Packet, PathVerdict, Reason, Side, Verdict};

use crate::objects::find_endpoint;
use crate::{Context, print_json};

/// `hnsctl acl ...`
#[derive(Debug, Subcommand)]
pub enum AclCommand {
    /// Whether a packet passes the ACLs of the endpoints it leaves and enters.
    ///
    /// Egress is decided on the source if it is a local endpoint, ingress on the destination
    /// if it is one; remote endpoints, this host and other addresses enforce nothing here.
    /// Prints the verdict and, per side, the deciding rule (endpoint, direction, priority,
    /// id) or the build's default.
    ///
    /// Exit status: 0 allowed, 1 denied, 2 usage error, 3 the verdict rests on what HNS does
    /// not document (two rules of one priority with opposite actions, how an IP set in an
    /// unusual field is read, a Pass, what a layer does with a packet no rule matches: the
    /// emulator's verdict is printed, but it is no evidence), 4 the check could not be made.
    Check(Check),
    /// Prints local endpoints' ACL rules in evaluation order.
    List {
        /// Only this endpoint (GUID or name).
        #[arg(long, value_name = "ID|NAME")]
        endpoint: Option<String>,
    },
}

/// `hnsctl acl check` options.
#[derive(Debug, Args)]
pub struct Check {
    /// Source address.
    #[arg(long, value_name = "IP")]
    pub from: IpAddr,
    /// Destination address.
    #[arg(long, value_name = "IP")]
    pub to: IpAddr,
    /// IP protocol: tcp, udp, icmp, icmpv6 or an IANA number.
    #[arg(long, value_name = "tcp|udp|NUM", value_parser = protocol_number)]
    pub protocol: u8,
    /// Destination port (required for tcp, udp and sctp; refused for the others).
    #[arg(long, value_name = "N")]
    pub port: Option<u16>,
    /// Source port (default 49152, the first dynamic port).
    #[arg(long, value_name = "N")]
    pub from_port: Option<u16>,
}

/// What `acl check` exits with when the verdict rests on what HNS does not document.
const EXIT_UNDOCUMENTED: u8 = 3;
/// What `acl check` exits with when it could not check.
const EXIT_UNCHECKED: u8 = 4;
/// Protocols whose packets carry ports: TCP, UDP, SCTP.
const PORTED: [u8; 3] = [6, 17, 132];

/// Runs an `acl` command; `check` answers with its own exit statuses.
pub fn run(connect: impl Fn() -> Result<Context, String>, command: AclCommand) -> ExitCode {
    let result = match command {
        AclCommand::Check(check) => {
            let packet = match packet(&check) {
                Ok(packet) => packet,
                Err(usage) => return fail(&usage, ExitCode::from(2)),
            };
            let checked = connect().and_then(|context| {
                let path = context
                    .engine
                    .check_packet(&packet)
                    .map_err(|e| e.to_string())?;
                report(&context, &path).map(|()| path)
            });
            return match checked {
                Ok(path) => match path.verdict() {
                    Ok(Verdict::Allowed) => ExitCode::SUCCESS,
                    Ok(Verdict::Denied) => ExitCode::FAILURE,
                    Err(_) => ExitCode::from(EXIT_UNDOCUMENTED),
                },
                Err(message) => fail(&message, ExitCode::from(EXIT_UNCHECKED)),
            };
        }
        AclCommand::List { endpoint } => connect().and_then(|context| list(&context, endpoint)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => fail(&message, ExitCode::FAILURE),
    }
}

fn fail(message: &str, status: ExitCode) -> ExitCode {
    eprintln!("hnsctl: {message}");
    status
}

fn protocol_number(text: &str) -> Result<u8, String> {
    protocol::number(text)
        .and_then(|number| u8::try_from(number).ok())
        .or_else(|| text.parse().ok())
        .ok_or_else(|| format!("{text:?} is not tcp, udp, icmp, icmpv6 or a protocol number 0-255"))
}

fn packet(check: &Check) -> Result<Packet, String> {
    let carries_ports = PORTED.contains(&check.protocol);
    match (carries_ports, check.port) {
        (true, Some(port)) => Ok(
            Packet::with_ports(check.from, check.to, check.protocol, port)
                .from_port(check.from_port.unwrap_or(Packet::EPHEMERAL_PORT)),
        ),
        (true, None) => Err(format!(
            "--port is required: protocol {} has ports",
            check.protocol
        )),
        (false, None) if check.from_port.is_none() => Ok(Packet {
            source: check.from,
            destination: check.to,
            protocol: check.protocol,
            ports: None,
        }),
        (false, _) => Err(format!(
            "--port and --from-port are for tcp, udp and sctp; protocol {} has no ports",
            check.protocol
        )),
    }
}

fn report(context: &Context, path: &PathVerdict) -> Result<(), String> {
    let undocumented = path.verdict().err();
    if context.json {
        return print_json(&serde_json::json!({
            "Verdict": path.emulated_verdict(),
            "Undocumented": undocumented.is_some(),
            "Packet": path.packet,
            "Source": path.source,
            "Destination": path.destination,
            "Backends": path.backends,
        }));
    }
    println!("{}: {}", path.emulated_verdict(), path.packet);
    println!(
        "  source {}: {}",
        path.packet.source,
        describe(&path.source)
    );
    println!(
        "  destination {}: {}",
        path.packet.destination,
        describe(&path.destination)
    );
    for backend in &path.backends {
        println!(
            "  backend {} of load balancer {}: {}",
            backend.endpoint, backend.load_balancer, backend.delivered
        );
        println!("    source: {}", describe(&backend.source));
        println!("    destination: {}", describe(&backend.destination));
    }
    if let Some(undocumented) = undocumented {
        println!("  undocumented: {undocumented}");
    }
    Ok(())
}

/// One end of a path, as `acl check` prints it.
fn describe(side: &Side) -> String {
    match side {
        Side::Endpoint { endpoint, decision } => {
            let by = match decision.reason {
                Reason::Rule(_) => " by",
                _ => ",",
            };
            format!(
                "endpoint {endpoint} {:?}: {}{by} {}",
                decision.direction, decision.verdict, decision.reason
            )
        }
        Side::RemoteEndpoint { endpoint } => {
            format!("remote endpoint {endpoint}: its own host enforces its ACLs")
        }
        Side::Host => "this host: no ACL applies to it here".to_owned(),
        Side::Frontend { load_balancers } => {
            let ids: Vec<String> = load_balancers.iter().map(ToString::to_string).collect();
            format!(
                "frontend of load balancer {}: on to each backend",
                ids.join(", ")
            )
        }
        Side::Elsewhere => "no endpoint of this host: no ACL applies to it here".to_owned(),
    }
}

fn list(context: &Context, endpoint: Option<String>) -> Result<(), String> {
    let only = endpoint
        .map(|name| find_endpoint(context, &name).map(|endpoint| endpoint.id))
        .transpose()?;
    let listed: Vec<EndpointRules> = context
        .engine
        .endpoint_rules()
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|rules| only.is_none_or(|id| id == rules.endpoint))
        .collect();
    if context.json {
        let endpoints: Vec<_> = listed
            .iter()
            .map(|rules| {
                serde_json::json!({
                    "Endpoint": rules.endpoint,
                    "Name": rules.name,
                    "Addresses": rules.addresses,
                    "Rules": rules.acls.in_evaluation_order(),
                })
            })
            .collect();
        return print_json(&endpoints);
    }
    for rules in &listed {
        let addresses: Vec<String> = rules.addresses.iter().map(ToString::to_string).collect();
        println!(
            "endpoint {} {} {}",
            rules.endpoint,
            rules.name,
            addresses.join(",")
        );
        println!(
            "  {:>3}  {:<3}  {:<6}  {:>8}  {:<5}  {:<9}  {:<18}  {:<11}  {:<18}  {:<11}  ID",
            "#",
            "DIR",
            "LAYER",
            "PRIORITY",
            "ACT",
            "PROTOCOLS",
            "LOCAL",
            "LOCAL PORTS",
            "REMOTE",
            "REMOTE PORTS"
        );
        for rule in rules.acls.in_evaluation_order() {
            let policy = rule.policy();
            let any = |field: &Option<String>| match field.as_deref().map(str::trim) {
                None | Some("") => "*".to_owned(),
                Some(value) => value.to_owned(),
            };
            println!(
                "  {:>3}  {:<3}  {:<6}  {:>8}  {:<5}  {:<9}  {:<18}  {:<11}  {:<18}  {:<11}  {}",
                rule.index(),
                format!("{:?}", rule.direction()),
                format!("{:?}", rule.layer()),
                rule.priority(),
                format!("{:?}", rule.action()),
                any(&policy.protocols),
                any(&policy.local_addresses),
                any(&policy.local_ports),
                any(&policy.remote_addresses),
                any(&policy.remote_ports),
                rule.id().unwrap_or("-"),
            );
        }
    }
    Ok(())
}
