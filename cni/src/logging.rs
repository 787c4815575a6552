//! Logging set-up for plugins: never stdout, which belongs to the protocol.
//!
//! Lines go to stderr (which runtimes capture and show on failure) at `warn` unless told
//! otherwise, and to a log file when the config's `logFile` or `CNI_WIN_LOG_FILE` names one. Every
//! line is tagged with the command and container ID, because one log file serves every pod on a node.

use log::{LevelFilter, Log, Metadata, Record};
use rootsafe::file::{Kind, OpenError};
use simplelog::{CombinedLogger, ConfigBuilder, SharedLogger, WriteLogger};
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

/// Environment variable that overrides the config's `logLevel` (operators debugging one node).
pub const LEVEL_VAR: &str = "CNI_WIN_LOG_LEVEL";
/// Environment variable that overrides the config's `logFile`.
pub const FILE_VAR: &str = "CNI_WIN_LOG_FILE";

/// Where and how much to log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSettings {
    /// How much to log: `logLevel`, overridden by the environment for debugging one node.
    pub level: LevelFilter,
    /// Where to log besides stderr; `None` logs to stderr only (stdout is the protocol's).
    pub file: Option<PathBuf>,
}

impl LogSettings {
    /// Settings from the environment first, then the config's keys, then the defaults. An
    /// unreadable level falls back to `warn` with a note, rather than failing the pod.
    pub fn resolve(
        env: &dyn Fn(&str) -> Option<String>,
        config_level: Option<&str>,
        config_file: Option<&Path>,
    ) -> (LogSettings, Option<String>) {
        let level_text = env(LEVEL_VAR).or_else(|| config_level.map(str::to_owned));
        let (level, note) = match level_text {
            None => (LevelFilter::Warn, None),
            Some(text) => match text.parse::<LevelFilter>() {
                Ok(level) => (level, None),
                Err(_) => (
                    LevelFilter::Warn,
                    Some(format!(
                        "log level {} is not one of off, error, warn, info, debug, trace; using warn",
                        crate::quote::quoted(&text)
                    )),
                ),
            },
        };
        let file = env(FILE_VAR)
            .map(PathBuf::from)
            .or_else(|| config_file.map(Path::to_path_buf));
        (LogSettings { level, file }, note)
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
        match open_log_file(path) {
            Ok(file) => loggers.push(WriteLogger::new(settings.level, config, file)),
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

/// Opens the log file for appending, without ever waiting: a FIFO without a reader would block
/// an ordinary open forever, so the file is opened as [`rootsafe::file::open`] opens (never
/// through a link, never blocking, only a regular file), and anything else is refused (the
/// caller logs to stderr only).
fn open_log_file(path: &Path) -> std::io::Result<std::fs::File> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    rootsafe::file::open(path, &options).map_err(|e| match e {
        OpenError::NotRegular(kind) => std::io::Error::other(format!(
            "it is {}, not a regular file; logging to stderr only",
            describe(kind)
        )),
        OpenError::Missing => std::io::ErrorKind::NotFound.into(),
        OpenError::Io(e) => e,
    })
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

    #[test]
    fn environment_overrides_config() {
        let env = |name: &str| match name {
            LEVEL_VAR => Some("debug".to_owned()),
            _ => None,
        };
        let (settings, note) = LogSettings::resolve(&env, Some("error"), Some(Path::new("c.log")));
        assert_eq!(settings.level, LevelFilter::Debug);
        assert_eq!(settings.file, Some(PathBuf::from("c.log")));
        assert_eq!(note, None);
    }

    #[test]
    fn defaults_to_warn_and_reports_a_bad_level() {
        let none = |_: &str| None;
        assert_eq!(
            LogSettings::resolve(&none, None, None).0.level,
            LevelFilter::Warn
        );
        let (settings, note) = LogSettings::resolve(&none, Some("chatty"), None);
        assert_eq!(settings.level, LevelFilter::Warn);
        assert!(note.unwrap().contains("chatty"));
    }
}
