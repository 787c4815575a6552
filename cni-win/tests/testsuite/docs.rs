//! The operator's documentation holds together: every relative link in the README, the pages
//! under `docs/` and ARCHITECTURE.md names a file that exists and, with an anchor, a heading
//! that file has (as GitHub makes anchors of headings). A section moved or renamed without its
//! links fails here.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The repository's root, where the README is.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cni-win lives in the workspace")
        .to_owned()
}

/// Every page the documentation is made of.
fn pages() -> Vec<PathBuf> {
    let root = root();
    let mut pages = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.expect("docs/ is readable").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The lines outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

/// The anchors GitHub gives a page's headings: lower case, punctuation but `-` and `_` dropped,
/// spaces as `-`.
fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .into_iter()
        .filter_map(|line| line.strip_prefix('#'))
        .map(|heading| {
            heading
                .trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
                .map(|c| if c == ' ' { '-' } else { c })
                .collect()
        })
        .collect()
}

/// The targets of a page's Markdown links (`[text](target)`) that stay in the repository.
fn relative_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    for line in prose(text) {
        let mut rest = line;
        while let Some(start) = rest.find("](") {
            rest = &rest[start + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = &rest[..end];
            if !target.contains("://") && !target.starts_with("mailto:") {
                links.push(target.to_owned());
            }
            rest = &rest[end..];
        }
    }
    links
}

#[test]
fn every_relative_link_names_a_file_and_a_heading_that_exist() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("a page is readable");
        for link in relative_links(&text) {
            checked += 1;
            let (file, anchor) = link.split_once('#').unwrap_or((link.as_str(), ""));
            let target = if file.is_empty() {
                page.clone()
            } else {
                page.parent().expect("a page is in a folder").join(file)
            };
            if !target.exists() {
                broken.push(format!("{}: {link}: no such file", page.display()));
                continue;
            }
            if anchor.is_empty() {
                continue;
            }
            let target_text = std::fs::read_to_string(&target).expect("a target is readable");
            if !anchors(&target_text).contains(anchor) {
                broken.push(format!("{}: {link}: no such heading", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(
        checked > 20,
        "only {checked} links found: the scan misses links"
    );
}

#[test]
fn every_page_under_docs_is_reachable_from_the_readme() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("the README");
    let linked: BTreeSet<String> = relative_links(&readme)
        .into_iter()
        .map(|link| link.split('#').next().unwrap_or_default().to_owned())
        .collect();
    let unlinked: Vec<String> = pages()
        .iter()
        .filter(|page| page.parent().is_some_and(|dir| dir.ends_with("docs")))
        .map(|page| format!("docs/{}", page.file_name().unwrap().to_string_lossy()))
        .filter(|page| !linked.contains(page))
        .collect();
    assert!(
        unlinked.is_empty(),
        "pages the README does not link: {unlinked:?}"
    );
}

#[test]
fn a_broken_anchor_is_found() {
    let page = "# Title\n\n## A section: with `code`\n\nSee [it](#a-section-with-code) and [gone](#gone).\n";
    let found = anchors(page);
    assert!(found.contains("a-section-with-code"), "{found:?}");
    assert!(!found.contains("gone"));
    assert_eq!(relative_links(page), ["#a-section-with-code", "#gone"]);
}
