//! What an import produces, whatever it was read from: logferry components
//! in the order they were found, each with the keys it was given and notes
//! on the source keys that were not carried over, rendered as TOML or YAML.

use std::fmt::Write as _;

/// A value of the generated configuration, its map keys kept in the order
/// the importer set them (so `type` comes first and the file reads like the
/// one it came from).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Int(i64),
    Bool(bool),
    List(Vec<Value>),
    Map(Vec<(String, Value)>),
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Str(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Str(s)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Int(n)
    }
}

/// Which table of the configuration a component goes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Source,
    Filter,
    Sink,
}

impl Kind {
    fn table(self) -> &'static str {
        match self {
            Kind::Source => "sources",
            Kind::Filter => "filters",
            Kind::Sink => "sinks",
        }
    }
}

/// A source key the component could not take, and why; shown as a comment
/// above it, and counted by `--strict`.
#[derive(Debug, Clone, PartialEq)]
pub struct Untranslated {
    /// The key as the source configuration spells it.
    pub key: String,
    /// What logferry does instead, or why nothing can.
    pub reason: String,
}

/// One logferry component made from one component of the imported file.
#[derive(Debug, Clone)]
pub struct Component {
    pub kind: Kind,
    /// Its name in the generated file (unique within its table).
    pub name: String,
    /// Its keys, `type` first.
    pub keys: Vec<(String, Value)>,
    /// Where it came from (`[INPUT] tail in fluent-bit.conf`), the first comment line.
    pub origin: String,
    /// Keys not carried over.
    pub untranslated: Vec<Untranslated>,
    /// Differences a user should know of although the keys were carried over.
    pub remarks: Vec<String>,
    /// Set when logferry has no equivalent: the component is written
    /// commented out, with this reason.
    pub commented_out: Option<String>,
}

impl Component {
    pub fn new(kind: Kind, name: &str, type_: &str, origin: String) -> Self {
        Component {
            kind,
            name: name.to_string(),
            keys: vec![("type".into(), type_.into())],
            origin,
            untranslated: Vec::new(),
            remarks: Vec::new(),
            commented_out: None,
        }
    }

    pub fn set(&mut self, key: &str, value: impl Into<Value>) {
        let value = value.into();
        match self.keys.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.keys.push((key.to_string(), value)),
        }
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.keys.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Adds `key = value` to the map held in `table` (created if missing).
    pub fn set_in(&mut self, table: &str, key: &str, value: impl Into<Value>) {
        let value = value.into();
        if !matches!(self.get(table), Some(Value::Map(_))) {
            self.set(table, Value::Map(Vec::new()));
        }
        if let Some((_, Value::Map(entries))) = self.keys.iter_mut().find(|(k, _)| k == table) {
            match entries.iter_mut().find(|(k, _)| k == key) {
                Some(slot) => slot.1 = value,
                None => entries.push((key.to_string(), value)),
            }
        }
    }

    pub fn untranslated(&mut self, key: &str, reason: impl Into<String>) {
        self.untranslated.push(Untranslated {
            key: key.to_string(),
            reason: reason.into(),
        });
    }

    pub fn remark(&mut self, text: impl Into<String>) {
        self.remarks.push(text.into());
    }

    pub fn comment_out(&mut self, reason: impl Into<String>) {
        self.commented_out = Some(reason.into());
    }
}

/// A whole imported configuration.
#[derive(Debug, Default)]
pub struct Imported {
    /// The file it was read from, for the header comment.
    pub from: String,
    pub components: Vec<Component>,
    /// The `[api]` table, when the source configuration served an HTTP API.
    pub api: Vec<(String, Value)>,
    /// Process-wide keys not carried over (service settings, includes), shown at the top.
    pub untranslated: Vec<Untranslated>,
    /// Process-wide remarks.
    pub remarks: Vec<String>,
}

/// What the summary line counts.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub translated: usize,
    pub commented_out: usize,
    pub keys_untranslated: usize,
}

impl Imported {
    pub fn summary(&self) -> Summary {
        let mut s = Summary {
            keys_untranslated: self.untranslated.len(),
            ..Summary::default()
        };
        for c in &self.components {
            if c.commented_out.is_some() {
                s.commented_out += 1;
            } else {
                s.translated += 1;
            }
            s.keys_untranslated += c.untranslated.len();
        }
        s
    }

    /// A name not yet taken in `kind`'s table, from `wanted`.
    pub fn unique_name(&self, kind: Kind, wanted: &str) -> String {
        let base: String = wanted
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let taken = |n: &str| {
            self.components
                .iter()
                .any(|c| c.kind == kind && c.name == n)
        };
        if !taken(&base) {
            return base;
        }
        (2..)
            .map(|i| format!("{base}_{i}"))
            .find(|n| !taken(n))
            .unwrap_or(base)
    }
}

impl Imported {
    /// Adds a `null` sink named `unrouted` taking the fixed tags of the
    /// sources whose records neither a sink nor a filter that may give new
    /// tags (`rewrite_tag`, `remap`) takes: the peer drops those records,
    /// and so does this sink, counting them, where `logferry validate`
    /// would refuse a source no sink takes. A tag made from files or
    /// clients (`app.*`) is left out: validate does not ask for a sink of
    /// it, and the router drops and counts the records no sink takes.
    /// `origin` and `remark` say, in the peer's words, what it drops.
    pub fn add_unrouted_sink(&mut self, origin: &str, remark: &str) {
        let live = |kind: Kind| {
            self.components
                .iter()
                .filter(move |c| c.kind == kind && c.commented_out.is_none())
        };
        let pattern = |c: &Component| match c.get("match") {
            Some(Value::Str(m)) => crate::router::TagPattern::new(m).ok(),
            _ => None,
        };
        let retags = |c: &&Component| matches!(c.get("type"), Some(Value::Str(t)) if t == "rewrite_tag" || t == "remap");
        let takers: Vec<_> = live(Kind::Sink)
            .chain(live(Kind::Filter).filter(retags))
            .filter_map(pattern)
            .collect();
        let mut tags: Vec<String> = Vec::new();
        for c in live(Kind::Source) {
            let Some(Value::Str(tag)) = c.get("tag") else {
                continue;
            };
            let fixed = !tag.is_empty() && !tag.contains(['*', '$', '{', ' ']);
            if fixed && !takers.iter().any(|p| p.matches(tag)) && !tags.contains(tag) {
                tags.push(tag.clone());
            }
        }
        if tags.is_empty() {
            return;
        }
        let name = self.unique_name(Kind::Sink, "unrouted");
        let mut c = Component::new(Kind::Sink, &name, "null", origin.to_string());
        c.set("match", tags.join(" "));
        c.remark(remark);
        self.components.push(c);
    }
}

/// A VRL string literal holding `s`, for the `remap` programs an import
/// writes.
pub fn vrl_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The configuration as TOML (`yaml` false) or YAML.
pub fn render(imported: &Imported, yaml: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# logferry configuration imported from {}",
        imported.from
    );
    let _ = writeln!(
        out,
        "# by `logferry config import`; see docs/migrating.md for what differs."
    );
    notes(&mut out, "", &imported.untranslated, &imported.remarks);
    if !imported.api.is_empty() {
        out.push('\n');
        let body = if yaml {
            block_yaml("api", &imported.api, 0)
        } else {
            table_toml("api", &imported.api)
        };
        out.push_str(&body);
    }
    for kind in [Kind::Source, Kind::Filter, Kind::Sink] {
        let of_kind: Vec<&Component> = imported
            .components
            .iter()
            .filter(|c| c.kind == kind)
            .collect();
        if of_kind.is_empty() {
            continue;
        }
        let all_commented = of_kind.iter().all(|c| c.commented_out.is_some());
        if yaml {
            out.push('\n');
            // a table of only commented-out components would be `sources:`
            // with no value (null), which logferry refuses
            if all_commented {
                let _ = writeln!(out, "# {}:", kind.table());
            } else {
                let _ = writeln!(out, "{}:", kind.table());
            }
        }
        for c in of_kind {
            out.push('\n');
            let indent = if yaml { "  " } else { "" };
            let _ = writeln!(out, "{indent}# {}", c.origin);
            if let Some(reason) = &c.commented_out {
                let _ = writeln!(out, "{indent}# not translated: {reason}");
            }
            notes(&mut out, indent, &c.untranslated, &c.remarks);
            let body = if yaml {
                block_yaml(&c.name, &c.keys, 2)
            } else {
                table_toml(&format!("{}.{}", kind.table(), key_toml(&c.name)), &c.keys)
            };
            if c.commented_out.is_some() {
                for line in body.lines() {
                    let _ = writeln!(
                        out,
                        "{indent}# {}",
                        line.strip_prefix(indent).unwrap_or(line)
                    );
                }
            } else {
                out.push_str(&body);
            }
        }
    }
    printable(out)
}

/// `text` with every control character but a newline or a tab written as
/// `\u{…}`: neither TOML nor YAML allows one raw, and the comments quote
/// the imported file's text as it is (values are quoted and escaped).
fn printable(text: String) -> String {
    if !text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        return text;
    }
    text.chars()
        .map(|c| match c {
            '\n' | '\t' => c.to_string(),
            c if c.is_control() => format!("\\u{{{:x}}}", u32::from(c)),
            c => c.to_string(),
        })
        .collect()
}

fn notes(out: &mut String, indent: &str, untranslated: &[Untranslated], remarks: &[String]) {
    for u in untranslated {
        let _ = writeln!(
            out,
            "{indent}# not translated: {} ({})",
            one_line(&u.key),
            one_line(&u.reason)
        );
    }
    for r in remarks {
        let _ = writeln!(out, "{indent}# note: {}", one_line(r));
    }
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

fn table_toml(header: &str, keys: &[(String, Value)]) -> String {
    let mut out = format!("[{header}]\n");
    for (k, v) in keys {
        let _ = writeln!(out, "{} = {}", key_toml(k), inline_toml(v));
    }
    out
}

fn key_toml(k: &str) -> String {
    if !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        k.to_string()
    } else {
        toml::Value::String(k.to_string()).to_string()
    }
}

fn inline_toml(v: &Value) -> String {
    match v {
        Value::Str(s) => toml::Value::String(s.clone()).to_string(),
        Value::Int(i) => i.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::List(items) => {
            let items: Vec<String> = items.iter().map(inline_toml).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Map(entries) => {
            if entries.is_empty() {
                return "{}".into();
            }
            let items: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{} = {}", key_toml(k), inline_toml(v)))
                .collect();
            format!("{{ {} }}", items.join(", "))
        }
    }
}

/// A block mapping `name:` with one `key: value` line per key, the values
/// in flow style (JSON, which YAML reads as it is).
fn block_yaml(name: &str, keys: &[(String, Value)], indent: usize) -> String {
    let pad = " ".repeat(indent);
    let mut out = format!("{pad}{}:\n", yaml_key(name));
    for (k, v) in keys {
        let _ = writeln!(out, "{pad}  {}: {}", yaml_key(k), flow_yaml(v));
    }
    out
}

/// A key as YAML reads it: bare when plain letters, digits, `_`, `-` and
/// `.` (and not a word YAML would read as something else), else quoted.
fn yaml_key(k: &str) -> String {
    let plain = k
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        && !matches!(
            k.to_ascii_lowercase().as_str(),
            "true" | "false" | "null" | "yes" | "no" | "on" | "off" | "y" | "n"
        );
    if plain {
        k.to_string()
    } else {
        json_str(k)
    }
}

fn json_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn flow_yaml(v: &Value) -> String {
    match v {
        Value::Str(s) => json_str(s),
        Value::Int(i) => i.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::List(items) => {
            let items: Vec<String> = items.iter().map(flow_yaml).collect();
            format!("[{}]", items.join(", "))
        }
        Value::Map(entries) => {
            let items: Vec<String> = entries
                .iter()
                .map(|(k, v)| format!("{}: {}", yaml_key(k), flow_yaml(v)))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Imported {
        let mut imported = Imported {
            from: "fluent-bit.conf".into(),
            ..Imported::default()
        };
        let mut c = Component::new(Kind::Sink, "out", "file", "[OUTPUT] file".into());
        c.set("match", "**");
        c.set_in("format", "type", "ndjson");
        c.untranslated("Workers", "one writer per sink");
        imported.components.push(c);
        let mut gone = Component::new(Kind::Filter, "lua", "lua", "[FILTER] lua".into());
        gone.comment_out("no Lua");
        imported.components.push(gone);
        imported
    }

    #[test]
    fn toml_keeps_order_and_comments_out() {
        let text = render(&sample(), false);
        assert!(text.contains("[sinks.out]\ntype = \"file\"\nmatch = \"**\"\n"));
        assert!(text.contains("format = { type = \"ndjson\" }"));
        assert!(text.contains("# not translated: Workers (one writer per sink)"));
        assert!(text.contains("# [filters.lua]\n# type = \"lua\"\n"));
        let parsed: toml::Table = toml::from_str(&text).expect("valid TOML");
        assert!(parsed.get("filters").is_none());
    }

    #[test]
    fn yaml_reads_back_as_the_same_tree() {
        let text = render(&sample(), true);
        let parsed: serde_yaml::Value = serde_yaml::from_str(&text).expect("valid YAML");
        assert_eq!(parsed["sinks"]["out"]["match"], "**");
        assert_eq!(parsed["sinks"]["out"]["format"]["type"], "ndjson");
        assert!(parsed.get("filters").is_none());
    }

    #[test]
    fn names_are_unique_per_table() {
        let imported = sample();
        assert_eq!(imported.unique_name(Kind::Sink, "out"), "out_2");
        assert_eq!(imported.unique_name(Kind::Source, "out"), "out");
        assert_eq!(imported.unique_name(Kind::Sink, "tail.0"), "tail_0");
    }

    #[test]
    fn a_control_character_quoted_from_the_file_is_escaped_in_a_comment() {
        let mut imported = Imported {
            from: "fluent.conf".into(),
            ..Imported::default()
        };
        imported.untranslated.push(Untranslated {
            key: "\u{1a}".into(),
            reason: "a key outside any section".into(),
        });
        for yaml in [false, true] {
            let text = render(&imported, yaml);
            assert!(!text.contains('\u{1a}'), "{text}");
            assert!(text.contains("\\u{1a}"), "{text}");
        }
        assert!(render(&imported, false).parse::<toml::Table>().is_ok());
    }
}
