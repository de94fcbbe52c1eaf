//! Configuration: TOML text → typed, validated structs.
//!
//! ```toml
//! [sources.in]
//! type = "forward"
//! address = "127.0.0.1:24224"
//!
//! [sinks.unify]
//! type = "file"
//! match = "**"
//! path = "/var/log/unify.log"
//! ```
//!
//! Components are named tables under `[sources]` and `[sinks]`, each with a
//! `type`. Every sink has a `match` pattern and an optional `buffer` table;
//! the remaining keys belong to the component type and unknown keys are
//! errors. Errors name the file, line and key.

mod interpolate;
pub mod units;

use std::fmt;
use std::path::Path;

use serde::de::DeserializeOwned;
use toml::{Table, Value};

use crate::buffer::BufferConfig;
use crate::router::TagPattern;
use crate::sinks::SinkKind;
use crate::sources::SourceKind;
pub use interpolate::interpolate;

/// The configuration `logferry run` uses when given no `--config`.
pub const DEFAULT_CONFIG: &str = include_str!("default.toml");

/// A whole pipeline.
#[derive(Debug, Clone)]
pub struct Config {
    pub sources: Vec<SourceConfig>,
    pub sinks: Vec<SinkConfig>,
    pub api: Option<ApiConfig>,
}

#[derive(Debug, Clone)]
pub struct SourceConfig {
    pub name: String,
    pub kind: SourceKind,
}

#[derive(Debug, Clone)]
pub struct SinkConfig {
    pub name: String,
    /// Which tags this sink receives.
    pub pattern: TagPattern,
    pub buffer: BufferConfig,
    pub kind: SinkKind,
}

/// The `[api]` table: the HTTP endpoint serving `/metrics` and `/health`.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiConfig {
    /// `host:port` to listen on.
    pub address: String,
}

/// A configuration error, with where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// File name (or `<embedded default>`).
    pub origin: String,
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{}: {}", self.origin, l, self.message),
            None => write!(f, "{}: {}", self.origin, self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Reads and validates a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            origin: origin.clone(),
            line: None,
            message: format!("cannot read the file: {e}"),
        })?;
        Config::parse(&text, &origin)
    }

    /// The embedded default configuration.
    pub fn embedded_default() -> Config {
        Config::parse(DEFAULT_CONFIG, "<embedded default>").expect("the embedded default is valid")
    }

    /// Parses and validates configuration text, substituting environment
    /// variables.
    ///
    /// ```
    /// use logferry::config::Config;
    ///
    /// let text = "[sources.in]\ntype = \"forward\"\naddress = \"127.0.0.1:24224\"\n\n\
    ///             [sinks.out]\ntype = \"null\"\nmatch = \"**\"\ncolour = 1\n";
    /// let err = Config::parse(text, "example.toml").unwrap_err();
    /// assert_eq!(err.line, Some(8));
    /// assert!(err.to_string().starts_with("example.toml:8: [sinks.out]: unknown key `colour`"));
    /// ```
    pub fn parse(text: &str, origin: &str) -> Result<Config, ConfigError> {
        Parser {
            origin,
            text: String::new(),
        }
        .parse(text)
    }
}

struct Parser<'a> {
    origin: &'a str,
    /// The text after interpolation (line numbers are unchanged by it).
    text: String,
}

impl<'a> Parser<'a> {
    fn error(&self, line: Option<usize>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            origin: self.origin.to_string(),
            line,
            message: message.into(),
        }
    }

    fn parse(mut self, raw: &str) -> Result<Config, ConfigError> {
        let text = interpolate(raw, |name| std::env::var(name).ok()).map_err(|e| {
            // interpolate's messages start with "line N: "
            let (line, msg) = e
                .strip_prefix("line ")
                .and_then(|r| r.split_once(": "))
                .and_then(|(n, m)| Some((n.parse().ok()?, m.to_string())))
                .unwrap_or((0, e.clone()));
            self.error((line > 0).then_some(line), msg)
        })?;
        self.text = text;
        let mut root: Table = toml::from_str(&self.text).map_err(|e| {
            let line = e
                .span()
                .map(|s| self.text[..s.start].matches('\n').count() + 1);
            self.error(line, e.message().to_string())
        })?;
        let sources = self.section(&mut root, "sources")?;
        let sinks = self.section(&mut root, "sinks")?;
        let api = match root.remove("api") {
            Some(v) => Some(self.typed::<ApiConfig>(v, &["api"])?),
            None => None,
        };
        if let Some(key) = root.keys().next() {
            return Err(self.error(
                self.locate(&[], Some(key)),
                format!("unknown top-level key `{key}` (expected `sources`, `sinks` or `api`)"),
            ));
        }
        let mut config = Config {
            sources: Vec::new(),
            sinks: Vec::new(),
            api,
        };
        for (name, table) in sources {
            let path = ["sources", name.as_str()];
            let (kind, rest) = self.component_type(table, &path)?;
            let kind = self.component(
                &path,
                &kind,
                rest,
                crate::sources::parse_kind,
                SourceKind::validate,
            )?;
            config.sources.push(SourceConfig { name, kind });
        }
        for (name, table) in sinks {
            let path = ["sinks", name.as_str()];
            let (kind, mut rest) = self.component_type(table, &path)?;
            let pattern = match rest.remove("match") {
                Some(Value::String(p)) => TagPattern::new(&p)
                    .map_err(|e| self.error(self.locate(&path, Some("match")), format!("[sinks.{name}].match: {e}")))?,
                Some(_) => {
                    return Err(self.error(self.locate(&path, Some("match")), format!("[sinks.{name}].match must be a string")))
                }
                None => {
                    return Err(self.error(
                        self.locate(&path, None),
                        format!("[sinks.{name}] needs `match`, the tag pattern it receives (e.g. match = \"**\")"),
                    ))
                }
            };
            let buffer = match rest.remove("buffer") {
                Some(v) => self.typed::<BufferConfig>(v, &["sinks", name.as_str(), "buffer"])?,
                None => BufferConfig::default(),
            };
            buffer.validate().map_err(|e| {
                self.error(
                    self.locate(&path, Some("buffer")),
                    format!("[sinks.{name}]: {e}"),
                )
            })?;
            let kind = self.component(
                &path,
                &kind,
                rest,
                crate::sinks::parse_kind,
                SinkKind::validate,
            )?;
            config.sinks.push(SinkConfig {
                name,
                pattern,
                buffer,
                kind,
            });
        }
        if config.sources.is_empty() {
            return Err(self.error(None, "no sources: add a [sources.NAME] table"));
        }
        if config.sinks.is_empty() {
            return Err(self.error(None, "no sinks: add a [sinks.NAME] table"));
        }
        Ok(config)
    }

    /// Turns the type-specific keys of the component at `path` (`["sinks",
    /// name]`) into its typed, validated config.
    fn component<K>(
        &self,
        path: &[&str; 2],
        type_name: &str,
        keys: Table,
        parse: fn(&str, ComponentTable<'_>) -> Result<K, KindError>,
        validate: fn(&K) -> Result<(), String>,
    ) -> Result<K, ConfigError> {
        let table = ComponentTable {
            parser: self,
            table: keys,
            path,
        };
        let what = path[0].trim_end_matches('s');
        let kind = parse(type_name, table).map_err(|e| match e {
            KindError::Unknown(list) => self.error(
                self.locate(path, Some("type")),
                format!(
                    "[{}]: unknown {what} type `{type_name}` (known: {list})",
                    path.join(".")
                ),
            ),
            KindError::Invalid(err) => err,
        })?;
        validate(&kind).map_err(|e| {
            self.error(
                self.locate(path, None),
                format!("[{}]: {e}", path.join(".")),
            )
        })?;
        Ok(kind)
    }

    /// The named tables under `[sources]` or `[sinks]`, in file order.
    fn section(&self, root: &mut Table, name: &str) -> Result<Vec<(String, Table)>, ConfigError> {
        let Some(v) = root.remove(name) else {
            return Ok(Vec::new());
        };
        let Value::Table(t) = v else {
            return Err(self.error(
                self.locate(&[], Some(name)),
                format!("`{name}` must be a table of named components"),
            ));
        };
        let mut out = Vec::new();
        for (component, v) in t {
            match v {
                Value::Table(t) => out.push((component, t)),
                _ => {
                    return Err(self.error(
                        self.locate(&[name], Some(&component)),
                        format!("`{name}.{component}` must be a table, e.g. [{name}.{component}]"),
                    ))
                }
            }
        }
        // toml's Table is ordered by key; keep the file's order for logs
        out.sort_by_key(|(n, _)| self.locate(&[name, n], None).unwrap_or(usize::MAX));
        Ok(out)
    }

    fn component_type(
        &self,
        mut table: Table,
        path: &[&str],
    ) -> Result<(String, Table), ConfigError> {
        match table.remove("type") {
            Some(Value::String(t)) => Ok((t, table)),
            Some(_) => Err(self.error(
                self.locate(path, Some("type")),
                format!("[{}].type must be a string", path.join(".")),
            )),
            None => Err(self.error(
                self.locate(path, None),
                format!("[{}] needs a `type`", path.join(".")),
            )),
        }
    }

    fn typed<T: DeserializeOwned>(&self, v: Value, path: &[&str]) -> Result<T, ConfigError> {
        match v {
            Value::Table(t) => self.typed_table(t, path),
            _ => Err(self.error(
                self.locate(&path[..path.len() - 1], path.last().copied()),
                format!("`{}` must be a table", path.join(".")),
            )),
        }
    }

    /// Deserializes a component table, mapping serde's message to the line
    /// of the key it names.
    fn typed_table<T: DeserializeOwned>(
        &self,
        table: Table,
        path: &[&str],
    ) -> Result<T, ConfigError> {
        T::deserialize(Value::Table(table)).map_err(|e| {
            let msg = e.to_string();
            let msg = msg.trim();
            let key = msg.split('`').nth(1).filter(|_| msg.contains('`'));
            let line = if msg.starts_with("missing field") {
                self.locate(path, None)
            } else {
                self.locate(path, key)
            };
            let msg = msg
                .replace("unknown field", "unknown key")
                .replace("missing field", "missing key")
                .replace("\nin `", " (key `");
            let msg = if msg.contains(" (key `") {
                format!("{msg})")
            } else {
                msg
            };
            self.error(line, format!("[{}]: {msg}", path.join(".")))
        })
    }

    /// The line of `key` inside the table at `path` (or of the table's
    /// header when `key` is `None` or cannot be found).
    fn locate(&self, path: &[&str], key: Option<&str>) -> Option<usize> {
        let mut header: Vec<String> = Vec::new();
        let mut header_line = None;
        for (i, line) in self.text.lines().enumerate() {
            let t = line.trim();
            if t.starts_with('[') {
                header = t
                    .trim_matches(|c| c == '[' || c == ']')
                    .split('.')
                    .map(|p| p.trim().trim_matches('"').to_string())
                    .collect();
                if header.len() >= path.len() && header.iter().zip(path).all(|(a, b)| a == b) {
                    if header.len() == path.len() && header_line.is_none() {
                        header_line = Some(i + 1);
                        if key.is_none() {
                            return header_line;
                        }
                    }
                } else {
                    continue;
                }
            }
            let in_scope =
                header.len() >= path.len() && header.iter().zip(path).all(|(a, b)| a == b);
            if let (true, Some(key)) = (in_scope, key) {
                let defines = t
                    .strip_prefix(key)
                    .is_some_and(|r| r.trim_start().starts_with('=') || r.starts_with('.'));
                let inline = t.contains(&format!("{key} =")) || t.contains(&format!("{key}="));
                if defines || inline {
                    return Some(i + 1);
                }
            }
        }
        header_line
    }
}

/// The type-specific keys of one component, ready to become its config.
pub struct ComponentTable<'p> {
    parser: &'p Parser<'p>,
    table: Table,
    path: &'p [&'p str],
}

impl ComponentTable<'_> {
    /// Deserializes the keys into the component's config struct; errors
    /// name the key and its line.
    pub fn parse<T: DeserializeOwned>(self) -> Result<T, KindError> {
        Ok(self.parser.typed_table(self.table, self.path)?)
    }
}

/// Why a component table could not become a typed config.
pub enum KindError {
    /// The type name is not known; carries the list of known names.
    Unknown(&'static str),
    Invalid(ConfigError),
}

impl From<ConfigError> for KindError {
    fn from(e: ConfigError) -> Self {
        KindError::Invalid(e)
    }
}

#[cfg(test)]
mod tests;
