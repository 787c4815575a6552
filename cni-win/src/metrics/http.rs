//! Serves [`Metrics`] over HTTP: `GET /metrics` (or `HEAD`) is the scrape, anything else a 404.
//!
//! The endpoint sits on the node's network in a process that runs as SYSTEM, so it bounds
//! what a client can take: at most [`MAX_CONNECTIONS`] connections are served at once (more
//! wait to be accepted), a connection whose client neither sends nor reads for [`TIMEOUT`] is
//! dropped, a request head larger than [`MAX_HEAD`] is refused, and every answer closes its
//! connection. A scrape never delays a round: the server has threads of its own. It is
//! written on `std` because what it must also do, no small server crate offers together
//! with those bounds: say which port it bound when asked for port 0, and stop (releasing the
//! port) when the daemon stops.

use std::io::{self, Read, Write};
use std::net::{Shutdown as Close, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use super::Metrics;
use crate::error::Error;

/// What a scrape's `Content-Type` says: prometheus-client writes OpenMetrics text.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Connections served at once: Prometheus keeps one per scraper, so a handful covers a
/// redundant pair of scrapers and an operator's curl with room to spare.
pub const MAX_CONNECTIONS: usize = 8;

/// How long a connection may stay silent (no request byte read, no response byte taken):
/// Prometheus scrapes take milliseconds and its default scrape timeout is 10 s.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The longest request head (request line and headers) read: a scrape's is a few hundred
/// bytes.
pub const MAX_HEAD: usize = 8 * 1024;

/// How often the listener looks for a new connection or a stop.
const ACCEPT_POLL: Duration = Duration::from_millis(50);

/// The metrics endpoint, serving until it is dropped.
#[derive(Debug)]
pub struct MetricsEndpoint {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    listener: Option<JoinHandle<()>>,
}

impl MetricsEndpoint {
    /// Listens on `address` (such as `0.0.0.0:9760`; port 0 picks a free port) and serves
    /// `metrics` from threads of its own.
    pub fn serve(address: SocketAddr, metrics: Arc<Metrics>) -> Result<MetricsEndpoint, Error> {
        let cannot = |e: io::Error| Error::new(format!("cannot serve metrics on {address}: {e}"));
        let listener = TcpListener::bind(address).map_err(cannot)?;
        let bound = listener.local_addr().map_err(cannot)?;
        listener.set_nonblocking(true).map_err(cannot)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(format!("metrics on {bound}"))
            .spawn(move || accept(&listener, &metrics, &stopping))
            .map_err(cannot)?;
        Ok(MetricsEndpoint {
            address: bound,
            stop,
            listener: Some(thread),
        })
    }

    /// The address it listens on, with the port it bound.
    pub fn address(&self) -> SocketAddr {
        self.address
    }
}

impl Drop for MetricsEndpoint {
    /// Stops accepting and releases the port; a connection being answered finishes on its
    /// own thread, within [`TIMEOUT`].
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.listener.take()
            && thread.join().is_err()
        {
            log::error!("the metrics listener panicked");
        }
    }
}

/// Accepts connections until `stop`, at most [`MAX_CONNECTIONS`] in service at once.
fn accept(listener: &TcpListener, metrics: &Arc<Metrics>, stop: &AtomicBool) {
    let serving = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::SeqCst) {
        if serving.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            std::thread::sleep(ACCEPT_POLL);
            continue;
        }
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(ACCEPT_POLL);
                continue;
            }
            Err(e) => {
                log::warn!("metrics: cannot accept a connection: {e}");
                std::thread::sleep(ACCEPT_POLL);
                continue;
            }
        };
        serving.fetch_add(1, Ordering::SeqCst);
        let slot = Slot(Arc::clone(&serving));
        let metrics = Arc::clone(metrics);
        let spawned = std::thread::Builder::new()
            .name("metrics connection".to_owned())
            .spawn(move || {
                let _slot = slot;
                if let Err(e) = answer(stream, &metrics) {
                    log::debug!("metrics: a connection ended: {e}");
                }
            });
        if let Err(e) = spawned {
            log::warn!("metrics: cannot start a thread for a connection: {e}");
        }
    }
}

/// A connection in service, counted until its thread ends.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Reads one request head and answers it, closing the connection.
fn answer(mut stream: TcpStream, metrics: &Metrics) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    let head = read_head(&mut stream)?;
    let (status, content_type, body, send_body) = match request_line(&head) {
        Some((method @ ("GET" | "HEAD"), "/metrics")) => {
            ("200 OK", OPENMETRICS, metrics.render(), method == "GET")
        }
        Some((method, _)) => (
            "404 Not Found",
            "text/plain; charset=utf-8",
            "cni-win serves its metrics at /metrics\n".to_owned(),
            method != "HEAD",
        ),
        None => (
            "400 Bad Request",
            "text/plain; charset=utf-8",
            "not an HTTP/1.x request\n".to_owned(),
            true,
        ),
    };
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if send_body {
        response.extend_from_slice(body.as_bytes());
    }
    stream.write_all(&response)?;
    stream.flush()?;
    stream.shutdown(Close::Write)
}

/// The request head: everything up to the blank line, at most [`MAX_HEAD`] bytes.
fn read_head(stream: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut head = Vec::new();
    let mut buffer = [0; 1024];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too large",
            ));
        }
        let read = stream.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        head.extend_from_slice(&buffer[..read]);
    }
    Ok(head)
}

/// The method and the path (without its query) of an `HTTP/1.x` request line; `None` when
/// the head does not start with one.
fn request_line(head: &[u8]) -> Option<(&str, &str)> {
    let line = head.split(|byte| *byte == b'\r').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split(' ');
    let (method, target, version) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || !version.starts_with("HTTP/1.") {
        return None;
    }
    let path = target.split('?').next().unwrap_or(target);
    Some((method, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_are_read_as_http_writes_them() {
        assert_eq!(
            request_line(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            Some(("GET", "/metrics"))
        );
        assert_eq!(
            request_line(b"HEAD /metrics?x=1 HTTP/1.0\r\n\r\n"),
            Some(("HEAD", "/metrics"))
        );
        assert_eq!(request_line(b"GET /metrics\r\n\r\n"), None);
        assert_eq!(request_line(b"\xff\xfe"), None);
        assert_eq!(request_line(b"GET / HTTP/2 extra\r\n\r\n"), None);
    }

    #[test]
    fn port_0_reports_the_port_bound_and_dropping_releases_it() {
        let metrics = Arc::new(Metrics::new("0.1.0", "abc"));
        let endpoint =
            MetricsEndpoint::serve("127.0.0.1:0".parse().unwrap(), Arc::clone(&metrics)).unwrap();
        let address = endpoint.address();
        assert_ne!(address.port(), 0);
        let mut stream = TcpStream::connect(address).unwrap();
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
        assert!(response.ends_with("# EOF\n"), "{response}");
        drop(endpoint);
        // The port is free again: it can be bound anew.
        TcpListener::bind(address).unwrap();
    }
}
