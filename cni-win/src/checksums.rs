//! `SHA256SUMS` as `sha256sum` writes it (`<hex>  <name>`, or `<hex> *<name>` in binary mode),
//! and the hashes install compares files by.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::Error;

/// The checksum file's name, in the release and in an install's source directory.
pub const FILE_NAME: &str = "SHA256SUMS";

/// The expected hash of each file a `SHA256SUMS` lists, by file name.
#[derive(Debug, Default)]
pub struct Sha256Sums {
    by_name: BTreeMap<String, String>,
}

impl Sha256Sums {
    /// Reads `dir/SHA256SUMS`; `None` when there is none.
    pub fn read(dir: &Path) -> Result<Option<Sha256Sums>, Error> {
        let path = dir.join(FILE_NAME);
        match std::fs::read_to_string(&path) {
            Ok(text) => Sha256Sums::parse(&text)
                .map(Some)
                .map_err(|e| Error::new(format!("{}: {e}", path.display()))),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(Error::io("read", &path, &err)),
        }
    }

    /// Parses the file's text; a line that is not `<64 hex digits> <name>` is an error naming
    /// the line.
    pub fn parse(text: &str) -> Result<Sha256Sums, String> {
        let mut by_name = BTreeMap::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim_end_matches('\r');
            if line.trim().is_empty() {
                continue;
            }
            let parsed = line.split_once(' ').and_then(|(hash, rest)| {
                let name = rest.strip_prefix(' ').or_else(|| rest.strip_prefix('*'))?;
                let valid = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
                (valid && !name.is_empty()).then(|| (name.to_owned(), hash.to_ascii_lowercase()))
            });
            let (name, hash) = parsed.ok_or_else(|| {
                format!(
                    "line {}: expected \"<sha256 in hex>  <file name>\", found {line:?}",
                    index + 1
                )
            })?;
            by_name.insert(name, hash);
        }
        Ok(Sha256Sums { by_name })
    }

    /// The expected hash of `name`, if listed.
    pub fn expected(&self, name: &str) -> Option<&str> {
        self.by_name.get(name).map(String::as_str)
    }
}

/// The SHA-256 of a file's contents, lower-case hex.
pub fn file_sha256(path: &Path) -> Result<String, Error> {
    let mut file = File::open(path).map_err(|e| Error::io("open", path, &e))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 64 * 1024];
    loop {
        let read = file
            .read(&mut buffer)
            .map_err(|e| Error::io("read", path, &e))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex(&hasher.finalize()))
}

/// The SHA-256 of bytes in memory, lower-case hex.
pub fn bytes_sha256(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn parses_text_and_binary_mode_lines() {
        let sums = Sha256Sums::parse(&format!("{EMPTY}  a.exe\r\n{EMPTY} *b.exe\n\n")).unwrap();
        assert_eq!(sums.expected("a.exe"), Some(EMPTY));
        assert_eq!(sums.expected("b.exe"), Some(EMPTY));
        assert_eq!(sums.expected("c.exe"), None);
    }

    #[test]
    fn refuses_a_malformed_line_naming_it() {
        let err = Sha256Sums::parse(&format!("{EMPTY}  a.exe\nnot-a-hash  b.exe\n")).unwrap_err();
        assert!(err.starts_with("line 2:"), "{err}");
        assert!(Sha256Sums::parse(&format!("{EMPTY}  ")).is_err());
    }

    #[test]
    fn hashes_as_sha256sum_does() {
        assert_eq!(bytes_sha256(b""), EMPTY);
        assert_eq!(
            bytes_sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
