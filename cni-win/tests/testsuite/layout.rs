//! The `cni_win` library's files import one another without a cycle: a file that needs
//! something of a file that needs it back has a type in the wrong place (the NetworkPolicy
//! agent's task once pulled the daemon into doctor's checks through the agent's mode). The
//! edges are read from the source as a reader follows them: `crate::…`, `super::…` and
//! `self::…` paths, and a module's paths into its own child modules (`tasks::DoctorTask`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each file of the library by its module path (`""` for the crate root, `daemon/tasks`).
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    let mut modules = BTreeMap::new();
    let mut dirs = vec![src.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("the source is readable") {
            let path = entry.expect("the source is readable").path();
            let relative = path
                .strip_prefix(src)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                if relative != "bin" {
                    dirs.push(path);
                }
                continue;
            }
            let Some(module) = relative.strip_suffix(".rs") else {
                continue;
            };
            let module = module.replace('\\', "/");
            let module = match module.as_str() {
                "lib" => String::new(),
                other => other.strip_suffix("/mod").unwrap_or(other).to_owned(),
            };
            modules.insert(module, path);
        }
    }
    modules
}

/// The code a reader follows: comments and the unit tests at the end of a file left out.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    text.lines()
        .map(|line| line.split("//").next().unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module a path starting in `module` leads to: the deepest file it names.
fn target(modules: &BTreeMap<String, PathBuf>, module: &str, path: &[&str]) -> Option<String> {
    let mut at: Vec<&str> = if module.is_empty() {
        Vec::new()
    } else {
        module.split('/').collect()
    };
    let mut segments = path.iter().copied().peekable();
    let mut found = match segments.peek().copied() {
        Some("crate") => {
            at.clear();
            segments.next();
            Some(String::new())
        }
        Some("self") => {
            segments.next();
            Some(at.join("/"))
        }
        Some("super") => {
            while segments.peek() == Some(&"super") {
                segments.next();
                at.pop()?;
            }
            Some(at.join("/"))
        }
        // A path into a child module of `module`, if it names one.
        Some(_) => None,
        None => return None,
    };
    for segment in segments {
        at.push(segment);
        let candidate = at.join("/");
        if !modules.contains_key(&candidate) {
            break;
        }
        found = Some(candidate);
    }
    found
}

/// The paths in `code`: each `use` item spelt out whole (`use super::{a::B, C}` is
/// `super::a::B` and `super::C`), and every other run of `ident::ident::…`.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = String::new();
    for (index, part) in code.split("use ").enumerate() {
        let starts_use = index > 0 && {
            let before = rest.trim_end_matches([' ', '\t']);
            before.is_empty()
                || before.ends_with(['\n', ';', '{', '}'])
                || before.ends_with("pub")
                || before.ends_with(')')
        };
        match part.split_once(';') {
            Some((item, after)) if starts_use => {
                let tree = item.split_whitespace().collect::<Vec<_>>().join(" ");
                for path in spread(&tree) {
                    paths.push(path.split("::").map(str::to_owned).collect());
                }
                rest.push_str(after);
            }
            _ => {
                if index > 0 {
                    rest.push_str("use ");
                }
                rest.push_str(part);
            }
        }
    }
    paths.extend(expression_paths(&rest));
    paths.retain(|path: &Vec<String>| path.len() > 1);
    paths
}

/// A `use` tree spelt out: `a::{b, c::{d, e}}` is `a::b`, `a::c::d`, `a::c::e`.
fn spread(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(tree);
        return vec![path.split_whitespace().collect()];
    };
    let prefix: String = tree[..open].split_whitespace().collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (at, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
        .into_iter()
        .filter(|item| !item.is_empty())
        .flat_map(|item| {
            spread(item)
                .into_iter()
                .map(|path| match path.as_str() {
                    "self" => prefix.trim_end_matches("::").to_owned(),
                    _ => format!("{prefix}{path}"),
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Runs of `ident::ident::…` in code that is not a `use`.
fn expression_paths(code: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut paths = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !ident(chars[i]) || (i > 0 && (ident(chars[i - 1]) || chars[i - 1] == ':')) {
            i += 1;
            continue;
        }
        let mut path = Vec::new();
        let mut j = i;
        loop {
            let start = j;
            while j < chars.len() && ident(chars[j]) {
                j += 1;
            }
            path.push(chars[start..j].iter().collect::<String>());
            if chars.get(j) == Some(&':')
                && chars.get(j + 1) == Some(&':')
                && chars.get(j + 2).copied().is_some_and(ident)
            {
                j += 2;
                continue;
            }
            break;
        }
        paths.push(path);
        i = j.max(i + 1);
    }
    paths
}

/// Every file's imports of other files of the library.
fn imports(modules: &BTreeMap<String, PathBuf>) -> BTreeMap<String, BTreeSet<String>> {
    modules
        .iter()
        .map(|(module, file)| {
            let text = std::fs::read_to_string(file).expect("a source file is readable");
            let targets = paths(&code(&text))
                .iter()
                .filter_map(|path| {
                    let path: Vec<&str> = path.iter().map(String::as_str).collect();
                    target(modules, module, &path)
                })
                // A module's own ancestors hold it: `super::Thing` of a parent is not a cycle
                // of files, the parent's `mod` line is.
                .filter(|to| {
                    to != module && !module.starts_with(&format!("{to}/")) && !to.is_empty()
                })
                .collect();
            (module.clone(), targets)
        })
        .collect()
}

/// A cycle of the graph, if it has one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        graph: &BTreeMap<String, BTreeSet<String>>,
        node: &str,
        marks: &mut BTreeMap<String, Mark>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let from = stack.iter().position(|n| n == node).unwrap();
                let mut cycle = stack[from..].to_vec();
                cycle.push(node.to_owned());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(node.to_owned(), Mark::Open);
        stack.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(graph, next, marks, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        marks.insert(node.to_owned(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    graph
        .keys()
        .find_map(|node| visit(graph, node, &mut marks, &mut Vec::new()))
}

#[test]
fn the_librarys_files_import_one_another_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules(&src);
    assert!(
        modules.contains_key("network_policy/programmer"),
        "{modules:?}"
    );
    let graph = imports(&modules);
    assert!(
        graph["daemon"].contains("daemon/tasks") && graph["daemon/tasks"].contains("doctor"),
        "the reader sees the imports: {graph:#?}"
    );
    if let Some(cycle) = cycle(&graph) {
        panic!("an import cycle across files: {}", cycle.join(" -> "));
    }
}

/// The reader finds a cycle where there is one: the two the agent once brought in.
#[test]
fn a_cycle_is_found() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("network_policy/program", "network_policy/snapshot"),
        ("network_policy/snapshot", "network_policy/program"),
    ]
    .into_iter()
    .map(|(from, to)| (from.to_owned(), BTreeSet::from([to.to_owned()])))
    .collect();
    assert!(cycle(&graph).is_some());
    let modules: BTreeMap<String, PathBuf> = ["", "daemon", "daemon/tasks", "doctor"]
        .into_iter()
        .map(|m| (m.to_owned(), PathBuf::new()))
        .collect();
    assert_eq!(
        target(&modules, "daemon", &["tasks", "DoctorTask"]).as_deref(),
        Some("daemon/tasks")
    );
    assert_eq!(
        target(&modules, "daemon/tasks", &["crate", "doctor", "Doctor"]).as_deref(),
        Some("doctor")
    );
    assert_eq!(
        target(&modules, "daemon/tasks", &["super", "Round"]).as_deref(),
        Some("daemon")
    );
    let spelt = |code: &str| -> Vec<String> {
        paths(code)
            .into_iter()
            .map(|path| path.join("::"))
            .collect()
    };
    assert_eq!(
        spelt("use super::{Ran, feed::{Api, Feed as F}};\nlet x = tasks::DoctorTask::new();"),
        [
            "super::Ran",
            "super::feed::Api",
            "super::feed::Feed",
            "tasks::DoctorTask::new"
        ]
    );
}
