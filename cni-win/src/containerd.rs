//! containerd's CRI config pointing at the directories install filled. containerd 1.7 and 2.x
//! name the section differently (`io.containerd.grpc.v1.cri`, `io.containerd.cri.v1.runtime`)
//! and 2.x takes a list `bin_dirs` where 1.7 takes `bin_dir`; both are printed, as install
//! cannot know which one runs.

use std::path::Path;

/// The TOML for containerd 1.7 and 2.x, with comments saying which is which.
pub fn snippets(bin_dir: &Path, conf_dir: &Path) -> String {
    let bin = toml_string(bin_dir);
    let conf = toml_string(conf_dir);
    format!(
        "# containerd 1.7 (config.toml version = 2)\n\
         [plugins.\"io.containerd.grpc.v1.cri\".cni]\n  bin_dir = {bin}\n  conf_dir = {conf}\n\n\
         # containerd 2.x (config.toml version = 3)\n\
         [plugins.\"io.containerd.cri.v1.runtime\".cni]\n  bin_dirs = [{bin}]\n  conf_dir = {conf}\n"
    )
}

/// A TOML string for a path: a literal string (no escapes, so `C:\opt\cni\bin` reads as is)
/// unless the path holds a quote or control character, then a basic string with escapes.
fn toml_string(path: &Path) -> String {
    let text = path.display().to_string();
    if !text.contains('\'') && !text.chars().any(char::is_control) {
        return format!("'{text}'");
    }
    let mut escaped = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => escaped.push_str("\\\""),
            '\\' => escaped.push_str("\\\\"),
            c if c.is_control() => escaped.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => escaped.push(c),
        }
    }
    escaped.push('"');
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_paths_are_literal_strings() {
        let text = snippets(Path::new(r"C:\opt\cni\bin"), Path::new(r"C:\etc\cni\net.d"));
        assert!(text.contains(
            "[plugins.\"io.containerd.grpc.v1.cri\".cni]\n  bin_dir = 'C:\\opt\\cni\\bin'\n"
        ));
        assert!(text.contains("bin_dirs = ['C:\\opt\\cni\\bin']"));
        assert!(text.contains("[plugins.\"io.containerd.cri.v1.runtime\".cni]"));
        assert_eq!(toml_string(Path::new(r"C:\it's")), r#""C:\\it's""#);
    }
}
