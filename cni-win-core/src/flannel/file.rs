//! Reading a file a config names, as a SYSTEM/root process must: only a regular file, never
//! through a link or reparse point, never blocking on a FIFO or device, at most a few KiB.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// The most this module reads; a subnet.env or a Flannel record is a few hundred bytes.
pub const MAX_BYTES: u64 = 64 * 1024;

/// The whole file, or `None` when it does not exist. A link, a directory, a special file or a
/// file over [`MAX_BYTES`] is an error naming what was found.
pub fn read_regular(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if !metadata.file_type().is_file() => {
            return Err(not_regular(path, metadata.file_type()));
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    }
    let file = match open_no_follow(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    // Checked again on the handle: the path may have been swapped since it was looked at.
    let metadata = file.metadata()?;
    if !metadata.file_type().is_file() {
        return Err(not_regular(path, metadata.file_type()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is larger than {MAX_BYTES} bytes", path.display()),
        ));
    }
    Ok(Some(bytes))
}

fn not_regular(path: &Path, found: std::fs::FileType) -> io::Error {
    let what = if found.is_symlink() {
        "a link"
    } else if found.is_dir() {
        "a directory"
    } else {
        "not a regular file"
    };
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is {what}; the plugin reads only regular files there",
            path.display()
        ),
    )
}

#[cfg(unix)]
fn open_no_follow(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

#[cfg(windows)]
fn open_no_follow(path: &Path) -> io::Result<File> {
    use std::os::windows::fs::OpenOptionsExt;
    /// `FILE_FLAG_OPEN_REPARSE_POINT`: open a link itself rather than its target, so the
    /// handle check above sees it.
    const FILE_FLAG_OPEN_REPARSE_POINT: u32 = 0x0020_0000;
    OpenOptions::new()
        .read(true)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)
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
