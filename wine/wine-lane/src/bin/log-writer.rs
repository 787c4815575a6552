//! `log-writer`: one of the many processes the lane's `logs.concurrent-writers` case starts at
//! once, natively and as a `.exe` under Wine. It logs numbered lines through the plugins' own
//! logger (`cni::logging`) to one rotating log file, once a start file appears, so that every
//! writer contends for the log at the same moment; it creates `START_FILE.WRITER` when it is
//! ready to, so that the start waits for every writer to be up (under Wine, 200 processes
//! starting take the processor for tens of seconds). Test-only, never shipped.
//!
//! usage: log-writer LOG WRITER LINES MAX_MIB KEEP START_FILE

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use cni::logging::{self, LogSettings, Rotation};
use log::LevelFilter;

#[path = "../log_lines.rs"]
#[allow(dead_code, reason = "parse is the lane's: it reads the lines back")]
mod log_lines;

/// A writer whose start file does not appear by then gives up.
const START_DEADLINE: Duration = Duration::from_secs(300);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [log, writer, lines, mib, keep, start] = &args[..] else {
        eprintln!("usage: log-writer LOG WRITER LINES MAX_MIB KEEP START_FILE");
        return ExitCode::from(2);
    };
    let (Ok(writer), Ok(lines), Ok(mib), Ok(keep)) = (
        writer.parse::<u32>(),
        lines.parse::<u32>(),
        mib.parse::<f64>(),
        keep.parse::<u32>(),
    ) else {
        eprintln!("log-writer: WRITER, LINES and KEEP are whole numbers, MAX_MIB a number");
        return ExitCode::from(2);
    };
    let settings = LogSettings {
        level: LevelFilter::Info,
        file: Some(PathBuf::from(log)),
        rotation: Rotation::of_mib(mib, keep),
    };
    logging::init(format!("w{writer:03}:"), &settings);
    let ready = format!("{start}.{writer}");
    if let Err(e) = std::fs::write(&ready, "") {
        eprintln!("log-writer: cannot create {ready}: {e}");
        return ExitCode::FAILURE;
    }
    let deadline = Instant::now() + START_DEADLINE;
    while !Path::new(start).exists() {
        if Instant::now() > deadline {
            eprintln!("log-writer: {start} did not appear");
            return ExitCode::FAILURE;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    for n in 0..lines {
        log::info!("{}", log_lines::message(writer, n));
    }
    ExitCode::SUCCESS
}
