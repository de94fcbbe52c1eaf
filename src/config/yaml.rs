//! YAML configuration text: the same document as TOML, written in YAML.
//!
//! A YAML file is read into the TOML value tree the rest of the loader
//! works on ([`read`]), so every key, type, default and check is the same
//! whichever the file's syntax; only reading the text and finding a key's
//! line ([`lines::Lines`]) differ. What TOML cannot hold is an error naming
//! its line: a key with no value (YAML's null), a `!tag`, an integer
//! beyond 64 bits, a key that is itself a list or a table.

pub mod lines;
pub mod write;

use std::fmt;

use serde_yaml::Value as Yaml;
use toml::{Table, Value};

pub use lines::Lines;

/// Why a YAML text is not a configuration document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum YamlError {
    /// Not YAML at all, where the YAML parser stopped (line and column
    /// from 1, when it knows them).
    Syntax {
        line: Option<usize>,
        column: Option<usize>,
        message: String,
    },
    /// YAML that a configuration cannot hold, at this key path (array
    /// elements as their index).
    Value { path: Vec<String>, message: String },
}

impl fmt::Display for YamlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            YamlError::Syntax { message, .. } => f.write_str(message),
            YamlError::Value { path, message } if path.is_empty() => f.write_str(message),
            YamlError::Value { path, message } => write!(f, "`{}`: {message}", path.join(".")),
        }
    }
}

impl std::error::Error for YamlError {}

/// The document in YAML `text` as the tree a TOML file gives: mappings
/// become tables, sequences arrays; aliases are expanded and `<<` merge
/// keys applied. An empty document is an empty table.
pub fn read(text: &str) -> Result<Table, YamlError> {
    let mut doc: Yaml = serde_yaml::from_str(text).map_err(|e| syntax(text, e))?;
    doc.apply_merge().map_err(|e| YamlError::Value {
        path: Vec::new(),
        message: format!("a `<<` merge key: {}", without_position(&e.to_string())),
    })?;
    let mut path = Vec::new();
    match doc {
        Yaml::Null => Ok(Table::new()),
        Yaml::Mapping(m) => match mapping(m, &mut path) {
            Ok(t) => Ok(t),
            Err(message) => Err(YamlError::Value { path, message }),
        },
        _ => Err(YamlError::Syntax {
            line: Some(1),
            column: Some(1),
            message: "the document must be a mapping of keys (`sources:`, `sinks:`, …)".into(),
        }),
    }
}

/// A serde_yaml error as a message without its position, which goes to
/// the error's line and column instead.
fn syntax(text: &str, e: serde_yaml::Error) -> YamlError {
    let message = without_position(&e.to_string());
    // the parser places a duplicate key at its mapping's start
    let duplicate = message
        .starts_with("duplicate entry")
        .then(|| Lines::of(text).duplicate())
        .flatten();
    // the end of a text with no newline after its last line is reported
    // on the line after it: placed at the end of the last line instead
    let last = text.split('\n').count();
    let location = e.location().map(|l| match text.rsplit('\n').next() {
        Some(end) if l.line() > last => (last, end.chars().count() + 1),
        _ => (l.line(), l.column()),
    });
    let (line, column) = duplicate.or(location).unzip();
    YamlError::Syntax {
        line,
        column,
        message,
    }
}

/// `message` without its first ` at line N column M` (the position the
/// error carries anyway); a later one (where a block started) stays.
fn without_position(message: &str) -> String {
    match regex::Regex::new(r" at line \d+ column \d+") {
        Ok(re) => re.replacen(message, 1, "").into_owned(),
        Err(_) => message.to_string(),
    }
}

/// One YAML value as a TOML value; on error, `path` is where it is.
fn value(v: Yaml, path: &mut Vec<String>) -> Result<Value, String> {
    Ok(match v {
        Yaml::Null => {
            return Err(
                "has no value (YAML null: nothing after `key:`, `~` or `null`); give it a value, or remove the key".into(),
            )
        }
        Yaml::Bool(b) => Value::Boolean(b),
        Yaml::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Integer(i)
            } else if n.is_f64() {
                Value::Float(n.as_f64().unwrap_or(f64::NAN))
            } else {
                return Err(format!(
                    "{n} is larger than the largest integer a configuration holds ({})",
                    i64::MAX
                ));
            }
        }
        Yaml::String(s) => Value::String(s),
        Yaml::Sequence(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                path.push(i.to_string());
                out.push(value(item, path)?);
                path.pop();
            }
            Value::Array(out)
        }
        Yaml::Mapping(m) => Value::Table(mapping(m, path)?),
        Yaml::Tagged(t) => {
            return Err(format!(
                "YAML tags ({}) have no meaning in a configuration; write the value alone",
                t.tag
            ))
        }
    })
}

fn mapping(m: serde_yaml::Mapping, path: &mut Vec<String>) -> Result<Table, String> {
    let mut table = Table::new();
    for (k, v) in m {
        let key = match k {
            Yaml::String(s) => s,
            // TOML's bare keys `200` and `true` are strings too
            Yaml::Number(n) => n.to_string(),
            Yaml::Bool(b) => b.to_string(),
            other => {
                return Err(format!(
                    "a key must be a string, not {}",
                    match other {
                        Yaml::Null => "null",
                        Yaml::Sequence(_) => "a list",
                        Yaml::Mapping(_) => "a mapping",
                        _ => "a tagged value",
                    }
                ))
            }
        };
        path.push(key.clone());
        let v = value(v, path)?;
        path.pop();
        table.insert(key, v);
    }
    Ok(table)
}

#[cfg(test)]
mod tests;
