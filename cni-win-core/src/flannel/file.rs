//! Reading a file a config names, as a SYSTEM/root process must: only a regular file, never
//! through a link or reparse point, never blocking on a FIFO or device (see
//! [`rootsafe::file`]), at most a few KiB.

use std::fs::OpenOptions;
use std::io;
use std::path::Path;

use rootsafe::file::{self, Kind, OpenError};

/// The most this module reads; a subnet.env or a Flannel record is a few hundred bytes.
pub const MAX_BYTES: u64 = 64 * 1024;

/// The whole file, or `None` when it does not exist. A link, a directory, a special file or a
/// file over [`MAX_BYTES`] is an error naming what was found.
pub fn read_regular(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let file = match file::open(path, OpenOptions::new().read(true)) {
        Ok(file) => file,
        Err(OpenError::Missing) => return Ok(None),
        Err(OpenError::NotRegular(kind)) => return Err(not_regular(path, kind)),
        Err(OpenError::Io(e)) => return Err(e),
    };
    match file::read_capped(file, MAX_BYTES) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == io::ErrorKind::FileTooLarge => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is larger than {MAX_BYTES} bytes", path.display()),
        )),
        Err(e) => Err(e),
    }
}

fn not_regular(path: &Path, found: Kind) -> io::Error {
    let what = match found {
        Kind::Link => "a link",
        Kind::Directory => "a directory",
        Kind::Regular | Kind::Fifo | Kind::Device | Kind::Socket => "not a regular file",
    };
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is {what}; the plugin reads only regular files there",
            path.display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_regular_files_and_refuses_the_rest() {
        let dir = std::env::temp_dir().join(format!("cni-win-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("subnet.env");
        std::fs::write(&file, b"A=1\n").unwrap();
        assert_eq!(read_regular(&file).unwrap().unwrap(), b"A=1\n");
        assert!(read_regular(&dir.join("absent")).unwrap().is_none());
        assert!(read_regular(&dir).is_err());
        #[cfg(unix)]
        {
            let link = dir.join("link");
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&file, &link).unwrap();
            assert!(
                read_regular(&link)
                    .unwrap_err()
                    .to_string()
                    .contains("a link")
            );
        }
        let big = dir.join("big");
        std::fs::write(&big, vec![b'x'; MAX_BYTES as usize + 1]).unwrap();
        assert!(read_regular(&big).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
