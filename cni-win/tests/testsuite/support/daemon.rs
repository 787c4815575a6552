//! `cni-win daemon` as a process on a scratch node, and its metrics as a scrape gets
//! them.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::ScratchNode;

/// A scrape: each sample's `name{labels}` and value.
#[derive(Debug)]
pub struct Scrape(pub BTreeMap<String, f64>);

impl Scrape {
    pub fn parse(text: &str) -> Scrape {
        let samples = text
            .lines()
            .filter(|line| !line.starts_with('#') && !line.is_empty())
            .map(|line| {
                let (series, value) = line.rsplit_once(' ').expect("a sample line");
                (series.to_owned(), value.parse().expect("a number"))
            })
            .collect();
        Scrape(samples)
    }

    pub fn get(&self, series: &str) -> Option<f64> {
        self.0.get(series).copied()
    }

    pub fn value(&self, series: &str) -> f64 {
        self.get(series)
            .unwrap_or_else(|| panic!("no {series} in the scrape: {:#?}", self.0))
    }

    /// The sum over every series of `name` whose labels contain `labels`.
    pub fn sum(&self, name: &str, labels: &str) -> f64 {
        self.0
            .iter()
            .filter(|(series, _)| series.split('{').next() == Some(name) && series.contains(labels))
            .map(|(_, value)| value)
            .sum()
    }

    pub fn passes(&self) -> f64 {
        self.sum("cniwin_sweep_passes_total", "")
    }
}

/// `cni-win daemon --every …` with its metrics on a port the system picked on the loopback
/// (the daemon prints which), killed on drop if still running.
pub struct Daemon {
    pub child: Child,
    pub address: String,
    /// The daemon's stderr, line by line, after the line saying where it serves.
    pub lines: mpsc::Receiver<String>,
}

impl Daemon {
    /// A round a second, its metrics on port 0 of the loopback.
    pub fn start(node: &ScratchNode, apply: bool) -> Daemon {
        Daemon::start_on(node, apply, "127.0.0.1:0", "1s")
    }

    pub fn start_on(node: &ScratchNode, apply: bool, address: &str, every: &str) -> Daemon {
        let mut command = Command::new(env!("CARGO_BIN_EXE_cni-win"));
        command
            .args(["daemon", "--conf-dir"])
            .arg(node.conf_dir())
            .args(["--bin-dir"])
            .arg(node.dir().join("bin"))
            .args(["--every", every, "--metrics-address", address])
            .env(hns_emulator::STATE_ENV, node.state())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if apply {
            command.arg("--apply");
        }
        let mut child = command.spawn().unwrap();
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let address = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx
                .recv_timeout(left)
                .expect("the daemon says where it serves its metrics");
            if let Some(url) = line.strip_prefix("cni-win daemon: serving metrics on http://") {
                break url.trim_end_matches("/metrics").to_owned();
            }
        };
        assert!(
            !address.ends_with(":0"),
            "the daemon prints the port it bound: {address}"
        );
        Daemon {
            child,
            address,
            lines: rx,
        }
    }

    /// Waits for a stderr line starting with `prefix`, at most `timeout`.
    pub fn line_starting(&self, prefix: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return line,
                Ok(_) => {}
                Err(e) => panic!("no line starting with {prefix:?} ({e})"),
            }
        }
    }

    /// Sends SIGTERM and waits (at most 30 s) for the process to end: how long it took and
    /// how it ended.
    pub fn terminate(&mut self) -> (Duration, std::process::ExitStatus) {
        let sent = Instant::now();
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (sent.elapsed(), status);
            }
            assert!(
                sent.elapsed() < Duration::from_secs(30),
                "the daemon did not stop"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn get(&self, path: &str) -> (String, String) {
        let mut stream = TcpStream::connect(&self.address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.address
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
        (head.to_owned(), body.to_owned())
    }

    pub fn scrape(&self) -> Scrape {
        let (head, body) = self.get("/metrics");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(head.contains("application/openmetrics-text"), "{head}");
        assert!(body.ends_with("# EOF\n"), "{body}");
        Scrape::parse(&body)
    }

    /// The first scrape after two more passes have ended: the second began after whatever
    /// the test changed before calling this.
    pub fn after_next_pass(&self) -> Scrape {
        let start = self.scrape().passes();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let scrape = self.scrape();
            if scrape.passes() >= start + 2.0 {
                return scrape;
            }
            assert!(Instant::now() < deadline, "no pass in 60 s: {scrape:#?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
