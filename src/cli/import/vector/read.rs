//! Reading a Vector configuration into one tree, whichever its syntax:
//! TOML, YAML or JSON, and the component files of a namespaced
//! configuration directory (`sources/ID.yaml`, `transforms/…`, `sinks/…`).
//!
//! Vector substitutes environment variables in the file's text before
//! parsing it; logferry substitutes them inside strings after. A file
//! that parses as it is keeps its variables for logferry (rewritten to
//! logferry's syntax by [`interpolation`]); one that only parses once they
//! are filled in (a `${PORT}` where a number goes) is filled in from the
//! environment at import, and says so.

use std::path::Path;

use serde_json::{Map, Value};

use super::super::ImportError;

/// The syntax of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Toml,
    Yaml,
    Json,
}

impl Syntax {
    /// The syntax a file's name says, `yaml` deciding for other names.
    pub fn of(path: &Path, yaml: bool) -> Syntax {
        match path.extension().and_then(|e| e.to_str()) {
            Some("yaml" | "yml") => Syntax::Yaml,
            Some("json") => Syntax::Json,
            Some("toml") => Syntax::Toml,
            _ if yaml => Syntax::Yaml,
            _ => Syntax::Toml,
        }
    }
}

/// A configuration file as one tree, and the environment variables that
/// had to be filled in at import for it to parse.
pub struct Read {
    pub tree: Map<String, Value>,
    pub filled_in: Vec<String>,
}

/// Reads `path` in `syntax`.
pub fn file(path: &Path, syntax: Syntax) -> Result<Read, ImportError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ImportError::Read {
        file: name.clone(),
        error: e.to_string(),
    })?;
    match parse(&name, &text, syntax) {
        Ok(tree) => Ok(Read {
            tree,
            filled_in: Vec::new(),
        }),
        Err(first) if text.contains('$') => {
            let (filled, names) = fill_in(&text);
            match parse(&name, &filled, syntax) {
                Ok(tree) => Ok(Read {
                    tree,
                    filled_in: names,
                }),
                Err(_) => Err(first),
            }
        }
        Err(e) => Err(e),
    }
}

fn parse(name: &str, text: &str, syntax: Syntax) -> Result<Map<String, Value>, ImportError> {
    let invalid = |line: usize, message: String| ImportError::Invalid {
        file: name.to_string(),
        line,
        message,
    };
    let value: Value = match syntax {
        Syntax::Toml => {
            let table: toml::Table = toml::from_str(text).map_err(|e| {
                let line = e.span().map_or(0, |s| {
                    text[..s.start.min(text.len())].lines().count().max(1)
                });
                invalid(line, e.message().to_string())
            })?;
            serde_json::to_value(table).map_err(|e| invalid(0, e.to_string()))?
        }
        Syntax::Yaml => {
            let yaml: serde_yaml::Value = serde_yaml::from_str(text)
                .map_err(|e| invalid(e.location().map_or(0, |l| l.line()), e.to_string()))?;
            serde_json::to_value(yaml).map_err(|e| invalid(0, e.to_string()))?
        }
        Syntax::Json => serde_json::from_str(text).map_err(|e| invalid(e.line(), e.to_string()))?,
    };
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        _ => Err(invalid(
            0,
            "the configuration is not a table of keys".into(),
        )),
    }
}

/// Vector's substitution over the whole text, from this process's
/// environment; the names it filled in.
fn fill_in(text: &str) -> (String, Vec<String>) {
    let mut names = Vec::new();
    let out = substitute(text, false, &mut |var| {
        if !names.iter().any(|n| n == &var.name) {
            names.push(var.name.clone());
        }
        match std::env::var(&var.name) {
            Ok(v) if !v.is_empty() || !var.empty_is_unset => v,
            _ => var.default.clone().unwrap_or_default(),
        }
    });
    (out, names)
}

/// One `$NAME`, `${NAME}`, `${NAME:-default}`, `${NAME-default}`,
/// `${NAME:?error}` or `${NAME?error}` reference.
pub struct Var {
    pub name: String,
    /// The fallback (`:-` or `-`).
    pub default: Option<String>,
    /// `:-` / `:?`: an empty value counts as unset.
    pub empty_is_unset: bool,
}

/// `text` with each reference replaced by what `each` makes of it; `$$`
/// is a literal `$`, as in Vector (written `$${` before `{` with
/// `escape_brace`, logferry's literal `${`).
pub fn substitute(text: &str, escape_brace: bool, each: &mut dyn FnMut(&Var) -> String) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push_str(if escape_brace && r.starts_with('{') {
                "$$"
            } else {
                "$"
            });
            rest = r;
            continue;
        }
        match reference(after) {
            Some((var, used)) => {
                out.push_str(&each(&var));
                rest = &after[used..];
            }
            None => {
                out.push('$');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The reference at the start of `s` (just after its `$`), and its length.
fn reference(s: &str) -> Option<(Var, usize)> {
    let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    if let Some(inner) = s.strip_prefix('{') {
        let end = inner.find('}')?;
        let body = &inner[..end];
        let name_end = body.find(|c: char| !is_name(c)).unwrap_or(body.len());
        let name = &body[..name_end];
        if name.is_empty() {
            return None;
        }
        let op = &body[name_end..];
        let (default, empty_is_unset) = if let Some(d) = op.strip_prefix(":-") {
            (Some(d.to_string()), true)
        } else if let Some(d) = op.strip_prefix('-') {
            (Some(d.to_string()), false)
        } else if op.starts_with(":?") {
            (None, true)
        } else if op.starts_with('?') || op.is_empty() {
            (None, false)
        } else {
            return None;
        };
        let var = Var {
            name: name.to_string(),
            default,
            empty_is_unset,
        };
        return Some((var, end + 2));
    }
    let len = s.find(|c: char| !is_name(c)).unwrap_or(s.len());
    if len == 0 || s.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let var = Var {
        name: s[..len].to_string(),
        default: None,
        empty_is_unset: false,
    };
    Some((var, len))
}

/// A string value of the tree in logferry's syntax: `$NAME` becomes
/// `${NAME}`, `${NAME-d}` becomes `${NAME:-d}` (logferry also falls back
/// on an empty value), `${NAME:?e}` becomes `${NAME}` (logferry refuses an
/// unset one by itself), a literal `${` becomes `$${`. Differences are
/// pushed to `notes`.
pub fn interpolation(value: &str, notes: &mut Vec<String>) -> String {
    if !value.contains('$') {
        return value.to_string();
    }
    substitute(value, true, &mut |var| match &var.default {
        Some(d) => {
            if !var.empty_is_unset {
                notes.push(format!(
                    "${{{}-…}} falls back only when {} is unset in Vector, also when it is empty in logferry",
                    var.name, var.name
                ));
            }
            format!("${{{}:-{d}}}", var.name)
        }
        None => format!("${{{}}}", var.name),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_references_in_logferry_syntax() {
        let mut notes = Vec::new();
        assert_eq!(interpolation("$HOME/x", &mut notes), "${HOME}/x");
        assert_eq!(interpolation("${A:-b}", &mut notes), "${A:-b}");
        assert!(notes.is_empty());
        assert_eq!(interpolation("${A-b}", &mut notes), "${A:-b}");
        assert_eq!(notes.len(), 1);
        assert_eq!(interpolation("${A:?missing}", &mut notes), "${A}");
        assert_eq!(interpolation("a$$b", &mut notes), "a$b");
        assert_eq!(interpolation("a$${b}", &mut notes), "a$${b}");
        assert_eq!(interpolation("cost: $5", &mut notes), "cost: $5");
    }

    #[test]
    fn bad_files_are_errors_with_lines() {
        let e = parse("v.toml", "[sources.a]\ntype = \n", Syntax::Toml).unwrap_err();
        assert!(e.to_string().starts_with("v.toml:2:"), "{e}");
        let e = parse("v.yaml", "sources:\n  a: [\n", Syntax::Yaml).unwrap_err();
        assert!(e.to_string().starts_with("v.yaml:"), "{e}");
        assert!(parse("v.yaml", "- 1\n", Syntax::Yaml).is_err());
    }

    #[test]
    fn numbers_from_the_environment_are_filled_in() {
        let (text, names) = fill_in("port = ${LOGFERRY_TEST_UNSET_PORT:-9000}\n");
        assert_eq!(text, "port = 9000\n");
        assert_eq!(names, ["LOGFERRY_TEST_UNSET_PORT"]);
    }
}
