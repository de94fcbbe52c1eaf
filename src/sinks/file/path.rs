//! Output paths with `${tag}`, `${tag[N]}` and strftime placeholders.

use std::fmt::Write as _;

use chrono::format::{Item, StrftimeItems};
use chrono::{DateTime, TimeZone};

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    /// Text, possibly with strftime sequences.
    Text(String),
    Tag,
    TagPart(usize),
}

/// A parsed `path` setting.
#[derive(Debug, Clone)]
pub struct PathTemplate {
    pieces: Vec<Piece>,
    /// True if any text piece has a `%` sequence.
    timed: bool,
}

impl PathTemplate {
    pub fn parse(path: &str) -> Result<Self, String> {
        if path.trim().is_empty() {
            return Err("path must not be empty".into());
        }
        let mut pieces = Vec::new();
        let mut rest = path;
        while let Some(i) = rest.find("${tag") {
            let after = &rest[i + 5..];
            let (piece, len) = if after.starts_with('}') {
                (Piece::Tag, 6)
            } else if let Some(inner) = after.strip_prefix('[') {
                let close = inner
                    .find("]}")
                    .ok_or_else(|| format!("path {path:?}: `${{tag[` needs `]}}`"))?;
                let n = inner[..close]
                    .parse()
                    .map_err(|_| format!("path {path:?}: `${{tag[N]}}` needs a number N"))?;
                (Piece::TagPart(n), 5 + 1 + close + 2)
            } else {
                return Err(format!(
                    "path {path:?}: unknown placeholder (use ${{tag}} or ${{tag[N]}})"
                ));
            };
            if i > 0 {
                pieces.push(Piece::Text(rest[..i].to_string()));
            }
            pieces.push(piece);
            rest = &rest[i + len..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_string()));
        }
        let mut timed = false;
        for p in &pieces {
            if let Piece::Text(t) = p {
                if t.contains('%') {
                    if StrftimeItems::new(t).any(|i| matches!(i, Item::Error)) {
                        return Err(format!("path {path:?}: invalid strftime sequence"));
                    }
                    timed = true;
                }
            }
        }
        Ok(PathTemplate { pieces, timed })
    }

    /// True if every record goes to the same path.
    pub fn is_static(&self) -> bool {
        !self.timed && self.pieces.iter().all(|p| matches!(p, Piece::Text(_)))
    }

    /// The path for a record with `tag`, written at `now`, and whether tag
    /// text had to be escaped to keep it inside the configured directory.
    ///
    /// Tag text is percent-encoded where it could change the path's shape:
    /// `%` as `%25`, `/` as `%2F`, NUL as `%00`. A path component that holds
    /// tag text and is then exactly `.` or `..` has its dots written `%2E`,
    /// and one left empty (an empty or missing tag part) is written `_`, so a
    /// tag can neither climb out of the directory nor merge two levels.
    pub fn render<Tz: TimeZone>(&self, tag: &str, now: &DateTime<Tz>) -> (String, bool)
    where
        Tz::Offset: std::fmt::Display,
    {
        let mut out = String::new();
        let mut escaped = false;
        // byte ranges of tag text in `out`
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) if self.timed && t.contains('%') => {
                    let _ = write!(out, "{}", now.format(t));
                }
                Piece::Text(t) => out.push_str(t),
                Piece::Tag | Piece::TagPart(_) => {
                    let text = match p {
                        Piece::TagPart(n) => tag.split('.').nth(*n).unwrap_or(""),
                        _ => tag,
                    };
                    let start = out.len();
                    escaped |= push_encoded(&mut out, text);
                    spans.push((start, out.len()));
                }
            }
        }
        if spans.is_empty() {
            return (out, escaped);
        }
        let from_tag =
            |start: usize, end: usize| spans.iter().any(|&(a, b)| a >= start && b <= end);
        let mut start = 0;
        let mut unsafe_component = false;
        for c in out.split('/') {
            unsafe_component |= matches!(c, "" | "." | "..") && from_tag(start, start + c.len());
            start += c.len() + 1;
        }
        if !unsafe_component {
            return (out, escaped);
        }
        let mut safe = String::with_capacity(out.len() + 8);
        let mut start = 0;
        for (i, c) in out.split('/').enumerate() {
            if i > 0 {
                safe.push('/');
            }
            match c {
                "" | "." | ".." if from_tag(start, start + c.len()) => {
                    safe.push_str(if c.is_empty() {
                        "_"
                    } else {
                        &"%2E%2E"[..3 * c.len()]
                    })
                }
                _ => safe.push_str(c),
            }
            start += c.len() + 1;
        }
        (safe, true)
    }
}

/// Appends tag text percent-encoded (see [`PathTemplate::render`]); true if
/// it held a `/` or NUL.
fn push_encoded(out: &mut String, s: &str) -> bool {
    let mut escaped = false;
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            '/' => {
                out.push_str("%2F");
                escaped = true;
            }
            '\0' => {
                out.push_str("%00");
                escaped = true;
            }
            c => out.push(c),
        }
    }
    escaped
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Local;

    #[test]
    fn renders_tags_parts_and_dates() {
        let now = Local.with_ymd_and_hms(2026, 11, 22, 1, 2, 3).unwrap();
        let t = PathTemplate::parse("/logs/%Y/${tag[1]}/${tag}.log").unwrap();
        assert!(!t.is_static());
        assert_eq!(
            t.render("app.web", &now),
            ("/logs/2026/web/app.web.log".to_string(), false)
        );
        // a missing part would merge two levels
        assert_eq!(
            t.render("x", &now),
            ("/logs/2026/_/x.log".to_string(), true)
        );
        assert!(PathTemplate::parse("/a/unified.log").unwrap().is_static());
    }

    #[test]
    fn tags_cannot_escape_the_directory() {
        let now = Local::now();
        let t = PathTemplate::parse("/logs/${tag}.log").unwrap();
        assert_eq!(
            t.render("../../etc/passwd", &now),
            ("/logs/..%2F..%2Fetc%2Fpasswd.log".to_string(), true)
        );
        // a tag full of % signs is not a strftime pattern
        assert_eq!(
            t.render("%Q%n", &now),
            ("/logs/%25Q%25n.log".to_string(), false)
        );
    }

    fn path(template: &str, tag: &str) -> String {
        PathTemplate::parse(template)
            .unwrap()
            .render(tag, &Local::now())
            .0
    }

    #[test]
    fn dot_and_empty_components_from_tags_are_escaped() {
        assert_eq!(path("/o/${tag}/x.log", ".."), "/o/%2E%2E/x.log");
        assert_eq!(
            path("/o/${tag}/${tag}/x.log", ".."),
            "/o/%2E%2E/%2E%2E/x.log"
        );
        assert_eq!(path("/o/${tag}/x.log", "."), "/o/%2E/x.log");
        assert_eq!(path("/o/${tag}/x.log", "../.."), "/o/..%2F../x.log");
        assert_eq!(
            path("/o/${tag}/x.log", "a/../../b"),
            "/o/a%2F..%2F..%2Fb/x.log"
        );
        assert_eq!(path("/o/${tag}/x.log", "a\0b"), "/o/a%00b/x.log");
        assert_eq!(path("/o/${tag}/x.log", ""), "/o/_/x.log");
        assert_eq!(path("/o/${tag}", ""), "/o/_");
        // parts: `a..b` has an empty part 1; `..` has three empty parts
        assert_eq!(path("/o/.${tag[1]}./x", "a..b"), "/o/%2E%2E/x");
        assert_eq!(path("/o/${tag[0]}/${tag[1]}/${tag[2]}", ".."), "/o/_/_/_");
        assert_eq!(path("/o/${tag[1]}.${tag[2]}/x", "a.."), "/o/%2E/x");
        assert_eq!(path("/o/${tag[7]}x/y", "a"), "/o/x/y");
        // the configured text is the user's own: left as it is
        assert_eq!(path("/o/../${tag}.log", "a"), "/o/../a.log");
        assert_eq!(path("/o/${tag}..log", "a"), "/o/a..log");
        // the result never has a component `.`/`..`/empty made from a tag
        for tag in [
            "..", ".", "...", "a.", ".a", "a/..", "../a", "/", "//", "\0",
        ] {
            let p = path("/o/${tag}/${tag[0]}/${tag[1]}/f", tag);
            assert!(p.starts_with("/o/"), "{p}");
            for c in p["/o/".len()..].split('/') {
                assert!(!matches!(c, "" | "." | ".."), "{tag:?} gave {p}");
            }
        }
    }

    #[test]
    fn bad_placeholders_are_errors() {
        assert!(PathTemplate::parse("/a/${tags}.log").is_err());
        assert!(PathTemplate::parse("/a/${tag[x]}.log").is_err());
        assert!(PathTemplate::parse("/a/%Q.log").is_err());
        assert!(PathTemplate::parse("").is_err());
    }
}
