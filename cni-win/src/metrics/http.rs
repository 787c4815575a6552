//! Serves [`NodeMetrics`] over HTTP: `GET /metrics` is the scrape, anything else a 404.
//!
//! The server is `oxhttp` (small, synchronous, no runtime) because the endpoint sits on the
//! node's network in a process that runs as SYSTEM: it bounds what a client can take, where
//! a server without bounds gives every idle or slow connection a thread for ever. At most
//! [`MAX_CONNECTIONS`] connections are served at once (more wait to be accepted), and a
//! connection whose client neither sends nor reads for [`TIMEOUT`] is dropped. A scrape
//! never delays a sweep pass: the server has threads of its own.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use oxhttp::Server;
use oxhttp::model::{Body, Method, Request, Response, StatusCode};

use super::NodeMetrics;
use crate::Error;

/// What a scrape's `Content-Type` says: prometheus-client writes OpenMetrics text.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Connections served at once: Prometheus keeps one per scraper, so a handful covers a
/// redundant pair of scrapers and an operator's curl with room to spare.
pub const MAX_CONNECTIONS: usize = 8;

/// How long a connection may stay silent (no request byte read, no response byte taken):
/// Prometheus scrapes take milliseconds and its default scrape timeout is 10 s.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The metrics endpoint, serving until the process ends.
#[derive(Debug)]
pub struct MetricsEndpoint {
    address: SocketAddr,
}

impl MetricsEndpoint {
    /// Listens on `address` (`IP:PORT`, such as `0.0.0.0:9760`) and serves `metrics` from
    /// threads of its own.
    pub fn serve(address: &str, metrics: Arc<NodeMetrics>) -> Result<MetricsEndpoint, Error> {
        let bound: SocketAddr = address.parse().map_err(|_| {
            Error::new(format!(
                "--metrics-address {address:?} is not IP:PORT (such as 0.0.0.0:9760)"
            ))
        })?;
        Server::new(move |request| answer(request, &metrics))
            .bind(bound)
            .with_global_timeout(TIMEOUT)
            .with_max_concurrent_connections(MAX_CONNECTIONS)
            .spawn()
            .map_err(|e| Error::new(format!("cannot serve metrics on {address}: {e}")))?;
        Ok(MetricsEndpoint { address: bound })
    }

    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }
}

fn answer(request: &mut Request<Body>, metrics: &NodeMetrics) -> Response<Body> {
    let scrape = matches!(*request.method(), Method::GET | Method::HEAD)
        && request.uri().path() == "/metrics";
    let (status, content_type, body) = if scrape {
        (StatusCode::OK, OPENMETRICS, metrics.render())
    } else {
        (
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            "cni-win serves its metrics at /metrics\n".to_owned(),
        )
    };
    Response::builder()
        .status(status)
        .header("Content-Type", content_type)
        .body(Body::from(body))
        .unwrap_or_else(|_| Response::new(Body::empty()))
}
