//! The log file every plugin process on a node appends to at once, kept under a size cap by
//! rotation: `cni.log` is renamed `cni.1.log` when the next line would take it past the cap,
//! `cni.1.log` becomes `cni.2.log`, and so on up to the number kept; the oldest is replaced.
//!
//! Hundreds of plugin processes may log at the same moment (a node starting its pods), each
//! its own process, so nothing can be coordinated in memory. The rules, and why:
//!
//! - **One line, one write.** Each record is written whole with one `write` on a handle opened
//!   for appending (`O_APPEND`; on Windows `FILE_APPEND_DATA` without `FILE_WRITE_DATA`), so
//!   even a line written without the lock (below) lands whole at the end of the file on local
//!   NTFS and Unix file systems. The handle is opened for the line and closed after it (a
//!   plugin writes a few lines), so no process keeps a handle to a file that a rotation renames.
//! - **One lock, around check, rotation and write.** A cross-process lock on
//!   `<logFile>.lock` (`flock` on Unix, `LockFileEx` on Windows, through std's
//!   `File::try_lock`) is held while a writer looks at the file's size, rotates when its line
//!   would not fit, and writes. A separate file, because Windows byte-range locks are
//!   mandatory: locking the log itself would fail other processes' writes instead of making
//!   them wait. So no process has the file open while it is renamed or replaced, and no file is
//!   larger than the cap unless one line alone is.
//!
//!   Writers sharing the lock with a rotator taking it exclusively would not do: writers that
//!   look at the size together all write (200 writers natively take a 52 KB file 16 KB past
//!   its cap), and it leans on appends being atomic between processes, which they are on local
//!   NTFS and Unix but not everywhere: Wine writes an append at an end it read before, and two
//!   processes' lines overwrite each other in the Wine lane. Holding the lock for one write
//!   costs microseconds natively (docs/performance.md).
//! - **No wait without a deadline.** The lock is polled ([`rootsafe::deadline`]) for
//!   [`LOCK_WAIT`]; a writer that could not get it by then writes its line anyway, without
//!   rotating, and its process stops waiting for the lock: a line in a file over its cap
//!   beats a lost line, and a wedged holder cannot stall pods.
//! - **Failures never fail a command.** A rotation that fails (on Windows, a reader that
//!   opened the log without `FILE_SHARE_DELETE` makes its rename a sharing violation; a
//!   directory planted at a rotated name) is told once per process on stderr, and the file
//!   grows until a later writer's rotation succeeds. Nothing is lost: the current file is
//!   renamed first (to `<logFile>.rotating`), so when that is the rename refused nothing has
//!   moved, and the chain renames the oldest first, so a rename that fails there stops it
//!   before anything is overwritten.
//! - **Nothing outside the log's directory, no link followed.** The log and its lock are opened
//!   as [`rootsafe::file::open`] opens (only regular files, never through a link, never
//!   blocking on a FIFO). Renames replace a directory entry and never follow one: a link or
//!   FIFO planted at a rotated name is replaced, not written through; only regular files are
//!   moved along the chain or removed.
//!
//! Why the plugins rotate, rather than one long-running process (the sweep daemon): plugins
//! log on nodes where no daemon of ours runs (kube-proxy's host-local, a config written by
//! hand), and between two passes of a daemon the file has no bound. Rotating in the plugins is
//! safe only when rotators exclude one another and no peer holds a file open while it is
//! renamed; the lock and the open-write-close per line give both.
//!
//! On Windows std opens files with `FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE`,
//! so a writer that wrote without the lock does not block a rename, and its line lands in
//! whichever file the name then held: still in the log.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rootsafe::deadline::{self, Backoff};
use rootsafe::file::{Kind, OpenError};

use super::describe;

/// The most rotated files a log may keep: `logFileKeep`'s upper bound, and how far
/// [`files_newest_first`] looks.
pub const MAX_KEEP: u32 = 100;

/// How long a writer waits for the lock before writing without it. A writer holds it for one
/// write (and a rotation, a few renames): microseconds natively, so this is reached only when a
/// holder is wedged or the node is far busier than its cores. (Under Wine, where a line holds it
/// about 3 ms, 50 writers of 10 lines at once on 2 cores kept a few waiting past it.)
pub const LOCK_WAIT: Duration = Duration::from_secs(2);

/// `logFileMaxMiB` when a config has none. A line is 200 to 300 bytes and a command logs a few
/// at `info`, so 10 MiB holds tens of thousands of commands: days of a busy node's history, in a
/// file an operator can still open. With [`DEFAULT_KEEP`], the log takes at most 60 MiB.
pub const DEFAULT_MAX_MIB: f64 = 10.0;
/// `logFileKeep` when a config has none: with [`DEFAULT_MAX_MIB`], 50 MiB of history.
pub const DEFAULT_KEEP: u32 = 5;
/// The largest `logFileMaxMiB`: 1 TiB, beyond which a value is a mistake, not a cap.
pub const MAX_MIB: f64 = 1024.0 * 1024.0;
/// Bytes in a MiB.
const MIB: f64 = 1024.0 * 1024.0;

/// When to rotate a log and how many rotated files to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    max_bytes: NonZeroU64,
    keep: u32,
}

impl Rotation {
    /// [`DEFAULT_MAX_MIB`] and [`DEFAULT_KEEP`].
    pub const DEFAULT: Rotation = Rotation {
        max_bytes: NonZeroU64::new(DEFAULT_MAX_MIB as u64 * MIB as u64).unwrap(),
        keep: DEFAULT_KEEP,
    };

    /// Rotates at `mib` MiB (to the byte, at least one), keeping `keep`: what a config's
    /// `logFileMaxMiB` and `logFileKeep` say. `None`, no rotation, when `mib` is 0; also when
    /// `mib` is not in `0..=`[`MAX_MIB`] or `keep` not in `1..=`[`MAX_KEEP`].
    pub fn of_mib(mib: f64, keep: u32) -> Option<Rotation> {
        if !(mib > 0.0 && mib <= MAX_MIB) {
            return None;
        }
        // In range, so the product fits; `as` rounds toward zero, `max` keeps one byte.
        let bytes = ((mib * MIB).round() as u64).max(1);
        Rotation::new(NonZeroU64::new(bytes)?, keep)
    }

    /// Rotates at `max_bytes`, keeping `keep` rotated files: `None` unless `keep` is in
    /// `1..=`[`MAX_KEEP`].
    pub fn new(max_bytes: NonZeroU64, keep: u32) -> Option<Rotation> {
        (1..=MAX_KEEP)
            .contains(&keep)
            .then_some(Rotation { max_bytes, keep })
    }

    /// The cap: a line that would take the file past it goes to a fresh file.
    pub fn max_bytes(self) -> u64 {
        self.max_bytes.get()
    }

    /// How many rotated files are kept beside the current one.
    pub fn keep(self) -> u32 {
        self.keep
    }

    /// Whether `incoming` more bytes go in a file of `size` bytes: when they keep it within
    /// the cap, or it is empty (a line longer than the cap gets a file of its own).
    fn fits(self, size: u64, incoming: u64) -> bool {
        size == 0 || size.saturating_add(incoming) <= self.max_bytes()
    }
}

/// A log file that processes append whole lines to, rotated as its [`Rotation`] says.
#[derive(Debug)]
pub struct LogFile {
    path: PathBuf,
    rotation: Option<Rotation>,
    /// The lock file, open for the life of the process (it is never renamed); `None` without
    /// rotation, or when it cannot be opened (told once): lines are then written without it,
    /// and never rotated.
    lock: Option<File>,
    /// Set once a wait for the lock ran out: the process writes its other lines without
    /// waiting again, so a wedged holder costs it one wait, not one per line.
    gave_up: AtomicBool,
    told_lock: AtomicBool,
    told_rotation: AtomicBool,
    told_write: AtomicBool,
}

impl LogFile {
    /// The log at `path`, rotated as `rotation` says (`None`: never, for operators whose log
    /// shipper rotates). Creates its directory and the file, so that a path that cannot be a
    /// log (a link, a FIFO, a directory, an unwritable place) is refused here, once, rather
    /// than at every line.
    pub fn open(path: &Path, rotation: Option<Rotation>) -> Result<LogFile, OpenError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent).map_err(OpenError::Io)?;
        }
        open_append(path)?;
        let told_lock = AtomicBool::new(false);
        let lock = rotation.and_then(|_| {
            let mut options = OpenOptions::new();
            options.create(true).write(true);
            let lock = lock_path(path);
            rootsafe::file::open(&lock, &options)
                .map_err(|e| {
                    let why = match e {
                        OpenError::NotRegular(kind) => {
                            format!("it is {}, not a regular file", describe(kind))
                        }
                        OpenError::Missing => "it vanished".to_owned(),
                        OpenError::Io(e) => e.to_string(),
                    };
                    tell_once(&told_lock, || {
                        format!(
                            "log lock {}: {why}; logging without it, and without rotating",
                            lock.display()
                        )
                    });
                })
                .ok()
        });
        Ok(LogFile {
            path: path.to_owned(),
            rotation,
            lock,
            gave_up: AtomicBool::new(false),
            told_lock,
            told_rotation: AtomicBool::new(false),
            told_write: AtomicBool::new(false),
        })
    }

    /// Appends `record` (whole lines) with one write under the lock, rotating first when it
    /// would take the file past the cap. A failure is also told once on stderr: the caller has
    /// nowhere else to say it.
    pub fn append(&self, record: &[u8]) -> io::Result<()> {
        let written = self.append_now(record);
        if let Err(e) = &written {
            tell_once(&self.told_write, || {
                format!("cannot write to log {}: {e}", self.path.display())
            });
        }
        written
    }

    fn append_now(&self, record: &[u8]) -> io::Result<()> {
        let (Some(rotation), Some(lock)) = (self.rotation, &self.lock) else {
            return self.handle()?.write_all(record);
        };
        if self.gave_up.load(Ordering::Relaxed) {
            return self.handle()?.write_all(record);
        }
        let turn = deadline::poll(Instant::now() + LOCK_WAIT, Backoff::default(), || {
            self.try_turn(lock, rotation, record)
        });
        let why = match turn {
            Ok(Some(written)) => return written,
            Ok(None) => format!("held elsewhere for {} s", LOCK_WAIT.as_secs()),
            Err(e) => e.to_string(),
        };
        self.gave_up.store(true, Ordering::Relaxed);
        tell_once(&self.told_lock, || {
            format!(
                "log lock {}: {why}; this process logs without it from now on, and does not rotate",
                lock_path(&self.path).display()
            )
        });
        self.handle()?.write_all(record)
    }

    /// One try to write `record` under the lock, rotating first when it would take the file
    /// past the cap. `None` when another process holds the lock; an error when locking fails;
    /// else what the write gave.
    fn try_turn(
        &self,
        lock: &File,
        rotation: Rotation,
        record: &[u8],
    ) -> io::Result<Option<io::Result<()>>> {
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Ok(None),
            Err(TryLockError::Error(e)) => return Err(e),
        }
        let _held = Held(lock);
        if !rotation.fits(self.size(), record.len() as u64)
            && let Err(e) = rotate(&self.path, rotation.keep())
        {
            tell_once(&self.told_rotation, || {
                format!(
                    "cannot rotate log {}: {e}; it grows until a rotation succeeds",
                    self.path.display()
                )
            });
        }
        Ok(Some(
            self.handle().and_then(|mut file| file.write_all(record)),
        ))
    }

    /// The log's size by its path; 0 when it is not a regular file (nothing to rotate).
    fn size(&self) -> u64 {
        match fs::symlink_metadata(&self.path) {
            Ok(metadata) if Kind::of(&metadata) == Kind::Regular => metadata.len(),
            _ => 0,
        }
    }

    /// The log, opened for appending one record.
    fn handle(&self) -> io::Result<File> {
        open_append(&self.path).map_err(|e| match e {
            OpenError::Missing => io::ErrorKind::NotFound.into(),
            OpenError::NotRegular(kind) => {
                io::Error::other(format!("it is now {}, not a regular file", describe(kind)))
            }
            OpenError::Io(e) => e,
        })
    }
}

/// A lock taken on the lock file, released when dropped.
struct Held<'a>(&'a File);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        // Closing the process's handle releases it too; an unlock that fails leaves nothing
        // else to do.
        let _ = self.0.unlock();
    }
}

/// `<stem>.<n>.<ext>` beside `path` (`cni.log` → `cni.1.log`), `<name>.<n>` when it has no
/// extension: the `n`th newest rotated file of the log at `path`.
pub fn rotated_name(path: &Path, n: u32) -> PathBuf {
    let mut name = OsString::new();
    match (path.file_stem(), path.extension()) {
        (Some(stem), Some(extension)) => {
            name.push(stem);
            name.push(format!(".{n}."));
            name.push(extension);
        }
        _ => {
            name.push(path.file_name().unwrap_or_default());
            name.push(format!(".{n}"));
        }
    }
    path.with_file_name(name)
}

/// `<path>.lock`: the lock file beside the log at `path`.
pub fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// The files of the log at `path` that are there, newest first: `path`, then its rotated files
/// `.1`, `.2` ... up to [`MAX_KEEP`]. Only regular files are listed (a link planted at a
/// rotated name is never something to read), so a reader such as a support bundle can take
/// the log's tail from them in order.
pub fn files_newest_first(path: &Path) -> Vec<PathBuf> {
    std::iter::once(path.to_owned())
        .chain((1..=MAX_KEEP).map(|n| rotated_name(path, n)))
        .filter(|file| matches!(Kind::at(file), Ok(Some(Kind::Regular))))
        .collect()
}

/// Takes the current file out of the way first, to a staging name beside it (the one rename
/// that a reader holding the log without `FILE_SHARE_DELETE` refuses: when it fails, nothing
/// has moved), then moves each rotated file one step older (the oldest kept replaced) and
/// the staged file to `.1`, and removes rotated files beyond `keep` (left by a larger `keep`
/// before). A staged file found at the start is a rotation a crash cut short: it is the
/// newest rotated file, and joins the chain first.
fn rotate(path: &Path, keep: u32) -> io::Result<()> {
    let staging = staging_name(path);
    if matches!(Kind::at(&staging), Ok(Some(Kind::Regular))) {
        shift_into_chain(path, &staging, keep)?;
    }
    fs::rename(path, &staging)?;
    shift_into_chain(path, &staging, keep)
}

/// Moves the chain one step older and `staged` to `.1`. Looks only as far as the first
/// rotated name with no regular file (a rotation costs what is there, not what may be kept),
/// and renames oldest first, so a rename that fails stops the chain before anything is
/// overwritten.
fn shift_into_chain(path: &Path, staged: &Path, keep: u32) -> io::Result<()> {
    let present = (1..=MAX_KEEP)
        .take_while(|&n| matches!(Kind::at(&rotated_name(path, n)), Ok(Some(Kind::Regular))))
        .count() as u32;
    for n in (1..=present.min(keep - 1)).rev() {
        fs::rename(rotated_name(path, n), rotated_name(path, n + 1))?;
    }
    fs::rename(staged, rotated_name(path, 1))?;
    for n in keep + 1..=present {
        fs::remove_file(rotated_name(path, n))?;
    }
    Ok(())
}

/// Where a rotation puts the current file while it moves the chain: `cni.log.rotating`.
fn staging_name(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".rotating");
    PathBuf::from(name)
}

/// Opens the log for appending, creating it, as [`rootsafe::file::open`] opens.
fn open_append(path: &Path) -> Result<File, OpenError> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    rootsafe::file::open(path, &options)
}

/// Writes `message` on stderr unless `told` says it was already: a log problem is worth
/// saying once per process, not once per line, and the log itself cannot carry it.
fn tell_once(told: &AtomicBool, message: impl FnOnce() -> String) {
    if !told.swap(true, Ordering::Relaxed) {
        eprintln!("[WARN] {}", message());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rotation(max_bytes: u64, keep: u32) -> Option<Rotation> {
        Rotation::new(NonZeroU64::new(max_bytes).unwrap(), keep)
    }

    fn read(path: &Path) -> String {
        fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Appends lines `first..=last`, each `line NNN` padded to 10 bytes with its newline.
    fn append_lines(log: &LogFile, lines: std::ops::RangeInclusive<u32>) {
        for n in lines {
            log.append(format!("line {n:03}\n").as_bytes()).unwrap();
        }
    }

    #[test]
    fn rotated_names_keep_the_extension_last() {
        let name = |path: &str, n| rotated_name(Path::new(path), n);
        assert_eq!(name("C:/k/cni.log", 1), PathBuf::from("C:/k/cni.1.log"));
        assert_eq!(
            name("/var/log/cni.log", 12),
            PathBuf::from("/var/log/cni.12.log")
        );
        assert_eq!(name("/var/log/cni", 2), PathBuf::from("/var/log/cni.2"));
        assert_eq!(name("a.tar.gz", 3), PathBuf::from("a.tar.3.gz"));
        assert_eq!(name(".log", 1), PathBuf::from(".log.1"));
        assert_eq!(
            lock_path(Path::new("/var/log/cni.log")),
            PathBuf::from("/var/log/cni.log.lock")
        );
    }

    #[test]
    fn keep_is_bounded_and_sizes_are_mib_to_the_byte() {
        assert!(rotation(1, 0).is_none());
        assert!(rotation(1, MAX_KEEP + 1).is_none());
        assert_eq!(rotation(1, MAX_KEEP).unwrap().keep(), MAX_KEEP);
        assert_eq!(Rotation::of_mib(0.0, 5), None);
        assert_eq!(Rotation::of_mib(0.05, 5).unwrap().max_bytes(), 52_429);
        assert_eq!(Rotation::of_mib(1e-9, 5).unwrap().max_bytes(), 1);
        assert_eq!(Rotation::of_mib(MAX_MIB * 2.0, 5), None);
        assert_eq!(
            Rotation::of_mib(DEFAULT_MAX_MIB, DEFAULT_KEEP),
            Some(Rotation::DEFAULT)
        );
        assert_eq!(Rotation::DEFAULT.max_bytes(), 10 * 1024 * 1024);
    }

    #[test]
    fn a_line_that_would_pass_the_cap_goes_to_a_fresh_file_and_the_chain_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cni.log");
        // Three 9-byte lines fit in 30 bytes; the fourth rotates.
        let log = LogFile::open(&path, rotation(30, 2)).unwrap();
        append_lines(&log, 1..=3);
        assert_eq!(files_newest_first(&path), [path.as_path()]);
        append_lines(&log, 4..=4);
        assert_eq!(
            read(&rotated_name(&path, 1)),
            "line 001\nline 002\nline 003\n"
        );
        assert_eq!(read(&path), "line 004\n");
        append_lines(&log, 5..=12);
        // 10..=12 current, 7..=9 in .1, 4..=6 in .2; 1..=3 replaced (keep 2).
        assert_eq!(
            files_newest_first(&path),
            [path.clone(), rotated_name(&path, 1), rotated_name(&path, 2)]
        );
        assert_eq!(read(&path), "line 010\nline 011\nline 012\n");
        assert_eq!(
            read(&rotated_name(&path, 1)),
            "line 007\nline 008\nline 009\n"
        );
        assert_eq!(
            read(&rotated_name(&path, 2)),
            "line 004\nline 005\nline 006\n"
        );
        let mut names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["cni.1.log", "cni.2.log", "cni.log", "cni.log.lock"]);
    }

    #[test]
    fn a_line_longer_than_the_cap_gets_a_file_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cni.log");
        let log = LogFile::open(&path, rotation(4, 5)).unwrap();
        append_lines(&log, 1..=2);
        assert_eq!(read(&path), "line 002\n");
        assert_eq!(read(&rotated_name(&path, 1)), "line 001\n");
    }

    #[test]
    fn without_rotation_the_file_grows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cni.log");
        let log = LogFile::open(&path, None).unwrap();
        append_lines(&log, 1..=50);
        assert_eq!(read(&path).lines().count(), 50);
        assert_eq!(files_newest_first(&path), [path.as_path()]);
        assert!(!lock_path(&path).exists());
    }

    #[test]
    fn rotated_files_beyond_a_smaller_keep_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cni");
        append_lines(&LogFile::open(&path, rotation(9, 4)).unwrap(), 1..=5);
        assert_eq!(files_newest_first(&path).len(), 5);
        append_lines(&LogFile::open(&path, rotation(9, 2)).unwrap(), 6..=6);
        assert_eq!(
            files_newest_first(&path),
            [path.clone(), rotated_name(&path, 1), rotated_name(&path, 2)]
        );
        assert_eq!(read(&rotated_name(&path, 2)), "line 004\n");
    }

    /// A directory planted at a rotated name makes the rotation fail after the current file
    /// was staged: lines go to a fresh current file, the staged one joins the chain once it
    /// can, nothing is lost, and the command is not failed.
    #[test]
    fn a_rotation_that_fails_loses_nothing_and_the_file_grows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cni.log");
        let log = LogFile::open(&path, rotation(9, 3)).unwrap();
        append_lines(&log, 1..=2);
        fs::create_dir(rotated_name(&path, 2)).unwrap();
        append_lines(&log, 3..=4);
        // The current file was staged, then the chain could not move: it waits staged.
        assert_eq!(read(&rotated_name(&path, 1)), "line 001\n");
        assert_eq!(read(&staging_name(&path)), "line 002\n");
        assert_eq!(read(&path), "line 003\nline 004\n");
        assert!(log.told_rotation.load(Ordering::Relaxed));
        fs::remove_dir(rotated_name(&path, 2)).unwrap();
        append_lines(&log, 5..=5);
        assert_eq!(read(&rotated_name(&path, 3)), "line 001\n");
        assert_eq!(read(&rotated_name(&path, 2)), "line 002\n");
        assert_eq!(read(&rotated_name(&path, 1)), "line 003\nline 004\n");
        assert_eq!(read(&path), "line 005\n");
    }

    /// The current file's own rename refused (on Windows, a reader holding it without
    /// `FILE_SHARE_DELETE`; here, a directory at the staging name): nothing of the chain
    /// moves, however many lines try, and the next rotation that can goes as usual.
    #[test]
    fn a_refused_rename_of_the_current_file_moves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cni.log");
        let log = LogFile::open(&path, rotation(9, 3)).unwrap();
        append_lines(&log, 1..=3);
        assert_eq!(read(&rotated_name(&path, 2)), "line 001\n");
        fs::create_dir(staging_name(&path)).unwrap();
        fs::write(staging_name(&path).join("x"), "").unwrap();
        append_lines(&log, 4..=8);
        assert_eq!(read(&rotated_name(&path, 2)), "line 001\n");
        assert_eq!(read(&rotated_name(&path, 1)), "line 002\n");
        assert_eq!(
            read(&path),
            "line 003\nline 004\nline 005\nline 006\nline 007\nline 008\n"
        );
        fs::remove_dir_all(staging_name(&path)).unwrap();
        append_lines(&log, 9..=9);
        assert_eq!(read(&rotated_name(&path, 2)), "line 002\n");
        assert_eq!(
            read(&rotated_name(&path, 1)),
            "line 003\nline 004\nline 005\nline 006\nline 007\nline 008\n"
        );
        assert_eq!(read(&path), "line 009\n");
    }

    /// A rotation a crash cut short left the current file at the staging name: the next
    /// rotation puts it at `.1` before it rotates the current file, and nothing is lost.
    #[test]
    fn a_staged_file_left_by_a_crash_joins_the_chain() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cni.log");
        let log = LogFile::open(&path, rotation(9, 3)).unwrap();
        append_lines(&log, 1..=2);
        fs::rename(&path, staging_name(&path)).unwrap();
        append_lines(&log, 3..=4);
        assert_eq!(read(&rotated_name(&path, 3)), "line 001\n");
        assert_eq!(read(&rotated_name(&path, 2)), "line 002\n");
        assert_eq!(read(&rotated_name(&path, 1)), "line 003\n");
        assert_eq!(read(&path), "line 004\n");
        assert!(!staging_name(&path).exists());
    }

    /// The log itself swapped for a link after opening: the line is refused, not written
    /// through, and not rotated.
    #[cfg(unix)]
    #[test]
    fn a_log_replaced_by_a_link_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cni.log");
        let log = LogFile::open(&path, rotation(9, 3)).unwrap();
        let target = dir.path().join("elsewhere");
        fs::write(&target, "line 000\n").unwrap();
        fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        assert!(log.append(b"line 001\n").is_err());
        assert_eq!(read(&target), "line 000\n");
        assert!(!rotated_name(&path, 1).exists());
    }

    /// A lock held exclusively elsewhere is waited for up to the deadline, then the line is
    /// written without rotating (a line over the cap beats a lost one), and the process stops
    /// waiting for the lock; another process rotates once the lock is free.
    #[test]
    fn a_lock_held_elsewhere_delays_a_process_by_the_deadline_at_most() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cni.log");
        let log = LogFile::open(&path, rotation(9, 3)).unwrap();
        append_lines(&log, 1..=1);
        let holder = File::create(lock_path(&path)).unwrap();
        holder.lock().unwrap();
        let started = Instant::now();
        append_lines(&log, 2..=3);
        let waited = started.elapsed();
        assert!(waited >= LOCK_WAIT, "did not wait for the lock: {waited:?}");
        assert!(waited < LOCK_WAIT * 2, "waited more than once: {waited:?}");
        assert_eq!(read(&path), "line 001\nline 002\nline 003\n");
        drop(holder);
        append_lines(&LogFile::open(&path, rotation(9, 3)).unwrap(), 4..=4);
        assert_eq!(read(&path), "line 004\n");
    }
}
