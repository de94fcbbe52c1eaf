//! Fluentd configurations (`<source>`, `<filter>`, `<match>`, `<label>`,
//! `@include`, `<system>`) as logferry ones: the files are read into a tree
//! ([`syntax`]), the routing (first match, labels) is worked out in
//! [`routing`], and each section is translated by the module of its role
//! (`sources`, `filters`, `outputs`; `<parse>` sections in `parse`).

mod filters;
mod outputs;
mod parse;
mod routing;
mod sources;
pub mod syntax;

use std::path::Path;

use super::model::{Component, Imported, Kind, Value};
use super::ImportError;
use syntax::Element;

/// Reads the Fluentd configuration at `path` (and what it includes).
pub fn import(path: &Path) -> Result<Imported, ImportError> {
    let root = syntax::load(path)?;
    let mut imported = Imported {
        from: path.display().to_string(),
        ..Imported::default()
    };
    routing::translate(&root, &mut imported);
    Ok(imported)
}

/// Imports Fluentd configuration `text` (its `@include`s not read): what
/// the fuzz target drives.
pub fn import_text(text: &str) -> Result<Imported, ImportError> {
    let root = syntax::parse_text(text)?;
    let mut imported = Imported {
        from: "(text)".into(),
        ..Imported::default()
    };
    routing::translate(&root, &mut imported);
    Ok(imported)
}

/// A section's keys and subsections, each taken at most once; what is
/// left at the end is listed beside the component as not translated.
pub struct Keys<'a> {
    el: &'a Element,
    taken: Vec<bool>,
    sections_taken: Vec<bool>,
    /// Keys whose value holds Ruby logferry cannot evaluate.
    ruby: Vec<(String, String)>,
}

impl<'a> Keys<'a> {
    pub fn new(el: &'a Element) -> Self {
        let mut keys = Keys {
            el,
            taken: vec![false; el.attrs.len()],
            sections_taken: vec![false; el.elements.len()],
            ruby: Vec::new(),
        };
        keys.take("@type");
        keys
    }

    /// The first value of `key`; `None` also when it holds Ruby (noted).
    pub fn take(&mut self, key: &str) -> Option<String> {
        let i =
            (0..self.el.attrs.len()).find(|&i| !self.taken[i] && self.el.attrs[i].key == key)?;
        self.taken[i] = true;
        let a = &self.el.attrs[i];
        if let Some(code) = &a.ruby {
            self.ruby.push((
                format!("{} {}", a.key, a.value),
                format!("embedded Ruby ({code}) is not evaluated"),
            ));
            return None;
        }
        Some(a.value.clone())
    }

    /// A Fluentd boolean: `true`/`yes`, or the key alone.
    pub fn take_bool(&mut self, key: &str) -> Option<bool> {
        self.take(key)
            .map(|v| matches!(v.trim(), "" | "true" | "yes"))
    }

    /// The first subsection named `name`.
    pub fn section(&mut self, name: &str) -> Option<&'a Element> {
        self.sections(name).into_iter().next()
    }

    /// Every subsection named `name`, taken.
    pub fn sections(&mut self, name: &str) -> Vec<&'a Element> {
        let el = self.el;
        let mut out = Vec::new();
        for (i, e) in el.elements.iter().enumerate() {
            if !self.sections_taken[i] && e.name == name {
                self.sections_taken[i] = true;
                out.push(e);
            }
        }
        out
    }

    /// Lists every key and section of a subsection not taken on its
    /// component `c`, each after `prefix` (`<security>`).
    pub fn finish_in(self, prefix: &str, c: &mut Component) {
        let mut scratch = Component::new(c.kind, "", "", String::new());
        self.finish(&mut scratch);
        for u in scratch.untranslated {
            c.untranslated(&format!("{prefix} {}", u.key), u.reason);
        }
    }

    /// Lists every key and section not taken on `c`, with why.
    pub fn finish(self, c: &mut Component) {
        for (i, a) in self.el.attrs.iter().enumerate() {
            if !self.taken[i] {
                c.untranslated(&format!("{} {}", a.key, a.value), reason(&a.key));
            }
        }
        for (key, why) in self.ruby {
            c.untranslated(&key, why);
        }
        for (i, e) in self.el.elements.iter().enumerate() {
            if !self.sections_taken[i] {
                let head = if e.arg.is_empty() {
                    format!("<{}>", e.name)
                } else {
                    format!("<{} {}>", e.name, e.arg)
                };
                c.untranslated(&head, section_reason(&e.name));
            }
        }
    }
}

/// Why a key no plugin translation took has no logferry counterpart.
fn reason(key: &str) -> &'static str {
    match key {
        "@log_level" | "log_level" => "logferry has one log level for the process: --log-level",
        "@id" => "used as the component's name",
        "@label" => "routing is by tag in logferry (see the label notes)",
        "workers" | "num_threads" => "logferry runs every component on its own tasks",
        "emit_unmatched_lines" | "unmatched_lines" => {
            "a line that does not parse goes on unchanged in logferry"
        }
        "suppress_parse_error_log" | "ignore_repeated_log_interval" => {
            "logferry logs parse failures at most once every 10 s and counts them"
        }
        _ => "no logferry equivalent",
    }
}

fn section_reason(name: &str) -> &'static str {
    match name {
        "buffer" => "this output's buffer has no logferry counterpart",
        "secondary" => "logferry's counterpart is the sink's dead_letter file",
        "inject" => "only file, http, s3 and opensearch sinks add the time and tag to records",
        _ => "no logferry equivalent",
    }
}

/// A Fluentd time (`10s`, `5m`, `1h`, `1d`, `0.5`) as a logferry duration.
pub fn duration(v: &str) -> Option<String> {
    let v = v.trim();
    if v.contains("${") {
        return Some(v.to_string());
    }
    if let Some(days) = v.strip_suffix('d').and_then(|d| d.parse::<u64>().ok()) {
        return Some(format!("{}h", days * 24));
    }
    for unit in ["s", "m", "h"] {
        if let Some(n) = v.strip_suffix(unit) {
            if n.parse::<u64>().is_ok() {
                return Some(v.to_string());
            }
            if let Ok(f) = n.parse::<f64>() {
                let ms = match unit {
                    "s" => f * 1000.0,
                    "m" => f * 60_000.0,
                    _ => f * 3_600_000.0,
                };
                return (0.0..1e12)
                    .contains(&ms)
                    .then(|| format!("{}ms", ms.round() as u64));
            }
            return None;
        }
    }
    super::fluent_bit::seconds(v)
}

/// A Fluentd size (`8m`, `256MB`, `1g`, bytes): powers of 1024.
pub fn size(v: &str) -> Option<String> {
    super::fluent_bit::size(v)
}

/// A comma-separated list (`path`, `remove_keys`, `brokers`), or a JSON array.
pub fn list(v: &str) -> Vec<String> {
    if v.trim_start().starts_with('[') {
        if let Ok(items) = serde_json::from_str::<Vec<String>>(v) {
            return items;
        }
    }
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// `host:port` for logferry from Fluentd's `bind` and `port`.
pub fn address(bind: Option<String>, port: Option<String>, default_port: u16) -> String {
    let host = bind.unwrap_or_else(|| "0.0.0.0".into());
    let port = port.unwrap_or_else(|| default_port.to_string());
    if host.contains(':') && !host.starts_with('[') && !host.contains("${") {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A regex as Fluentd writes it (`/^(?<a>x)$/i`, or bare) as Rust's:
/// the slashes gone, Ruby's `i`, `m` and `x` flags made inline flags
/// (Ruby's `m` is Rust's `s`).
pub fn regex(v: &str) -> String {
    let v = v.trim();
    let Some(body) = v.strip_prefix('/') else {
        return v.to_string();
    };
    let Some(end) = body.rfind('/') else {
        return v.to_string();
    };
    let (re, flags) = (&body[..end], &body[end + 1..]);
    if !flags.chars().all(|c| matches!(c, 'i' | 'm' | 'x')) {
        return v.to_string();
    }
    let flags: String = flags
        .chars()
        .map(|c| if c == 'm' { 's' } else { c })
        .collect();
    let re = re.replace("\\/", "/");
    if flags.is_empty() {
        re
    } else {
        format!("(?{flags}){re}")
    }
}

/// A field as Fluentd's record accessor names it (`$.a.b`, `$['a']['b']`,
/// or a plain key) as logferry's (`a`, `$a['b']`).
pub fn field(v: &str) -> String {
    let v = v.trim();
    let parts: Vec<String> = if let Some(dotted) = v.strip_prefix("$.") {
        dotted.split('.').map(String::from).collect()
    } else if let Some(bracketed) = v.strip_prefix('$') {
        bracketed
            .split(['[', ']'])
            .map(|p| p.trim_matches(['\'', '"']))
            .filter(|p| !p.is_empty())
            .map(String::from)
            .collect()
    } else {
        return v.to_string();
    };
    match parts.split_first() {
        Some((first, [])) => first.clone(),
        Some((first, rest)) => {
            let tail: String = rest.iter().map(|p| format!("['{p}']")).collect();
            format!("${first}{tail}")
        }
        None => v.to_string(),
    }
}

/// A new component for section `el`, named by its `@id` or `fallback`.
pub fn component(
    el: &Element,
    keys: &mut Keys,
    kind: Kind,
    type_: &str,
    fallback: &str,
    imported: &Imported,
) -> Component {
    let id = keys.take("@id");
    let name = imported.unique_name(kind, id.as_deref().unwrap_or(fallback));
    Component::new(kind, &name, type_, el.origin())
}

/// A component logferry has no equivalent of: commented out with `why`.
pub fn unsupported(el: &Element, kind: Kind, why: &str, imported: &mut Imported) {
    let plugin = el.get("@type").unwrap_or("?");
    let mut keys = Keys::new(el);
    let mut c = component(el, &mut keys, kind, plugin, plugin, imported);
    c.set("match", el.arg.as_str());
    c.comment_out(why.to_string());
    for a in &el.attrs {
        if a.key != "@type" && a.key != "@id" {
            c.set(&a.key, Value::Str(a.value.clone()));
        }
    }
    imported.components.push(c);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every cut and every one-character change of a realistic file
    /// imports or is an error with its line, never a panic, and what is
    /// imported renders as TOML that parses (the fuzz target's checks, on
    /// a fixed set of inputs).
    #[test]
    fn cut_and_changed_files_never_panic() {
        let text = include_str!("../../../../tests/import/fluentd/td-agent.conf").to_string()
            + include_str!("../../../../tests/import/fluentd/kubernetes.conf")
            + include_str!("../../../../tests/import/fluentd/differential/labels.conf");
        let chars: Vec<char> = text.chars().collect();
        let mut inputs: Vec<String> = (0..chars.len())
            .step_by(chars.len() / 30 + 1)
            .map(|i| chars[..i].iter().collect())
            .collect();
        for (i, with) in (0..chars.len())
            .step_by(11)
            .zip("<>\"'#{}[]/ !*\n".chars().cycle())
        {
            let mut changed = chars.clone();
            changed[i] = with;
            inputs.push(changed.into_iter().collect());
        }
        for input in inputs {
            match import_text(&input) {
                Ok(imported) => {
                    let toml_text = super::super::model::render(&imported, false);
                    assert!(toml_text.parse::<toml::Table>().is_ok(), "{toml_text}");
                }
                Err(ImportError::Invalid { line, .. }) => {
                    assert!(line <= input.split('\n').count());
                }
                Err(e) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn durations_sizes_regexes_and_fields() {
        assert_eq!(duration("10s").as_deref(), Some("10s"));
        assert_eq!(duration("1d").as_deref(), Some("24h"));
        assert_eq!(duration("0.5").as_deref(), Some("500ms"));
        assert_eq!(duration("60").as_deref(), Some("60s"));
        assert_eq!(duration("1.5m").as_deref(), Some("90000ms"));
        assert_eq!(duration("x"), None);
        assert_eq!(size("8m").as_deref(), Some("8MiB"));
        assert_eq!(regex("/^a\\/b$/i"), "(?i)^a/b$");
        assert_eq!(regex("/x/m"), "(?s)x");
        assert_eq!(regex("^plain$"), "^plain$");
        assert_eq!(
            field("$.kubernetes.labels.app"),
            "$kubernetes['labels']['app']"
        );
        assert_eq!(field("$['a']['b c']"), "$a['b c']");
        assert_eq!(field("$.level"), "level");
        assert_eq!(field("level"), "level");
        assert_eq!(list("[\"/a\", \"/b\"]"), vec!["/a", "/b"]);
        assert_eq!(list("/a, /b"), vec!["/a", "/b"]);
    }
}
