//! Secrets out of everything the bundle holds, by the name they are kept under: a value whose
//! key reads like a credential (`token`, `password`, `client-key-data`, ...) and every PEM
//! private key block are replaced with [`REDACTED`]. Applied to every entry, whatever step
//! made it, so no step can forget: a JSON document by its structure, any other text (a
//! kubeconfig, a log line holding a config) line by line. What was redacted is reported as
//! where and which key, never the value.

use serde_json::Value;

/// What a secret is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Parts of a normalized key (lowercase, letters and digits only) that mark it a credential.
const SECRET_PARTS: [&str; 12] = [
    "token",
    "password",
    "passwd",
    "passphrase",
    "secret",
    "credential",
    "privatekey",
    "apikey",
    "accesskey",
    "clientkey",
    "keydata",
    "authorization",
];
/// Normalized keys that are credentials on their own (`auth` in a Docker config).
const SECRET_KEYS: [&str; 3] = ["auth", "pwd", "pass"];

/// Whether a value kept under `key` can be a secret.
pub fn is_secret_key(key: &str) -> bool {
    let normalized: String = key
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    SECRET_KEYS.contains(&normalized.as_str())
        || SECRET_PARTS.iter().any(|part| normalized.contains(part))
}

/// `bytes` with every secret replaced, and where each was (a JSON pointer, or `line N: key`).
pub fn redact(bytes: &[u8]) -> (Vec<u8>, Vec<String>) {
    let mut found = Vec::new();
    if let Ok(mut value) = serde_json::from_slice::<Value>(bytes) {
        redact_json(&mut value, "", &mut found);
        if found.is_empty() {
            return (bytes.to_vec(), found);
        }
        let mut text = serde_json::to_vec_pretty(&value).expect("a JSON value always serializes");
        text.push(b'\n');
        return (text, found);
    }
    let text = String::from_utf8_lossy(bytes);
    let redacted = redact_text(&text, &mut found);
    if found.is_empty() {
        (bytes.to_vec(), found)
    } else {
        (redacted.into_bytes(), found)
    }
}

fn redact_json(value: &mut Value, pointer: &str, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                let pointer = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
                if is_secret_key(key) && !value.is_null() {
                    *value = Value::from(REDACTED);
                    found.push(pointer);
                } else {
                    redact_json(value, &pointer, found);
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                redact_json(item, &format!("{pointer}/{index}"), found);
            }
        }
        Value::String(text) => {
            let mut inner = Vec::new();
            let redacted = redact_text(text, &mut inner);
            if !inner.is_empty() {
                *text = redacted;
                found.extend(inner.into_iter().map(|at| format!("{pointer} ({at})")));
            }
        }
        _ => {}
    }
}

/// Text, line by line: PEM private key blocks, then `key: value`, `key=value` and
/// `"key": "value"` pairs under a secret key.
fn redact_text(text: &str, found: &mut Vec<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_private_key = false;
    // The indentation of a secret key whose value goes on over the lines below it (a YAML
    // block scalar `token: |`, or a key with its value on the next lines).
    let mut block: Option<usize> = None;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let number = index + 1;
        if in_private_key {
            if line.contains("-----END") {
                in_private_key = false;
                out.push_str(line);
            }
            continue;
        }
        if line.contains("-----BEGIN") && line.contains("PRIVATE KEY-----") {
            in_private_key = true;
            out.push_str(line);
            out.push_str(REDACTED);
            out.push('\n');
            found.push(format!("line {number}: PEM private key block"));
            continue;
        }
        if let Some(indent) = block {
            if line.trim().is_empty() {
                out.push_str(line);
                continue;
            }
            if indentation(line) > indent {
                out.push_str(&line[..indentation(line)]);
                out.push_str(REDACTED);
                out.push('\n');
                found.push(format!("line {number}: the value's continuation"));
                continue;
            }
            block = None;
        }
        let (redacted, opens_block) = redact_line(line, number, found);
        out.push_str(&redacted);
        if opens_block {
            block = Some(indentation(line));
        }
    }
    out
}

/// How many spaces and tabs `line` starts with.
fn indentation(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

/// One line with the value of every secret key in it replaced, and whether a secret key
/// opening the line leaves its value to the lines below (nothing after it, or a YAML block
/// indicator `|` or `>`).
fn redact_line(line: &str, number: usize, found: &mut Vec<String>) -> (String, bool) {
    let mut out = String::with_capacity(line.len());
    let mut opens_block = false;
    let mut rest = line;
    while let Some((before, key, after)) = next_key(rest) {
        out.push_str(before);
        if !is_secret_key(key.trim_matches(['"', '\''])) {
            out.push_str(key);
            rest = after;
            continue;
        }
        // `after` starts at the separator.
        let separator_len = after.len() - after[1..].trim_start().len();
        let (separator, value) = after.split_at(separator_len);
        // A key opening its line (YAML, an env file) owns the rest of the line.
        let whole_line = out.trim_start_matches([' ', '\t', '-']).is_empty();
        let value_len = value_len(value, whole_line);
        let block_indicator = value.trim_end().trim_end_matches(['-', '+']);
        if whole_line && (value_len == 0 || matches!(block_indicator, "|" | ">")) {
            opens_block = true;
        }
        if value_len == 0 {
            out.push_str(key);
            rest = after;
            continue;
        }
        out.push_str(key);
        out.push_str(separator);
        out.push_str(REDACTED);
        found.push(format!(
            "line {number}: {}",
            key.trim_matches(['"', '\'']).trim()
        ));
        rest = &value[value_len..];
    }
    out.push_str(rest);
    (out, opens_block)
}

/// The next `key` followed by `:` or `=`: (text before it, the key, the rest from the
/// separator). A key is a quoted string or a run of word characters (`client-key-data`).
fn next_key(text: &str) -> Option<(&str, &str, &str)> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let end = match bytes[i] {
            quote @ (b'"' | b'\'') => match text[i + 1..].find(quote as char) {
                Some(close) => i + 1 + close + 1,
                // An apostrophe in prose (`can't`), not a string: an ordinary character.
                None => {
                    i += 1;
                    continue;
                }
            },
            b if is_word(b) => {
                let mut j = i;
                while j < bytes.len() && is_word(bytes[j]) {
                    j += 1;
                }
                j
            }
            _ => {
                i += 1;
                continue;
            }
        };
        let after_key = &text[end..];
        let trimmed = after_key.trim_start_matches([' ', '\t']);
        if trimmed.starts_with([':', '=']) {
            let key_with_space = &text[start..end + (after_key.len() - trimmed.len())];
            return Some((&text[..start], key_with_space, trimmed));
        }
        // A quoted string that is not a key may hold one (`'password=x'`, or prose between
        // two apostrophes): look inside it too.
        i = if matches!(bytes[start], b'"' | b'\'') {
            start + 1
        } else {
            end.max(i + 1)
        };
    }
    None
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')
}

/// How long the value at the start of `value` is: a quoted string to its closing quote, else
/// the rest of the line when `whole_line`, else a bare token up to a `,`, `}`, `;` or
/// whitespace.
fn value_len(value: &str, whole_line: bool) -> usize {
    match value.as_bytes().first() {
        Some(&quote @ (b'"' | b'\'')) => {
            let mut escaped = false;
            for (i, b) in value.bytes().enumerate().skip(1) {
                match b {
                    b'\\' if !escaped => escaped = true,
                    b if b == quote && !escaped => return i + 1,
                    _ => escaped = false,
                }
            }
            value.trim_end_matches(['\r', '\n']).len()
        }
        _ if whole_line => value.trim_end_matches(['\r', '\n']).len(),
        _ => value
            .find([',', '}', ';', ' ', '\t', '\r', '\n'])
            .unwrap_or(value.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(input: &str) -> (String, Vec<String>) {
        let (bytes, found) = redact(input.as_bytes());
        (String::from_utf8(bytes).unwrap(), found)
    }

    #[test]
    fn credential_names_are_recognized() {
        for key in [
            "token",
            "client-key-data",
            "password",
            "Secret",
            "apiKey",
            "private_key",
            "auth",
        ] {
            assert!(is_secret_key(key), "{key}");
        }
        for key in [
            "name",
            "type",
            "subnet",
            "kubeconfig",
            "certificate-authority-data",
            "Policies",
        ] {
            assert!(!is_secret_key(key), "{key}");
        }
    }

    #[test]
    fn json_values_under_secret_keys_are_replaced_and_named() {
        let doc = json!({"name": "n", "plugins": [{"type": "x", "etcd_password": "hunter2",
                          "nested": {"Token": {"a": 1}}}]});
        let (bytes, found) = redact(&serde_json::to_vec(&doc).unwrap());
        let redacted: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(redacted["plugins"][0]["etcd_password"], json!(REDACTED));
        assert_eq!(redacted["plugins"][0]["nested"]["Token"], json!(REDACTED));
        assert_eq!(redacted["name"], json!("n"));
        assert_eq!(
            found,
            ["/plugins/0/etcd_password", "/plugins/0/nested/Token"]
        );
    }

    #[test]
    fn a_document_without_secrets_is_kept_byte_for_byte() {
        let raw = br#"{"b":1,  "a":[2]}"#;
        assert_eq!(redact(raw), (raw.to_vec(), vec![]));
    }

    #[test]
    fn kubeconfig_tokens_and_keys_are_replaced() {
        let kubeconfig = "users:\n- name: calico\n  user:\n    token: abc.def-ghi\n    \
                          client-key-data: LS0tS0VZ\n    client-certificate-data: Q0VSVA==\n";
        let (out, found) = text(kubeconfig);
        assert!(
            !out.contains("abc.def-ghi") && !out.contains("LS0tS0VZ"),
            "{out}"
        );
        assert!(
            out.contains("token: <redacted>\n") && out.contains("Q0VSVA=="),
            "{out}"
        );
        assert_eq!(found, ["line 4: token", "line 5: client-key-data"]);
    }

    #[test]
    fn json_in_a_log_line_and_pem_blocks_are_redacted() {
        let log = "ADD stdin={\"password\":\"s3cr\\\"et\",\"name\":\"cbr0\"} key=1\n\
                   -----BEGIN RSA PRIVATE KEY-----\nMIIE\nabcd\n-----END RSA PRIVATE KEY-----\nafter\n";
        let (out, found) = text(log);
        assert!(
            !out.contains("s3cr") && !out.contains("MIIE") && !out.contains("abcd"),
            "{out}"
        );
        assert!(
            out.contains("\"name\":\"cbr0\"") && out.contains("after\n"),
            "{out}"
        );
        assert_eq!(found, ["line 1: password", "line 2: PEM private key block"]);
    }

    #[test]
    fn apostrophes_in_prose_hide_no_secret() {
        for line in [
            "can't parse config: password=hunter2\n",
            "doesn't match {\"token\":\"hunter2\"}\n",
            "can't read 'x', password=hunter2, won't retry\n",
            "it's 'password: hunter2' that's wrong\n",
        ] {
            let (out, found) = text(line);
            assert!(!out.contains("hunter2"), "{line:?} -> {out:?}");
            assert_eq!(found.len(), 1, "{line:?}: {found:?}");
        }
    }

    #[test]
    fn a_value_on_the_lines_below_its_key_is_replaced() {
        let yaml = "users:\n- name: a\n  user:\n    token: |\n      hunter2\n      more\n\n    \
                    username: kept\nauth:\n  password: hunter3\nafter: kept\n";
        let (out, found) = text(yaml);
        assert!(!out.contains("hunter2") && !out.contains("more"), "{out}");
        assert!(!out.contains("hunter3"), "{out}");
        assert!(
            out.contains("username: kept") && out.contains("after: kept"),
            "{out}"
        );
        assert_eq!(
            found,
            [
                "line 4: token",
                "line 5: the value's continuation",
                "line 6: the value's continuation",
                "line 10: the value's continuation"
            ]
        );
    }
}
