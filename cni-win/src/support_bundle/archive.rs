//! The bundle as one zip file, published atomically and never over an existing file: written
//! beside the output under a scratch name, flushed, then hard-linked to the output name (which
//! fails when anything is there, with no window in which another file could be replaced) and
//! the scratch name removed. A reader never sees a partial zip under the output name.

use std::fs;
use std::io::{self, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use rootsafe::file::{self, Kind, Mode};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, ZipWriter};

use crate::error::Error;

/// One file in the bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name in the zip (`/`-separated).
    pub name: String,
    /// Its contents, redacted.
    pub bytes: Vec<u8>,
}

/// A UTC time to the second: the bundle's default name and its entries' dates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utc {
    /// The year, e.g. 2026.
    pub year: u16,
    /// 1 to 12.
    pub month: u8,
    /// 1 to 31.
    pub day: u8,
    /// 0 to 23.
    pub hour: u8,
    /// 0 to 59.
    pub minute: u8,
    /// 0 to 59.
    pub second: u8,
}

impl Utc {
    /// Now.
    pub fn now() -> Utc {
        let seconds = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        Utc::from_unix(seconds)
    }

    /// The time `seconds` after the Unix epoch (the proleptic Gregorian calendar's days from
    /// 1970-01-01, counted in 400-year eras).
    pub fn from_unix(seconds: u64) -> Utc {
        let days = (seconds / 86_400) as i64;
        let of_day = seconds % 86_400;
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let day_of_era = z.rem_euclid(146_097);
        let year_of_era =
            (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
        let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
        let shifted_month = (5 * day_of_year + 2) / 153;
        let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
        let month = if shifted_month < 10 {
            shifted_month + 3
        } else {
            shifted_month - 9
        };
        let year = year_of_era + era * 400 + i64::from(month <= 2);
        Utc {
            year: year as u16,
            month: month as u8,
            day: day as u8,
            hour: (of_day / 3600) as u8,
            minute: (of_day / 60 % 60) as u8,
            second: (of_day % 60) as u8,
        }
    }

    /// `20261124T233840Z`: sorts in time order and is valid in a file name everywhere.
    pub fn compact(&self) -> String {
        format!(
            "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }

    /// `2026-11-24T23:38:40Z` (RFC 3339).
    pub fn rfc3339(&self) -> String {
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        )
    }
}

/// Writes `entries` as a zip at `output` (see the module docs): refuses when anything is
/// already there.
pub fn publish(output: &Path, entries: &[Entry], stamp: Utc) -> Result<(), Error> {
    let taken = || {
        Error::new(format!(
            "{} already exists: the bundle never replaces a file; name another with --output",
            output.display()
        ))
    };
    match Kind::at(output) {
        Ok(None) => {}
        Ok(Some(_)) => return Err(taken()),
        Err(e) => return Err(Error::io("inspect", output, &e)),
    }
    // The process's own scratch name: two bundles written to one output at once never
    // remove each other's.
    let staging = file::beside(output, &format!("cni-win-tmp-{}", std::process::id()));
    if Kind::at(&staging).map_err(|e| Error::io("inspect", &staging, &e))? == Some(Kind::Regular) {
        fs::remove_file(&staging).map_err(|e| Error::io("remove the leftover", &staging, &e))?;
    }
    file::write_new(&staging, Mode::OwnerOnly, |file| zip(file, entries, stamp))
        .map_err(|e| Error::io("write", &staging, &e.source))?;
    let linked = fs::hard_link(&staging, output);
    let _ = fs::remove_file(&staging);
    match linked {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(taken()),
        Err(e) => Err(Error::io("create", output, &e)),
    }
}

/// The zip of `entries`, deflated, each dated `stamp`.
fn zip(file: &mut fs::File, entries: &[Entry], stamp: Utc) -> io::Result<()> {
    let date = DateTime::from_date_and_time(
        stamp.year,
        stamp.month,
        stamp.day,
        stamp.hour,
        stamp.minute,
        stamp.second,
    )
    .unwrap_or_default();
    let options = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .last_modified_time(date)
        .unix_permissions(0o600);
    let mut writer = ZipWriter::new(io::BufWriter::new(file));
    for entry in entries {
        writer
            .start_file(entry.name.as_str(), options)
            .map_err(io::Error::other)?;
        writer.write_all(&entry.bytes)?;
    }
    writer.finish().map_err(io::Error::other)?.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_time_reads_as_the_calendar() {
        assert_eq!(Utc::from_unix(0).rfc3339(), "1970-01-01T00:00:00Z");
        assert_eq!(
            Utc::from_unix(951_782_400).rfc3339(),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(Utc::from_unix(1_795_995_520).compact(), "20261129T233840Z");
    }
}
