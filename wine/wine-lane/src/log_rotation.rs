//! `logs.concurrent-writers`: the plugins' rotating log file with hundreds of processes
//! appending at once, on each side. Under Wine the writers are `.exe` processes, so the lock is
//! `LockFileEx` and the renames are `MoveFileEx` over files other processes open and close,
//! which is where a rotating logger that renames files its peers hold open breaks on Windows.
//!
//! Each side starts [`WRITERS`] `log-writer` processes that wait for a start file, then log
//! [`LINES`] numbered lines each to one log with a small cap. The case checks, with room kept
//! for every file: every line there exactly once, whole, in its writer's order; no file over
//! the cap; only the log's own names in its directory. Then again with 2 files kept: the
//! directory stays within 3 caps.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use cni::logging::{self, Rotation};

use crate::lane::Bench;
use crate::log_lines;

/// Writer processes per run: as many plugins as a node starting its pods runs at once.
const WRITERS: u32 = 200;
/// Lines per writer.
const LINES: u32 = 10;
/// The cap in MiB: about 48 lines of 220 bytes, so a run rotates a few dozen times.
const MAX_MIB: f64 = 0.01;
/// Every writer of both runs has ended by then, or the case fails (200 Wine processes take
/// about a minute on 2 busy cores).
const DEADLINE: Duration = Duration::from_secs(600);

pub fn concurrent_writers(bench: &Bench<'_>) -> Result<String, String> {
    let all = run(bench, "all-kept", logging::MAX_KEEP)?;
    if all.lines.len() != (WRITERS * LINES) as usize {
        return Err(format!(
            "{} of {} lines in the log",
            all.lines.len(),
            WRITERS * LINES
        ));
    }
    let cap = cap(logging::MAX_KEEP);
    let longest = 250;
    if (all.files as u64) < all.bytes.div_ceil(cap)
        || all.files as u64 > all.bytes / (cap - longest) + 1
    {
        return Err(format!(
            "{} files for {} bytes with a {cap}-byte cap",
            all.files, all.bytes
        ));
    }
    let two = run(bench, "two-kept", 2)?;
    if two.files != 3 || two.bytes > 3 * cap {
        return Err(format!(
            "keeping 2: {} files, {} bytes (cap {cap})",
            two.files, two.bytes
        ));
    }
    Ok(format!(
        "{WRITERS} processes x {LINES} lines: {} rotations, none lost or split, largest file {} of {cap} bytes; keeping 2: {} bytes",
        all.files - 1,
        all.largest,
        two.bytes
    ))
}

fn cap(keep: u32) -> u64 {
    Rotation::of_mib(MAX_MIB, keep).map_or(0, Rotation::max_bytes)
}

/// What one run left in the log's directory.
struct Seen {
    /// (writer, n) of every line.
    lines: BTreeMap<(u32, u32), usize>,
    files: usize,
    largest: u64,
    bytes: u64,
}

/// Runs the writers keeping `keep` files, in a directory of its own; reads back what they
/// left, failing on a malformed, doubled or out-of-order line, a file over the cap, a name that
/// is not the log's, or anything a writer said about the log on stderr.
fn run(bench: &Bench<'_>, name: &str, keep: u32) -> Result<Seen, String> {
    let dir = bench.state().join("logs").join(name);
    let out = bench.state().join("logs").join(format!("{name}.stderr"));
    for fresh in [&dir, &out] {
        let _ = fs::remove_dir_all(fresh);
        fs::create_dir_all(fresh).map_err(|e| format!("{}: {e}", fresh.display()))?;
    }
    let log = dir.join("cni.log");
    let start = bench.state().join("logs").join(format!("{name}.start"));
    let _ = fs::remove_file(&start);
    let mut children = Vec::new();
    for writer in 0..WRITERS {
        let stderr = out.join(writer.to_string());
        let child = File::create(&stderr)
            .and_then(|file| {
                bench
                    .tool("log-writer")
                    .args([
                        bench.side_path(&log),
                        writer.to_string(),
                        LINES.to_string(),
                        MAX_MIB.to_string(),
                        keep.to_string(),
                        bench.side_path(&start),
                    ])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(file)
                    .spawn()
            })
            .map_err(|e| format!("cannot start writer {writer}: {e}"));
        match child {
            Ok(child) => children.push((writer, child, stderr)),
            Err(why) => {
                reap(children);
                return Err(why);
            }
        }
    }
    fs::write(&start, "").map_err(|e| format!("{}: {e}", start.display()))?;
    let ended = Instant::now() + DEADLINE;
    let mut said = Vec::new();
    for (writer, mut child, stderr) in children {
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < ended => std::thread::sleep(Duration::from_millis(20)),
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
            }
        };
        let text = fs::read_to_string(&stderr).unwrap_or_default();
        if status.is_none_or(|s| !s.success()) {
            said.push(format!("writer {writer} ended {status:?}: {}", text.trim()));
        }
        said.extend(
            text.lines()
                .filter(|l| l.contains("log lock") || l.contains("rotate"))
                .map(|l| format!("writer {writer}: {l}")),
        );
    }
    if !said.is_empty() {
        return Err(format!("{} complaint(s), first: {}", said.len(), said[0]));
    }
    read_log(&log, cap(keep))
}

/// Kills and reaps writers started before one could not be.
fn reap(children: Vec<(u32, Child, PathBuf)>) {
    for (_, mut child, _) in children {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Reads the log's files oldest first, checking names, sizes and every line.
fn read_log(log: &Path, cap: u64) -> Result<Seen, String> {
    let files = logging::files_newest_first(log);
    let mut expected = files.clone();
    expected.push(logging::lock_path(log));
    expected.sort();
    let mut present: Vec<PathBuf> = fs::read_dir(log.parent().unwrap_or(Path::new(".")))
        .map_err(|e| e.to_string())?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    present.sort();
    if present != expected {
        return Err(format!("the log's directory holds {present:?}"));
    }
    if let Some(gap) = (1..files.len()).find(|&n| files[n] != logging::rotated_name(log, n as u32))
    {
        return Err(format!("the chain has a gap at .{gap}: {files:?}"));
    }
    let mut seen = Seen {
        lines: BTreeMap::new(),
        files: files.len(),
        largest: 0,
        bytes: 0,
    };
    let mut last_of: BTreeMap<u32, u32> = BTreeMap::new();
    for file in files.iter().rev() {
        let text = fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let size = text.len() as u64;
        if size > cap {
            return Err(format!(
                "{} holds {size} bytes, over the {cap}-byte cap",
                file.display()
            ));
        }
        seen.largest = seen.largest.max(size);
        seen.bytes += size;
        for line in text.lines() {
            let (writer, n) =
                log_lines::parse(line).ok_or_else(|| format!("malformed line: {line:?}"))?;
            if let Some(last) = last_of.insert(writer, n)
                && last >= n
            {
                return Err(format!("writer {writer}: line {n} after line {last}"));
            }
            let times = seen.lines.entry((writer, n)).or_default();
            *times += 1;
            if *times > 1 {
                return Err(format!("writer {writer}'s line {n} is there twice"));
            }
        }
    }
    Ok(seen)
}
