//! The effective config of a Flannel-native conflist: what Flannel's meta plugin would have
//! rendered for its Windows delegate, filled in from subnet.env where the config is silent.
//! Every key the config sets explicitly wins (matched regardless of case, as the plugins
//! decode them).
//!
//! | key | derived from |
//! | --- | --- |
//! | `ipam` | `{"type": "host-local", "subnet": <FLANNEL_SUBNET>}` (Flannel's rendering); with `FLANNEL_IPV6_SUBNET` and an HNS with dual-stack support, `ranges` with one set per family. An `ipam` section without `subnet` or `ranges` (e.g. only `dataDir`) gets them added. |
//! | `ipMasq` | `FLANNEL_IPMASQ` |
//! | `ipMasqNetwork` | the first `FLANNEL_NETWORK` |

use cni::{Error, NetConf, case_insensitive};
use serde_json::{Map, Value, json};

use super::subnet_env::SubnetEnv;
use crate::codes::HNS_FEATURE_MISSING;

/// The config with the derived keys, as bytes (the new stdin) and parsed.
pub fn effective(
    conf: &NetConf,
    env: &SubnetEnv,
    dual_stack: bool,
) -> Result<(NetConf, Vec<u8>), Error> {
    let mut raw = conf.raw().clone();
    derive_ipam(&mut raw, env, dual_stack)?;
    set_default(&mut raw, "ipMasq", Value::Bool(env.ip_masq));
    if let Some(network) = env.networks.first() {
        set_default(
            &mut raw,
            "ipMasqNetwork",
            Value::String(network.to_string()),
        );
    }
    let bytes = serde_json::to_vec(&Value::Object(raw))
        .map_err(|e| Error::internal(format!("encode the derived config: {e}")))?;
    Ok((NetConf::parse(&bytes)?, bytes))
}

/// Whether the config's `ipam` leaves the ranges to subnet.env: absent, or host-local (or
/// untyped) without `subnet` and `ranges`.
pub fn ranges_from_subnet_env(raw: &Map<String, Value>) -> bool {
    match case_insensitive::get(raw, "ipam") {
        None | Some(Value::Null) => true,
        Some(Value::Object(ipam)) => {
            let host_local = case_insensitive::get(ipam, "type")
                .is_none_or(|t| t.as_str() == Some("host-local"));
            host_local
                && case_insensitive::get(ipam, "subnet").is_none()
                && case_insensitive::get(ipam, "ranges").is_none()
        }
        Some(_) => false,
    }
}

fn derive_ipam(
    raw: &mut Map<String, Value>,
    env: &SubnetEnv,
    dual_stack: bool,
) -> Result<(), Error> {
    if !ranges_from_subnet_env(raw) {
        return Ok(());
    }
    let ipv6 = env.ipv6_subnet.filter(|_| dual_stack);
    if env.ipv6_subnet.is_some() && ipv6.is_none() {
        log::info!(
            "FLANNEL_IPV6_SUBNET is ignored: this host's HNS has no dual-stack support (11.10 and later)"
        );
    }
    let (key, value) = match (env.subnet, ipv6) {
        (Some(v4), None) => ("subnet", json!(v4.to_string())),
        (v4, Some(v6)) => (
            "ranges",
            Value::Array(
                v4.into_iter()
                    .chain([v6])
                    .map(|subnet| json!([{ "subnet": subnet.to_string() }]))
                    .collect(),
            ),
        ),
        (None, None) => {
            return Err(Error::new(
                HNS_FEATURE_MISSING,
                "subnet.env gives this node only FLANNEL_IPV6_SUBNET, and this host's HNS has no \
                 IPv6 (dual-stack) support, which needs HNS 11.10 or later; update Windows or \
                 give the node an IPv4 subnet",
            ));
        }
    };
    let ipam_key = raw
        .keys()
        .find(|k| k.eq_ignore_ascii_case("ipam"))
        .cloned()
        .unwrap_or_else(|| "ipam".to_owned());
    let mut ipam = match raw.remove(&ipam_key) {
        Some(Value::Object(ipam)) => ipam,
        _ => Map::new(),
    };
    if case_insensitive::get(&ipam, "type").is_none() {
        ipam.insert("type".to_owned(), json!("host-local"));
    }
    ipam.insert(key.to_owned(), value);
    raw.insert(ipam_key, Value::Object(ipam));
    Ok(())
}

fn set_default(raw: &mut Map<String, Value>, key: &str, value: Value) {
    if case_insensitive::get(raw, key).is_none() {
        raw.insert(key.to_owned(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flannel::subnet_env;

    fn env(text: &str) -> SubnetEnv {
        subnet_env::parse(text.as_bytes()).unwrap()
    }

    const V4: &str = "FLANNEL_NETWORK=10.244.0.0/16,10.245.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\n\
                      FLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n";
    const DUAL: &str = "FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.1.1/24\n\
                        FLANNEL_IPV6_NETWORK=fd00::/48\nFLANNEL_IPV6_SUBNET=fd00:0:0:1::1/64\n\
                        FLANNEL_MTU=1450\nFLANNEL_IPMASQ=false\n";

    fn derive(conf: Value, text: &str, dual_stack: bool) -> Result<Value, Error> {
        let conf = NetConf::parse(conf.to_string().as_bytes()).unwrap();
        let (_, bytes) = effective(&conf, &env(text), dual_stack)?;
        Ok(serde_json::from_slice(&bytes).unwrap())
    }

    #[test]
    fn renders_what_flannel_renders() {
        let out = derive(
            json!({"cniVersion": "1.1.0", "name": "cbr0", "type": "win-bridge",
                                "subnetFile": "/x"}),
            V4,
            false,
        )
        .unwrap();
        assert_eq!(
            out["ipam"],
            json!({"type": "host-local", "subnet": "10.244.1.0/24"})
        );
        assert_eq!(out["ipMasq"], json!(true));
        assert_eq!(out["ipMasqNetwork"], json!("10.244.0.0/16"));
    }

    #[test]
    fn explicit_keys_win() {
        let conf = json!({"name": "cbr0", "type": "win-bridge", "IPMASQ": false,
                          "ipMasqNetwork": "10.0.0.0/8",
                          "ipam": {"type": "host-local", "subnet": "10.9.0.0/24"}});
        let out = derive(conf.clone(), V4, false).unwrap();
        assert_eq!(out["ipam"], conf["ipam"]);
        assert_eq!(out["IPMASQ"], json!(false));
        assert!(out.get("ipMasq").is_none());
        assert_eq!(out["ipMasqNetwork"], json!("10.0.0.0/8"));
        // An ipam section without ranges keeps its own keys and gets the ranges.
        let out = derive(
            json!({"name": "cbr0", "type": "win-bridge",
                                "ipam": {"type": "host-local", "dataDir": "/d"}}),
            V4,
            false,
        )
        .unwrap();
        assert_eq!(
            out["ipam"],
            json!({"type": "host-local", "dataDir": "/d", "subnet": "10.244.1.0/24"})
        );
    }

    #[test]
    fn ipv6_is_a_second_range_set_only_with_dual_stack() {
        let conf = json!({"name": "cbr0", "type": "win-bridge"});
        let out = derive(conf.clone(), DUAL, true).unwrap();
        assert_eq!(
            out["ipam"],
            json!({"type": "host-local", "ranges": [[{"subnet": "10.244.1.0/24"}], [{"subnet": "fd00:0:0:1::/64"}]]})
        );
        let out = derive(conf.clone(), DUAL, false).unwrap();
        assert_eq!(
            out["ipam"],
            json!({"type": "host-local", "subnet": "10.244.1.0/24"})
        );
        let v6_only = "FLANNEL_IPV6_NETWORK=fd00::/48\nFLANNEL_IPV6_SUBNET=fd00:0:0:1::1/64\n\
                       FLANNEL_MTU=1450\nFLANNEL_IPMASQ=false\n";
        let error = derive(conf, v6_only, false).unwrap_err();
        assert_eq!(error.code(), HNS_FEATURE_MISSING);
    }
}
