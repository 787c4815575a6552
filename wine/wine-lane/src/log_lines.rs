//! The lines `log-writer` logs and how the lane's `logs.concurrent-writers` case reads them
//! back: one definition for both, included by each (`#[path]`).

/// The `n`th line writer `writer` logs: its numbers, then a filler that differs between
/// neighbours, so that a line split by another's is seen.
pub fn message(writer: u32, n: u32) -> String {
    let filler = char::from(b'a' + ((writer * 7 + n) % 26) as u8);
    format!("line {n:03} {} end", filler.to_string().repeat(150))
}

/// `(writer, n)` of a well-formed log line, `<time> [INFO] wWWW: <message>`; `None` for
/// anything else (a line split by another, or two run together).
pub fn parse(line: &str) -> Option<(u32, u32)> {
    let (time, rest) = line.split_once(" [INFO] w")?;
    let (writer, rest) = rest.split_once(": ")?;
    let writer: u32 = writer.parse().ok()?;
    let n: u32 = rest.strip_prefix("line ")?.get(..3)?.parse().ok()?;
    (!time.is_empty() && !time.contains(' ') && rest == message(writer, n)).then_some((writer, n))
}
