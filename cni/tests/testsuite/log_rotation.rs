//! The rotating log file under the load it is built for: hundreds of processes appending at
//! once. The test binary runs itself as each writer ([`writer_child`]), so every writer is a
//! process of its own, logging through the plugins' own logger.

use cni::logging::{self, LogSettings, Rotation};
use log::LevelFilter;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The file whose creation starts every writer at once, so that they contend.
fn start_signal(log: &Path) -> PathBuf {
    log.with_extension("go")
}

/// Set in a writer's environment: `<log path>|<writer>|<lines>|<MiB>|<keep>`.
/// Writers start logging together, once the file `<log path>.go` exists.
const WRITER_VAR: &str = "CNI_LOG_ROTATION_TEST_WRITER";

/// The line `writer` logs as its `n`th: its numbers, then a filler that differs between
/// neighbours, so a line split by another's is seen.
fn message(writer: u32, n: u32) -> String {
    let filler = char::from(b'a' + ((writer * 7 + n) % 26) as u8);
    format!("line {n:03} {} end", filler.to_string().repeat(150))
}

/// Not a test on its own: the body of each writer process the tests start.
#[test]
fn writer_child() {
    let Ok(spec) = std::env::var(WRITER_VAR) else {
        return;
    };
    let fields: Vec<&str> = spec.split('|').collect();
    let [path, writer, lines, mib, keep] = fields[..] else {
        panic!("{WRITER_VAR}={spec}");
    };
    let writer: u32 = writer.parse().unwrap();
    let settings = LogSettings {
        level: LevelFilter::Info,
        file: Some(PathBuf::from(path)),
        rotation: Rotation::of_mib(mib.parse().unwrap(), keep.parse().unwrap()),
    };
    logging::init(format!("w{writer:03}:"), &settings);
    let go = start_signal(Path::new(path));
    let deadline = Instant::now() + Duration::from_secs(60);
    while !go.exists() {
        assert!(Instant::now() < deadline, "never told to start");
        std::thread::sleep(Duration::from_millis(1));
    }
    for n in 0..lines.parse().unwrap() {
        log::info!("{}", message(writer, n));
    }
}

/// Runs `writers` writer processes at once, each logging `lines` lines to `path`; returns
/// what they said on stderr about the log itself (nothing, when all went well).
fn run_writers(path: &Path, writers: u32, lines: u32, mib: f64, keep: u32) -> Vec<String> {
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..writers)
        .map(|writer| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "log_rotation::writer_child",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(
                    WRITER_VAR,
                    format!("{}|{writer}|{lines}|{mib}|{keep}", path.display()),
                )
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    fs::write(start_signal(path), "").unwrap();
    let mut told = Vec::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "a writer failed: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        told.extend(
            stderr
                .lines()
                .filter(|l| l.starts_with("[WARN] ") && l.contains(" log "))
                .map(str::to_owned),
        );
    }
    told
}

/// `(writer, n)` of a well-formed line: `<time> [INFO] wWWW: line NNN <filler> end`.
fn parse(line: &str) -> Option<(u32, u32)> {
    let (time, rest) = line.split_once(" [INFO] w")?;
    let (writer, rest) = rest.split_once(": ")?;
    let writer: u32 = writer.parse().ok()?;
    let n: u32 = rest.strip_prefix("line ")?.get(..3)?.parse().ok()?;
    (!time.is_empty() && !time.contains(' ') && rest == message(writer, n)).then_some((writer, n))
}

/// What the log directory holds: its files oldest first, checked on the way.
struct Seen {
    /// (writer, n) → how many times it was seen.
    lines: BTreeMap<(u32, u32), usize>,
    files: usize,
    largest: u64,
    total: u64,
}

/// Reads every file of the log at `path`, oldest first; checks that only the log's own names
/// are there, that every line is well formed, and that each writer's lines are in the order
/// it wrote them.
fn read_log(path: &Path) -> Seen {
    let files = logging::files_newest_first(path);
    let mut expected: Vec<PathBuf> = files.clone();
    expected.push(logging::lock_path(path));
    let mut present: Vec<PathBuf> = fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| *p != start_signal(path))
        .collect();
    present.sort();
    expected.sort();
    assert_eq!(present, expected, "only the log's own files");
    for (n, file) in files.iter().enumerate().skip(1) {
        assert_eq!(
            file,
            &logging::rotated_name(path, n as u32),
            "no gap in the chain"
        );
    }
    let mut seen = Seen {
        lines: BTreeMap::new(),
        files: files.len(),
        largest: 0,
        total: 0,
    };
    let mut last_of: BTreeMap<u32, u32> = BTreeMap::new();
    for file in files.iter().rev() {
        let text = fs::read_to_string(file).unwrap();
        seen.largest = seen.largest.max(text.len() as u64);
        seen.total += text.len() as u64;
        for line in text.lines() {
            let (writer, n) = parse(line).unwrap_or_else(|| panic!("malformed line: {line:?}"));
            if let Some(last) = last_of.insert(writer, n) {
                assert!(last < n, "writer {writer}: line {n} after line {last}");
            }
            *seen.lines.entry((writer, n)).or_default() += 1;
        }
    }
    seen
}

/// The longest line the writers log, with its time and tag.
const LONGEST_LINE: u64 = 250;

/// 200 processes, 20 lines each, a 0.05 MiB cap and room for every file: every line is there
/// once and whole, in its writer's order, and no file is over the cap.
#[test]
fn hundreds_of_writers_lose_no_line_and_no_file_passes_the_cap() {
    let (writers, lines, mib, keep) = (200, 20, 0.05, logging::MAX_KEEP);
    let cap = Rotation::of_mib(mib, keep).unwrap().max_bytes();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cni.log");
    let told = run_writers(&path, writers, lines, mib, keep);
    assert_eq!(told, Vec::<String>::new());

    let seen = read_log(&path);
    assert_eq!(seen.lines.len(), (writers * lines) as usize);
    assert!(seen.lines.values().all(|&times| times == 1));
    assert!(
        seen.largest <= cap,
        "{} bytes in a file, cap {cap}",
        seen.largest
    );
    // Each rotated file was at most one line short of the cap when it rotated.
    assert!(seen.files as u64 >= seen.total.div_ceil(cap));
    assert!(seen.files as u64 <= seen.total / (cap - LONGEST_LINE) + 1);
    eprintln!(
        "{writers} processes, {} lines, {} bytes: {} rotations, largest file {} bytes (cap {cap})",
        writers * lines,
        seen.total,
        seen.files - 1,
        seen.largest
    );
}

/// With 2 files kept, the directory never holds more than 3 caps (and the lock file), and only
/// the log's names; the lines there are whole and none is doubled.
#[test]
fn a_small_keep_bounds_the_directory() {
    let (writers, lines, mib, keep) = (200, 10, 0.01, 2);
    let cap = Rotation::of_mib(mib, keep).unwrap().max_bytes();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cni.log");
    let told = run_writers(&path, writers, lines, mib, keep);
    assert_eq!(told, Vec::<String>::new());

    let seen = read_log(&path);
    assert_eq!(seen.files, 3);
    assert!(seen.largest <= cap);
    assert!(seen.total <= 3 * cap);
    eprintln!(
        "keeping 2 of a {cap}-byte cap: {} bytes, largest file {}",
        seen.total, seen.largest
    );
    assert!(seen.lines.values().all(|&times| times == 1));
    assert!(fs::metadata(logging::lock_path(&path)).unwrap().len() == 0);
}

/// A link planted at a rotated name is replaced by the rename, never written through nor
/// listed; a FIFO there is never opened (an open would block) and is replaced too.
#[cfg(unix)]
#[test]
fn links_and_fifos_at_rotated_names_are_replaced_never_followed() {
    use cni::logging::{LogFile, rotated_name};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cni.log");
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("target");
    fs::write(&target, "untouched").unwrap();
    std::os::unix::fs::symlink(&target, rotated_name(&path, 1)).unwrap();
    let fifo = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(
        rotated_name(&path, 2).as_os_str(),
    ))
    .unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    assert_eq!(logging::files_newest_first(&path), Vec::<PathBuf>::new());

    // Each 9-byte line rotates the one before it out.
    let log = LogFile::open(&path, Rotation::new(9.try_into().unwrap(), 3)).unwrap();
    for n in 1..=3 {
        log.append(format!("line {n:03}\n").as_bytes()).unwrap();
    }
    assert_eq!(fs::read_to_string(&target).unwrap(), "untouched");
    assert_eq!(logging::files_newest_first(&path).len(), 3);
    assert_eq!(
        fs::read_to_string(rotated_name(&path, 2)).unwrap(),
        "line 001\n"
    );
    assert_eq!(
        fs::read_to_string(rotated_name(&path, 1)).unwrap(),
        "line 002\n"
    );
}
