//! `${VAR}` and `${VAR:-default}` substitution in the configuration text.
//!
//! `$${` writes a literal `${`. `${tag}` (and `${tag[N]}`) is left alone: it
//! is the per-record tag placeholder of sink paths, not an environment
//! variable.

/// Substitutes variables using `lookup`; errors name the variable and line.
pub fn interpolate(text: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
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
        let line = text[..text.len() - rest.len() + i].matches('\n').count() + 1;
        let Some(close) = after.find('}') else {
            return Err(format!("line {line}: `${{` without a closing `}}`"));
        };
        let expr = &after[1..close];
        let (name, default) = match expr.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (expr, None),
        };
        if name == "tag" || name.starts_with("tag[") {
            out.push_str(&rest[i..i + 2 + close]);
        } else {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!(
                    "line {line}: invalid variable name {name:?} in `${{{expr}}}`"
                ));
            }
            // an empty value counts as unset when a default is given, as in sh
            let value = lookup(name).filter(|v| !v.is_empty() || default.is_none());
            match (value, default) {
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => {
                    return Err(format!(
                        "line {line}: environment variable {name} is not set (use ${{{name}:-default}} for a fallback)"
                    ))
                }
            }
        }
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOST" => Some("10.0.0.1".into()),
            "EMPTY" => Some(String::new()),
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
    }

    #[test]
    fn missing_variable_names_the_line() {
        let err = interpolate("a = 1\nb = \"${MISSING}\"\n", env).unwrap_err();
        assert!(
            err.starts_with("line 2:") && err.contains("MISSING"),
            "{err}"
        );
        assert!(interpolate("${unclosed", env).is_err());
        assert!(interpolate("${a b}", env).is_err());
    }
}
