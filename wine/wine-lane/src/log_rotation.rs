//! `logs.concurrent-writers`: the plugins' rotating log file with hundreds of processes
//! appending at once, on each side. Under Wine the writers are `.exe` processes, so the lock is
//! `LockFileEx` and the renames are `MoveFileEx` over files other processes open and close,
//! which is where a rotating logger that renames files its peers hold open breaks on Windows.
//!
//! Each side starts `log-writer` processes ([`NATIVE`], [`WINE`]) that wait for a start file,
//! then log numbered lines to one log with a small cap. The case checks, with room kept
//! for every file: every line there exactly once, whole, in its writer's order; no file over
//! the cap; only the log's own names in its directory. Then again with 2 files kept: the
//! directory stays within 3 caps.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use cni::logging::{self, Rotation};

use crate::lane::{Bench, Side};
use crate::log_lines;

/// How many writer processes log how many lines each, per side.
#[derive(Debug, Clone, Copy)]
struct Load {
    writers: u32,
    lines: u32,
}

/// Natively: as many plugins as a node starting its pods runs at once.
const NATIVE: Load = Load {
    writers: 200,
    lines: 10,
};
/// Under Wine every file call is a round trip to the one wineserver, so a line holds the
/// log's lock for about 3 ms (microseconds natively), and a writer that just wrote takes it
/// again before those pausing between tries wake: 50 writers of 10 lines on 2 shared cores
/// kept some of them past the lock's 2 s deadline, after which a writer writes without it
/// (safe, but past the cap, which this case flags). Fewer writers, more lines each.
const WINE: Load = Load {
    writers: 20,
    lines: 25,
};
/// The cap in MiB: about 48 lines of 220 bytes, so a run rotates a few dozen times.
const MAX_MIB: f64 = 0.01;
/// The longest line the writers log, with its time and tag.
const LONGEST_LINE: u64 = 250;
/// Every writer of both runs has ended by then, or the case fails (200 Wine processes take
/// about a minute on 2 busy cores).
const DEADLINE: Duration = Duration::from_secs(600);

pub fn concurrent_writers(bench: &Bench<'_>) -> Result<String, String> {
    let load = match bench.side() {
        Side::Native => NATIVE,
        Side::Wine => WINE,
    };
    let Load { writers, lines } = load;
    let all = run(bench, load, "all-kept", logging::MAX_KEEP)?;
    if all.lines.len() != (writers * lines) as usize {
        return Err(format!(
            "{} of {} lines in the log",
            all.lines.len(),
            writers * lines
        ));
    }
    let cap = cap(logging::MAX_KEEP);
    // Each rotated file was at most one line short of the cap when it rotated.
    if (all.files as u64) < all.bytes.div_ceil(cap)
        || all.files as u64 > all.bytes / (cap - LONGEST_LINE) + 1
    {
        return Err(format!(
            "{} files for {} bytes with a {cap}-byte cap",
            all.files, all.bytes
        ));
    }
    let two = run(bench, load, "two-kept", 2)?;
    if two.files != 3 || two.bytes > 3 * cap {
        return Err(format!(
            "keeping 2: {} files, {} bytes (cap {cap})",
            two.files, two.bytes
        ));
    }
    Ok(format!(
        "{writers} processes x {lines} lines: {} rotations, none lost or split, largest file {} of {cap} bytes; keeping 2: {} bytes",
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
fn run(bench: &Bench<'_>, load: Load, name: &str, keep: u32) -> Result<Seen, String> {
    let Load { writers, lines } = load;
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
    for writer in 0..writers {
        let stderr = out.join(writer.to_string());
        let child = File::create(&stderr)
            .and_then(|file| {
                bench
                    .tool("log-writer")
                    .args([
                        bench.side_path(&log),
                        writer.to_string(),
                        lines.to_string(),
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
    let ended = Instant::now() + DEADLINE;
    // Every writer up first (each says so with `<start>.<writer>`), then all start at once.
    let ready = |writer: u32| start.with_extension(format!("start.{writer}")).exists();
    while !(0..writers).all(ready) {
        if Instant::now() > ended {
            reap(children);
            return Err(format!("the writers were not all up within {DEADLINE:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    fs::write(&start, "").map_err(|e| format!("{}: {e}", start.display()))?;
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
                .filter(|l| l.starts_with("[WARN] ") && l.contains(" log "))
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
