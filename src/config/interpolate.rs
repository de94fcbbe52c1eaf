//! `${VAR}` and `${VAR:-default}` substitution inside string values.
//!
//! Substitution happens after the TOML is parsed, in the string values of
//! the parsed tree only, so a variable's value is taken literally whatever
//! it holds: quotes, backslashes and newlines cannot change the file's
//! structure. `$${` writes a literal `${`. `${tag}` (and `${tag[N]}`) is
//! left alone: it is the per-record tag placeholder of sink paths, not an
//! environment variable; so are `${topic}`, the Kafka source's tag
//! placeholder, and `${record.FIELD}`, the Kafka sink's topic placeholder
//! for a record field; `${resource.KEY}`, the `otlp` source's tag
//! placeholder; and `${hostname}`, filled in by filters.

use std::fmt;

use toml::Value;

/// Why a string could not be interpolated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InterpolateError {
    /// `${NAME}` without a default, and `NAME` is not set.
    Unset(String),
    /// `${` without a closing `}`.
    Unclosed,
    /// `${...}` whose name is not letters, digits and `_`.
    InvalidName(String),
}

impl fmt::Display for InterpolateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InterpolateError::Unset(name) => write!(
                f,
                "environment variable {name} is not set: set it, or give a fallback with ${{{name}:-default}}"
            ),
            InterpolateError::Unclosed => {
                write!(f, "`${{` without a closing `}}` (write `$${{` for a literal `${{`)")
            }
            InterpolateError::InvalidName(expr) => write!(
                f,
                "invalid variable name in `${{{expr}}}`: use letters, digits and `_` (write `$${{` for a literal `${{`)"
            ),
        }
    }
}

/// Substitutes variables in one string value using `lookup`.
pub fn interpolate(
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<String, InterpolateError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(escaped) = after.strip_prefix("${") {
            out.push_str("${");
            rest = escaped;
            continue;
        }
        if !after.starts_with('{') {
            out.push('$');
            rest = after;
            continue;
        }
        let Some(close) = after.find('}') else {
            return Err(InterpolateError::Unclosed);
        };
        let expr = &after[1..close];
        let (name, default) = match expr.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (expr, None),
        };
        if name == "tag"
            || name.starts_with("tag[")
            || name == "hostname"
            || name == "topic"
            || name.starts_with("record.")
            || name.starts_with("resource.")
        {
            out.push_str(&rest[i..i + 2 + close]);
        } else {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(InterpolateError::InvalidName(expr.to_string()));
            }
            // an empty value counts as unset when a default is given, as in sh
            let value = lookup(name).filter(|v| !v.is_empty() || default.is_none());
            match (value, default) {
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => return Err(InterpolateError::Unset(name.to_string())),
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Substitutes variables in every string of `value`, in place. On error,
/// returns the key path of the string (`["sources", "in", "shared_key"]`;
/// array elements as their index).
pub fn interpolate_tree(
    value: &mut Value,
    lookup: &impl Fn(&str) -> Option<String>,
) -> Result<(), (Vec<String>, InterpolateError)> {
    let mut path = Vec::new();
    walk(value, &mut path, lookup).map_err(|e| (path, e))
}

fn walk(
    value: &mut Value,
    path: &mut Vec<String>,
    lookup: &impl Fn(&str) -> Option<String>,
) -> Result<(), InterpolateError> {
    match value {
        Value::String(s) if s.contains('$') => *s = interpolate(s, lookup)?,
        Value::Table(t) => {
            for (k, v) in t.iter_mut() {
                path.push(k.clone());
                walk(v, path, lookup)?;
                path.pop();
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter_mut().enumerate() {
                path.push(i.to_string());
                walk(v, path, lookup)?;
                path.pop();
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOST" => Some("10.0.0.1".into()),
            "EMPTY" => Some(String::new()),
            "NASTY" => Some("a\"b\\c\n]\n[sinks.evil]\ntype = \"stdout\"".into()),
            _ => None,
        }
    }

    #[test]
    fn substitutes_and_defaults() {
        assert_eq!(interpolate("a=${HOST}:1", env).unwrap(), "a=10.0.0.1:1");
        assert_eq!(interpolate("${NOPE:-x.y}", env).unwrap(), "x.y");
        assert_eq!(interpolate("${EMPTY:-d}", env).unwrap(), "d");
        assert_eq!(interpolate("${EMPTY}", env).unwrap(), "");
        assert_eq!(
            interpolate("cost $5 $${HOST}", env).unwrap(),
            "cost $5 ${HOST}"
        );
        assert_eq!(
            interpolate("/var/${tag}.log", env).unwrap(),
            "/var/${tag}.log"
        );
        assert_eq!(
            interpolate("kafka.${topic}", env).unwrap(),
            "kafka.${topic}"
        );
        assert_eq!(
            interpolate("logs-${record.service}-${HOST}", env).unwrap(),
            "logs-${record.service}-10.0.0.1"
        );
    }

    #[test]
    fn errors_name_the_variable() {
        assert_eq!(
            interpolate("x ${MISSING} y", env),
            Err(InterpolateError::Unset("MISSING".into()))
        );
        assert!(interpolate("${MISSING}", env)
            .unwrap_err()
            .to_string()
            .contains("MISSING"));
        assert_eq!(
            interpolate("${unclosed", env),
            Err(InterpolateError::Unclosed)
        );
        assert!(matches!(
            interpolate("${a b}", env),
            Err(InterpolateError::InvalidName(_))
        ));
    }

    #[test]
    fn values_are_taken_literally_and_errors_carry_the_key_path() {
        let mut v: Value = toml::from_str(
            "[s.a]\nkey = \"${NASTY}\"\nlist = [\"${HOST}\", \"${MISSING}\"]\nn = 5\n",
        )
        .unwrap();
        let (path, e) = interpolate_tree(&mut v, &env).unwrap_err();
        assert_eq!(path, ["s", "a", "list", "1"]);
        assert_eq!(e, InterpolateError::Unset("MISSING".into()));
        let mut v: Value = toml::from_str("[s.a]\nkey = \"${NASTY}\"\n").unwrap();
        interpolate_tree(&mut v, &env).unwrap();
        assert_eq!(v["s"]["a"]["key"].as_str(), env("NASTY").as_deref());
        assert_eq!(v.as_table().unwrap().len(), 1);
    }
}
