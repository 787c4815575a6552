//! The V1 (`HNSCall`) view of the emulated host.
//!
//! HNS serves its V1 REST-like API from the same objects as V2; the V1 shapes are derived
//! from the stored V2 objects and V1 requests are translated into V2 ones, never stored
//! themselves. Clients still use it: hcsshim's version probe (`GET /globals/version`);
//! win-overlay, which reads `Subnets[0]` and `ManagementIP` of its network; flanneld's host-gw
//! backend, which creates `cbr0` with `POST /networks/` ([`super::v1_networks`]); the
//! reference plugins' default path and flanneld's `cbr0_ep` on `/endpoints/`
//! ([`super::v1_endpoints`]); and kube-proxy, which probes `GET /policylists/` before it
//! picks its kernel proxier and deletes every policy list when it starts
//! ([`super::v1_policy_lists`]). A request none of these models is answered with the V1
//! failure envelope naming it.

use serde::Deserialize;
use serde_json::{Value, json};

use super::engine::State;
use super::failure::HcnFailure;
use hns::guid::Guid;

/// What a V1 request answers: the success envelope with `Output`, or the failure envelope
/// with `Error` (a failed `HNSCall` HRESULT is an `Err` of the request instead).
#[derive(Debug)]
pub(super) enum V1Reply {
    Output(Value),
    Failure(String),
}

impl V1Reply {
    fn into_json(self) -> String {
        match self {
            V1Reply::Output(output) => json!({ "Success": true, "Output": output }).to_string(),
            V1Reply::Failure(error) => json!({ "Success": false, "Error": error }).to_string(),
        }
    }
}

/// What V1 answers for an ID that names nothing (or is not a GUID).
pub(super) const NOT_FOUND: &str = "Element not found.";

impl State<'_> {
    /// `HNSCall`: answers the resources above with the V1 envelope; other requests get the
    /// V1 failure envelope, as HNS answers requests it cannot serve.
    pub fn hns_call(
        &mut self,
        method: &str,
        path: &str,
        request: &str,
    ) -> Result<String, HcnFailure> {
        let route = path.trim_end_matches('/').to_ascii_lowercase();
        let method_upper = method.to_ascii_uppercase();
        let reply = if let Some(rest) = route.strip_prefix("/endpoints") {
            self.v1_endpoints(&method_upper, rest, request)?
        } else if let Some(rest) = route.strip_prefix("/networks") {
            self.v1_networks(&method_upper, rest, request)?
        } else if let Some(rest) = route.strip_prefix("/policylists") {
            self.v1_policy_lists(&method_upper, rest)?
        } else if method_upper == "GET" && route == "/globals/version" {
            Some(V1Reply::Output(json!(self.host.version)))
        } else {
            None
        };
        Ok(reply
            .unwrap_or_else(|| {
                V1Reply::Failure(format!(
                    "{method} {path} is not modelled by the HCN emulator"
                ))
            })
            .into_json())
    }
}

/// The ID segment of a resource path (`rest` after the resource name, lower-cased, without
/// trailing slashes), split from an action such as `attach`: `("", None)` for the collection.
pub(super) fn id_and_action(rest: &str) -> (&str, Option<&str>) {
    let mut parts = rest.trim_start_matches('/').splitn(2, '/');
    (parts.next().unwrap_or_default(), parts.next())
}

/// The ID a V1 create asks for (its `ID`, empty for HNS to choose), or the failure envelope
/// V1 answers for one that is not a GUID.
pub(super) fn requested_id(id: &str) -> Result<Guid, V1Reply> {
    if id.is_empty() {
        return Ok(Guid::ZERO);
    }
    id.parse()
        .map_err(|_| V1Reply::Failure(format!("invalid ID {id:?}")))
}

/// Decodes a V1 request body; an empty body is the default request.
pub(super) fn parse_body<T: for<'de> Deserialize<'de> + Default>(
    request: &str,
    what: &str,
) -> Result<T, HcnFailure> {
    if request.trim().is_empty() {
        return Ok(T::default());
    }
    serde_json::from_str(request).map_err(|e| HcnFailure::invalid_json(what, e))
}

/// A list as V1 writes it: comma-joined, no spaces.
pub(super) fn comma_joined<T: std::fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// A V1 comma-joined list, split.
pub(super) fn comma_split(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_owned)
        .collect()
}
