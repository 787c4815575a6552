//! What a log line costs in the plugins' log file, per way of writing it: a plain file logger
//! (simplelog's writer over one handle kept open, a record in several writes) and the plugins'
//! rotating log (open, lock, one write, close per line), with rotation off, on at the default
//! cap, and at a cap so small that one line in 20 rotates. The line is formatted the same way in
//! each; each way writes [`LINES`] lines to a fresh file, [`ROUNDS`] times taking turns, and
//! the median round is printed.
//!
//! Run: `cargo bench -p cni --bench log_lines`.

use std::fs::OpenOptions;
use std::io::Write;
use std::num::NonZeroU64;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cni::logging::{LogFile, Rotation};
use log::{Level, LevelFilter, Log, Record};
use simplelog::{ConfigBuilder, WriteLogger};

const LINES: u32 = 5_000;
const ROUNDS: usize = 9;
/// Like a plugin's: the command's tag, then what happened.
const MESSAGE: &str = "ADD 3f2a9c0e1d7b4a65/eth0: endpoint 5eed0002-0000-4000-8000-000000000002 \
                       attached to namespace 5eed0003-0000-4000-8000-000000000003 with 10.244.1.7/24";

fn config() -> simplelog::Config {
    ConfigBuilder::new()
        .set_time_format_rfc3339()
        .set_target_level(LevelFilter::Off)
        .set_thread_level(LevelFilter::Off)
        .build()
}

/// A plain file logger: one handle opened for appending, simplelog writing each record to it.
fn kept_open(dir: &Path) {
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("cni.log"))
        .expect("log");
    let logger = WriteLogger::new(LevelFilter::Info, config(), file);
    for _ in 0..LINES {
        log_one(&*logger);
    }
}

/// The plugins' file logger: simplelog formats into a buffer, the rotating log writes it.
fn rotating(dir: &Path, rotation: Option<Rotation>) {
    let log = LogFile::open(&dir.join("cni.log"), rotation).expect("log");
    let buffer = Buffer::default();
    let logger = WriteLogger::new(LevelFilter::Info, config(), buffer.clone());
    for _ in 0..LINES {
        log_one(&*logger);
        log.append(&buffer.take()).expect("append");
    }
}

fn log_one(logger: &dyn Log) {
    logger.log(
        &Record::builder()
            .args(format_args!("{MESSAGE}"))
            .level(Level::Info)
            .build(),
    );
}

/// Where simplelog formats a record.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Buffer {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().expect("buffer"))
    }
}

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("buffer").extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes [`LINES`] lines to a log in the directory given.
type Way<'a> = dyn Fn(&Path) + 'a;

fn main() {
    let line_bytes = {
        let buffer = Buffer::default();
        log_one(&*WriteLogger::new(
            LevelFilter::Info,
            config(),
            buffer.clone(),
        ));
        buffer.take().len() as u64
    };
    let small = Rotation::new(NonZeroU64::new(20 * line_bytes).expect("cap"), 5);
    let ways: [(&str, &Way<'_>); 4] = [
        ("simplelog over one open handle", &kept_open),
        ("rotating log, rotation off", &|dir| rotating(dir, None)),
        ("rotating log, 10 MiB cap (default)", &|dir| {
            rotating(dir, Some(Rotation::DEFAULT))
        }),
        ("rotating log, rotating every 20 lines", &|dir| {
            rotating(dir, small)
        }),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); ways.len()];
    for _ in 0..ROUNDS {
        for ((_, way), times) in ways.iter().zip(&mut times) {
            let dir = tempfile::tempdir().expect("dir");
            let started = Instant::now();
            way(dir.path());
            times.push(started.elapsed());
        }
    }
    println!("{LINES} lines of {line_bytes} bytes, median of {ROUNDS} rounds:");
    for ((name, _), mut times) in ways.iter().zip(times) {
        times.sort();
        let median = times[ROUNDS / 2];
        println!(
            "  {name:<42} {:>7.2} µs/line",
            median.as_secs_f64() * 1e6 / f64::from(LINES)
        );
    }
}
