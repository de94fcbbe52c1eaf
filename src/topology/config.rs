//! The whole pipeline's configuration: the `[sources]` and `[sinks]`
//! tables parsed with the table of kinds ([`super::kinds`]), the `[api]`
//! and `[limits]` tables, and the checks across components.
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

use std::path::Path;

use toml::{Table, Value};

use super::kinds::{self, FilterKind, SinkKind, SourceKind};
use crate::api::ApiConfig;
use crate::buffer::BufferConfig;
use crate::config::{ConfigError, Parser};
use crate::limits::LimitsConfig;
use crate::router::TagPattern;
use crate::sinks::settle::SettleConfig;
use crate::sinks::verdict::RetryConfig;

/// The configuration `logferry run` uses when given no `--config`.
pub const DEFAULT_CONFIG: &str = include_str!("default.toml");

/// A whole pipeline.
#[derive(Debug, Clone)]
pub struct Config {
    pub sources: Vec<SourceConfig>,
    /// The `[filters]` tables, in the order of the file (the order they
    /// apply in).
    pub filters: Vec<FilterConfig>,
    pub sinks: Vec<SinkConfig>,
    pub api: Option<ApiConfig>,
    /// The `[limits]` table: process-wide limits.
    pub limits: LimitsConfig,
    /// The whole document after `${VAR}` substitution (what `logferry
    /// test` reads its `[[tests]]` from).
    pub tree: toml::Table,
    /// The document as `GET /config` shows it: secrets, headers and what
    /// came from the environment hidden
    /// ([`crate::config::redact::Redactions::show`]).
    pub shown: String,
}

#[derive(Debug, Clone)]
pub struct SourceConfig {
    pub name: String,
    pub kind: SourceKind,
}

#[derive(Debug, Clone)]
pub struct FilterConfig {
    pub name: String,
    /// Which tags the filter applies to.
    pub pattern: TagPattern,
    pub kind: FilterKind,
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

impl Config {
    /// Reads and validates a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let origin = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            origin: origin.clone(),
            line: None,
            column: None,
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
    /// use logferry::topology::config::Config;
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
    /// Some source or filter did not parse (so the tags it would produce
    /// are unknown).
    pub sources_failed: bool,
    /// Some sink or filter did not parse (so the tags it would take are
    /// unknown).
    pub sinks_failed: bool,
    origin: String,
    text: String,
}

impl Checked {
    pub fn parse(text: &str, origin: &str) -> Checked {
        let mut parser = Parser::new(origin);
        let mut failed = (0, 0);
        let (config, mut errors) = match parse(&mut parser, text, &mut failed) {
            Ok((config, errors)) => (Some(config), errors),
            Err(e) => (None, vec![e]),
        };
        errors.sort_by_key(|e| e.line.unwrap_or(usize::MAX));
        Checked {
            config,
            errors,
            sources_failed: failed.0 > 0,
            sinks_failed: failed.1 > 0,
            origin: origin.to_string(),
            text: parser.text().to_string(),
        }
    }

    /// An error about the value at `path` (e.g. `["sinks", "out",
    /// "buffer", "dir"]`), with the line it is on.
    pub fn error_at(&self, path: &[&str], message: String) -> ConfigError {
        let parser = Parser::with_text(&self.origin, self.text.clone());
        parser.error(parser.locate_key_path(path), message)
    }
}

/// The pipeline in `raw` with every component that parsed, and the errors
/// of those that did not; `Err` when the file as a whole is unusable.
/// `failed` counts the sources and the sinks that did not parse.
fn parse(
    p: &mut Parser<'_>,
    raw: &str,
    failed: &mut (usize, usize),
) -> Result<(Config, Vec<ConfigError>), ConfigError> {
    let mut root = p.read(raw)?;
    let document = root.clone();
    let sources = p.section(&mut root, "sources")?;
    let filters = p.section(&mut root, "filters")?;
    let sinks = p.section(&mut root, "sinks")?;
    let api = match root.remove("api") {
        Some(v) => {
            let api = p.typed::<ApiConfig>(v, &["api"])?;
            api.validate()
                .map_err(|e| p.invalid(&["api"], &format!("[api]: {e}"), &e))?;
            Some(api)
        }
        None => None,
    };
    let limits = match root.remove("limits") {
        Some(v) => {
            let limits = p.typed::<LimitsConfig>(v, &["limits"])?;
            limits
                .validate()
                .map_err(|e| p.invalid(&["limits"], &format!("[limits]: {e}"), &e))?;
            limits
        }
        None => LimitsConfig::default(),
    };
    // `[[tests]]` is read by `logferry test` alone (from `tree`)
    root.remove("tests");
    if let Some(key) = root.keys().next() {
        return Err(p.error(
            p.locate(&[], Some(key)),
            format!(
                "unknown top-level key `{key}` (expected `sources`, `filters`, `sinks`, `api`, `limits` or `tests`)"
            ),
        ));
    }
    let mut config = Config {
        sources: Vec::new(),
        filters: Vec::new(),
        sinks: Vec::new(),
        api,
        limits,
        shown: crate::config::redact::Redactions::from_env(raw).show(&document),
        tree: document,
    };
    let mut errors = Vec::new();
    let sources_seen = sources.len();
    for (name, table) in sources {
        match source(p, name, table) {
            Ok(c) => config.sources.push(c),
            Err(e) => {
                failed.0 += 1;
                errors.push(e)
            }
        }
    }
    // filters apply in the order of the file; the table keeps keys sorted
    let mut filters: Vec<_> = filters
        .into_iter()
        .map(|(name, table)| {
            let path = ["filters", name.as_str()];
            // `[filters.NAME]`, or `NAME = { … }` inside `[filters]`
            let line = p.locate(&path, None).or_else(|| p.locate_key_path(&path));
            (line, name, table)
        })
        .collect();
    filters.sort_by_key(|(line, _, _)| *line);
    for (_, name, table) in filters {
        match filter(p, name, table) {
            Ok(c) => config.filters.push(c),
            Err(e) => {
                // a filter that did not parse may have given any tag, and
                // taken any: neither end of a flow is known
                failed.0 += 1;
                failed.1 += 1;
                errors.push(e)
            }
        }
    }
    let sinks_seen = sinks.len();
    for (name, table) in sinks {
        match sink(p, name, table) {
            Ok(c) => config.sinks.push(c),
            Err(e) => {
                failed.1 += 1;
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
            errors.push(p.error(
                p.locate(&["sinks", a.name.as_str()], Some("dead_letter")),
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
        errors.push(p.error(None, "no sources: add a [sources.NAME] table"));
    }
    if sinks_seen == 0 {
        errors.push(p.error(None, "no sinks: add a [sinks.NAME] table"));
    }
    Ok((config, errors))
}

fn source(p: &Parser<'_>, name: String, table: Table) -> Result<SourceConfig, ConfigError> {
    let path = ["sources", name.as_str()];
    let (kind, rest) = p.component_type(table, &path)?;
    let kind = p.component(
        &path,
        &kind,
        rest,
        kinds::parse_source,
        SourceKind::validate,
    )?;
    Ok(SourceConfig { name, kind })
}

fn filter(p: &Parser<'_>, name: String, table: Table) -> Result<FilterConfig, ConfigError> {
    let path = ["filters", name.as_str()];
    let (kind, mut rest) = p.component_type(table, &path)?;
    let pattern = pattern(p, &mut rest, &path)?;
    let kind = p.component(
        &path,
        &kind,
        rest,
        kinds::parse_filter,
        FilterKind::validate,
    )?;
    Ok(FilterConfig {
        name,
        pattern,
        kind,
    })
}

/// The `match` key of a filter or a sink.
fn pattern(p: &Parser<'_>, rest: &mut Table, path: &[&str; 2]) -> Result<TagPattern, ConfigError> {
    let [section, name] = *path;
    Ok(match rest.remove("match") {
        Some(Value::String(pattern)) => TagPattern::new(&pattern).map_err(|e| {
            p.error(
                p.locate(path, Some("match")),
                format!("[{section}.{name}].match: {e}"),
            )
        })?,
        Some(_) => {
            return Err(p.error(
                p.locate(path, Some("match")),
                format!("[{section}.{name}].match must be a string"),
            ))
        }
        None => {
            return Err(p.error(
                p.locate(path, None),
                format!(
                "[{section}.{name}] needs `match`, the tag pattern it receives (e.g. match = \"**\")"
            ),
            ))
        }
    })
}

fn sink(p: &Parser<'_>, name: String, table: Table) -> Result<SinkConfig, ConfigError> {
    let path = ["sinks", name.as_str()];
    let (kind, mut rest) = p.component_type(table, &path)?;
    let pattern = pattern(p, &mut rest, &path)?;
    let buffer = match rest.remove("buffer") {
        Some(v) => p.typed::<BufferConfig>(v, &["sinks", name.as_str(), "buffer"])?,
        None => BufferConfig::default(),
    };
    buffer
        .validate()
        .map_err(|e| p.invalid(&path, &format!("[sinks.{name}]: {e}"), &e))?;
    let mut settle = settle(p, &mut rest, &path)?;
    if let (None, Some(dir)) = (&settle.dead_letter, buffer.disk_dir()) {
        // the source was acknowledged when the batch reached the disk
        // buffer: a batch the sink rejects must go somewhere, not stay
        // and be delivered again for ever
        settle.dead_letter = Some(dir.join(crate::buffer::disk::DEAD_LETTER_FILE));
    }
    let kind = p.component(&path, &kind, rest, kinds::parse_sink, SinkKind::validate)?;
    if settle.retry.is_some() && !kind.takes_retry_table() {
        return Err(p.error(
            p.locate(&path, Some("retry")),
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
fn settle(p: &Parser<'_>, rest: &mut Table, path: &[&str; 2]) -> Result<SettleConfig, ConfigError> {
    let name = path[1];
    let dead_letter = match rest.remove("dead_letter") {
        Some(Value::String(p)) => Some(std::path::PathBuf::from(p)),
        Some(_) => {
            return Err(p.error(
                p.locate(path, Some("dead_letter")),
                format!("[sinks.{name}].dead_letter must be a file path (a string)"),
            ))
        }
        None => None,
    };
    let retry = match rest.remove("retry") {
        Some(v) => Some(p.typed::<RetryConfig>(v, &["sinks", name, "retry"])?),
        None => None,
    };
    let settle = SettleConfig { dead_letter, retry };
    settle
        .validate()
        .map_err(|e| p.invalid(path, &format!("[sinks.{name}]: {e}"), &e))?;
    Ok(settle)
}

#[cfg(test)]
mod docs_tests;
#[cfg(test)]
pub(super) mod keys;
#[cfg(test)]
mod tests;
