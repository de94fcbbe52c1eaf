//! Fluent Bit configurations (classic `.conf` and YAML) into logferry's:
//! the files are read into sections ([`Section`]), then each section is
//! translated by the module of its role (`inputs`, `filters`, `outputs`).

mod classic;
mod filters;
mod inputs;
mod modify;
mod outputs;
mod parsers;
mod service;
mod tag_regex;
pub mod tags;
mod yaml;

use std::collections::HashMap;
use std::path::Path;

use super::model::{Component, Imported, Kind};
use super::ImportError;

/// One `[INPUT]`, `[FILTER]`, … section (or YAML list item), its keys in
/// file order; a key may repeat (`Regex`, `Rule`, `Header`).
#[derive(Debug, Clone)]
pub struct Section {
    /// `SERVICE`, `INPUT`, `FILTER`, `OUTPUT`, `PARSER`, `MULTILINE_PARSER`, …
    pub kind: String,
    pub props: Vec<(String, String)>,
    /// The file it was read from, for the origin comment.
    pub file: String,
    /// Its header's line (0 in YAML).
    pub line: usize,
}

impl Section {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.props
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }

    fn origin(&self) -> String {
        let name = self.get("name").unwrap_or("?");
        if self.line > 0 {
            format!("[{}] {name} ({}:{})", self.kind, self.file, self.line)
        } else {
            format!("{} {name} ({})", self.kind.to_ascii_lowercase(), self.file)
        }
    }
}

/// Everything read from a Fluent Bit configuration and what it includes.
#[derive(Debug, Default)]
pub struct FbConfig {
    /// `@SET` (classic) and `env` (YAML) variables, substituted while reading.
    pub variables: HashMap<String, String>,
    pub service: Vec<Section>,
    pub inputs: Vec<Section>,
    pub filters: Vec<Section>,
    pub outputs: Vec<Section>,
    pub parsers: Vec<Section>,
    pub multiline_parsers: Vec<Section>,
    /// Included files and globs, for the header.
    pub included: Vec<String>,
    /// Sections and top-level keys with no meaning here (`[PLUGINS]`, `customs`).
    pub unknown: Vec<String>,
}

impl FbConfig {
    fn push(&mut self, s: Section) {
        match s.kind.as_str() {
            "SERVICE" => self.service.push(s),
            "INPUT" => self.inputs.push(s),
            "FILTER" => self.filters.push(s),
            "OUTPUT" => self.outputs.push(s),
            "PARSER" => self.parsers.push(s),
            "MULTILINE_PARSER" => self.multiline_parsers.push(s),
            other => self.unknown.push(format!("[{other}] (in {})", s.file)),
        }
    }
}

/// Whether `text` looks like a Fluent Bit configuration, and which syntax.
pub fn detect(text: &str) -> Option<bool> {
    let mut yaml_keys = false;
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('#') || l.is_empty() {
            continue;
        }
        let upper = l.to_ascii_uppercase();
        if [
            "[SERVICE]",
            "[INPUT]",
            "[OUTPUT]",
            "[FILTER]",
            "[PARSER]",
            "[MULTILINE_PARSER]",
            "[PLUGINS]",
            "[CUSTOM]",
            "[UPSTREAM]",
        ]
        .contains(&upper.as_str())
            || upper.starts_with("@INCLUDE ")
            || upper.starts_with("@SET ")
        {
            return Some(false);
        }
        if !line.starts_with(' ') && (l == "pipeline:" || l == "service:" || l == "parsers:") {
            yaml_keys = true;
        }
    }
    yaml_keys.then_some(true)
}

/// `${NAME}` replaced by a `@SET` variable of that name; any other `${…}`
/// stays for logferry's own environment interpolation, which has the same
/// syntax.
pub fn substitute(value: &str, variables: &HashMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) if variables.contains_key(&after[..end]) => {
                out.push_str(&variables[&after[..end]]);
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Reads one file, classic or YAML by its name.
fn load_any(path: &Path, config: &mut FbConfig, depth: usize) -> Result<(), ImportError> {
    let is_yaml = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"));
    if is_yaml {
        yaml::load(path, config, depth)
    } else {
        classic::load(path, config, depth)
    }
}

/// Imports the Fluent Bit configuration at `path`.
pub fn import(path: &Path, is_yaml: bool) -> Result<Imported, ImportError> {
    let mut config = FbConfig::default();
    if is_yaml {
        yaml::load(path, &mut config, 0)?;
    } else {
        classic::load(path, &mut config, 0)?;
    }
    let mut imported = Imported {
        from: path.display().to_string(),
        ..Imported::default()
    };
    let settings = service::translate(&mut config, path, &mut imported)?;
    let parsers = parsers::Parsers::new(&config.parsers, &config.multiline_parsers);
    let mut counters: HashMap<String, usize> = HashMap::new();
    let inputs = std::mem::take(&mut config.inputs);
    for s in &inputs {
        inputs::translate(s, &parsers, &mut counters, &mut imported);
    }
    // the remap filters of Tag_Regex come after every input's parser
    // filters: a record they retag meets no other input's parser
    let (retags, rest): (Vec<Component>, Vec<Component>) = std::mem::take(&mut imported.components)
        .into_iter()
        .partition(|c| c.kind == Kind::Filter && c.get("type") == Some(&"remap".into()));
    imported.components = rest;
    imported.components.extend(retags);
    for s in &config.filters {
        filters::translate(s, &parsers, &mut counters, &mut imported);
    }
    for s in &config.outputs {
        outputs::translate(s, &settings, &mut counters, &mut imported);
    }
    imported.add_unrouted_sink(
        "records no output matches",
        "Fluent Bit drops the records of these tags, which no output matches; this sink drops them too, counted in its metrics",
    );
    if !config.included.is_empty() {
        imported
            .remarks
            .push(format!("included: {}", config.included.join(", ")));
    }
    for u in &config.unknown {
        imported.untranslated.push(super::model::Untranslated {
            key: u.clone(),
            reason: "no logferry equivalent".into(),
        });
    }
    Ok(imported)
}

/// What every section's translation starts from.
pub struct Head<'a> {
    /// The plugin, lower-cased (`tail`).
    pub plugin: String,
    pub keys: Keys<'a>,
    /// The name Fluent Bit gives it without `Alias` (`tail.0`), also the
    /// default tag of an input.
    pub instance: String,
    /// Its name in the generated file: the alias, or the instance name.
    pub name: String,
    alias: Option<String>,
}

impl<'a> Head<'a> {
    pub fn new(
        s: &'a Section,
        kind: Kind,
        counters: &mut HashMap<String, usize>,
        imported: &Imported,
    ) -> Self {
        let plugin = s.get("name").unwrap_or("").to_ascii_lowercase();
        let instance = instance(&plugin, counters);
        let mut keys = Keys::new(s);
        let alias = keys.take("alias");
        let name = imported.unique_name(kind, alias.as_deref().unwrap_or(&instance));
        Head {
            plugin,
            keys,
            instance,
            name,
            alias,
        }
    }

    /// Lists the keys left on `c`, notes a renamed alias, and adds `c`.
    pub fn finish(self, mut c: Component, imported: &mut Imported) {
        if let Some(a) = &self.alias {
            if *a != c.name {
                c.remark(format!("Alias {a} is named {} here", c.name));
            }
        }
        self.keys.finish(&mut c);
        imported.components.push(c);
    }
}

/// A section's keys, each taken at most once; what is left at the end is
/// listed beside the component as not translated.
pub struct Keys<'a> {
    section: &'a Section,
    taken: Vec<bool>,
}

impl<'a> Keys<'a> {
    pub fn new(section: &'a Section) -> Self {
        let mut keys = Keys {
            section,
            taken: vec![false; section.props.len()],
        };
        keys.take("name");
        keys
    }

    /// The first value of `key` (any case).
    pub fn take(&mut self, key: &str) -> Option<String> {
        let i = self
            .section
            .props
            .iter()
            .enumerate()
            .position(|(i, (k, _))| !self.taken[i] && k.eq_ignore_ascii_case(key))?;
        self.taken[i] = true;
        Some(self.section.props[i].1.clone())
    }

    /// Whether `key` (any case) is there and not taken yet.
    pub fn has(&self, key: &str) -> bool {
        self.section
            .props
            .iter()
            .enumerate()
            .any(|(i, (k, _))| !self.taken[i] && k.eq_ignore_ascii_case(key))
    }

    /// Every value of `key`, in file order.
    pub fn take_all(&mut self, key: &str) -> Vec<String> {
        std::iter::from_fn(|| self.take(key)).collect()
    }

    /// Every value of any of `names`, in file order, with its key as written.
    pub fn take_ordered(&mut self, names: &[&str]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (i, (k, v)) in self.section.props.iter().enumerate() {
            if !self.taken[i] && names.iter().any(|n| k.eq_ignore_ascii_case(n)) {
                self.taken[i] = true;
                out.push((k.clone(), v.clone()));
            }
        }
        out
    }

    /// Keys starting with `prefix` (`rdkafka.`), the prefix removed.
    pub fn take_prefixed(&mut self, prefix: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (i, (k, v)) in self.section.props.iter().enumerate() {
            if !self.taken[i]
                && k.len() > prefix.len()
                && k[..prefix.len()].eq_ignore_ascii_case(prefix)
            {
                self.taken[i] = true;
                out.push((k[prefix.len()..].to_string(), v.clone()));
            }
        }
        out
    }

    /// Lists every key not taken on `c`, with why.
    pub fn finish(self, c: &mut Component) {
        for (i, (k, _)) in self.section.props.iter().enumerate() {
            if !self.taken[i] {
                c.untranslated(k, reason(k));
            }
        }
    }
}

/// Why a key no plugin translation took has no logferry counterpart.
fn reason(key: &str) -> &'static str {
    let k = key.to_ascii_lowercase();
    match k.as_str() {
        "mem_buf_limit" => {
            "logferry bounds memory with [limits] memory and each sink's buffer.max_bytes"
        }
        "log_level" => "logferry has one log level for the process: --log-level",
        "workers" | "threaded" => "logferry runs every component on its own tasks",
        "buffer_chunk_size" | "chunk_size" => "logferry sizes its reads itself",
        "storage.pause_on_chunks_overlimit"
        | "storage.max_chunks_up"
        | "storage.backlog.mem_limit" => {
            "logferry's buffers are set per sink (buffer.max_bytes, when_full)"
        }
        "storage.type" => {
            "logferry keeps records on disk in the sinks' disk buffers, not per input"
        }
        "storage.total_limit_size" => {
            "only with a disk buffer (storage.type filesystem on an input)"
        }
        "alias" => "used as the component's name",
        "processors" => "processors have no logferry equivalent; use filters",
        "routable" => "logferry routes by match only",
        _ if k.starts_with("db.") => "logferry's checkpoint is its own file, not SQLite",
        _ if k.starts_with("net.") => "connection settings are logferry's own",
        _ if k.starts_with("tls") => "no TLS setting of this component in logferry",
        _ => "no logferry equivalent",
    }
}

/// Fluent Bit's booleans: on/off, true/false, yes/no, 1/0.
pub fn boolean(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Some(true),
        "off" | "false" | "no" | "0" => Some(false),
        _ => None,
    }
}

/// A Fluent Bit size (`32k`, `5M`, `1G`, `100KB`, bytes) as logferry's:
/// Fluent Bit's units are powers of 1024.
pub fn size(v: &str) -> Option<String> {
    let v = v.trim();
    if v.contains("${") {
        return Some(v.to_string());
    }
    let digits: String = v.chars().take_while(|c| c.is_ascii_digit()).collect();
    let unit = v[digits.len()..].trim().to_ascii_uppercase();
    let n: u64 = digits.parse().ok()?;
    let suffix = match unit.as_str() {
        "" | "B" => return Some(n.to_string()),
        "K" | "KB" => "KiB",
        "M" | "MB" => "MiB",
        "G" | "GB" => "GiB",
        _ => return None,
    };
    Some(format!("{n}{suffix}"))
}

/// Fluent Bit seconds (`5`, `0.5`) as a logferry duration.
pub fn seconds(v: &str) -> Option<String> {
    let v = v.trim();
    if let Ok(n) = v.parse::<u64>() {
        return Some(format!("{n}s"));
    }
    let f: f64 = v.parse().ok()?;
    if !(0.0..1e9).contains(&f) {
        return None;
    }
    Some(format!("{}ms", (f * 1000.0).round() as u64))
}

/// A comma- or space-separated list (`Path`, `Brokers`, `Topics`).
pub fn list(v: &str) -> Vec<String> {
    v.split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// The instance name Fluent Bit gives an unnamed plugin: `tail.0`, `tail.1`.
pub fn instance(plugin: &str, counters: &mut HashMap<String, usize>) -> String {
    let n = counters.entry(plugin.to_string()).or_insert(0);
    let name = format!("{plugin}.{n}");
    *n += 1;
    name
}

/// `host:port` for logferry from Fluent Bit's `Listen`/`Host` and `Port`.
pub fn address(
    host: Option<String>,
    port: Option<String>,
    default_host: &str,
    default_port: u16,
) -> String {
    let host = host.unwrap_or_else(|| default_host.to_string());
    let port = port.unwrap_or_else(|| default_port.to_string());
    if host.contains(':') && !host.starts_with('[') && !host.contains("${") {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `${VAR}` replaced by the importing environment's value, where the
/// value must be known now: a tag pattern (logferry would read the value as
/// its own pattern syntax) or a file read at import. What is replaced is
/// noted on `c`.
pub fn from_environment(value: &str, c: &mut Component) -> String {
    let vars = environment_in(value);
    if vars.is_empty() {
        return value.to_string();
    }
    let out = substitute(value, &vars);
    let mut names: Vec<&String> = vars.keys().collect();
    names.sort();
    c.remark(format!(
        "{value} read as {out}: {} taken from the environment at import",
        names
            .iter()
            .map(|n| n.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ));
    out
}

/// The environment variables `value` names as `${VAR}`.
fn environment_in(value: &str) -> HashMap<String, String> {
    std::env::vars()
        .filter(|(k, _)| value.contains(&format!("${{{k}}}")))
        .collect()
}

/// A file name read at import (`@INCLUDE`, `Parsers_File`) with the
/// environment's `${VAR}`s in it, as Fluent Bit reads it.
pub fn file_name(value: &str) -> String {
    substitute(value, &environment_in(value))
}

/// Sets `match` on a filter or sink from `Match` or `Match_Regex`; a
/// component Fluent Bit routes nothing to, or whose pattern logferry
/// cannot express, is commented out.
pub fn route(keys: &mut Keys, c: &mut Component) {
    let m = keys.take("match").map(|m| from_environment(&m, c));
    let r = keys.take("match_regex").map(|r| from_environment(&r, c));
    // Fluent Bit routes a tag that either matches: logferry's `match`
    // takes several patterns, any of which routes
    let pattern = match (&m, &r) {
        (Some(m), Some(r)) => {
            tags::from_match(m).and_then(|m| tags::from_regex(r).map(|r| format!("{m} {r}")))
        }
        (Some(m), None) => tags::from_match(m),
        (None, Some(r)) => tags::from_regex(r),
        (None, None) => Err("no Match: Fluent Bit gives it no record".into()),
    };
    match pattern {
        Ok(p) => c.set("match", p),
        Err(e) => {
            c.set("match", "**");
            c.comment_out(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_variables_are_replaced_and_environment_kept() {
        let vars = HashMap::from([("LOG_DIR".to_string(), "/var/log/app".to_string())]);
        assert_eq!(
            substitute("${LOG_DIR}/x-${HOSTNAME}.log", &vars),
            "/var/log/app/x-${HOSTNAME}.log"
        );
        assert_eq!(substitute("${unclosed", &vars), "${unclosed");
    }

    #[test]
    fn sizes_and_seconds() {
        assert_eq!(size("32k").as_deref(), Some("32KiB"));
        assert_eq!(size("5MB").as_deref(), Some("5MiB"));
        assert_eq!(size("100").as_deref(), Some("100"));
        assert_eq!(size("5X"), None);
        assert_eq!(seconds("5").as_deref(), Some("5s"));
        assert_eq!(seconds("0.25").as_deref(), Some("250ms"));
    }

    #[test]
    fn match_and_match_regex_together_route_either() {
        let s = Section {
            kind: "OUTPUT".into(),
            props: vec![
                ("Name".into(), "null".into()),
                ("Match".into(), "app.*".into()),
                ("Match_Regex".into(), "^(sys|kern)\\.".into()),
            ],
            file: "t.conf".into(),
            line: 1,
        };
        let mut keys = Keys::new(&s);
        let mut c = Component::new(Kind::Sink, "x", "null", String::new());
        route(&mut keys, &mut c);
        assert_eq!(
            c.get("match"),
            Some(&super::super::model::Value::from(
                "app.*.** {sys,kern}.*.**"
            ))
        );
        assert!(c.untranslated.is_empty() && c.commented_out.is_none());
    }

    #[test]
    fn detects_both_syntaxes() {
        assert_eq!(detect("[SERVICE]\n  Flush 1\n"), Some(false));
        assert_eq!(detect("# x\n@INCLUDE a.conf\n"), Some(false));
        assert_eq!(
            detect("service:\n  flush: 1\npipeline:\n  inputs: []\n"),
            Some(true)
        );
        assert_eq!(detect("<source>\n @type tail\n</source>\n"), None);
    }
}
