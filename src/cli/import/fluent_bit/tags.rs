//! Fluent Bit's `Match` (and simple `Match_Regex`) as logferry `match`
//! patterns. Fluent Bit's `*` stands for any characters, dots included,
//! over the whole tag; logferry's `*` stops at a dot, `**` does not, and
//! `.**` also matches nothing at all. `*.**` is exactly "any characters":
//! one part, then any number of `.part`s.

/// The logferry pattern for Fluent Bit's `Match`, or why there is none.
pub fn from_match(pattern: &str) -> Result<String, String> {
    translate(pattern, false)
}

/// `pattern` with Fluent Bit's `*` written as logferry's; `{a,b}` groups
/// (made from a regex's alternatives) are kept when `braces`.
fn translate(pattern: &str, braces: bool) -> Result<String, String> {
    let pattern = pattern.trim();
    if pattern.is_empty() {
        return Err("an empty Match matches nothing".into());
    }
    if let Some(c) = pattern
        .chars()
        .find(|c| c.is_whitespace() || (!braces && matches!(c, '{' | '}' | ',')))
    {
        return Err(format!(
            "Match {pattern:?} holds {c:?}, which a logferry pattern cannot hold as an ordinary character"
        ));
    }
    // consecutive stars are one star
    let mut squeezed = String::new();
    for c in pattern.chars() {
        if c == '*' && squeezed.ends_with('*') {
            continue;
        }
        squeezed.push(c);
    }
    if squeezed == "*" {
        return Ok("**".into());
    }
    Ok(squeezed.replace('*', "*.**"))
}

/// The logferry pattern for a `Match_Regex` made only of literal
/// characters, `\.`, `.*` and anchors; other regexes have none.
pub fn from_regex(regex: &str) -> Result<String, String> {
    let impossible = || {
        format!("Match_Regex {regex:?}: logferry patterns are globs; only literal text, \\. and .* convert")
    };
    // Fluent Bit matches the regex at the tag's start (onig_match at 0),
    // with or without `^`, and routes on a match of at least one character
    let mut body = regex.trim();
    body = body.strip_prefix('^').unwrap_or(body);
    let anchored_end = body.ends_with('$') && !body.ends_with("\\$");
    if anchored_end {
        body = &body[..body.len() - 1];
    }
    let mut glob = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e) if !e.is_ascii_alphanumeric() => glob.push(e),
                _ => return Err(impossible()),
            },
            '.' if chars.peek() == Some(&'*') => {
                chars.next();
                glob.push('*');
            }
            c if c.is_alphanumeric() || matches!(c, '_' | '-' | '/' | ':' | '@') => glob.push(c),
            // a group of literal alternatives: logferry's {a,b}
            '(' => {
                let mut alts = String::new();
                loop {
                    match chars.next() {
                        Some(')') => break,
                        Some('|') => alts.push(','),
                        Some(a) if a.is_alphanumeric() || matches!(a, '_' | '-') => alts.push(a),
                        _ => return Err(impossible()),
                    }
                }
                glob.push('{');
                glob.push_str(&alts);
                glob.push('}');
            }
            _ => return Err(impossible()),
        }
    }
    if !anchored_end {
        glob.push('*');
    }
    translate(&glob, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::router::TagPattern;

    /// Fluent Bit's matching, as flb_router_match does it.
    fn fluent_bit_matches(pattern: &str, tag: &str) -> bool {
        let re = format!(
            "^(?s:{})$",
            pattern
                .split('*')
                .map(regex::escape)
                .collect::<Vec<_>>()
                .join(".*")
        );
        regex::Regex::new(&re).expect("valid").is_match(tag)
    }

    const TAGS: &[&str] = &[
        "",
        "app",
        "app.",
        "app.a",
        "app.a.b",
        "apple",
        "x.app.a",
        "kube.var.log.containers.web_default_app-1.log",
        "a.log",
        "a.b.log",
        "log",
        ".log",
        "a..b",
        "app.a.log",
        "b.app",
    ];

    #[test]
    fn match_patterns_route_as_fluent_bit_does() {
        for fb in [
            "*",
            "app.*",
            "app*",
            "*.log",
            "app.*.log",
            "kube.*",
            "a*b",
            "app",
            "**",
            "*app*",
            "*.*",
        ] {
            let ours = from_match(fb).expect("translatable");
            let pattern = TagPattern::new(&ours).expect("valid logferry pattern");
            for tag in TAGS {
                assert_eq!(
                    pattern.matches(tag),
                    fluent_bit_matches(fb, tag),
                    "Match {fb} (logferry {ours}) on tag {tag:?}"
                );
            }
        }
    }

    /// Fluent Bit's Match_Regex, as flb_router_match does it: the regex
    /// matched at the tag's start (onig_match), a match of at least one
    /// character.
    fn fluent_bit_regex_matches(re: &str, tag: &str) -> bool {
        let anchored = regex::Regex::new(&format!("^(?:{re})")).expect("valid");
        anchored.find(tag).is_some_and(|m| !m.is_empty())
    }

    #[test]
    fn match_regexes_route_as_fluent_bit_matches_them_at_the_tags_start() {
        for re in [
            "^app\\..*$",
            "error",
            "^(app|syslog)\\.",
            "log$",
            "\\.web$",
            ".*\\.web$",
            "app\\.w",
            "^kube\\.var\\..*\\.log$",
            "a.*b",
        ] {
            let ours = from_regex(re).expect("translatable");
            let pattern = TagPattern::new(&ours).expect("valid logferry pattern");
            for tag in TAGS.iter().chain(&[
                "syslog.x",
                "my.error.log",
                "errors",
                "error",
                "ab",
                "a.x.b",
                "syslogx",
                "app.web",
                "x.web",
            ]) {
                assert_eq!(
                    pattern.matches(tag),
                    fluent_bit_regex_matches(re, tag),
                    "Match_Regex {re} (logferry {ours}) on tag {tag:?}"
                );
            }
        }
    }

    #[test]
    fn regexes_of_literals_and_any() {
        assert_eq!(from_regex("^app\\..*$").as_deref(), Ok("app.*.**"));
        assert_eq!(from_regex("error").as_deref(), Ok("error*.**"));
        assert_eq!(from_regex("\\.web$").as_deref(), Ok(".web"));
        assert_eq!(
            from_regex("^(app|syslog)\\..*$").as_deref(),
            Ok("{app,syslog}.*.**")
        );
        assert!(from_regex("^(a|b+)$").is_err());
        assert!(from_regex("^a[0-9]$").is_err());
        assert!(from_match("a{b}").is_err());
    }
}
