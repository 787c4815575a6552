//! Logging set-up for plugins: never stdout, which belongs to the protocol.
//!
//! Lines go to stderr (which runtimes capture and show on failure) at `warn` unless told
//! otherwise, and to a log file when the config's `logFile` or `CNI_WIN_LOG_FILE` names one. Every
//! line is tagged with the command and container ID, because one log file serves every pod on a node.
//! Every plugin process on the node appends to that file at once, and it rotates at a size cap
//! (`logFileMaxMiB`, `logFileKeep`): see [`file`](mod@file) for how that stays safe.

pub mod file;

pub use file::{
    DEFAULT_KEEP, DEFAULT_MAX_MIB, LOCK_WAIT, LogFile, MAX_KEEP, MAX_MIB, Rotation,
    files_newest_first, lock_path, rotated_name,
};

use log::{LevelFilter, Log, Metadata, Record};
use rootsafe::file::{Kind, OpenError};
use simplelog::{CombinedLogger, Config, ConfigBuilder, SharedLogger, WriteLogger};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use crate::path::{PathKey, RootedPath};

/// Environment variable that overrides the config's `logLevel` (operators debugging one node).
pub const LEVEL_VAR: &str = "CNI_WIN_LOG_LEVEL";
/// Environment variable that overrides the config's `logFile`.
pub const FILE_VAR: &str = "CNI_WIN_LOG_FILE";

/// `logFile`: a rooted path ([`crate::path`]), as every path a config names; none logs to
/// stderr only. One that is not rooted is a warning, never a failed command.
pub const FILE_KEY: PathKey = PathKey {
    name: "logFile",
    example: "/var/log/cni-win/cni.log",
};

/// [`FILE_VAR`], read by the same rule as `logFile`.
const FILE_VAR_KEY: PathKey = PathKey {
    name: FILE_VAR,
    ..FILE_KEY
};

/// The note for a log file that is not used: why, and where logs go instead.
pub(crate) fn stderr_only(refused: &crate::Error) -> String {
    format!("{}; logging to stderr only", refused.msg())
}

/// Where and how much to log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSettings {
    /// How much to log: `logLevel`, overridden by the environment for debugging one node.
    pub level: LevelFilter,
    /// Where to log besides stderr; `None` logs to stderr only (stdout is the protocol's).
    pub file: Option<PathBuf>,
    /// When `file` rotates; `None`: never.
    pub rotation: Option<Rotation>,
}

impl LogSettings {
    /// Settings from the environment first, then the config's keys, then the defaults. An
    /// unreadable level falls back to `warn`, and a [`FILE_VAR`] that is not a rooted path to
    /// stderr only, each with a note, rather than failing the pod. The rotation is the
    /// config's (see [`crate::NetConf::log_rotation`]), whichever file is used.
    pub fn resolve(
        env: &dyn Fn(&str) -> Option<String>,
        config_level: Option<&str>,
        config_file: Option<&RootedPath>,
        rotation: Option<Rotation>,
    ) -> (LogSettings, Vec<String>) {
        let mut notes = Vec::new();
        let level_text = env(LEVEL_VAR).or_else(|| config_level.map(str::to_owned));
        let level = match level_text {
            None => LevelFilter::Warn,
            Some(text) => text.parse::<LevelFilter>().unwrap_or_else(|_| {
                notes.push(format!(
                    "log level {} is not one of off, error, warn, info, debug, trace; using warn",
                    crate::quote::quoted(&text)
                ));
                LevelFilter::Warn
            }),
        };
        let file = match env(FILE_VAR) {
            None => config_file.cloned(),
            Some(text) => match FILE_VAR_KEY.parse(&text) {
                Ok(path) => Some(path),
                Err(refused) => {
                    notes.push(stderr_only(&refused));
                    None
                }
            },
        };
        (
            LogSettings {
                level,
                file: file.map(PathBuf::from),
                rotation,
            },
            notes,
        )
    }
}

/// What the process logger writes to now. [`init`] may run twice per command (before the
/// config is read, with the environment's settings; after, with the config's), and in-process
/// tests run many commands, so the destination and tag are replaceable behind one installed
/// logger.
struct Current {
    tag: String,
    inner: Option<Box<dyn Log>>,
}

static CURRENT: RwLock<Current> = RwLock::new(Current {
    tag: String::new(),
    inner: None,
});

/// The installed logger: prefixes every message with the current tag (such as
/// `ADD 3f2a…/eth0:`) and hands it to the current destination.
struct Forwarder;

static FORWARDER: Forwarder = Forwarder;

impl Log for Forwarder {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        CURRENT
            .read()
            .is_ok_and(|c| c.inner.as_ref().is_some_and(|l| l.enabled(metadata)))
    }

    fn log(&self, record: &Record<'_>) {
        let Ok(current) = CURRENT.read() else { return };
        if let Some(inner) = &current.inner {
            inner.log(
                &Record::builder()
                    .args(format_args!("{} {}", current.tag, record.args()))
                    .level(record.level())
                    .target(record.target())
                    .module_path(record.module_path())
                    .file(record.file())
                    .line(record.line())
                    .build(),
            );
        }
    }

    fn flush(&self) {
        if let Ok(current) = CURRENT.read()
            && let Some(inner) = &current.inner
        {
            inner.flush();
        }
    }
}

/// Points the process logger at `settings` and tags its lines with `tag`.
pub fn init(tag: String, settings: &LogSettings) {
    let config = ConfigBuilder::new()
        .set_time_format_rfc3339()
        .set_target_level(LevelFilter::Off)
        .set_thread_level(LevelFilter::Off)
        .build();
    let mut loggers: Vec<Box<dyn SharedLogger>> = vec![WriteLogger::new(
        settings.level,
        config.clone(),
        std::io::stderr(),
    )];
    let mut file_problem = None;
    if let Some(path) = &settings.file {
        match open_log_file(path, settings.rotation) {
            Ok(file) => loggers.push(Box::new(FileLogger::new(settings.level, config, file))),
            Err(e) => {
                file_problem = Some(format!("cannot open log file {}: {e}", quoted_path(path)))
            }
        }
    }
    if let Ok(mut current) = CURRENT.write() {
        *current = Current {
            tag,
            inner: Some(CombinedLogger::new(loggers)),
        };
    }
    // Only the first call installs the forwarder; later ones find it in place.
    let _ = log::set_logger(&FORWARDER);
    log::set_max_level(settings.level);
    if let Some(problem) = file_problem {
        log::warn!("{problem}");
    }
}

/// Opens the log file, without ever waiting: a FIFO without a reader would block an ordinary
/// open forever, so the file is opened as [`rootsafe::file::open`] opens (never through a link,
/// never blocking, only a regular file), and anything else is refused (the caller logs to
/// stderr only).
fn open_log_file(path: &Path, rotation: Option<Rotation>) -> std::io::Result<LogFile> {
    LogFile::open(path, rotation).map_err(|e| match e {
        OpenError::NotRegular(kind) => std::io::Error::other(format!(
            "it is {}, not a regular file; logging to stderr only",
            describe(kind)
        )),
        OpenError::Missing => std::io::ErrorKind::NotFound.into(),
        OpenError::Io(e) => e,
    })
}

/// The log file as a logger: each record is formatted as simplelog formats stderr's, into a
/// buffer, and handed to [`LogFile::append`] whole, so that it reaches the file in one write
/// (simplelog's own writer writes a record in pieces, which other processes' lines could
/// split).
struct FileLogger {
    level: LevelFilter,
    format: Box<WriteLogger<Pending>>,
    pending: Pending,
    /// One record at a time from format to file.
    turn: Mutex<()>,
    file: LogFile,
}

impl FileLogger {
    fn new(level: LevelFilter, config: Config, file: LogFile) -> FileLogger {
        let pending = Pending::default();
        FileLogger {
            level,
            format: WriteLogger::new(level, config, pending.clone()),
            pending,
            turn: Mutex::new(()),
            file,
        }
    }
}

impl Log for FileLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= self.level
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let _turn = self.turn.lock().unwrap_or_else(|e| e.into_inner());
        self.format.log(record);
        let line = self.pending.take();
        if !line.is_empty() {
            // A line that cannot be written is not worth failing the command for; LogFile says
            // so once on stderr.
            let _ = self.file.append(&line);
        }
    }

    fn flush(&self) {}
}

impl SharedLogger for FileLogger {
    fn level(&self) -> LevelFilter {
        self.level
    }

    fn config(&self) -> Option<&Config> {
        None
    }

    fn as_log(self: Box<Self>) -> Box<dyn Log> {
        self
    }
}

/// Where [`FileLogger`] has simplelog write a record, until it takes it.
#[derive(Clone, Default)]
struct Pending(Arc<Mutex<Vec<u8>>>);

impl Pending {
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Write for Pending {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A path in its display form, quoted (see [`crate::quote`]).
fn quoted_path(path: &Path) -> String {
    crate::quote::quoted(&path.to_string_lossy()).to_string()
}

/// What a non-regular file is, for the warning.
fn describe(kind: Kind) -> &'static str {
    match kind {
        Kind::Fifo => "a FIFO",
        Kind::Device => "a device",
        Kind::Socket => "a socket",
        Kind::Directory => "a directory",
        Kind::Link => "a symbolic link",
        Kind::Regular => "a regular file",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_file() -> RootedPath {
        FILE_KEY.parse("/var/log/c.log").unwrap()
    }

    #[test]
    fn environment_overrides_config() {
        let env = |name: &str| match name {
            LEVEL_VAR => Some("debug".to_owned()),
            FILE_VAR => Some("/run/e.log".to_owned()),
            _ => None,
        };
        let (settings, notes) =
            LogSettings::resolve(&env, Some("error"), Some(&config_file()), None);
        assert_eq!(settings.level, LevelFilter::Debug);
        assert_eq!(settings.file, Some(PathBuf::from("/run/e.log")));
        assert_eq!(notes, Vec::<String>::new());
        let none = |_: &str| None;
        let (settings, _) = LogSettings::resolve(&none, None, Some(&config_file()), None);
        assert_eq!(settings.file, Some(PathBuf::from("/var/log/c.log")));
    }

    #[test]
    fn defaults_to_warn_and_reports_a_bad_level() {
        let none = |_: &str| None;
        assert_eq!(
            LogSettings::resolve(&none, None, None, None).0.level,
            LevelFilter::Warn
        );
        let (settings, notes) = LogSettings::resolve(&none, Some("chatty"), None, None);
        assert_eq!(settings.level, LevelFilter::Warn);
        assert!(notes[0].contains("chatty"), "{notes:?}");
    }

    /// The variable is read by the rule every path key is: one that is not rooted is a note
    /// naming the variable, and logs go to stderr only (not to the config's file either).
    #[test]
    fn a_log_file_variable_that_is_not_rooted_logs_to_stderr_only() {
        let env = |name: &str| (name == FILE_VAR).then(|| "relative.log".to_owned());
        let (settings, notes) = LogSettings::resolve(&env, None, Some(&config_file()), None);
        assert_eq!(settings.file, None);
        let [note] = notes.as_slice() else {
            panic!("{notes:?}")
        };
        assert!(
            note.starts_with("CNI_WIN_LOG_FILE: \"relative.log\""),
            "{note}"
        );
        assert!(note.ends_with("; logging to stderr only"), "{note}");
    }
}
