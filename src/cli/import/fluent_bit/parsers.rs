//! `[PARSER]` and `[MULTILINE_PARSER]` definitions, looked up by name from
//! the `parser` filter, the tail input and the `multiline` filter.

use super::{Keys, Section};
use crate::cli::import::model::{Component, Value};

/// Fluent Bit's stock parsers (its parsers.conf) that logferry's parser
/// filter has under a format name of its own.
const STOCK: &[(&str, &str)] = &[
    ("json", "json"),
    ("docker", "docker"),
    ("cri", "cri"),
    ("apache", "apache"),
    ("apache2", "apache2"),
    ("apache_error", "apache_error"),
    ("nginx", "nginx"),
    ("syslog-rfc5424", "syslog_rfc5424"),
    ("syslog-rfc3164", "syslog_rfc3164"),
    ("logfmt", "logfmt"),
];

/// Fluent Bit's built-in multiline parsers logferry has too.
const STOCK_MULTILINE: &[&str] = &["docker", "cri", "java", "python", "go", "ruby"];

pub struct Parsers<'a> {
    parsers: &'a [Section],
    multiline: &'a [Section],
}

/// A multiline parser as logferry's rules.
pub enum Multiline {
    /// One of logferry's built-in rule sets.
    Builtin(String),
    /// A `start` regex, an optional `continue` regex and a flush timeout.
    Rule {
        start: String,
        cont: Option<String>,
        flush_timeout: Option<String>,
    },
}

impl<'a> Parsers<'a> {
    pub fn new(parsers: &'a [Section], multiline: &'a [Section]) -> Self {
        Parsers { parsers, multiline }
    }

    fn find<'s>(list: &'s [Section], name: &str) -> Option<&'s Section> {
        list.iter()
            .rev()
            .find(|s| s.get("name").is_some_and(|n| n == name))
    }

    /// Sets `format` and what goes with it on the parser filter `c` for the
    /// parser `name`; false when there is no such parser.
    pub fn apply(&self, name: &str, c: &mut Component) -> Result<(), String> {
        let Some(section) = Self::find(self.parsers, name) else {
            return match STOCK.iter().find(|(fb, _)| *fb == name) {
                Some((_, ours)) => {
                    c.set("format", *ours);
                    c.remark(format!(
                        "parser {name}: Fluent Bit's stock parser, logferry's format {ours}"
                    ));
                    Ok(())
                }
                None => Err(format!(
                    "parser {name} is defined in no Parsers_File read here"
                )),
            };
        };
        let mut keys = Keys::new(section);
        let format = keys.take("format").unwrap_or_default().to_ascii_lowercase();
        match format.as_str() {
            "regex" => {
                let re = keys.take("regex").unwrap_or_default();
                regex::Regex::new(&re)
                    .map_err(|e| format!("parser {name}: its regex is not one logferry reads (Rust regex syntax): {e}"))?;
                c.set("format", "regex");
                c.set("regex", re);
            }
            "json" | "logfmt" => c.set("format", format.as_str()),
            other => {
                return Err(format!(
                    "parser {name}: format {other} has no logferry equivalent"
                ))
            }
        }
        if let Some(k) = keys.take("time_key") {
            c.set("time_key", k);
        }
        if let Some(f) = keys.take("time_format") {
            // logferry's time_format reads %L as Fluent Bit does
            c.set("time_format", f);
        }
        if let Some(k) = keys.take("time_keep") {
            c.set(
                "time_keep",
                Value::Bool(super::boolean(&k).unwrap_or(false)),
            );
        }
        if let Some(types) = keys.take("types") {
            for item in types.split_whitespace() {
                let Some((field, t)) = item.split_once(':') else {
                    continue;
                };
                let ours = match t {
                    "integer" => "int",
                    "float" => "float",
                    "bool" => "bool",
                    _ => {
                        c.untranslated(
                            &format!("Types {item} (parser {name})"),
                            "logferry converts to int, float or bool",
                        );
                        continue;
                    }
                };
                c.set_in("types", field, ours);
            }
        }
        let mut holder = Component::new(c.kind, "", "", String::new());
        keys.finish(&mut holder);
        for u in holder.untranslated {
            c.untranslated(&format!("{} (parser {name})", u.key), u.reason);
        }
        Ok(())
    }

    /// The multiline parser `name`, as logferry rules.
    pub fn multiline(&self, name: &str) -> Result<Multiline, String> {
        let name = name.trim();
        let Some(section) = Self::find(self.multiline, name) else {
            return if STOCK_MULTILINE.contains(&name) {
                Ok(Multiline::Builtin(name.to_string()))
            } else {
                Err(format!(
                    "multiline parser {name} is neither built in nor defined here"
                ))
            };
        };
        let mut keys = Keys::new(section);
        let t = keys.take("type").unwrap_or_else(|| "regex".into());
        if !t.eq_ignore_ascii_case("regex") {
            return Err(format!(
                "multiline parser {name}: type {t} has no logferry equivalent"
            ));
        }
        let flush_timeout = keys
            .take("flush_timeout")
            .map(|ms| format!("{}ms", ms.trim()));
        let mut start = None;
        let mut cont: Vec<String> = Vec::new();
        for rule in keys.take_all("rule") {
            let parts = quoted(&rule);
            let [state, re, _next] = parts.as_slice() else {
                return Err(format!(
                    "multiline parser {name}: rule {rule} is not \"state\" \"/regex/\" \"next\""
                ));
            };
            let re = re
                .strip_prefix('/')
                .and_then(|r| r.strip_suffix('/'))
                .unwrap_or(re);
            regex::Regex::new(re)
                .map_err(|e| format!("multiline parser {name}: regex not read by logferry: {e}"))?;
            if state == "start_state" && start.is_none() {
                start = Some(re.to_string());
            } else if !cont.contains(&re.to_string()) {
                cont.push(re.to_string());
            }
        }
        let start = start.ok_or_else(|| format!("multiline parser {name}: no start_state rule"))?;
        let cont = match cont.len() {
            0 => None,
            1 => cont.pop(),
            _ => Some(
                cont.iter()
                    .map(|r| format!("(?:{r})"))
                    .collect::<Vec<_>>()
                    .join("|"),
            ),
        };
        Ok(Multiline::Rule {
            start,
            cont,
            flush_timeout,
        })
    }
}

/// The double-quoted tokens of a rule line.
fn quoted(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (&mut cur, c) {
            (None, '"') => cur = Some(String::new()),
            (Some(s), '\\') => {
                s.push('\\');
                if let Some(n) = chars.next() {
                    s.push(n);
                }
            }
            (Some(_), '"') => out.extend(cur.take()),
            (Some(s), c) => s.push(c),
            (None, _) => {}
        }
    }
    out
}

/// Puts multiline rules on a tail source's `multiline` table or a
/// multiline filter's keys.
pub fn apply_multiline(m: Multiline, c: &mut Component, table: Option<&str>) {
    let put = |c: &mut Component, k: &str, v: Value| match table {
        Some(t) => c.set_in(t, k, v),
        None => c.set(k, v),
    };
    match m {
        Multiline::Builtin(name) => put(c, "parser", Value::Str(name)),
        Multiline::Rule {
            start,
            cont,
            flush_timeout,
        } => {
            put(c, "start", Value::Str(start));
            if let Some(cont) = cont {
                put(c, "continue", Value::Str(cont));
            }
            if let Some(t) = flush_timeout {
                put(c, "flush_timeout", Value::Str(t));
            }
        }
    }
}
