//! Secret values out of the messages a refused reload returns (the 422
//! body of `POST /reload`, which anyone who may reload reads, and the
//! log). A message may quote a value (`invalid type: integer `1234``,
//! `address "…" must be host:port`); if that value came from a secret key
//! ([`crate::api::is_secret_key`]: `password`, `shared_key`, `token`, …) it
//! is shown as `***`, and if it came from the environment (`${VAR}`) as
//! `${VAR}`, which still says where to look.
//!
//! Values are found in the text itself, so a file that is not even valid
//! TOML is covered too. Values shorter than [`MIN_REDACTED`] characters
//! are left alone: replacing every `1` or `on` would garble the message,
//! and a value that short is no secret.

/// The shortest value replaced.
pub const MIN_REDACTED: usize = 4;

/// What to replace in messages about one configuration text.
#[derive(Debug, Default)]
pub struct Redactions {
    /// (value, shown instead), longest value first.
    pairs: Vec<(String, String)>,
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
        let mut secrets = Vec::new();
        if let Ok(tree) = toml::from_str::<toml::Table>(text) {
            for (k, v) in &tree {
                tree_secrets(k, v, false, &mut secrets);
            }
        }
        secrets.extend(written_secrets(text));
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
        Redactions { pairs }
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
}

/// The names of the environment variables `${NAME}` and `${NAME:-x}` in
/// `text` (not `$${`, nor the tag and record placeholders).
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
        if !name.is_empty() && !matches!(name, "tag" | "topic" | "record") {
            names.push(name.to_string());
        }
        rest = after;
    }
    names
}

/// Every string (and number, as written) under a secret key of the parsed
/// configuration.
fn tree_secrets(key: &str, v: &toml::Value, under_secret: bool, out: &mut Vec<String>) {
    let secret = under_secret || crate::api::is_secret_key(key);
    match v {
        toml::Value::Table(t) => t.iter().for_each(|(k, v)| tree_secrets(k, v, secret, out)),
        toml::Value::Array(a) => a.iter().for_each(|v| tree_secrets(key, v, secret, out)),
        toml::Value::String(s) if secret => out.push(s.clone()),
        toml::Value::Integer(i) if secret => out.push(i.to_string()),
        toml::Value::Float(f) if secret => out.push(f.to_string()),
        _ => {}
    }
}

/// Values written `secret_key = "…"` (or `'…'`, or a bare number) in the
/// text, as they are written there: found without parsing, for a file
/// that is not valid TOML.
fn written_secrets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices('=') {
        let before = &text[..at];
        let start = before.rfind(['\n', '{', ',', '[']).map_or(0, |i| i + 1);
        let key = before[start..].trim();
        let last = key.rsplit('.').next().unwrap_or(key);
        let unquoted = key.trim_matches(|c| c == '"' || c == '\'');
        if !crate::api::is_secret_key(unquoted) && !crate::api::is_secret_key(last) {
            continue;
        }
        let value = text[at + 1..].trim_start_matches([' ', '\t']);
        if let Some(v) = quoted(value) {
            out.push(v.to_string());
        } else {
            let end = value
                .find(|c: char| c.is_whitespace() || matches!(c, ',' | '}' | ']' | '#'))
                .unwrap_or(value.len());
            out.push(value[..end].to_string());
        }
    }
    out
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
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "SECRET_ADDR" => Some("secret-host.internal:99999".into()),
            "PW" => Some("env-password-value".into()),
            "SHORT" => Some("ab".into()),
            _ => None,
        }
    }

    #[test]
    fn secret_and_environment_values_are_replaced() {
        let text = r#"
[sources.in]
type = "forward"
address = "${SECRET_ADDR}"
shared_key = "written-shared-key"
users = [{ username = "alice", password = "alice-password" }]
[sinks.k]
librdkafka_options = { "sasl.password" = 98765432, "ssl.key.password" = "${PW}", "x" = "${SHORT}" }
path = "/logs/${tag}.log"
"#;
        let r = Redactions::of(text, &env);
        let m = r.apply(
            "address \"secret-host.internal:99999\" is bad; invalid type: integer `98765432`; \
             alice-password and written-shared-key and env-password-value; alice stays; ab stays",
        );
        for secret in [
            "secret-host.internal",
            "98765432",
            "alice-password",
            "written-shared-key",
            "env-password-value",
        ] {
            assert!(!m.contains(secret), "{secret}: {m}");
        }
        assert!(m.contains("address \"${SECRET_ADDR}\" is bad"), "{m}");
        assert!(m.contains("integer `***`"), "{m}");
        assert!(m.contains("alice stays") && m.contains("ab stays"), "{m}");
    }

    #[test]
    fn a_file_that_is_not_toml_still_has_its_secrets_found() {
        let text = "[sinks.out]\npassword = \"pa\\\"ss-word\" oops\nshared_key='single-quoted'\n";
        assert!(toml::from_str::<toml::Table>(text).is_err());
        let r = Redactions::of(text, &|_| None);
        let m = r.apply("line 2: password = \"pa\\\"ss-word\" oops; single-quoted");
        assert!(
            !m.contains("ss-word") && !m.contains("single-quoted"),
            "{m}"
        );
    }

    #[test]
    fn a_debug_escaped_value_is_replaced_too() {
        let r = Redactions::of("token = \"tab\\there-token\"\n", &|_| None);
        let m = r.apply("invalid value \"tab\\there-token\"");
        assert!(!m.contains("here-token"), "{m}");
    }

    #[test]
    fn a_replacement_is_not_searched_again() {
        // a variable whose value is its own name
        let r = Redactions::of("address = \"${ADDR}\"\n", &|n| Some(n.repeat(2)));
        assert_eq!(r.apply("x ADDRADDR y"), "x ${ADDR} y");
    }
}
