//! Serves [`NodeMetrics`] over HTTP: `GET /metrics` is the scrape, anything else a 404. The
//! server is `tiny_http` (small, synchronous, no runtime), on a thread of its own so a slow
//! scrape never delays a sweep pass.

use std::net::SocketAddr;
use std::sync::Arc;

use tiny_http::{Header, Method, Request, Response, Server};

use super::NodeMetrics;
use crate::Error;

/// What a scrape's `Content-Type` says: prometheus-client writes OpenMetrics text.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The metrics endpoint, serving until the process ends.
#[derive(Debug)]
pub struct MetricsEndpoint {
    address: SocketAddr,
}

impl MetricsEndpoint {
    /// Listens on `address` (`0.0.0.0:9464`; port 0 takes a free one) and serves `metrics` from
    /// a thread of its own.
    pub fn serve(address: &str, metrics: Arc<NodeMetrics>) -> Result<MetricsEndpoint, Error> {
        let server = Server::http(address)
            .map_err(|e| Error::new(format!("cannot serve metrics on {address}: {e}")))?;
        let bound = server.server_addr().to_ip().ok_or_else(|| {
            Error::new(format!(
                "cannot serve metrics on {address}: not a TCP address"
            ))
        })?;
        std::thread::Builder::new()
            .name("metrics".to_owned())
            .spawn(move || {
                for request in server.incoming_requests() {
                    answer(request, &metrics);
                }
            })
            .map_err(|e| Error::new(format!("cannot start the metrics thread: {e}")))?;
        Ok(MetricsEndpoint { address: bound })
    }

    /// The address it listens on (the port chosen when asked for port 0).
    pub fn address(&self) -> SocketAddr {
        self.address
    }
}

fn answer(request: Request, metrics: &NodeMetrics) {
    let path = request.url().split('?').next().unwrap_or_default();
    let scrape = matches!(request.method(), Method::Get | Method::Head) && path == "/metrics";
    let response = if scrape {
        Response::from_string(metrics.render()).with_header(header(OPENMETRICS))
    } else {
        Response::from_string("cni-win serves its metrics at /metrics\n")
            .with_status_code(404)
            .with_header(header("text/plain; charset=utf-8"))
    };
    // A client that went away is its own problem; the next scrape is answered as usual.
    if let Err(e) = request.respond(response) {
        log::debug!("metrics: cannot answer a scrape: {e}");
    }
}

fn header(content_type: &str) -> Header {
    Header::from_bytes("Content-Type", content_type).expect("a static header is valid")
}
