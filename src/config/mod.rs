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

pub mod examples;
mod interpolate;
pub mod units;

use std::fmt;
use std::path::Path;

use serde::de::DeserializeOwned;
use toml::{Table, Value};

use crate::buffer::BufferConfig;
use crate::router::TagPattern;
use crate::sinks::settle::SettleConfig;
use crate::sinks::verdict::RetryConfig;
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
    /// The `[limits]` table: process-wide limits.
    pub limits: crate::limits::LimitsConfig,
    /// The whole document after `${VAR}` substitution: what `GET /config`
    /// shows, with secrets masked (see `crate::api::masked_config`).
    pub tree: toml::Table,
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
    /// `dead_letter` and `retry`: what happens to records that fail.
    pub settle: SettleConfig,
    pub kind: SinkKind,
}

/// The `[api]` table: the HTTP endpoint serving `/metrics`, `/health`,
/// `/ready`, `/config` and `POST /reload`. Who may use it: `crate::api::access`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiConfig {
    /// `host:port` to listen on.
    pub address: String,
    /// A file whose content (trimmed) is the token `POST /reload` and
    /// `GET /config` require; read at start.
    #[serde(default)]
    pub token_file: Option<std::path::PathBuf>,
    /// An environment variable holding that token; read at start.
    #[serde(default)]
    pub token_env: Option<String>,
    /// The token itself, for `token = "${VAR}"`; `/config` shows `"***"`.
    #[serde(default)]
    pub token: Option<crate::api::access::Secret>,
}

impl ApiConfig {
    pub fn validate(&self) -> Result<(), String> {
        listen_address(&self.address)?;
        crate::api::access::resolve_token(self).map(drop)
    }
}

/// Checks an address to listen on as binding it would, short of binding:
/// `host:port` with a port from 0 to 65535 and a host that resolves.
/// Messages start with `address`, the key they are about.
pub fn listen_address(address: &str) -> Result<(), String> {
    use std::net::{SocketAddr, ToSocketAddrs};
    if address.parse::<SocketAddr>().is_ok() {
        return Ok(());
    }
    let (host, port) = host_port(address)?;
    let host = host.trim_matches(|c| c == '[' || c == ']');
    match (host, port).to_socket_addrs().map(|mut a| a.next()) {
        Ok(Some(_)) => Ok(()),
        Ok(_) => Err(format!(
            "address {address:?}: host {host:?} has no address; use an IP address or a resolvable name"
        )),
        Err(e) => Err(format!(
            "address {address:?}: cannot resolve host {host:?} ({e}); use an IP address (e.g. \"127.0.0.1:{port}\" or \"0.0.0.0:{port}\") or a resolvable name"
        )),
    }
}

/// Splits `host:port` and checks the port; messages start with `address`.
pub fn host_port(address: &str) -> Result<(&str, u16), String> {
    let Some((host, port)) = address.rsplit_once(':').filter(|(h, _)| !h.is_empty()) else {
        return Err(format!(
            "address {address:?} must be host:port, e.g. \"127.0.0.1:24224\""
        ));
    };
    let port = port.parse::<u16>().map_err(|_| {
        format!("address {address:?}: port {port:?} must be a number from 0 to 65535")
    })?;
    Ok((host, port))
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

    /// The embedded default configuration. It reads environment variables
    /// (`LOGFERRY_FORWARD_ADDRESS`, `LOGFERRY_DATA_DIR`), so it can fail.
    pub fn embedded_default() -> Result<Config, ConfigError> {
        Config::parse(DEFAULT_CONFIG, "<embedded default>")
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
        Config::parse_all(text, origin).map_err(|mut errors| errors.swap_remove(0))
    }

    /// Like [`Config::parse`], but reports every component's problem, not
    /// only the first.
    pub fn parse_all(text: &str, origin: &str) -> Result<Config, Vec<ConfigError>> {
        let checked = Checked::parse(text, origin);
        if checked.errors.is_empty() {
            if let Some(config) = checked.config {
                return Ok(config);
            }
        }
        Err(checked.errors)
    }
}

/// Configuration text parsed as far as it goes: what `logferry validate`
/// checks further.
pub struct Checked {
    /// The components that parsed (all of them when `errors` is empty);
    /// `None` when the file as a whole could not be read.
    pub config: Option<Config>,
    /// Every problem found, in file order.
    pub errors: Vec<ConfigError>,
    /// Some source did not parse (so the tags it would produce are unknown).
    pub sources_failed: bool,
    /// Some sink did not parse (so the tags it would take are unknown).
    pub sinks_failed: bool,
    origin: String,
    text: String,
}

impl Checked {
    pub fn parse(text: &str, origin: &str) -> Checked {
        let mut parser = Parser {
            origin,
            text: String::new(),
            failed: (0, 0),
        };
        let (config, mut errors) = match parser.parse(text) {
            Ok((config, errors)) => (Some(config), errors),
            Err(e) => (None, vec![e]),
        };
        errors.sort_by_key(|e| e.line.unwrap_or(usize::MAX));
        Checked {
            config,
            errors,
            sources_failed: parser.failed.0 > 0,
            sinks_failed: parser.failed.1 > 0,
            origin: origin.to_string(),
            text: parser.text,
        }
    }

    /// An error about the value at `path` (e.g. `["sinks", "out",
    /// "buffer", "dir"]`), with the line it is on.
    pub fn error_at(&self, path: &[&str], message: String) -> ConfigError {
        let parser = Parser {
            origin: &self.origin,
            text: self.text.clone(),
            failed: (0, 0),
        };
        ConfigError {
            origin: self.origin.clone(),
            line: parser.locate_key_path(path),
            message,
        }
    }
}

struct Parser<'a> {
    origin: &'a str,
    /// The configuration text, for finding the line of a key.
    text: String,
    /// Sources and sinks that did not parse.
    failed: (usize, usize),
}

impl<'a> Parser<'a> {
    fn error(&self, line: Option<usize>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            origin: self.origin.to_string(),
            line,
            message: message.into(),
        }
    }

    /// The configuration with every component that parsed, and the errors
    /// of those that did not; `Err` when the file as a whole is unusable.
    fn parse(&mut self, raw: &str) -> Result<(Config, Vec<ConfigError>), ConfigError> {
        self.text = raw.to_string();
        let mut root: Table = toml::from_str(&self.text).map_err(|e| {
            let line = e
                .span()
                .map(|s| self.text[..s.start].matches('\n').count() + 1);
            let mut message = e.message().trim_end().to_string();
            if message.is_empty() {
                // toml gives no message for a control character in a comment
                let at = e.span().and_then(|s| self.text.get(s.start..)?.chars().next());
                message = match at {
                    Some(c) if c.is_control() => format!(
                        "control character U+{:04X} is not allowed here (TOML allows only tab outside strings; remove it, or write it as an escape in a quoted string)",
                        c as u32
                    ),
                    _ => "this is not valid TOML".to_string(),
                };
            }
            let text = line.and_then(|l| self.text.lines().nth(l - 1));
            if text.is_some_and(|t| t.contains("${")) {
                message.push_str(
                    " (${VAR} is substituted inside quoted strings only: write \"${VAR}\"; \
                     sizes and durations accept strings, other numbers cannot come from the environment)",
                );
            }
            self.error(line, message)
        })?;
        // after parsing, inside string values only: a variable's value can
        // never change the file's structure
        let mut tree = Value::Table(std::mem::take(&mut root));
        interpolate::interpolate_tree(&mut tree, &|name| std::env::var(name).ok()).map_err(
            |(path, e)| {
                let path: Vec<&str> = path.iter().map(String::as_str).collect();
                self.error(
                    self.locate_key_path(&path),
                    format!("`{}`: {e}", path.join(".")),
                )
            },
        )?;
        if let Value::Table(t) = tree {
            root = t;
        }
        let document = root.clone();
        let sources = self.section(&mut root, "sources")?;
        let sinks = self.section(&mut root, "sinks")?;
        let api = match root.remove("api") {
            Some(v) => {
                let api = self.typed::<ApiConfig>(v, &["api"])?;
                api.validate()
                    .map_err(|e| self.invalid(&["api"], &format!("[api]: {e}"), &e))?;
                Some(api)
            }
            None => None,
        };
        let limits = match root.remove("limits") {
            Some(v) => {
                let limits = self.typed::<crate::limits::LimitsConfig>(v, &["limits"])?;
                limits
                    .validate()
                    .map_err(|e| self.invalid(&["limits"], &format!("[limits]: {e}"), &e))?;
                limits
            }
            None => crate::limits::LimitsConfig::default(),
        };
        if let Some(key) = root.keys().next() {
            return Err(self.error(
                self.locate(&[], Some(key)),
                format!("unknown top-level key `{key}` (expected `sources`, `sinks`, `api` or `limits`)"),
            ));
        }
        let mut config = Config {
            sources: Vec::new(),
            sinks: Vec::new(),
            api,
            limits,
            tree: document,
        };
        let mut errors = Vec::new();
        let sources_seen = sources.len();
        for (name, table) in sources {
            match self.source(name, table) {
                Ok(c) => config.sources.push(c),
                Err(e) => {
                    self.failed.0 += 1;
                    errors.push(e)
                }
            }
        }
        let sinks_seen = sinks.len();
        for (name, table) in sinks {
            match self.sink(name, table) {
                Ok(c) => config.sinks.push(c),
                Err(e) => {
                    self.failed.1 += 1;
                    errors.push(e)
                }
            }
        }
        // two sinks appending to one dead-letter file could interleave frames
        for (i, a) in config.sinks.iter().enumerate() {
            let Some(path) = &a.settle.dead_letter else {
                continue;
            };
            if let Some(b) = config.sinks[..i]
                .iter()
                .find(|b| b.settle.dead_letter.as_ref() == Some(path))
            {
                errors.push(self.error(
                    self.locate(&["sinks", a.name.as_str()], Some("dead_letter")),
                    format!(
                        "[sinks.{}].dead_letter: {} is already the dead-letter file of sink {}; give each sink its own",
                        a.name,
                        path.display(),
                        b.name
                    ),
                ));
            }
        }
        if sources_seen == 0 {
            errors.push(self.error(None, "no sources: add a [sources.NAME] table"));
        }
        if sinks_seen == 0 {
            errors.push(self.error(None, "no sinks: add a [sinks.NAME] table"));
        }
        Ok((config, errors))
    }

    fn source(&self, name: String, table: Table) -> Result<SourceConfig, ConfigError> {
        let path = ["sources", name.as_str()];
        let (kind, rest) = self.component_type(table, &path)?;
        let kind = self.component(
            &path,
            &kind,
            rest,
            crate::sources::parse_kind,
            SourceKind::validate,
        )?;
        Ok(SourceConfig { name, kind })
    }

    fn sink(&self, name: String, table: Table) -> Result<SinkConfig, ConfigError> {
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
        buffer
            .validate()
            .map_err(|e| self.invalid(&path, &format!("[sinks.{name}]: {e}"), &e))?;
        let mut settle = self.settle(&mut rest, &path)?;
        if let (None, Some(dir)) = (&settle.dead_letter, buffer.disk_dir()) {
            // the source was acknowledged when the batch reached the disk
            // buffer: a batch the sink rejects must go somewhere, not stay
            // and be delivered again for ever
            settle.dead_letter = Some(dir.join(crate::buffer::disk::DEAD_LETTER_FILE));
        }
        let kind = self.component(
            &path,
            &kind,
            rest,
            crate::sinks::parse_kind,
            SinkKind::validate,
        )?;
        if settle.retry.is_some() && !kind.takes_retry_table() {
            return Err(self.error(
                self.locate(&path, Some("retry")),
                format!("[sinks.{name}].retry: this sink type has its own retry keys (forward: reconnect_min, reconnect_max, max_attempts; kafka: retry_backoff, retry_backoff_max); use those"),
            ));
        }
        Ok(SinkConfig {
            name,
            pattern,
            buffer,
            settle,
            kind,
        })
    }

    /// The `dead_letter` and `retry` keys every sink may have.
    fn settle(&self, rest: &mut Table, path: &[&str; 2]) -> Result<SettleConfig, ConfigError> {
        let name = path[1];
        let dead_letter = match rest.remove("dead_letter") {
            Some(Value::String(p)) => Some(std::path::PathBuf::from(p)),
            Some(_) => {
                return Err(self.error(
                    self.locate(path, Some("dead_letter")),
                    format!("[sinks.{name}].dead_letter must be a file path (a string)"),
                ))
            }
            None => None,
        };
        let retry = match rest.remove("retry") {
            Some(v) => Some(self.typed::<RetryConfig>(v, &["sinks", name, "retry"])?),
            None => None,
        };
        let settle = SettleConfig { dead_letter, retry };
        settle
            .validate()
            .map_err(|e| self.invalid(path, &format!("[sinks.{name}]: {e}"), &e))?;
        Ok(settle)
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
        validate(&kind)
            .map_err(|e| self.invalid(path, &format!("[{}]: {e}", path.join(".")), &e))?;
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

    /// An error from a `validate()` function of the table at `path`. Those
    /// messages start with the key they are about (`max_connections must be
    /// …`, `tls.ca_file: …`), which gives the line; when that key is not in
    /// the file (a default), the next `snake_case` key named that is; else
    /// the table's header line.
    fn invalid(&self, path: &[&str], message: &str, validate_message: &str) -> ConfigError {
        let words = validate_message.split_whitespace().map(|w| {
            w.trim_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        });
        // the first word, else a later one that can only be a key (`a_b`)
        let line = words
            .enumerate()
            .filter(|(i, w)| !w.is_empty() && (*i == 0 || w.contains('_')))
            .find_map(|(_, first)| {
                let mut key_path: Vec<&str> = path.to_vec();
                key_path.extend(first.split('.').filter(|k| !k.is_empty()));
                (path.len()..key_path.len())
                    .rev()
                    .find_map(|k| self.locate_key(&key_path[..k], key_path[k]))
            });
        self.error(line.or_else(|| self.locate(path, None)), message)
    }

    /// The line of the value at a full key path (`["sources", "in", "tls",
    /// "cert_file"]`, array elements as their index): the key's own line,
    /// else the line of the nearest enclosing key that has one (an inline
    /// table or an array), else the table's header.
    fn locate_key_path(&self, path: &[&str]) -> Option<usize> {
        for k in (0..path.len()).rev() {
            if path[k].parse::<usize>().is_ok() {
                continue;
            }
            if let Some(line) = self.locate_key(&path[..k], path[k]) {
                return Some(line);
            }
        }
        (1..path.len())
            .rev()
            .find_map(|k| self.locate(&path[..k], None))
    }

    /// The line of `key` inside the table at `path` (or of the table's
    /// header when `key` is `None` or cannot be found).
    fn locate(&self, path: &[&str], key: Option<&str>) -> Option<usize> {
        key.and_then(|k| self.locate_key(path, k))
            .or_else(|| self.locate_header(path))
    }

    /// The line of the header `[a.b]` (or `[[a.b]]`) of the table at `path`.
    fn locate_header(&self, path: &[&str]) -> Option<usize> {
        self.text.lines().enumerate().find_map(|(i, line)| {
            let t = line.trim();
            t.starts_with('[')
                .then(|| header_parts(t))
                .filter(|h| h.len() == path.len() && h.iter().zip(path).all(|(a, b)| a == b))
                .map(|_| i + 1)
        })
    }

    /// The line where `key` is defined inside the table at `path`.
    fn locate_key(&self, path: &[&str], key: &str) -> Option<usize> {
        let mut header: Vec<String> = Vec::new();
        for (i, line) in self.text.lines().enumerate() {
            let t = line.trim();
            if t.starts_with('[') {
                header = header_parts(t);
                continue;
            }
            let in_scope =
                header.len() >= path.len() && header.iter().zip(path).all(|(a, b)| a == b);
            if in_scope {
                let defines = t
                    .strip_prefix(key)
                    .is_some_and(|r| r.trim_start().starts_with('=') || r.starts_with('.'));
                // `x = { key = 1 }`, `[{ a = 1, key = 2 }]`: the key as a whole word
                let inline = [format!("{key} ="), format!("{key}=")].iter().any(|k| {
                    t.match_indices(k.as_str()).any(|(at, _)| {
                        t[..at]
                            .chars()
                            .next_back()
                            .is_some_and(|c| c == '{' || c == ',' || c.is_whitespace())
                    })
                });
                if defines || inline {
                    return Some(i + 1);
                }
            }
        }
        None
    }
}

/// `[a.b."c"]` → `["a", "b", "c"]`.
fn header_parts(t: &str) -> Vec<String> {
    t.trim_matches(|c| c == '[' || c == ']')
        .split('.')
        .map(|p| p.trim().trim_matches('"').to_string())
        .collect()
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
mod docs_tests;
#[cfg(test)]
mod keys;
#[cfg(test)]
mod tests;
