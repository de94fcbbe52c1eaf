//! Configuration: the file format, without knowing any kind of component.
//!
//! TOML (or YAML, [`Syntax`]) text → a table with `${VAR}` substituted
//! ([`Parser::read`]), the
//! named component tables under a section ([`Parser::section`]), each
//! turned into a kind's typed config by the table of kinds the caller
//! passes ([`Parser::component`], [`ComponentTable`]); errors name the
//! file, line and key ([`ConfigError`]). Which `type = "..."` is which
//! source or sink is `crate::topology::kinds`; the whole pipeline's
//! configuration is `crate::topology::config`.

mod interpolate;
pub mod redact;
pub mod secret;
pub mod units;
pub mod yaml;

use std::fmt;

use serde::de::DeserializeOwned;
use toml::{Table, Value};

pub use interpolate::interpolate;
pub use secret::Secret;

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

/// The syntax a configuration is written in: TOML, or YAML for a file
/// named `*.yaml` or `*.yml`. Both hold the same document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Toml,
    Yaml,
}

impl Syntax {
    /// The syntax of the file `origin` names, by its extension.
    pub fn of(origin: &str) -> Syntax {
        let extension = std::path::Path::new(origin)
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match extension.as_deref() {
            Some("yaml" | "yml") => Syntax::Yaml,
            _ => Syntax::Toml,
        }
    }
}

/// A configuration error, with where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// File name (or `<embedded default>`).
    pub origin: String,
    pub line: Option<usize>,
    /// The column in `line` (from 1), where known: YAML files, whose
    /// indentation makes the column part of the answer.
    pub column: Option<usize>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (Some(l), Some(c)) => write!(f, "{}:{}:{}: {}", self.origin, l, c, self.message),
            (Some(l), None) => write!(f, "{}:{}: {}", self.origin, l, self.message),
            _ => write!(f, "{}: {}", self.origin, self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Reads one configuration text and says where in it a problem is.
pub struct Parser<'a> {
    /// File name (or `<embedded default>`), for error messages.
    origin: &'a str,
    /// The configuration text, for finding the line of a key.
    text: String,
    /// Where each key of a YAML text is (`None`: the text is TOML).
    yaml: Option<yaml::Lines>,
}

impl<'a> Parser<'a> {
    /// A parser for the text from `origin`; [`Parser::read`] takes the text.
    /// The syntax is `origin`'s ([`Syntax::of`]).
    pub fn new(origin: &'a str) -> Self {
        Parser::with_text(origin, String::new())
    }

    /// A parser over text already read, to locate keys in it.
    pub fn with_text(origin: &'a str, text: String) -> Self {
        let yaml = (Syntax::of(origin) == Syntax::Yaml).then(|| yaml::Lines::of(&text));
        Parser { origin, text, yaml }
    }

    /// The text [`Parser::read`] was given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// An error at `line` of this text.
    pub fn error(&self, line: Option<usize>, message: impl Into<String>) -> ConfigError {
        let column = self.yaml.as_ref().zip(line).and_then(|(y, l)| y.column(l));
        ConfigError {
            origin: self.origin.to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    /// Reads the text as TOML (or YAML) and substitutes `${VAR}` inside
    /// its string values: the document the component tables are then
    /// taken from.
    pub fn read(&mut self, raw: &str) -> Result<Table, ConfigError> {
        self.text = raw.to_string();
        let mut root = match self.yaml {
            Some(_) => self.read_yaml()?,
            None => self.read_toml()?,
        };
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
        Ok(root)
    }

    fn read_yaml(&mut self) -> Result<Table, ConfigError> {
        self.yaml = Some(yaml::Lines::of(&self.text));
        yaml::read(&self.text).map_err(|e| match e {
            yaml::YamlError::Syntax {
                line,
                column,
                message,
            } => ConfigError {
                origin: self.origin.to_string(),
                line,
                column,
                message,
            },
            yaml::YamlError::Value { ref path, .. } => {
                let path: Vec<&str> = path.iter().map(String::as_str).collect();
                self.error(self.locate_key_path(&path), e.to_string())
            }
        })
    }

    fn read_toml(&self) -> Result<Table, ConfigError> {
        toml::from_str(&self.text).map_err(|e| {
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
        })
    }

    /// Turns the type-specific keys of the component at `path` (`["sinks",
    /// name]`) into its typed, validated config.
    pub fn component<K>(
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
    pub fn section(
        &self,
        root: &mut Table,
        name: &str,
    ) -> Result<Vec<(String, Table)>, ConfigError> {
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

    pub fn component_type(
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

    pub fn typed<T: DeserializeOwned>(&self, v: Value, path: &[&str]) -> Result<T, ConfigError> {
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
    pub fn invalid(&self, path: &[&str], message: &str, validate_message: &str) -> ConfigError {
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
    pub fn locate_key_path(&self, path: &[&str]) -> Option<usize> {
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
    pub fn locate(&self, path: &[&str], key: Option<&str>) -> Option<usize> {
        key.and_then(|k| self.locate_key(path, k))
            .or_else(|| self.locate_header(path))
    }

    /// The line of the header `[a.b]` (or `[[a.b]]`) of the table at `path`.
    fn locate_header(&self, path: &[&str]) -> Option<usize> {
        if let Some(yaml) = &self.yaml {
            return yaml.node(path);
        }
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
        if let Some(yaml) = &self.yaml {
            return yaml.key(path, key);
        }
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
