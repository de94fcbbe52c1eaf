//! Secret values out of everything that echoes the configuration: the
//! running configuration `GET /config` shows, and the messages about a
//! configuration (`logferry validate`, the 422 of a refused reload, the
//! log). One rule ([`super::secret`]) decides for all of them:
//!
//! - every value under a secret key or a map of headers
//!   ([`super::secret::hides_values`]: `password`, `shared_key`, `token`,
//!   `headers`, …) is shown as `***`;
//! - every value that came from the environment is shown as the `${VAR}`
//!   it was written as, which still says where to look;
//! - the content of a file a secret's `*_file` key names (`token_file`,
//!   `password_file`) is shown as `***` wherever it appears.
//!
//! In a message, values are found in the text itself, so a file that is
//! not even valid TOML (or YAML) is covered too. Values shorter than
//! [`MIN_REDACTED`] characters are left alone there: replacing every `1`
//! or `on` would garble the message, and a value that short is no secret.
//! `GET /config` replaces them whatever their length, as it knows where
//! each value came from.

use toml::{Table, Value};

use super::secret::{hides_values, is_secret_file_key};

/// The shortest value replaced in a message.
pub const MIN_REDACTED: usize = 4;

/// The largest secret file read to learn its content: a secret is a line,
/// not a document.
const MAX_SECRET_FILE_BYTES: u64 = 64 * 1024;

/// What to replace in what is shown of one configuration text.
#[derive(Debug, Default)]
pub struct Redactions {
    /// (value, shown instead), longest value first.
    pairs: Vec<(String, String)>,
    /// The text parsed as written, before `${VAR}` substitution (`None`
    /// when it is neither TOML nor YAML): which values came from the
    /// environment.
    written: Option<Table>,
}

impl Redactions {
    /// The secret values of configuration `text`, with `lookup` giving
    /// environment variables.
    pub fn of(text: &str, lookup: &impl Fn(&str) -> Option<String>) -> Redactions {
        let mut pairs = Vec::new();
        for name in variables(text) {
            if let Some(value) = lookup(&name) {
                pairs.push((value, format!("${{{name}}}")));
            }
        }
        let written = toml::from_str::<Table>(text)
            .ok()
            .or_else(|| super::yaml::read(text).ok());
        let mut secrets = Vec::new();
        let mut files = Vec::new();
        if let Some(tree) = &written {
            for (k, v) in tree {
                tree_secrets(k, v, false, &mut secrets, &mut files);
            }
        }
        secrets.extend(written_secrets(text));
        secrets.extend(written_yaml_secrets(text));
        for f in files {
            let path = crate::config::interpolate(&f, lookup).unwrap_or(f);
            if let Some(content) = secret_file(&path) {
                pairs.push((content, "***".into()));
            }
        }
        for s in secrets {
            // as written, and after substitution
            if let Ok(done) = crate::config::interpolate(&s, lookup) {
                pairs.push((done, "***".into()));
            }
            pairs.push((s, "***".into()));
        }
        // as a message may quote it: Rust's `{:?}` escapes
        let escaped: Vec<(String, String)> = pairs
            .iter()
            .filter_map(|(v, r)| {
                let e = v.escape_debug().to_string();
                (e != *v).then(|| (e, r.clone()))
            })
            .collect();
        pairs.extend(escaped);
        pairs.retain(|(v, _)| v.chars().count() >= MIN_REDACTED);
        pairs.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.cmp(b)));
        pairs.dedup_by(|a, b| a.0 == b.0);
        Redactions { pairs, written }
    }

    /// [`Redactions::of`] with the process's environment.
    pub fn from_env(text: &str) -> Redactions {
        Redactions::of(text, &|name| std::env::var(name).ok())
    }

    /// `message` with every secret value replaced, in one pass (a
    /// replacement is never searched again), longest value first.
    pub fn apply(&self, message: &str) -> String {
        if self.pairs.is_empty() {
            return message.to_string();
        }
        let mut out = String::with_capacity(message.len());
        let mut rest = message;
        'next: while let Some(c) = rest.chars().next() {
            for (value, shown) in &self.pairs {
                if let Some(after) = rest.strip_prefix(value.as_str()) {
                    out.push_str(shown);
                    rest = after;
                    continue 'next;
                }
            }
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
        out
    }

    /// `tree`, the document after `${VAR}` substitution, as the TOML
    /// `GET /config` shows: every value under a secret key or a map of
    /// headers as `"***"`, every string that came from the environment as
    /// written (`"${VAR}"`), and any other string with the secret values
    /// of [`Redactions::apply`] replaced.
    pub fn show(&self, tree: &Table) -> String {
        let mut shown = tree.clone();
        self.show_table(&mut shown, self.written.as_ref());
        toml::to_string(&shown)
            .unwrap_or_else(|e| format!("# cannot show the configuration: {e}\n"))
    }

    fn show_table(&self, t: &mut Table, written: Option<&Table>) {
        for (k, v) in t.iter_mut() {
            if hides_values(k) {
                hide(v);
            } else {
                self.show_value(v, written.and_then(|w| w.get(k)));
            }
        }
    }

    fn show_value(&self, v: &mut Value, written: Option<&Value>) {
        match v {
            Value::Table(t) => self.show_table(t, written.and_then(Value::as_table)),
            Value::Array(a) => {
                let w = written.and_then(Value::as_array);
                for (i, v) in a.iter_mut().enumerate() {
                    self.show_value(v, w.and_then(|w| w.get(i)));
                }
            }
            Value::String(s) => match written.and_then(Value::as_str) {
                Some(w) if !variables(w).is_empty() => *s = w.to_string(),
                _ => *s = self.apply(s),
            },
            _ => {}
        }
    }
}

/// Every value under a hidden key becomes `"***"`.
fn hide(v: &mut Value) {
    match v {
        Value::Table(t) => t.iter_mut().for_each(|(_, v)| hide(v)),
        Value::Array(a) => a.iter_mut().for_each(hide),
        other => *other = Value::String("***".into()),
    }
}

/// The content (trimmed) of the secret file at `path`, if it is a regular
/// file small enough to hold a secret.
fn secret_file(path: &str) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_SECRET_FILE_BYTES {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    Some(text.trim().to_string())
}

/// The names of the environment variables `${NAME}` and `${NAME:-x}` in
/// `text` (not `$${`, nor the tag, record and hostname placeholders).
fn variables(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        if rest[..i].ends_with('$') {
            rest = &rest[i + 2..];
            continue;
        }
        let after = &rest[i + 2..];
        let end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..end];
        if !name.is_empty() && !matches!(name, "tag" | "topic" | "record" | "resource" | "hostname")
        {
            names.push(name.to_string());
        }
        rest = after;
    }
    names
}

/// Every string (and number, as written) under a hidden key of the parsed
/// configuration, into `out`; the paths secret `*_file` keys name, into
/// `files`.
fn tree_secrets(
    key: &str,
    v: &Value,
    under_secret: bool,
    out: &mut Vec<String>,
    files: &mut Vec<String>,
) {
    let secret = under_secret || hides_values(key);
    match v {
        Value::Table(t) => t
            .iter()
            .for_each(|(k, v)| tree_secrets(k, v, secret, out, files)),
        Value::Array(a) => a
            .iter()
            .for_each(|v| tree_secrets(key, v, secret, out, files)),
        Value::String(s) if secret => out.push(s.clone()),
        Value::String(s) if is_secret_file_key(key) => files.push(s.clone()),
        Value::Integer(i) if secret => out.push(i.to_string()),
        Value::Float(f) if secret => out.push(f.to_string()),
        _ => {}
    }
}

/// Values written `secret_key = "…"` (or `'…'`, or a bare number), every
/// value of an inline table or array written after a hidden key
/// (`headers = { "x-api-key" = "…" }`), and every value under a hidden
/// table header (`[sinks.out.headers]`), as they are written: found
/// without parsing, for a file that is not valid TOML.
fn written_secrets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices('=') {
        let before = &text[..at];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        if before[line_start..].trim_start().starts_with('#') {
            continue;
        }
        let start = before.rfind(['\n', '{', ',', '[']).map_or(0, |i| i + 1);
        let key = before[start..].trim();
        let last = key.rsplit('.').next().unwrap_or(key);
        let unquoted = key.trim_matches(|c| c == '"' || c == '\'');
        let hidden = hides_values(unquoted)
            || hides_values(last.trim_matches(|c| c == '"' || c == '\''))
            || hidden_header(before);
        if !hidden {
            continue;
        }
        let value = text[at + 1..].trim_start_matches([' ', '\t']);
        if value.starts_with(['{', '[']) {
            // every value of the inline table or array, on its line
            let line = value.split('\n').next().unwrap_or(value);
            let mut any = false;
            for (eq, _) in line.match_indices('=') {
                if let Some(v) = written_value(&line[eq + 1..]) {
                    out.push(v);
                    any = true;
                }
            }
            if !any {
                // an array of values: each quoted one
                let mut rest = line;
                while let Some(q) = rest.find(['"', '\'']) {
                    match quoted(&rest[q..]) {
                        Some(v) => {
                            out.push(v.to_string());
                            rest = &rest[q + v.len() + 2..];
                        }
                        None => break,
                    }
                }
            }
        } else if let Some(v) = written_value(value) {
            out.push(v);
        }
    }
    out
}

/// Values written `secret_key: …` in YAML (flow collections after it
/// value by value), and every value in the block under a hidden key
/// (`headers:`, then `  x-api-key: …` or `  - …`), as written: found
/// without parsing, for a file that is not valid YAML.
fn written_yaml_secrets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    // the indentation of a hidden key whose block is being read
    let mut hidden_block: Option<usize> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let mut t = line.trim();
        while let Some(item) = t.strip_prefix("- ").or_else(|| (t == "-").then_some("")) {
            t = item.trim_start();
        }
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if hidden_block.is_some_and(|h| indent > h) {
            let value = super::yaml::lines::key_value(t).map_or(t, |(_, v)| v);
            out.extend(yaml_values(value));
            continue;
        }
        hidden_block = None;
        let Some((key, value)) = super::yaml::lines::key_value(t) else {
            continue;
        };
        if !hides_values(&key) {
            // `options: { sasl.password: x }`: the hidden keys inside
            if value.starts_with('{') {
                for part in value.trim_matches(|c| c == '{' || c == '}').split(',') {
                    if let Some((k, v)) = super::yaml::lines::key_value(part.trim()) {
                        if hides_values(&k) {
                            out.extend(yaml_values(v));
                        }
                    }
                }
            }
            continue;
        }
        let values = yaml_values(value);
        if values.is_empty() {
            hidden_block = Some(indent);
        }
        out.extend(values);
    }
    out
}

/// The scalars of a YAML value as written on its line: a quoted string's
/// content, a plain word, or each value of a flow collection.
fn yaml_values(value: &str) -> Vec<String> {
    let value = match value.find(" #") {
        Some(c) if quoted(value).is_none() => &value[..c],
        _ => value,
    };
    let value = value.trim();
    if let Some(q) = quoted(value) {
        return vec![q.to_string()];
    }
    if !value.starts_with(['{', '[']) {
        return (!value.is_empty())
            .then(|| value.to_string())
            .into_iter()
            .collect();
    }
    value
        .trim_matches(|c| matches!(c, '{' | '}' | '[' | ']'))
        .split(',')
        .filter_map(|part| {
            let v = part.split_once(": ").map_or(part, |(_, v)| v).trim();
            let v = quoted(v).unwrap_or(v);
            (!v.is_empty()).then(|| v.to_string())
        })
        .collect()
}

/// The value written at the start of `s` (after `=`): a quoted string's
/// content, or a bare word.
fn written_value(s: &str) -> Option<String> {
    let s = s.trim_start_matches([' ', '\t']);
    if let Some(v) = quoted(s) {
        return Some(v.to_string());
    }
    let end = s
        .find(|c: char| c.is_whitespace() || matches!(c, ',' | '}' | ']' | '#'))
        .unwrap_or(s.len());
    (end > 0).then(|| s[..end].to_string())
}

/// Whether the last table header in `before` (`[sinks.out.headers]`)
/// names a hidden key.
fn hidden_header(before: &str) -> bool {
    before
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('[') && !l.starts_with("[{"))
        .is_some_and(|h| {
            h.trim_matches(|c| c == '[' || c == ']')
                .split('.')
                .any(|k| hides_values(k.trim().trim_matches(|c| c == '"' || c == '\'')))
        })
}

/// The content of the quoted string `s` starts with, as written.
fn quoted(s: &str) -> Option<&str> {
    let quote = s.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let body = &s[1..];
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            '\n' => return None,
            '\\' if quote == '"' && !escaped => escaped = true,
            c if c == quote && !escaped => return Some(&body[..i]),
            _ => escaped = false,
        }
    }
    None
}

#[cfg(test)]
mod tests;
