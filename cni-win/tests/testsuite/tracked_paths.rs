//! Every file the repository tracks can be checked out on Windows, where the plugins are
//! built and run: no path holds a name Windows refuses. A Linux run once made a store in its
//! working directory under a Windows path (`Z:\work\...\ipam`, one file name full of `:` and
//! `\`), and it was committed; a checkout on Windows fails on such a name.

use std::process::Command;

/// What Windows refuses in a file or directory name (Microsoft's "Naming Files, Paths, and
/// Namespaces"): a reserved character or a control character, a trailing dot or space, or a
/// device name (`CON`, `PRN`, `AUX`, `NUL`, `COM0`-`COM9`, `LPT0`-`LPT9` and the
/// superscript `COM¹`-`LPT³`), in any case, alone or before an extension (`nul.txt` opens the
/// device, and so does `NUL .txt`: spaces before the dot are dropped). `None` when Windows
/// takes `name`.
fn refused(name: &str) -> Option<String> {
    if let Some(c) = name
        .chars()
        .find(|c| matches!(c, ':' | '\\' | '*' | '?' | '"' | '<' | '>' | '|') || c.is_control())
    {
        return Some(format!("it holds {c:?}"));
    }
    if name.ends_with('.') || name.ends_with(' ') {
        return Some("it ends in a dot or a space".to_owned());
    }
    let device = name.split('.').next().unwrap_or_default().trim_end();
    let upper = device.to_uppercase();
    let numbered = |prefix: &str| {
        upper.strip_prefix(prefix).is_some_and(|number| {
            matches!(
                number,
                "0" | "1" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9"
            ) || matches!(number, "¹" | "²" | "³")
        })
    };
    if matches!(upper.as_str(), "CON" | "PRN" | "AUX" | "NUL") || numbered("COM") || numbered("LPT")
    {
        return Some(format!("{device} is a device name"));
    }
    None
}

/// Each tracked path with what Windows refuses in it, one line each.
fn offending(paths: &[u8]) -> Vec<String> {
    paths
        .split(|byte| *byte == 0)
        .filter(|path| !path.is_empty())
        .filter_map(|path| {
            let Ok(path) = std::str::from_utf8(path) else {
                return Some(format!("{}: not UTF-8", String::from_utf8_lossy(path)));
            };
            let why: Vec<String> = path
                .split('/')
                .filter_map(|name| refused(name).map(|why| format!("{name:?}: {why}")))
                .collect();
            (!why.is_empty()).then(|| format!("{path:?}: {}", why.join("; ")))
        })
        .collect()
}

#[test]
fn every_tracked_path_is_one_windows_can_check_out() {
    let root = crate::docs::root();
    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(&root)
        .output();
    let paths = match listed {
        Ok(output) if output.status.success() => output.stdout,
        // A source archive, or no git: nothing is tracked here to check.
        Ok(output) => {
            eprintln!(
                "skipped: {} is not a git checkout ({})",
                root.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            );
            return;
        }
        Err(e) => {
            eprintln!("skipped: git cannot be run ({e})");
            return;
        }
    };
    assert!(
        !paths.is_empty(),
        "git lists no tracked file in {}",
        root.display()
    );
    let offending = offending(&paths);
    assert!(
        offending.is_empty(),
        "{} tracked path(s) Windows cannot check out (rename or remove them):\n{}",
        offending.len(),
        offending.join("\n")
    );
}

#[test]
fn names_windows_takes_pass() {
    for name in [
        "README.md",
        ".gitignore",
        ".cni-win",
        "console.rs",
        "CONFIG",
        "auxiliary.md",
        "nul-terminated.md",
        "com10",
        "lpt",
        "COMA",
        "a.b.c",
        "with space.md",
        "été.txt",
        "con-fig.toml",
    ] {
        assert_eq!(refused(name), None, "{name}");
    }
}

#[test]
fn names_windows_refuses_are_named_with_the_reason() {
    for (name, why) in [
        ("a:b", "':'"),
        (r"Z:\work", "':'"),
        (r"a\b", r"'\\'"),
        ("a*b", "'*'"),
        ("a?b", "'?'"),
        ("a\"b", "'\"'"),
        ("a<b", "'<'"),
        ("a>b", "'>'"),
        ("a|b", "'|'"),
        ("tab\there", r"'\t'"),
        ("nul\0", r"'\0'"),
        ("bell\u{7}", r"'\u{7}'"),
        ("file.", "ends in a dot"),
        ("file ", "ends in a dot or a space"),
        ("CON", "CON is a device name"),
        ("con.txt", "con is a device name"),
        ("Nul", "device name"),
        ("nul.tar.gz", "device name"),
        ("NUL .txt", "NUL is a device name"),
        ("prn", "device name"),
        ("Aux.rs", "device name"),
        ("COM1", "device name"),
        ("com9.log", "device name"),
        ("lpt1", "device name"),
        ("LPT9.txt", "device name"),
        ("COM0", "device name"),
        ("com¹", "device name"),
        ("LPT³.md", "device name"),
    ] {
        let reason = refused(name).unwrap_or_else(|| panic!("{name:?} passed"));
        assert!(reason.contains(why), "{name:?}: {reason}");
    }
}

/// The listing is checked component by component, every offending path is reported, and a
/// name that is not UTF-8 is one Windows cannot take either.
#[test]
fn every_offending_path_is_reported() {
    let listing = b"README.md\0docs/aux.md\0Z:\\work\\ipam/cbr0/lock\0ok/fine.rs\0bad \xff\0";
    let offending = offending(listing);
    assert_eq!(offending.len(), 3, "{offending:#?}");
    assert!(offending[0].starts_with("\"docs/aux.md\": \"aux.md\": aux is a device name"));
    assert!(
        offending[1].starts_with(r#""Z:\\work\\ipam/cbr0/lock": "Z:\\work\\ipam": it holds ':'"#)
    );
    assert!(offending[2].ends_with("not UTF-8"), "{}", offending[2]);
}
